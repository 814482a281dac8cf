"""The README's commands and the shipped example run as documented."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands():
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```bash\n(.+?)\n```", text, flags=re.S)


def test_readme_opens_with_the_two_commands_and_ci_runs_the_second():
    first, second = readme_commands()[:2]
    assert first.startswith("pip install . && benchsel select mteb -k 5")
    assert "pytest" in second
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci == second.strip()


def test_readme_select_command_prints_five_mteb_tasks():
    cmd = readme_commands()[0].split("&&", 1)[1].split()
    assert cmd[0] == "benchsel"
    out = subprocess.run(
        [sys.executable, "-m", "benchsel", *cmd[1:], "--json"],
        capture_output=True, text=True, check=True,
    )
    import json

    import benchsel

    picks = json.loads(out.stdout)["selected"]
    assert len(picks) == 5 and set(picks) <= set(benchsel.load_dataset("mteb").items)


def test_quickstart_example_runs():
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py")],
        capture_output=True, text=True, check=True,
    )
    assert "run these:" in out.stdout
    assert "benchmarks needed for 90/95/99% explained variance" in out.stdout


def test_lm_eval_loop_example_runs(tmp_path):
    pytest = __import__("pytest")
    pytest.importorskip("lm_eval", reason="lm-evaluation-harness (lm_eval) is not installed")
    import numpy as np

    # The frontier case: the two new models are the strongest of the matrix.
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "lm_eval_loop.py"), "--sources", "15",
         "--new", "2", "--frontier", "--questions", "80", "-n", "20", "--workdir",
         str(tmp_path)],
        capture_output=True, text=True, check=True,
    )
    assert "$ benchsel plan" in out.stdout and "$ benchsel predict --plan" in out.stdout
    table = out.stdout.split("mean of its answers\n", 1)[1].splitlines()[:2]
    assert len(table) == 2 and all(line.startswith("model-") for line in table)
    from benchsel.datasets import bundled_path

    with np.load(bundled_path("helm_mmlu")) as z:
        strongest = np.argsort(z["scores"][:, :80].mean(axis=1), kind="stable")[-2:]
    assert {int(line.split()[0].split("-")[1]) for line in table} == set(strongest.tolist())
    assert "mean |error|: predicted" in out.stdout
