"""Make the fits ``auto`` needs on every bundled leaderboard, shipped with the package.

    python scripts/build_fits.py            # every bundled leaderboard
    python scripts/build_fits.py mteb       # one

Writes ``src/benchsel/datasets/fits/<board>.npz`` and the index of their
fingerprints (see :mod:`benchsel.prediction.shipped`). Run it whenever
``benchsel.prediction.memo.RULES`` moves or a fitting method changes;
``tests/test_fits.py`` fails while the files are stale.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from benchsel import GaussianModel, list_datasets, load_dataset
from benchsel._arrays import fingerprint
from benchsel.prediction.fits import FitStore
from benchsel.prediction.memo import RULES
from benchsel.prediction.shipped import INDEX, board_fits

OUT = Path(__file__).resolve().parent.parent / "src" / "benchsel" / "datasets" / "fits"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("boards", nargs="*", help="bundled leaderboards (default: all)")
    args = parser.parse_args()
    boards = args.boards or [d.name for d in list_datasets() if d.kind == "leaderboard"]
    OUT.mkdir(parents=True, exist_ok=True)
    index_path = OUT / INDEX
    index = json.loads(index_path.read_text()) if index_path.is_file() else {}
    if index.get("rules") != RULES:
        index = {"rules": RULES, "boards": {}}
    for name in boards:
        start = time.perf_counter()
        model = GaussianModel().fit(load_dataset(name))
        scores = model.scores_
        if scores.values.shape[1] < 2:
            print(f"{name}: one benchmark, nothing to predict")
            continue
        model.auto_memo.fits = FitStore()  # from scratch, not from the files being replaced
        store = board_fits(model)
        store.save(OUT / f"{name}.npz")
        key = fingerprint(scores.models, scores.items, scores.values)
        index["boards"] = {k: v for k, v in index["boards"].items() if v != f"{name}.npz"}
        index["boards"][key] = f"{name}.npz"
        size = (OUT / f"{name}.npz").stat().st_size
        print(f"{name}: {len(store)} fits, {size / 1e6:.2f} MB, "
              f"{time.perf_counter() - start:.1f} s", flush=True)
    index_path.write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
