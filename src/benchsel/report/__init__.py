"""One page that shows what a leaderboard tells you (``benchsel report``)."""

from .build import Report, Section, Table, build_report

__all__ = ["Report", "Section", "Table", "build_report"]
