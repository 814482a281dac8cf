"""The fitted models: the Gaussian model (fit, select, predict) with its calibrator,
the result objects it returns, and two models compared.

Question-level methods and their calibrated wrapper are :mod:`benchsel.coreset`.
"""

from .calibrator import GaussianCalibrator
from .gaussian import CALIBRATIONS, GaussianModel
from .results import Prediction, Selection

__all__ = ["CALIBRATIONS", "GaussianCalibrator", "GaussianModel", "Prediction", "Selection"]
