"""Shared fixtures, and the two tiers of the suite.

``python -m pytest`` runs the fast tier: every module on small data, in a
few minutes. ``python -m pytest --slow`` adds the slow tier, as CI does:
tests marked ``slow`` (whole protocols on the large bundled boards, the
examples and the CLI in subprocesses, the report in a real browser) and
every test of the real harness (those that take the ``lm_eval_runs``
fixture are marked here, not one by one).

``lm_eval_runs`` runs the real lm-evaluation-harness CLI (``lm_eval`` must be
installed; tests using it are skipped otherwise) on the weightless model in
``tests/lmeval/fake_lm.py`` for 12 models of increasing skill, once per session.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# Tests never read or write the user's cache of auto's decisions
# (benchsel.prediction.memo); tests of the cache point it at a temporary folder.
os.environ["BENCHSEL_CACHE_DIR"] = "off"

# Profiles of the property tests (tests/test_properties.py), chosen with
# --hypothesis-profile: ci (the default), medium, big (over 10,000 cases in all).
for _name, _examples in (("ci", 40), ("medium", 300), ("big", 2500)):
    settings.register_profile(
        _name, max_examples=_examples, deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
settings.load_profile("ci")


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", default=False,
                     help="run the slow tier too (the real lm-eval harness, the browser, "
                          "subprocesses, protocols on the large boards); CI does")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: the slow tier, run with --slow (and in CI)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "lm_eval_runs" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(tryfirst=True)  # before any fixture of the test is set up
def pytest_runtest_setup(item):
    # A skip from one place, so that -ra folds the whole slow tier into one line
    # (and xdist's workers report it as the controller would).
    if item.get_closest_marker("slow") and not item.config.getoption("--slow"):
        pytest.skip("slow tier: python -m pytest --slow runs it, as CI does")


LM_EVAL_SKILLS = dict(zip((f"fake-{i:02d}" for i in range(12)),
                          np.round(np.linspace(-2.5, 2.5, 12), 3).tolist()))


@dataclass(frozen=True)
class LmEvalRuns:
    """A folder of real lm-eval runs: ``runs/<model>/{results,samples_*}_<date>.json[l]``."""

    runs: Path  # the --output_path folder, one sub-folder per model
    tasks: Path  # the --include_path folder (task YAMLs and JSONL data)
    skills: dict  # model name (= sub-folder name) -> skill, in increasing skill
    leaf_tasks: tuple  # bs_mc_a, bs_mc_b, bs_gen
    group: str  # bs_group (bs_mc_a + bs_mc_b)
    gen_filters: tuple  # the two filters of bs_gen: strict, flex


@pytest.fixture(scope="session")
def lm_eval_runs(tmp_path_factory) -> LmEvalRuns:
    """12 fake models x (bs_group, bs_gen), log_samples on; about 3.5-9.5 s on 2 CPUs."""
    pytest.importorskip("lm_eval", reason="lm-evaluation-harness (lm_eval) is not installed")
    from lmeval.fake_lm import GEN_FILTERS, GEN_TASK, GROUP, TASKS, write_tasks
    from lmeval.run import run_many

    root = tmp_path_factory.mktemp("lm_eval")
    tasks = write_tasks(root / "tasks")
    runs = root / "runs"
    run_many(tasks, runs, [{"pretrained": name, "skill": skill}
                           for name, skill in LM_EVAL_SKILLS.items()],
             [GROUP, GEN_TASK], jobs=min(2, os.cpu_count() or 1))
    return LmEvalRuns(runs=runs, tasks=tasks, skills=dict(LM_EVAL_SKILLS),
                      leaf_tasks=TASKS, group=GROUP, gen_filters=GEN_FILTERS)
