"""The report's figures, each drawn from the same results the CLI prints.

Every function takes plain results (a :class:`~benchsel.matrix.ScoreMatrix`,
a ``to_dict()`` payload or a result object) and returns a matplotlib
``Figure``; none reads files or fits anything. matplotlib is imported on
first use, with the non-interactive Agg backend, so that the CLI starts fast
and a machine with no display can draw.
"""

from __future__ import annotations

import io

import numpy as np

__all__ = [
    "pyplot",
    "coverage_figure",
    "discover_figure",
    "encode",
    "pattern_figure",
    "prediction_figure",
    "r2_figure",
    "spectrum_figure",
    "stability_figure",
    "style",
]

#: Longest label drawn on an axis; longer names are shortened with an ellipsis.
LABEL_CHARS = 32
#: Most rows labelled one by one (benchmarks in a heatmap or a prediction plot).
MAX_ROWS = 40
_COLORS = {"mi": "#1f77b4", "entropy": "#2ca02c", "random": "#7f7f7f"}


def pyplot():
    """matplotlib.pyplot on the Agg backend (imported on first use)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def style():
    """A matplotlib ``rc_context`` for every figure of the report.

    Names from the user's data are drawn as they are: ``$`` starts no
    mathtext and TeX is never called.
    """
    import matplotlib

    return matplotlib.rc_context({"text.parse_math": False, "text.usetex": False,
                                  "font.size": 9, "axes.spines.top": False,
                                  "axes.spines.right": False, "figure.dpi": 100})


def _short(name: str) -> str:
    name = str(name)
    return name if len(name) <= LABEL_CHARS else name[: LABEL_CHARS - 1] + "\u2026"


def encode(fig, fmt: str = "png") -> bytes:
    """The figure as PNG or SVG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, bbox_inches="tight")
    return buf.getvalue()


def pattern_figure(scores):
    """Which scores the leaderboard has: models x benchmarks, both sorted by count."""
    plt = pyplot()
    observed = scores.observed
    rows = np.argsort(-observed.sum(axis=1), kind="stable")
    cols = np.argsort(-observed.sum(axis=0), kind="stable")
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    ax.imshow(observed[np.ix_(rows, cols)].T, aspect="auto", cmap="Greys",
              interpolation="nearest", vmin=0, vmax=1)
    ax.set_xlabel(f"models ({scores.n_models}, most scores first)")
    ax.set_ylabel(f"benchmarks ({scores.n_items})")
    if scores.n_items <= MAX_ROWS:
        ax.set_yticks(range(scores.n_items),
                      labels=[_short(scores.items[j]) for j in cols], fontsize=7)
    else:
        ax.set_yticks([])
    ax.set_title(f"Observed scores (black): {100 * scores.observed_fraction:.1f}% of "
                 f"{scores.n_models} x {scores.n_items}")
    return fig


def spectrum_figure(spec: dict, shown: int = 30):
    """Residual variance after k benchmarks: greedy picks vs the eigenvalue bound."""
    plt = pyplot()
    greedy = np.asarray(spec["greedy_residual"])
    bound = np.asarray(spec["residual_fraction"])
    k = np.arange(1, min(len(greedy), shown) + 1)
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    ax.plot(k, greedy[: k.size], "o-", label="greedy entropy picks", color=_COLORS["mi"])
    ax.plot(k, bound[: k.size], "s--", label="eigenvalue bound (best any k could do)",
            color="#d62728", markersize=4)
    ax.axhline(0.1, color="#999999", lw=0.8, ls=":")
    ax.set_xlabel("benchmarks run (k)")
    ax.set_ylabel("variance left unexplained")
    ax.set_ylim(0, 1.02)
    ax.legend(frameon=False)
    ax.set_title("How many benchmarks the leaderboard needs")
    return fig


def _rows(cv: dict, objective: str) -> list[dict]:
    return sorted((r for r in cv["results"] if r["objective"] == objective),
                  key=lambda r: r["k"])


def _values(rows: list[dict], key: str) -> np.ndarray:
    return np.array([np.nan if r[key] is None else r[key] for r in rows], dtype=float)


def r2_figure(cv: dict):
    """Held-out R^2 against k for every objective of a ``cv`` payload (mean +- fold SD)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for objective in dict.fromkeys(r["objective"] for r in cv["results"]):
        rows = _rows(cv, objective)
        k = np.array([r["k"] for r in rows])
        mean, sd = _values(rows, "r2_mean"), _values(rows, "r2_std")
        color = _COLORS.get(objective)
        ax.plot(k, mean, "o-", label=objective, color=color, markersize=4)
        ax.fill_between(k, mean - sd, mean + sd, color=color, alpha=0.15, lw=0)
    ax.set_xlabel("benchmarks run (k)")
    ax.set_ylabel("R\u00b2 on held-out models")
    ax.legend(frameon=False)
    ax.set_title(f"Prediction quality, {cv['folds']}-fold cross-validation over models")
    return fig


def coverage_figure(cv: dict, objective: str = "mi", level: float = 0.9):
    """Coverage of the nominal intervals against k, calibrated and not."""
    plt = pyplot()
    rows = _rows(cv, objective)
    k = np.array([r["k"] for r in rows])
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    ax.axhspan(100 * (level - 0.05), 100 * (level + 0.05), color="#2ca02c", alpha=0.12,
               lw=0, label="target band")
    ax.axhline(100 * level, color="#2ca02c", lw=0.8)
    ax.plot(k, 100 * _values(rows, "interval_coverage"), "o-", color=_COLORS["mi"],
            label="calibrated (what benchsel reports)")
    ax.plot(k, 100 * _values(rows, "uncalibrated_coverage"), "s--", color="#ff7f0e",
            markersize=4, label="Gaussian variance alone")
    ax.set_xlabel("benchmarks run (k)")
    ax.set_ylabel(f"held-out cells inside the {100 * level:g}% interval (%)")
    ax.set_ylim(min(50.0, ax.get_ylim()[0]), 100.5)
    ax.legend(frameon=False, loc="lower right")
    ax.set_title(f"Do the error bars hold? ({objective} selections)")
    return fig


def stability_figure(orders: list[list[str]], max_rows: int = 25):
    """Position of each benchmark in every fold's selection order (blank: not picked)."""
    plt = pyplot()
    names = list(dict.fromkeys(name for order in orders for name in order))
    position = np.full((len(names), len(orders)), np.nan)
    for f, order in enumerate(orders):
        for t, name in enumerate(order):
            position[names.index(name), f] = t + 1
    # Most often and earliest picked first.
    key = np.nan_to_num(position, nan=len(orders[0]) + 1 if orders else 1).mean(axis=1)
    rows = np.argsort(key, kind="stable")[:max_rows]
    fig, ax = plt.subplots(figsize=(6.5, 0.8 + 0.24 * len(rows)))
    image = ax.imshow(position[rows], aspect="auto", cmap="viridis_r", interpolation="nearest")
    ax.set_yticks(range(len(rows)), labels=[_short(names[r]) for r in rows], fontsize=7)
    ax.set_xticks(range(len(orders)), labels=[str(f + 1) for f in range(len(orders))])
    ax.set_xlabel("fold")
    fig.colorbar(image, ax=ax, label="pick number")
    ax.set_title("Selection order across folds (MI)")
    return fig


def discover_figure(discovered: dict, labelled: int = 5):
    """Novelty against information about the rest, one point per benchmark."""
    plt = pyplot()
    rows = discovered["benchmarks"]
    novelty = np.array([r["novelty"] for r in rows], dtype=float)
    information = np.array([r["information"] for r in rows], dtype=float)
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    ax.scatter(novelty, information, s=18, color=_COLORS["mi"], alpha=0.8)
    marked = {r["benchmark"] for r in rows if r["novelty_rank"] <= labelled
              or r["mi_rank"] <= labelled or r.get("new")}
    for r, x, y in zip(rows, novelty, information):
        if r["benchmark"] in marked:
            ax.annotate(_short(r["benchmark"]), (x, y), fontsize=7, xytext=(3, 3),
                        textcoords="offset points")
    ax.set_xlabel("novelty (share of its variance the others do not explain)")
    ax.set_ylabel("information about the rest (nats)")
    ax.set_xlim(-0.02, 1.02)
    ax.set_title("What each benchmark adds")
    return fig


#: How many times wider one benchmark's leaderboard range may be than another's before
#: the prediction figure draws each on its own scale.
OWN_SCALES = 10


def prediction_figure(prediction, scores, row: int = 0):
    """A new model's predicted scores with intervals, over the leaderboard's spread.

    Benchmarks whose leaderboard ranges differ more than :data:`OWN_SCALES`-fold
    (a 0-100 score beside an Elo rating of 3000) are each drawn on their own
    scale: 0 at the weakest source model, 1 at the strongest, the row's label
    giving the predicted score itself. On one shared axis the small ones were dots.
    """
    plt = pyplot()
    items = list(prediction.items)
    observed = prediction.observed[row]
    # Observed benchmarks first, then the predicted ones; at most MAX_ROWS rows.
    shown = (list(np.flatnonzero(observed)) + list(np.flatnonzero(~observed)))[:MAX_ROWS]
    board = {name: j for j, name in enumerate(scores.items)}
    sources = {}
    for j in shown:
        column = board.get(items[j])
        values = np.empty(0) if column is None else scores.values[:, column]
        values = values[~np.isnan(values)]
        if values.size:
            sources[j] = values
    spans = [np.ptp(v) for v in sources.values() if np.ptp(v) > 0]
    own = len(spans) > 1 and max(spans) > OWN_SCALES * min(spans)

    def at(j, value):
        if not own:
            return value
        values = sources.get(j)
        if values is None or np.ptp(values) == 0:
            return np.nan
        return (value - values.min()) / np.ptp(values)

    fig, ax = plt.subplots(figsize=(7.5, 1.0 + 0.28 * len(shown)))
    for y, j in enumerate(shown):
        if j in sources:
            low, q1, q3, high = np.percentile(sources[j], [0, 25, 75, 100])
            ax.plot([at(j, low), at(j, high)], [y, y], color="#cccccc", lw=1, zorder=1)
            ax.plot([at(j, q1), at(j, q3)], [y, y], color="#aaaaaa", lw=5, zorder=1)
        mean = prediction.mean[row, j]
        if observed[j]:
            ax.plot(at(j, mean), y, "x", color="#d62728", markersize=7, zorder=3)
        else:
            ax.plot([at(j, prediction.low[row, j]), at(j, prediction.high[row, j])], [y, y],
                    color=_COLORS["mi"], lw=1.5, zorder=2)
            ax.plot(at(j, mean), y, "o", color=_COLORS["mi"], markersize=4, zorder=3)
    labels = [_short(items[j]) + (f"  {prediction.mean[row, j]:.4g}" if own else "")
              for j in shown]
    ax.set_yticks(range(len(shown)), labels=labels, fontsize=7)
    ax.invert_yaxis()
    what = ("each benchmark on its own scale: 0 = weakest, 1 = strongest source model"
            if own else "score")
    ax.set_xlabel(f"{what}\n(grey: leaderboard range and middle half; red x: run; "
                  f"blue: predicted with {100 * prediction.level:g}% interval)")
    title = f"{_short(prediction.models[row])} against the leaderboard"
    if len(shown) < len(items):
        title += f"\n(the first {len(shown)} of {len(items)} benchmarks: run, then predicted)"
    ax.set_title(title)
    return fig
