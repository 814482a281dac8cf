"""Diagnostics and evaluation of fitted models and selections."""

from .spectrum import Spectrum, spectrum

__all__ = ["Spectrum", "spectrum"]
