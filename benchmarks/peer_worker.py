"""Runs paper 002's own package (``benchpred``) on splits given to it; see ``peer_compare.py``.

This script runs in a separate environment where ``benchpred`` is installed
(it is never a dependency of benchsel)::

    python -m venv /tmp/peerenv && /tmp/peerenv/bin/pip install benchpred
    /tmp/peerenv/bin/python benchmarks/peer_worker.py JOB.npz OUT.npz

``JOB.npz`` holds ``values`` (models x questions), ``n``, ``methods`` (peer
names), ``sources``/``targets`` (one boolean row per trial), ``draws`` (the
uniform question draw of each trial), ``seed`` and ``search``. Methods that
draw their questions uniformly (random sampling, random sampling and learn,
AIPW, PCA) are handed each trial's draw, so that they see the same questions
as benchsel's; every other method draws its own. ``OUT.npz`` holds, per
method, the predicted means (trials x targets, NaN-padded), the chosen
questions and the CPU seconds of fit + predict.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

#: Peer methods whose questions are one uniform draw, made first after seeding.
UNIFORM = ("random_sampling", "random_sampling_and_learn", "aipw", "pca")


class _FixedDraw:
    """Stand-in for ``np.random.permutation``: the first call with ``total`` returns
    ``draw`` followed by the other questions; every other call is numpy's own."""

    def __init__(self, draw: np.ndarray, total: int):
        rest = np.setdiff1d(np.arange(total), draw)
        self.order, self.total, self.used = np.concatenate([draw, rest]), total, False
        self.numpy_permutation = np.random.permutation

    def __call__(self, x):
        if not self.used and isinstance(x, (int, np.integer)) and x == self.total:
            self.used = True
            return self.order.copy()
        return self.numpy_permutation(x)


def main(job_path: str, out_path: str) -> None:
    import benchpred
    import torch

    torch.set_num_threads(1)
    job = np.load(job_path, allow_pickle=False)
    values, n = job["values"], int(job["n"])
    seed, search = int(job["seed"]), int(job["search"])
    out = {}
    for name in job["methods"]:
        name = str(name)
        means, chosen, seconds = [], [], []
        for trial, (src, tgt, draw) in enumerate(zip(job["sources"], job["targets"],
                                                     job["draws"])):
            method = benchpred.all_methods[name]()
            start = time.process_time()
            kwargs = {"num_search": search} if name == "random_search_and_learn" else {}
            if name in UNIFORM:
                fixed = _FixedDraw(draw, values.shape[1])
                np.random.permutation = fixed
                try:
                    method.fit(values[src], n, seed=seed + trial, **kwargs)
                finally:
                    np.random.permutation = fixed.numpy_permutation
                if not np.array_equal(np.sort(method.get_coreset()), np.sort(draw)):
                    raise RuntimeError(f"{name}: the uniform draw was not taken")
            else:
                method.fit(values[src], n, seed=seed + trial, **kwargs)
            coreset = np.asarray(method.get_coreset())
            pred = np.asarray(method.predict(values[np.ix_(tgt, coreset)]), float).ravel()
            seconds.append(time.process_time() - start)
            row = np.full(int(tgt.sum()), np.nan)
            row[: pred.size] = pred
            means.append(row)
            picked = np.full(n, -1)
            picked[: min(n, coreset.size)] = coreset[:n]
            chosen.append(picked)
            print(f"{name} trial {trial}: {seconds[-1]:.1f} s", file=sys.stderr, flush=True)
        out[f"{name}/mean"] = np.vstack(means)
        out[f"{name}/selected"] = np.vstack(chosen)
        out[f"{name}/seconds"] = np.array(seconds)
    np.savez(out_path, **out)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("job", help="JOB.npz written by peer_compare.py")
    parser.add_argument("out", help="where to write OUT.npz")
    args = parser.parse_args()
    main(args.job, args.out)
