"""Leaderboards with known truth, made to test rules on boards they were not tuned on.

Every rule of the default predictor and its calibration was chosen while
looking at the bundled boards, so those boards cannot say whether a rule
holds on the next one. :func:`synthetic_board` draws a board from a
generative model whose parts are what real boards have and what broke
intervals on boards the project had never seen: a few factors with a
dominant general strength, heavy-tailed noise (Student t), columns run on
two to ten models, models at the top pulling ahead on some benchmarks (a
strength drift the linear fit cannot see), scores stuck at a ceiling, and
columns on mixed scales (fractions, percentages, Elo-like ratings).
:data:`SYNTHETIC_BOARDS` names the set the held-out harness
(``benchmarks/held_out_boards.py``) and the tests run.
"""

from __future__ import annotations

import numpy as np

from ..matrix import ScoreMatrix

__all__ = ["SYNTHETIC_BOARDS", "synthetic_board"]

#: Named boards: keyword arguments of :func:`synthetic_board` (each seeded).
SYNTHETIC_BOARDS = {
    "lowrank": dict(n_models=120, n_items=30, rank=3, seed=1),
    "heavy_tails": dict(n_models=120, n_items=30, rank=3, noise_df=2.5, noise=0.45, seed=2),
    "sparse": dict(n_models=90, n_items=40, rank=4, missing=0.3, sparse_columns=8, seed=3),
    "drift": dict(n_models=120, n_items=30, rank=3, top_drift=1.5, seed=4),
    "ceiling": dict(n_models=120, n_items=30, rank=3, ceiling=0.4, seed=5),
    "mixed": dict(n_models=100, n_items=30, rank=3, mixed_scales=True, seed=6),
    "everything": dict(n_models=85, n_items=48, rank=4, noise_df=3.0, missing=0.35,
                       sparse_columns=6, top_drift=1.0, ceiling=0.25, mixed_scales=True,
                       seed=7),
}


def synthetic_board(n_models: int = 100, n_items: int = 30, *, rank: int = 3,
                    noise: float = 0.35, noise_df: float = 4.0, missing: float = 0.0,
                    sparse_columns: int = 0, top_drift: float = 0.0, ceiling: float = 0.0,
                    mixed_scales: bool = False, seed=0, name: str = "synthetic"
                    ) -> ScoreMatrix:
    """A random leaderboard drawn from a known low-rank model.

    Each model has a general strength and ``rank - 1`` other traits (standard
    normal); each benchmark loads on strength (0.6 to 1.0) and on the others
    (normal, SD 0.4). A score is the loadings times the traits plus Student-t
    noise, then put on the benchmark's scale.

    Parameters
    ----------
    n_models, n_items : int
    rank : int, default 3
        Traits per model (strength included).
    noise : float, default 0.35
        Scale of the noise, in units of a trait.
    noise_df : float, default 4
        Degrees of freedom of the noise (small = heavy tails; ``inf`` normal).
    missing : float, default 0
        Share of the other cells left unobserved at random.
    sparse_columns : int, default 0
        The last ``sparse_columns`` benchmarks are run on 2 to 10 models each.
    top_drift : float, default 0
        Models above the 90th percentile of strength gain ``top_drift`` times
        their excess strength on half the benchmarks: the strongest pull
        ahead where a linear fit expects them not to.
    ceiling : float, default 0
        Share of benchmarks that are easy percentages: most strong models
        score 100 (rounded to one decimal).
    mixed_scales : bool, default False
        Benchmarks on fractions (0-1), percentages (0-100) and ratings (around
        1200, SD 150) in turn; otherwise all percentages.
    seed : int or sequence, default 0
    name : str, default "synthetic"
        The board's ``source``.

    Returns
    -------
    ScoreMatrix
        Models ``m000``..., benchmarks ``b00``... (``source`` = ``name``).
    """
    if n_models < 2 or n_items < 2 or rank < 1:
        raise ValueError("a board needs 2 or more models and items, and rank >= 1; got "
                         f"{n_models} x {n_items}, rank {rank}")
    if not 0 <= missing < 1 or not 0 <= ceiling <= 1 or not 0 <= sparse_columns < n_items:
        raise ValueError("missing must be in [0, 1), ceiling in [0, 1], sparse_columns in "
                         f"[0, n_items); got {missing}, {ceiling}, {sparse_columns}")
    rng = np.random.default_rng(seed)
    traits = rng.standard_normal((n_models, rank))
    loadings = np.column_stack([rng.uniform(0.6, 1.0, n_items),
                                0.4 * rng.standard_normal((n_items, rank - 1))])
    t = rng.standard_t(noise_df, (n_models, n_items)) if np.isfinite(noise_df) \
        else rng.standard_normal((n_models, n_items))
    latent = traits @ loadings.T + noise * t
    if top_drift:
        strength = traits[:, 0]
        excess = np.maximum(strength - np.quantile(strength, 0.9), 0.0)
        pulled = rng.permutation(n_items)[: n_items // 2]
        latent[:, pulled] += top_drift * excess[:, None]
    values = np.empty_like(latent)
    easy = rng.random(n_items) < ceiling
    for j in range(n_items):
        scale = ("fraction", "percent", "rating")[j % 3] if mixed_scales else "percent"
        z = latent[:, j] / latent[:, j].std()
        if easy[j]:  # a benchmark most strong models solve completely
            values[:, j] = np.round(np.minimum(100.0, 100 / (1 + np.exp(-(2.5 + 1.5 * z)))
                                               * 1.03), 1)
        elif scale == "fraction":
            values[:, j] = 1 / (1 + np.exp(-(rng.normal(0, 0.8) + 1.2 * z)))
        elif scale == "percent":
            values[:, j] = 100 / (1 + np.exp(-(rng.normal(0, 0.8) + 1.2 * z)))
        else:
            values[:, j] = 1200 + 150 * z
    hidden = rng.random(values.shape) < missing
    for j in range(n_items - sparse_columns, n_items):
        hidden[:, j] = True
        hidden[rng.choice(n_models, int(rng.integers(2, 11)), replace=False), j] = False
    # Every model keeps a score on a benchmark that is not sparse (a board has no
    # empty rows).
    for i in np.flatnonzero(hidden.all(axis=1)):
        hidden[i, rng.integers(n_items - sparse_columns)] = False
    return ScoreMatrix(np.where(hidden, np.nan, values), [f"m{i:03d}" for i in range(n_models)],
                       [f"b{j:02d}" for j in range(n_items)], source=name)

