"""The README's commands and the shipped example run as documented."""

import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.mark.slow
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


def _section(title: str) -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end]


def _same_output(shown: str, printed: str) -> bool:
    """Line by line and word by word; numbers within 2% (another machine's BLAS may
    round the last printed digit differently)."""
    def words(text):
        return [line.split() for line in text.strip().splitlines()]

    def same(a: str, b: str) -> bool:
        if a == b:
            return True
        try:
            x, y = float(a.strip("x,()")), float(b.strip("x,()"))
        except ValueError:
            return False
        return math.isclose(x, y, rel_tol=0.02, abs_tol=5e-4)

    a, b = words(shown), words(printed)
    return len(a) == len(b) and all(
        len(p) == len(q) and all(same(x, y) for x, y in zip(p, q)) for p, q in zip(a, b))


@pytest.mark.slow
def test_readme_loop_in_a_minute_runs_verbatim_and_prints_what_it_shows(tmp_path):
    """Each line of the section's bash block, as a shell would run it, in an empty
    folder (nothing of the repository or ../shared beside it)."""
    section = _section("The loop in a minute, on bundled data")
    commands = re.search(r"```bash\n(.+?)\n```", section, flags=re.S).group(1).splitlines()
    shown = re.search(r"```text\n(.+?)\n```", section, flags=re.S).group(1)
    env = dict(os.environ)
    if shutil.which("benchsel") is None:  # pip's scripts folder beside this interpreter
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    printed = ""
    for command in commands:
        done = subprocess.run(command, shell=True, cwd=tmp_path, env=env,
                              capture_output=True, text=True)
        assert done.returncode == 0, (command, done.stderr)
        printed += done.stdout
    assert (tmp_path / "plan.json").is_file()
    assert _same_output(shown, printed), printed


@pytest.mark.slow
def test_quickstart_example_runs():
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py")],
        capture_output=True, text=True, check=True,
    )
    assert "run these:" in out.stdout
    assert "benchmarks needed for 90/95/99% explained variance" in out.stdout


@pytest.mark.slow
def test_lm_eval_loop_example_runs(tmp_path):
    pytest.importorskip("lm_eval", reason="lm-evaluation-harness (lm_eval) is not installed")
    import numpy as np

    # Run from a copy of the files it needs, with no ../shared beside it.
    copy = tmp_path / "clone"
    shutil.copytree(ROOT / "examples", copy / "examples")
    shutil.copytree(ROOT / "tests" / "lmeval", copy / "tests" / "lmeval",
                    ignore=shutil.ignore_patterns("__pycache__"))
    # The frontier case: the two new models are the strongest of the matrix.
    out = subprocess.run(
        [sys.executable, str(copy / "examples" / "lm_eval_loop.py"), "--sources", "15",
         "--new", "2", "--frontier", "--questions", "80", "-n", "20", "--workdir",
         str(tmp_path / "work")],
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


def test_lm_eval_loop_without_the_harness_says_what_to_install():
    # sys.modules[name] = None is how Python marks a module as not importable.
    script = str(ROOT / "examples" / "lm_eval_loop.py")
    run = ("import runpy, sys; sys.modules['lm_eval'] = None; "
           f"sys.argv = ['lm_eval_loop.py']; runpy.run_path({script!r}, run_name='__main__')")
    out = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True)
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [
        "lm_eval_loop.py runs the real lm-evaluation-harness, which is not installed here: "
        "pip install 'lm_eval>=0.4.13' (or pip install -e '.[test]')"]
