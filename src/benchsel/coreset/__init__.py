"""Question-level coresets: pick the questions to run, predict the full-benchmark score."""
