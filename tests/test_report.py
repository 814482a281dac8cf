"""``benchsel report``: the HTML page, its plots, and the page in a real browser.

The browser test drives Debian's Chromium through chromedriver (Selenium); it
is skipped where either is missing. The README's test command installs both.
"""

from __future__ import annotations

import json
import re
import shutil
from html import unescape
from pathlib import Path

import numpy as np
import pytest

from benchsel import load_dataset
from benchsel.cli import main
from benchsel.report import build_report

HOSTILE = "<script>alert(1)</script>"
DOLLAR = "$x$ & \"quoted\""


def run(capsys, *args):
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def embedded_json(page: str) -> dict:
    block = re.search(r'<script type="application/json" id="benchsel-data">(.*?)</script>',
                      page, re.S)
    assert block is not None
    return json.loads(block.group(1))


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """helm_lite with a benchmark and a model renamed to markup, reported with a new model."""
    root = tmp_path_factory.mktemp("report")
    helm = load_dataset("helm_lite")
    items = list(helm.items)
    items[items.index("MMLU")] = HOSTILE
    items[items.index("MATH")] = DOLLAR
    models = list(helm.models)
    models[0] = HOSTILE
    board = helm._replace(items=items, models=models)
    data = root / "hostile.csv"
    board.to_frame().to_csv(data)
    # The new model: a real model's scores on two benchmarks, the markup one included.
    row = helm.values[3]
    observed = f"{HOSTILE}={row[helm.item_indices(['MMLU'])[0]]:.4f}," \
               f"GSM8K={row[helm.item_indices(['GSM8K'])[0]]:.4f}"
    page, plots = root / "report.html", root / "plots"
    code = main(["report", str(data), "-o", str(page), "--plots", str(plots),
                 "--observed", observed, "--quiet", "--folds", "3", "--k-max", "5"])
    assert code == 0
    return {"data": data, "page": page, "plots": plots, "html": page.read_text()}


def test_names_are_escaped_everywhere(hostile):
    html = hostile["html"]
    assert HOSTILE not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    # Only the JSON data block is a script element, and it is not executable.
    assert re.findall(r"<script\b[^>]*>", html) == [
        '<script type="application/json" id="benchsel-data">']
    payload = embedded_json(html)
    assert HOSTILE in payload["selection"]["selected"] + [
        r["benchmark"] for r in payload["discover"]["benchmarks"]]
    assert DOLLAR in [r["benchmark"] for r in payload["discover"]["benchmarks"]]


def test_page_is_self_contained(hostile):
    html = hostile["html"]
    sources = re.findall(r'\b(?:src|href)="([^"]*)"', html)
    assert sources, "the page has figures"
    assert all(s.startswith(("data:image/png;base64,", "#")) for s in sources)
    assert "<link" not in html
    assert "default-src 'none'" in html  # the Content-Security-Policy


def test_every_section_and_figure(hostile):
    html = hostile["html"]
    for key in ("overview", "spectrum", "selection", "cv", "discover", "audit", "prediction"):
        assert f'<section id="{key}">' in html
    assert "Not available" not in html
    names = sorted(p.stem for p in hostile["plots"].glob("*.png"))
    assert names == sorted(["pattern", "spectrum", "r2_vs_k", "coverage", "stability",
                            "discover", "prediction_1"])
    assert sorted(p.stem for p in hostile["plots"].glob("*.svg")) == names
    for name in names:
        assert (hostile["plots"] / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f'id="fig-{name}"' in html


def test_tables_come_from_the_commands_json(hostile, capsys):
    """The embedded sections are what 'discover --json' and 'audit --json' print."""
    payload = embedded_json(hostile["html"])
    code, out, err = run(capsys, "discover", hostile["data"], "--json")
    assert code == 0, err
    assert json.loads(out)["benchmarks"] == payload["discover"]["benchmarks"]
    code, out, err = run(capsys, "audit", hostile["data"], "--json")
    assert code == 0, err
    assert json.loads(out)["cells"] == payload["audit"]["cells"]
    # The table shows the same numbers: the most novel benchmark's novelty, as printed.
    first = payload["discover"]["benchmarks"][0]
    assert f"<td>{first['benchmark']}</td><td class=\"num\">{first['novelty']:.4g}</td>" \
        in unescape(hostile["html"]).replace("\n", "")


def test_new_model_section_predicts_what_was_not_run(hostile):
    prediction = embedded_json(hostile["html"])["prediction"]
    rows = prediction["predictions"]
    run_in = {r["benchmark"] for r in rows if r["observed"]}
    assert run_in == {HOSTILE, "GSM8K"}
    assert len(rows) == 11
    for r in rows:
        if not r["observed"]:
            assert r["low"] <= r["mean"] <= r["high"] and r["std"] > 0


def test_sections_that_cannot_run_say_why(tmp_path, capsys):
    # arena_hard has one score column: nothing to select or cross-validate.
    page = tmp_path / "arena.html"
    code, out, err = run(capsys, "report", "arena_hard", "-o", page, "--json", "--quiet")
    assert code == 0, err
    summary = json.loads(out)
    assert {"selection", "cv"} <= set(summary["skipped"])
    html = page.read_text()
    assert html.count("Not available for this leaderboard") == len(summary["skipped"])
    assert '<section id="overview">' in html and 'id="fig-pattern"' in html


def test_report_never_overwrites_its_input(tmp_path, capsys):
    data = tmp_path / "board.csv"
    load_dataset("helm_lite").to_frame().to_csv(data)
    before = data.read_bytes()
    code, _, err = run(capsys, "report", data, "-o", data, "--quiet")
    assert code == 1 and "refusing to overwrite an input file" in err
    assert data.read_bytes() == before


def test_library_report_matches_a_direct_fit():
    """The selection shown is what select -k 5 picks on the same data."""
    from benchsel.models import GaussianModel

    helm = load_dataset("helm_lite")
    report = build_report(helm, dataset="helm_lite", folds=3, k_max=4)
    try:
        direct = GaussianModel(calibration="none").fit(helm).select(5, objective="mi")
        assert report.payload["selection"]["selected"] == direct.items
        cv = report.payload["cv"]
        assert cv["folds"] == 3 and max(r["k"] for r in cv["results"]) == 4
        assert np.isfinite([r["r2_mean"] for r in cv["results"]]).all()
    finally:
        report.close()


def test_the_report_fits_with_the_transform_it_is_given(tmp_path, capsys):
    """report --transform logit was accepted and silently ignored: the page showed the
    untransformed selection (MedQA, GSM8K, OpenbookQA where select gives GSM8K, MATH,
    MMLU)."""
    from benchsel.models import GaussianModel

    helm = load_dataset("helm_lite")
    direct = GaussianModel(transform="logit", calibration="none").fit(helm).select(
        3, objective="mi")
    plain = GaussianModel(calibration="none").fit(helm).select(3, objective="mi")
    assert direct.items != plain.items  # else this test could not tell them apart
    code, _, err = run(capsys, "report", "helm_lite", "-o", tmp_path / "r.html", "-k", 3,
                       "--folds", 2, "--k-max", 2, "--transform", "logit", "--quiet")
    assert code == 0, err
    page = (tmp_path / "r.html").read_text()
    start = page.index('<section id="selection">')
    section = unescape(page[start:page.index("</section>", start)])
    assert all(name in section for name in direct.items), section
    assert not all(name in section for name in plain.items)


# ----------------------------------------------------------------- browser
def _browser(tmp_path: Path):
    """A headless Chromium driven by chromedriver, or a skip saying what is missing."""
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    binary = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
                   if shutil.which(n)), None)
    driver = shutil.which("chromedriver")
    if binary is None or driver is None:
        pytest.skip("Chromium and chromedriver are not installed "
                    "(Debian: apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--window-size=1200,900",
                 f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(driver))


@pytest.mark.slow
def test_report_renders_in_chromium(hostile, tmp_path):
    from selenium.common.exceptions import NoAlertPresentException

    browser = _browser(tmp_path)
    try:
        browser.get(hostile["page"].resolve().as_uri())
        # A name that ran as a script would have opened an alert.
        with pytest.raises(NoAlertPresentException):
            browser.switch_to.alert.text  # noqa: B018 - reading it is the check
        errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
        images = browser.execute_script(
            "return Array.from(document.images).map(i => ({id: i.id, done: i.complete,"
            " width: i.naturalWidth, shown: i.getBoundingClientRect().height}))")
        assert len(images) == len(list(hostile["plots"].glob("*.png")))
        for image in images:
            assert image["done"] and image["width"] > 100 and image["shown"] > 50, image
        text = browser.execute_script("return document.body.innerText")
        assert HOSTILE in text and DOLLAR in text
        height = browser.execute_script("return document.body.scrollHeight")
        browser.set_window_size(1200, min(height + 50, 16000))
        shot = tmp_path / "report.png"
        assert browser.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000
    finally:
        browser.quit()


def test_report_from_a_saved_plan(tmp_path, capsys):
    """--plan without DATA: the plan's leaderboard, the new model predicted by the plan."""
    plan = tmp_path / "plan.json"
    code, _, err = run(capsys, "plan", "helm_lite", "-k", 3, "-o", plan)
    assert code == 0, err
    chosen = json.loads(plan.read_text())["benchmarks"]["selection"]["selected"]
    helm = load_dataset("helm_lite")
    row = helm.values[5]
    observed = ",".join(f"{name}={row[helm.item_indices([name])[0]]:.4f}" for name in chosen)
    page = tmp_path / "plan.html"
    code, out, err = run(capsys, "report", "--plan", plan, "--observed", observed, "-o", page,
                         "--quiet", "--folds", 3, "--k-max", 4, "--json")
    assert code == 0, err
    payload = embedded_json(page.read_text())
    assert payload["overview"]["models"] == helm.n_models

    code, out, err = run(capsys, "predict", "--plan", plan, "--observed", observed, "--json")
    assert code == 0, err
    shown = [{k: v for k, v in r.items() if k != "observed"}
             for r in payload["prediction"]["predictions"] if not r["observed"]]
    assert shown == json.loads(out)["predictions"]
    assert {r["benchmark"] for r in payload["prediction"]["predictions"]
            if r["observed"]} == set(chosen)
    with pytest.raises(SystemExit) as exit_:
        run(capsys, "report", "--plan", plan, "-o", tmp_path / "x.html")
    assert exit_.value.code == 2 and "--observed" in capsys.readouterr().err


def test_a_new_model_figure_that_shows_part_of_the_board_says_so():
    from benchsel import GaussianModel
    from benchsel.report import figures

    board = load_dataset("mteb")
    model = GaussianModel().fit(board)
    pred = model.predict({board.items[0]: float(np.nanmean(board.values[:, 0]))},
                         method="gaussian")
    fig = figures.prediction_figure(pred, board)
    title = fig.axes[0].get_title()
    assert f"the first {figures.MAX_ROWS} of {len(pred.items)} benchmarks" in title
    figures.pyplot().close(fig)


def test_the_page_states_the_whole_commands_time(tmp_path, capsys):
    """The new model's prediction (auto's first choice on this board: seconds) counts;
    the page once said 5.5 s for a command of 133 s."""
    page = tmp_path / "timed.html"
    code, out, err = run(capsys, "report", "helm_lite", "--observed", "GSM8K=0.6,MMLU=0.7",
                         "-o", page, "--quiet", "--folds", 3, "--k-max", 2, "--json")
    assert code == 0, err
    shown = float(re.search(r"computed in ([0-9.]+) s", page.read_text()).group(1))
    total = json.loads(out)["seconds"]
    assert 0.9 * total - 0.1 <= shown <= total + 0.05


def test_benchmarks_of_other_scales_are_each_drawn_on_their_own():
    """A rating of thousands beside 0-1 scores put every score on one axis 0-3000, so
    the 0-1 ones were dots."""
    from benchsel import GaussianModel
    from benchsel.report import figures

    helm = load_dataset("helm_lite")
    values = helm.values.copy()
    values[:, helm.items.index("MATH")] *= 3000  # an Elo-like rating
    board = helm._replace(values=values)
    pred = GaussianModel().fit(board).predict({"MMLU": 0.7}, method="gaussian")
    fig = figures.prediction_figure(pred, board)
    ax = fig.axes[0]
    assert "own scale" in ax.get_xlabel()
    xs = np.concatenate([line.get_xdata() for line in ax.get_lines()]).astype(float)
    assert np.nanmin(xs) > -3 and np.nanmax(xs) < 4  # positions in the sources' range
    labels = [t.get_text() for t in ax.get_yticklabels()]
    row = pred.items.index("MATH")
    assert any(label.startswith("MATH") and f"{pred.mean[0, row]:.4g}" in label
               for label in labels)
    figures.pyplot().close(fig)
    # One shared scale (every score in [0, 1]) keeps the scores themselves on the axis.
    fig = figures.prediction_figure(GaussianModel().fit(helm).predict(
        {"MMLU": 0.7}, method="gaussian"), helm)
    assert fig.axes[0].get_xlabel().startswith("score")
    figures.pyplot().close(fig)


def test_the_report_headlines_no_benchmark_run_on_a_handful_of_models():
    """MERGED's MT-Bench columns (5 models each) top its novelty ranking for want of
    pairs; the report headlined one and dropped discover's marker."""
    from benchsel.analyses.discover import FEW_MODELS
    from benchsel.report.build import Section, _Builder, _discover

    merged = load_dataset("merged")
    builder, section = _Builder(total=1), Section("discover", "Discover")
    _discover(builder, section, merged, bootstrap=0, covariance="auto", seed=0)
    rows = builder.payload["discover"]["benchmarks"]
    few = [r["benchmark"] for r in rows if r["observed_models"] < FEW_MODELS]
    assert few and rows[0]["benchmark"] in few  # the case: a sparse column ranks first
    headline = section.text[0].split("Most novel: ")[1].split(" (")[0]
    assert headline not in few
    assert f"ranked above it on fewer than {FEW_MODELS} models" in section.text[0]
    table = section.tables[0]
    names = [row[1] for row in table.rows]
    assert all((name.endswith(" *")) == (name.removesuffix(" *") in few) for name in names)
    from benchsel.report import figures

    for fig in builder.figures.values():
        figures.pyplot().close(fig)
