"""Wall time of ``benchsel`` commands, as a user runs them (a fresh process each).

Part one: the median and the fastest of ``--repeat`` runs of ``--version``,
``--help``, ``select -k 5`` on bundled boards and ``datasets``.

Part two (``--predict``): on every bundled leaderboard, the default
predictor (``auto``) against ``select -k 3`` on the same board (k = 2 on a
board of three): ``plan -k 3`` (which makes auto's decisions for the selection and stores
them), ``predict --plan`` from that plan, and ``predict DATA --observed``
with the same scores, first with an empty cache of auto's decisions
(``BENCHSEL_CACHE_DIR``, a fresh temporary folder) and then again. The
observed scores are each planned benchmark's median over the board. The
fits those decisions rest on ship with the package for a bundled board;
the last two columns are the same board less its last model, written to a
CSV (so not bundled): its first ``predict`` (which makes the fits and
keeps them in the cache folder), then one given all but the last planned
benchmark (a new set of given benchmarks on a board whose fits are kept).

    python benchmarks/startup.py [--repeat 7] [--predict] [--boards mteb,merged] [--data-dir DIR]

``--data-dir`` gives the commands CSV paths (``DIR/mteb.csv``, ...) instead of
bundled names.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _data import LEADERBOARDS, add_data_dir, board_argument, load_board

COMMANDS = (
    ["--version"],
    ["--help"],
    ["select", "--help"],
    ["select", "mteb", "-k", "5"],
    ["select", "merged", "-k", "5"],
    ["select", "open_llm_v2", "-k", "3"],
    ["datasets"],
)


def _launcher() -> list[str]:
    # The installed console script, as a user types it; else the module.
    return [shutil.which("benchsel")] if shutil.which("benchsel") else \
        [sys.executable, "-m", "benchsel"]


def _seconds(argv: list[str], env=None) -> float:
    start = time.perf_counter()
    subprocess.run(_launcher() + argv, capture_output=True, check=True, env=env)
    return time.perf_counter() - start


def startup(repeat: int, data_dir: Path = LEADERBOARDS) -> None:
    print(f"{'command':<36}{'median s':>10}{'best s':>9}")
    for command in COMMANDS:
        run = list(command)
        if command[0] == "select" and command[1] != "--help":
            run[1] = board_argument(command[1], data_dir)
        times = [_seconds(run) for _ in range(repeat)]
        print(f"{'benchsel ' + ' '.join(command):<36}{statistics.median(times):>10.2f}"
              f"{min(times):>9.2f}")


def predict_times(boards: list[str], data_dir: Path = LEADERBOARDS) -> None:
    import json

    print("\n| board | select s | plan s | predict --plan s (x select) | predict, cold cache s "
          "(x select) | predict, warm cache s (x select) | not bundled: first predict s "
          "(x select) | not bundled: another set s (x select) |")
    print("|---|---|---|---|---|---|---|---|")
    work = Path(tempfile.mkdtemp(prefix="benchsel-startup-"))
    for board in boards:
        frame = load_board(board, data_dir).to_frame()
        data = board_argument(board, data_dir)
        if frame.shape[1] < 2:
            print(f"| {board} | one benchmark: nothing to predict | | | | |")
            continue
        k = str(min(3, frame.shape[1] - 1))
        env = dict(os.environ, BENCHSEL_CACHE_DIR=str(work / f"cache-{board}"))
        select = _seconds(["select", data, "-k", k], env)
        plan = work / f"{board}.json"
        planning = _seconds(["plan", data, "-k", k, "-o", str(plan)], env)
        chosen = json.loads(plan.read_text())["benchmarks"]["selection"]["selected"]
        observed = work / f"{board}-observed.json"
        observed.write_text(json.dumps({b: float(frame[b].median()) for b in chosen}))
        from_plan = _seconds(["predict", "--plan", str(plan), "--observed", str(observed)], env)
        cold = _seconds(["predict", data, "--observed", str(observed)], env)
        warm = _seconds(["predict", data, "--observed", str(observed)], env)
        own = work / f"{board}-less-one.csv"
        frame.iloc[:-1].to_csv(own)
        env = dict(os.environ, BENCHSEL_CACHE_DIR=str(work / f"cache-{board}-own"))
        first = _seconds(["predict", str(own), "--observed", str(observed)], env)
        fewer = work / f"{board}-fewer.json"
        fewer.write_text(json.dumps({b: float(frame[b].median()) for b in chosen[:-1] or chosen}))
        other = _seconds(["predict", str(own), "--observed", str(fewer)], env)
        print(f"| {board} | {select:.2f} | {planning:.2f} | {from_plan:.2f} "
              f"({from_plan / select:.1f}) | {cold:.2f} ({cold / select:.1f}) | {warm:.2f} "
              f"({warm / select:.1f}) | {first:.2f} ({first / select:.1f}) | {other:.2f} "
              f"({other / select:.1f}) |", flush=True)
    shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--predict", action="store_true",
                        help="time the default predictor against select on every board")
    parser.add_argument("--boards", help="comma-separated boards for --predict (default: "
                        "every bundled leaderboard)")
    add_data_dir(parser, LEADERBOARDS)
    args = parser.parse_args()
    if args.predict:
        from benchsel.datasets import list_datasets

        boards = args.boards.split(",") if args.boards else \
            [d.name for d in list_datasets("leaderboard")]
        predict_times(boards, args.data_dir)
    else:
        startup(args.repeat, args.data_dir)


if __name__ == "__main__":
    main()
