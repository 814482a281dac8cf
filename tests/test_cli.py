"""The ``benchsel`` command line end to end, through ``main([...])`` and ``python -m``."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchsel import list_datasets, load_dataset
from benchsel.cli import main
from benchsel.datasets import _DATASETS, _path

HELM = load_dataset("helm_lite")
# Plausible observed scores for a new model: medians of two real helm_lite columns.
OBSERVED = {
    name: float(np.median(HELM.values[:, HELM.item_indices([name])[0]]))
    for name in ("GSM8K", "MMLU")
}
OBSERVED_SPEC = ",".join(f"{name}={value:.4f}" for name, value in OBSERVED.items())


# ------------------------------------------------------------------ helpers
def run(capsys, *args):
    """Run the CLI in-process; return (exit code, stdout, stderr)."""
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys, *args) -> dict:
    """Run the CLI with ``--json``, check it succeeded and return the parsed output."""
    code, out, err = run(capsys, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def leaderboard_copy(tmp_path: Path, name: str) -> Path:
    """A private copy of a bundled leaderboard CSV in ``tmp_path``."""
    target = tmp_path / f"{name}.csv"
    shutil.copy(_path(_DATASETS[name]), target)
    return target


def assert_valid_selection(payload: dict, k: int, valid: set) -> None:
    """k distinct valid names, bookkeeping of length k, residual variance non-increasing."""
    selected = payload["selected"]
    assert len(selected) == k
    assert len(set(selected)) == k
    assert set(selected) <= valid
    assert len(payload["gains"]) == k
    residual = payload["residual_variance"]
    assert len(residual) == k
    assert all(b <= a + 1e-12 for a, b in zip(residual, residual[1:]))
    assert 0 <= residual[-1] < 1


def predictions(payload: dict) -> dict:
    """The single-model prediction records keyed by benchmark."""
    return {r["benchmark"]: r for r in payload["predictions"]}


# ------------------------------------------------------------------ datasets
def test_datasets_table(capsys):
    """The table lists every bundled dataset with its shape and observed percentage."""
    code, out, _ = run(capsys, "datasets")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["name", "shape", "observed"]
    for info in list_datasets():
        assert any(line.startswith(info.name + " ") for line in lines), info.name
    mteb = next(line for line in lines if line.startswith("mteb "))
    assert "263 x 56" in mteb and "77.3%" in mteb


def test_datasets_json(capsys):
    """``--json`` gives one record per dataset with counts that match load_dataset."""
    payload = run_json(capsys, "datasets")
    records = {d["name"]: d for d in payload["datasets"]}
    assert list(records) == [info.name for info in list_datasets()]
    assert (records["mteb"]["models"], records["mteb"]["items"]) == (263, 56)
    assert records["mteb"]["observed_percent"] == 77.3
    assert (records["helm_lite"]["models"], records["helm_lite"]["items"]) == HELM.shape


# -------------------------------------------------------------------- select
def test_select_mteb_mutual_information(capsys):
    """Five distinct MTEB benchmarks by MI, with gains and a non-increasing residual."""
    payload = run_json(capsys, "select", "mteb", "-k", 5, "--objective", "mi")
    assert_valid_selection(payload, 5, set(load_dataset("mteb").items))
    assert payload["objective"] == "mi"
    assert payload["axis"] == "benchmarks"
    assert payload["covariance"] == "em-shrink"  # mteb has gaps, so auto means EM
    assert payload["em"]["iterations"] > 0


def test_select_entropy(capsys):
    """Entropy selection is valid and reported as such."""
    payload = run_json(capsys, "select", "helm_lite", "-k", 4, "--objective", "entropy")
    assert_valid_selection(payload, 4, set(HELM.items))
    assert payload["objective"] == "entropy"
    assert payload["covariance"] == "pairwise"  # complete data


def test_select_random_is_reproducible(capsys):
    """The same seed gives the same random pick; other seeds give other picks."""
    args = ("select", "wildbench", "-k", 4, "--objective", "random")
    first = run_json(capsys, *args, "--seed", 1)
    assert first == run_json(capsys, *args, "--seed", 1)
    assert first["objective"] == "random"
    assert_valid_selection(first, 4, set(load_dataset("wildbench").items))
    others = [run_json(capsys, *args, "--seed", s)["selected"] for s in (2, 3, 4, 5)]
    assert any(o != first["selected"] for o in others)


def test_select_include_comes_first(capsys):
    """``--include`` names are selected first, in the given order."""
    payload = run_json(capsys, "select", "helm_lite", "-k", 4, "--include", "WMT 2014,MedQA")
    assert payload["selected"][:2] == ["WMT 2014", "MedQA"]
    assert_valid_selection(payload, 4, set(HELM.items))


def test_select_exclude_is_never_selected(capsys):
    """Excluding the unconstrained first pick keeps it out of the selection."""
    top = run_json(capsys, "select", "helm_lite", "-k", 3)["selected"][0]
    excluded = [top, "GSM8K" if top != "GSM8K" else "MMLU"]
    payload = run_json(capsys, "select", "helm_lite", "-k", 3, "--exclude", ",".join(excluded))
    assert not set(excluded) & set(payload["selected"])
    assert_valid_selection(payload, 3, set(HELM.items) - set(excluded))


@pytest.mark.parametrize("kind", ["json", "csv"])
def test_select_with_costs_and_budget(capsys, tmp_path, kind):
    """A budget caps the total cost, which the JSON reports with the strategy."""
    costs = {name: float(1 + j % 4) for j, name in enumerate(HELM.items)}
    if kind == "json":
        path = tmp_path / "costs.json"
        path.write_text(json.dumps(costs))
    else:
        path = tmp_path / "costs.csv"
        path.write_text("benchmark,cost\n" + "".join(f"{n},{c}\n" for n, c in costs.items()))
    budget = 4.5
    payload = run_json(capsys, "select", "helm_lite", "--costs", path, "--budget", budget)
    spent = sum(costs[name] for name in payload["selected"])
    assert payload["selected"]
    assert spent <= budget
    assert payload["cost"] == pytest.approx(spent)
    assert payload["strategy"] in {"cost-effective greedy", "best singleton"}
    assert payload["stopped_by"] == "budget"


def test_select_reference_models(capsys):
    """``--axis models`` selects model names, not benchmark names."""
    payload = run_json(capsys, "select", "helm_lite", "--axis", "models", "-k", 3)
    assert payload["axis"] == "models"
    assert_valid_selection(payload, 3, set(HELM.models))
    assert not set(payload["selected"]) & set(HELM.items)


def test_select_target_residual(capsys):
    """``--target-residual`` stops at the first pick leaving at most that fraction."""
    payload = run_json(capsys, "select", "wildbench", "--target-residual", 0.3)
    residual = payload["residual_variance"]
    assert residual[-1] <= 0.3
    assert all(r > 0.3 for r in residual[:-1])
    assert payload["stopped_by"] == "target_residual"


def test_select_table_output(capsys):
    """Without ``--json`` a header line and one row per pick are printed."""
    code, out, _ = run(capsys, "select", "helm_lite", "-k", 3)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("3 benchmarks selected from 11 by mi")
    assert lines[1].startswith("certificate: none -- mutual information is not monotone")
    assert "exhaustive search: " in lines[1]
    assert lines[2].split() == ["#", "benchmark", "gain", "residual_var"]
    assert [line.split()[0] for line in lines[4:]] == ["1", "2", "3"]


def test_select_long_format_file(capsys, tmp_path):
    """Input-format options reach the reader: a long CSV gives the same picks as the dataset."""
    path = tmp_path / "long.csv"
    rows = [
        f'"{m}","{b}",{float(HELM.values[i, j])!r}'
        for i, m in enumerate(HELM.models) for j, b in enumerate(HELM.items)
    ]
    path.write_text("who,task,value\n" + "\n".join(rows) + "\n")
    payload = run_json(
        capsys, "select", path, "-k", 3, "--format", "long", "--model-column", "who",
        "--item-column", "task", "--score-column", "value",
    )
    assert payload["selected"] == run_json(capsys, "select", "helm_lite", "-k", 3)["selected"]


# ------------------------------------------------------------------- predict
def test_predict_inline_observed(capsys):
    """One prediction per unobserved benchmark, with low <= mean <= high and std > 0."""
    payload = run_json(capsys, "predict", "helm_lite", "--observed", OBSERVED_SPEC)
    records = predictions(payload)
    assert set(records) == set(HELM.items) - set(OBSERVED)
    for r in records.values():
        assert r["low"] <= r["mean"] <= r["high"]
        assert r["std"] > 0
    assert payload["level"] == 0.9
    assert payload["model"] == "new model"


def test_predict_means_are_within_the_data_range(capsys):
    """Predicted means for a median-like model stay inside each benchmark's observed range."""
    records = predictions(run_json(capsys, "predict", "helm_lite", "--observed", OBSERVED_SPEC))
    for name, r in records.items():
        column = HELM.values[:, HELM.item_indices([name])[0]]
        assert column.min() <= r["mean"] <= column.max(), name


def test_predict_lower_level_gives_narrower_intervals(capsys):
    """``--coverage 0.5`` intervals are narrower than 0.9 ones around the same means."""
    wide = predictions(run_json(capsys, "predict", "helm_lite", "--observed", OBSERVED_SPEC))
    narrow = predictions(run_json(
        capsys, "predict", "helm_lite", "--observed", OBSERVED_SPEC, "--coverage", 0.5))
    assert set(wide) == set(narrow)
    for name in wide:
        assert narrow[name]["mean"] == pytest.approx(wide[name]["mean"])
        assert (narrow[name]["high"] - narrow[name]["low"]
                < wide[name]["high"] - wide[name]["low"])


def test_predict_unknown_benchmark_lists_valid_names(capsys):
    """An unknown observed benchmark exits 1 and lists the valid names on stderr."""
    code, out, err = run(capsys, "predict", "helm_lite", "--observed", "GSM8K=0.5,Bogus=0.5")
    assert code == 1
    assert out == ""
    assert "'Bogus'" in err
    assert "valid names are" in err
    assert all(repr(name) in err for name in HELM.items)


def test_predict_observed_csv_of_two_models(capsys, tmp_path):
    """A wide CSV of two new models gives a prediction block per model."""
    path = tmp_path / "new.csv"
    path.write_text("model,GSM8K,MMLU\nnew-a,0.6,0.65\nnew-b,0.3,\n")
    payload = run_json(capsys, "predict", "helm_lite", "--observed", path)
    models = {m["model"]: m["predictions"] for m in payload["models"]}
    assert list(models) == ["new-a", "new-b"]
    assert len(models["new-a"]) == HELM.n_items - 2
    assert len(models["new-b"]) == HELM.n_items - 1
    assert "MMLU" in {r["benchmark"] for r in models["new-b"]}
    mean_a = {r["benchmark"]: r["mean"] for r in models["new-a"]}["MATH"]
    mean_b = {r["benchmark"]: r["mean"] for r in models["new-b"]}["MATH"]
    assert mean_a > mean_b  # GSM8K and MATH are positively correlated


def test_predict_observed_json_file_matches_inline(capsys, tmp_path):
    """A JSON object file gives the same predictions as the inline form."""
    path = tmp_path / "observed.json"
    path.write_text(json.dumps(OBSERVED))
    from_file = run_json(capsys, "predict", "helm_lite", "--observed", path)
    inline = run_json(capsys, "predict", "helm_lite", "--observed",
                      ",".join(f"{k}={v!r}" for k, v in OBSERVED.items()))
    assert from_file == inline


def test_predict_on_a_leaderboard_csv_path(capsys, tmp_path):
    """``predict`` reads a CSV path as DATA and prints a table for the new model."""
    data = leaderboard_copy(tmp_path, "wildbench")
    code, out, err = run(capsys, "predict", data, "--observed", "Math=50,Planning=55")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "new model: 9 predicted from 2 observed"
    assert lines[1].startswith("  method: ") and "(auto: best of a cross-validation" in lines[1]
    assert lines[2].startswith("  intervals: calibrated on held-out source models, x")
    assert "low (90%)" in lines[3]
    predicted = {line.split("  ")[0] for line in lines[5:]}
    assert "Math" not in predicted and "Reasoning" in predicted
    assert len(lines) == 5 + 9


# ------------------------------------------------------------------ spectrum
def test_spectrum_json(capsys):
    """Eigenvalues descend, the residual bound does not increase, and k is given per level."""
    payload = run_json(capsys, "spectrum", "helm_lite")
    eig = payload["eigenvalues"]
    assert len(eig) == HELM.n_items
    assert all(a >= b for a, b in zip(eig, eig[1:]))
    residual = payload["residual_fraction"]
    assert all(a >= b for a, b in zip(residual, residual[1:]))
    assert list(payload["k_for_explained"]) == ["90%", "95%", "99%"]
    ks = list(payload["k_for_explained"].values())
    assert ks == sorted(ks) and 1 <= ks[0] and ks[-1] <= HELM.n_items
    assert residual[ks[0] - 1] <= 0.1 + 1e-9
    # Lemma 1: no k items explain more than the top k eigenvectors.
    greedy = payload["greedy_residual"]
    assert all(g >= r - 1e-9 for g, r in zip(greedy, residual))
    assert sorted(payload["greedy_items"]) == sorted(HELM.items)


def test_spectrum_table(capsys):
    """The table mode names the dataset size and the levels reached."""
    code, out, _ = run(capsys, "spectrum", "wildbench")
    assert code == 0
    assert out.startswith("11 items. Benchmarks needed to explain 90/95/99% of the variance, "
                          "greedy mi (as 'select --objective mi --target-residual'): 90%: ")
    assert "no choice of fewer can do it (eigenvalues): 90%: " in out


# ------------------------------------------------------------ error handling
def test_missing_data_file(capsys, tmp_path):
    """A DATA path that does not exist exits 1 naming it."""
    missing = tmp_path / "nothere.csv"
    code, out, err = run(capsys, "select", missing, "-k", 2)
    assert code == 1
    assert out == ""
    assert err.startswith("benchsel: error: ")
    assert str(missing) in err and "no such file" in err


def test_select_without_a_stopping_rule(capsys):
    """No -k, budget or target residual exits 1 saying what is needed."""
    code, _, err = run(capsys, "select", "helm_lite")
    assert code == 1
    assert "give k, a budget, or a target residual" in err


def test_budget_without_costs(capsys, monkeypatch):
    """``--budget`` alone is a usage error asking for ``--costs``, before any fitting
    (fit would fail here), as in ``plan``."""
    from benchsel import GaussianModel

    def no_fit(*args, **kwargs):
        raise AssertionError("fitted before the options were checked")

    monkeypatch.setattr(GaussianModel, "fit", no_fit)
    for command in ("select", "plan"):
        with pytest.raises(SystemExit) as stop:
            run(capsys, command, "helm_lite", "--budget", 3,
                *(["-o", "unused.json"] if command == "plan" else []))
        assert stop.value.code == 2
        assert "--budget needs --costs FILE" in capsys.readouterr().err


def test_bad_data_file_reports_position(capsys, tmp_path):
    """A malformed DATA file exits 1 with the reader's message (line, column, value)."""
    path = tmp_path / "bad.csv"
    path.write_text("model,a,b\nx,1,2\ny,3,?\nz,5,6\n")
    code, _, err = run(capsys, "spectrum", path)
    assert code == 1
    assert f"{path}: line 3, column 'b': value '?'" in err


def test_output_file_is_written_atomically(capsys, tmp_path):
    """``--output`` writes the same JSON as stdout would, prints nothing, leaves no temp file."""
    out_path = tmp_path / "sel.json"
    code, out, _ = run(capsys, "select", "helm_lite", "-k", 3, "--json", "--output", out_path)
    assert code == 0
    assert out == ""
    assert json.loads(out_path.read_text()) == run_json(capsys, "select", "helm_lite", "-k", 3)
    assert [p.name for p in tmp_path.iterdir()] == ["sel.json"]


def test_output_refuses_to_overwrite_the_data_file(capsys, tmp_path):
    """``--output`` naming the DATA file exits 1 and leaves the data untouched."""
    data = leaderboard_copy(tmp_path, "wildbench")
    before = data.read_bytes()
    code, _, err = run(capsys, "select", data, "-k", 2, "--json", "--output", data)
    assert code == 1
    assert "refusing to overwrite an input file" in err
    assert data.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["wildbench.csv"]


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["select", "helm_lite", "-k", "0"],
        ["select", "helm_lite", "-k", "2", "--objective", "best"],
        ["predict", "helm_lite", "--observed", "GSM8K=0.5", "--coverage", "1.5"],
        ["predict", "helm_lite", "--observed", "GSM8K=0.5", "--level", "1.5"],
        ["predict", "helm_lite"],
        ["spectrum"],
    ],
)
def test_usage_errors_exit_2(capsys, argv):
    """argparse usage errors raise SystemExit(2) with a usage line."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert "usage: benchsel" in capsys.readouterr().err


# ---------------------------------------------------------------- subprocess
def run_module(*args, cwd):
    """Run ``python -m benchsel`` in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "benchsel", *map(str, args)],
        capture_output=True, text=True, cwd=cwd, timeout=120,
    )


def test_python_m_benchsel_select(tmp_path):
    """``python -m benchsel`` selects and exits 0 with JSON on stdout."""
    result = run_module("select", "helm_lite", "-k", 2, "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert_valid_selection(payload, 2, set(HELM.items))


def test_python_m_benchsel_exit_codes(tmp_path):
    """Data errors exit 1 and usage errors exit 2 from a real process."""
    missing = run_module("predict", "nothere.csv", "--observed", "a=1", cwd=tmp_path)
    assert missing.returncode == 1
    assert "nothere.csv" in missing.stderr
    usage = run_module("select", cwd=tmp_path)
    assert usage.returncode == 2
    assert "usage:" in usage.stderr


def test_predict_axis_models_is_the_dual(capsys, tmp_path):
    """A held-out benchmark's scores on five reference models predict the other models'."""
    target = "MMLU"
    j = HELM.items.index(target)
    rest = HELM.subset(items=[i for i in range(HELM.n_items) if i != j])
    path = tmp_path / "rest.csv"
    rest.to_frame().to_csv(path)
    code, out, err = run(capsys, "select", path, "-k", 5, "--axis", "models", "--json")
    refs = json.loads(out)["selected"]
    observed = ",".join(f"{m}={float(HELM.values[HELM.models.index(m), j])!r}" for m in refs)
    payload = run_json(capsys, "predict", path, "--axis", "models", "--observed", observed,
                       "--method", "gaussian")
    preds = {p["benchmark"]: p["mean"] for p in payload["predictions"]}
    assert set(preds) == set(HELM.models) - set(refs)
    truth = np.array([HELM.values[HELM.models.index(m), j] for m in preds])
    guess = np.array(list(preds.values()))
    mean_only = np.abs(truth - np.mean([HELM.values[HELM.models.index(m), j] for m in refs]))
    assert np.mean(np.abs(truth - guess)) < 0.7 * np.mean(mean_only)
    # The table's items are the board's models, named or not, and say so.
    named = tmp_path / "named.csv"
    named.write_text("name," + ",".join(refs) + "\nMMLU-new,"
                     + ",".join(repr(float(HELM.values[HELM.models.index(m), j])) for m in refs)
                     + "\n")
    for spec in (observed, str(named)):
        code, out, err = run(capsys, "predict", path, "--axis", "models", "--observed", spec,
                             "--method", "gaussian", "--quiet")
        lines = out.splitlines()
        assert code == 0, err
        rule = next(i for i, line in enumerate(lines) if line.startswith("---"))
        assert code == 0 and lines[rule - 1].split()[0] == "model", lines[:rule]


@pytest.mark.slow
def test_ctrl_c_exits_130_with_one_line(tmp_path):
    """An interrupted command says so in one line, with no traceback, and exits 130."""
    import signal
    import time

    # A Ctrl-C from a terminal reaches a process whose SIGINT has the default
    # disposition. Started from a shell's background job, as a CI runner may
    # start the tests, SIGINT is ignored and every child inherits that.
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchsel", "discover", "merged", "--bootstrap", "5000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(4)  # well inside the resamples (many minutes of them)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert err.strip().splitlines()[-1] == "benchsel: interrupted"
    assert "Traceback" not in err


def test_a_warning_repeated_by_every_fit_prints_once(capsys, monkeypatch):
    from benchsel.gaussian import covariance

    # Every fit of the extrapolation protocol (its own and five calibration
    # splits, each in a catch_warnings block) now leaves EM for the factor model.
    monkeypatch.setattr(covariance, "EM_MAX_FLOPS", 1e3)
    assert main(["evaluate", "merged", "--protocol", "extrapolation", "--k-max", "2",
                 "--objectives", "mi", "--predictor", "gaussian"]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines()
             if "using the factor model instead" in line]
    # One line per distinct message (the fits differ only in how many
    # items vary among their models), not one per fit.
    assert 1 <= len(lines) <= 2 and len(set(lines)) == len(lines), lines


def test_evaluate_with_another_predictor_reports_it_and_auto_choices(capsys):
    out = run_json(capsys, "evaluate", "helm_lite", "--predictor", "auto", "--k-max", "2",
                   "--objectives", "mi", "--folds", "3", "--quiet")
    assert out["predictor"] == "auto"
    assert len(out["choices"]["mi"]) == 3 and all(len(f) == 2 for f in out["choices"]["mi"])
    code, text, _ = run(capsys, "evaluate", "helm_lite", "--predictor", "gp", "--k-max", "1",
                        "--objectives", "mi", "--folds", "3", "--quiet")
    assert code == 0 and "predictor gp" in text
    code, _, err = run(capsys, "evaluate", "helm_lite", "--protocol", "complete",
                       "--predictor", "gp")
    assert code != 0 and "--predictor is not supported by the complete protocol" in err


def test_the_old_level_flag_still_works_and_says_what_it_is_now(capsys, tmp_path):
    """--level meant plan kind in `plan` and coverage elsewhere: now --kind and --coverage."""
    new = run_json(capsys, "predict", "helm_lite", "--observed", OBSERVED_SPEC, "--coverage",
                   0.5, "--method", "gaussian")
    assert main(["predict", "helm_lite", "--observed", OBSERVED_SPEC, "--level", "0.5",
                 "--method", "gaussian", "--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out) == new
    assert "--level is now --coverage" in out.err
    assert main(["plan", "helm_lite", "--level", "benchmarks", "-k", "2", "-o",
                 str(tmp_path / "p.json")]) == 0
    assert "--level is now --kind" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["select", "helm_lite", "-k", "five"], "argument -k: expected a number of benchmarks "
                                            "(a positive whole number) or 'auto'; got 'five'"),
    (["select", "helm_lite", "-k", "0"], "or 'auto'; got '0'"),
    (["predict", "helm_lite", "--observed", "MMLU=0.5", "--coverage", "most"],
     "argument --coverage: must be a number in (0, 1); got 'most'"),
])
def test_a_bad_number_says_what_is_expected(capsys, argv, message):
    """argparse named the type function instead: "invalid _k_value value: 'five'"."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "_k_value" not in err and "_fraction" not in err


def test_a_plan_or_other_json_given_as_data_is_named_for_what_it_is(tmp_path, capsys):
    """A plan given as DATA read as a CSV: "line 2 has 2 fields; the header has 1"."""
    plan = tmp_path / "plan.json"
    assert main(["plan", "helm_lite", "-k", "2", "-o", str(plan)]) == 0
    capsys.readouterr()
    assert main(["predict", str(plan), "--observed", "MMLU=0.5"]) == 1
    assert f"{plan}: is a benchsel plan, not a table of scores; give it with --plan" in \
        capsys.readouterr().err
    other = tmp_path / "scores.csv"
    other.write_text('[{"model": "a", "MMLU": 0.5}]')
    assert main(["select", str(other), "-k", "1"]) == 1
    assert f"{other}: is JSON, not a table of scores" in capsys.readouterr().err


def test_em_failing_to_converge_is_said_once_with_what_to_do(capsys):
    """Each fold's EM fit failing to converge warned with its own figures, so the CLI
    printed it again and again, with no advice."""
    import warnings

    from benchsel.cli import _WarningPrinter
    from benchsel.gaussian.covariance import ConvergenceWarning, em_covariance

    z = np.random.default_rng(0).normal(size=(30, 6))
    z[np.random.default_rng(1).random(z.shape) < 0.5] = np.nan
    printer = _WarningPrinter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for max_iter in (1, 2, 3):
            em_covariance(z, max_iter=max_iter)
    said = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len({str(w.message) for w in said}) == 3  # three fits, three sets of figures
    for w in said:
        printer(w.message, w.category, w.filename, w.lineno)
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "--covariance pairwise" in lines[0]


def test_evaluates_first_line_names_three_choices_and_counts_the_rest(capsys):
    """On a large board auto's choices over folds and k made the first line ~7,000
    characters; --json keeps them all."""
    argv = ["evaluate", "helm_lite", "--protocol", "cv", "--k-max", "3", "--folds", "3"]
    assert main(argv) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert main([*argv, "--json"]) == 0
    choices = json.loads(capsys.readouterr().out)["choices"]
    made = {m for folds in choices.values() for fold in folds for m in fold if m}
    named = first.split("(chose ", 1)[1]
    assert len(made) > 3  # the case: more choices than the line names
    assert named.split(";")[0].count("x, ") == 2  # three named, then the count
    assert f"; {len(made) - 3} other choices" in named and "listed by --json" in named
    assert len(first) < 400
