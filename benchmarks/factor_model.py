"""The factor model against the dense estimators on wide boards with a known truth.

Usage: python benchmarks/factor_model.py [--widths 200,500,1000,2000,3000] [--em-up-to 500]

Each board has 300 models; every benchmark's variance is 80% five factors
and 20% its own noise, and half the cells are missing. For each covariance
estimator the script fits ``GaussianModel``, selects 10 benchmarks by MI
and prints the CPU seconds of the fit and of the selection, the variance
fraction the model *claims* the 10 picks leave, and the fraction they
*truly* leave under the generating covariance. Then 4 models x 25,000
benchmarks (complete): the factor model's fit and selection with their
peak traced memory, where the dense covariance alone would be 4.7 GiB.
"""

import argparse
import time
import tracemalloc
import warnings

import numpy as np

from benchsel import GaussianModel, ScoreMatrix


def board(m: int, n: int, rank: int, missing: float, seed: int):
    """Scores and the true covariance of a board whose items are 80% ``rank`` factors."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((n, rank))
    w *= np.sqrt(0.8 / (w**2).sum(axis=1))[:, None]
    x = rng.standard_normal((m, rank)) @ w.T + np.sqrt(0.2) * rng.standard_normal((m, n))
    x[rng.random((m, n)) < missing] = np.nan
    scores = ScoreMatrix(x, [f"m{i}" for i in range(m)], [f"b{j}" for j in range(n)])
    return scores, w @ w.T + 0.2 * np.eye(n)


def truly_left(truth: np.ndarray, picked) -> float:
    """``tr(Sigma_{rest | picked}) / tr(Sigma)`` under the generating covariance."""
    a = np.asarray(picked)
    rest = np.setdiff1d(np.arange(truth.shape[0]), a)
    gain = np.linalg.solve(truth[np.ix_(a, a)], truth[np.ix_(a, rest)])
    left = np.trace(truth[np.ix_(rest, rest)]) - np.einsum("ij,ij->", truth[np.ix_(a, rest)],
                                                           gain)
    return float(left / np.trace(truth))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", default="200,500,1000,2000,3000")
    parser.add_argument("--em-up-to", type=int, default=500,
                        help="widest board em-shrink is fitted on (it takes minutes there)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    print("| benchmarks | covariance | fit CPU s | select CPU s | claimed left | truly left "
          "| rank |")
    print("|---|---|---|---|---|---|---|")
    for n in map(int, args.widths.split(",")):
        scores, truth = board(300, n, 5, 0.5, seed=n)
        methods = ["pairwise", "factor"] + (["em-shrink"] if n <= args.em_up_to else [])
        for method in methods:
            start = time.process_time()
            model = GaussianModel(covariance=method).fit(scores)
            fitted = time.process_time()
            selection = model.select(k=10)
            done = time.process_time()
            rank = getattr(model.estimate_, "rank", "")
            print(f"| {n} | {method} | {fitted - start:.1f} | {done - fitted:.2f} | "
                  f"{selection.residual_variance[-1]:.3f} | "
                  f"{truly_left(truth, selection.indices):.3f} | {rank} |", flush=True)
    scores, _ = board(4, 25_000, 2, 0.0, seed=7)
    tracemalloc.start()
    start = time.process_time()
    model = GaussianModel(covariance="factor").fit(scores)
    selection = model.select(k=3)
    seconds = time.process_time() - start
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"\n4 x 25,000, factor: fit and select -k 3 in {seconds:.1f} CPU s, peak traced "
          f"memory {top / 2**20:.0f} MiB (the dense covariance: "
          f"{8 * 25_000**2 / 2**30:.1f} GiB); picked {', '.join(selection.items)}")


if __name__ == "__main__":
    main()
