"""Per-column score transforms applied before the Gaussian model (Smola 2026, App. K).

``logit``: for a column with non-negative scores and training maximum
``s_max``, ``f = logit(clip(s / s_max, eps, 1 - eps))``; the inverse is
``sigmoid(f) * s_max``, which caps predictions at the training maximum.
Columns with negative scores (or all zeros) are left as they are.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from . import names

__all__ = ["TRANSFORMS", "ScoreTransform", "make_transform"]

TRANSFORMS = names.TRANSFORMS


@dataclass(frozen=True)
class ScoreTransform:
    """A fitted per-column transform; ``scale`` is NaN where a column is untouched."""

    name: str
    scale: np.ndarray
    eps: float = 1e-3

    @property
    def active(self) -> np.ndarray:
        return ~np.isnan(self.scale)

    def forward(self, values: np.ndarray, columns=None) -> np.ndarray:
        """Scores to latent values (NaN stays NaN)."""
        scale = self.scale if columns is None else self.scale[columns]
        out = np.array(values, dtype=float, copy=True)
        on = ~np.isnan(scale)
        if on.any():
            from scipy.special import logit  # here: `select` without a transform skips it

            frac = np.clip(out[..., on] / scale[on], self.eps, 1 - self.eps)
            out[..., on] = logit(frac)
        return out

    def inverse(self, latent: np.ndarray, columns=None) -> np.ndarray:
        """Latent values back to scores."""
        scale = self.scale if columns is None else self.scale[columns]
        out = np.array(latent, dtype=float, copy=True)
        on = ~np.isnan(scale)
        if on.any():
            from scipy.special import expit

            out[..., on] = expit(out[..., on]) * scale[on]
        return out

    def slope(self, latent: np.ndarray, columns=None) -> np.ndarray:
        """d score / d latent at ``latent`` (for delta-method standard deviations)."""
        scale = self.scale if columns is None else self.scale[columns]
        out = np.ones_like(np.asarray(latent, dtype=float))
        on = ~np.isnan(scale)
        if on.any():
            from scipy.special import expit

            p = expit(latent[..., on])
            out[..., on] = p * (1 - p) * scale[on]
        return out


def make_transform(name: str, values: np.ndarray, eps: float = 1e-3) -> ScoreTransform:
    """Fit the transform ``name`` (``"none"`` or ``"logit"``) on training ``values``."""
    if name not in TRANSFORMS:
        raise ValueError(f"transform must be one of {', '.join(TRANSFORMS)}; got {name!r}")
    n = values.shape[1]
    scale = np.full(n, np.nan)
    if name == "logit":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns stay untouched
            top = np.nanmax(values, axis=0)
            low = np.nanmin(values, axis=0)
        scale = np.where((low >= 0) & (top > 0), top, np.nan)
    return ScoreTransform(name, scale, eps)
