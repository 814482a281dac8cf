"""Quickstart: choose benchmarks on a bundled leaderboard and predict the rest.

Run with ``python examples/quickstart.py``.
"""

import benchsel

scores = benchsel.load_dataset("mteb")
print(scores)

model = benchsel.GaussianModel().fit(scores)
print(f"covariance: {model.estimate_.method}, EM iterations: {model.estimate_.n_iter}")

selection = model.select(5, objective="mi")
print("run these:", ", ".join(selection.items))

# Pretend a new model scored like the leaderboard's median on the selected tasks.
median = {name: float(scores.to_frame()[name].median()) for name in selection.items}
prediction = model.predict(median, level=0.9)
print(f"\n{'benchmark':40s} {'mean':>7s} {'90% interval':>18s}")
for row in prediction.records()[:10]:
    print(f"{row['benchmark']:40s} {row['mean']:7.3f}   [{row['low']:.3f}, {row['high']:.3f}]")

spec = benchsel.spectrum(model.estimate_.covariance, model.items_)
print("\nbenchmarks needed for 90/95/99% explained variance:", spec.k_for)
