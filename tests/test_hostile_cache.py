"""A cache folder someone else wrote into: damaged entries are only slower, never worse.

A property test damages the two entries a first ``benchsel predict DATA``
leaves in the cache (auto's decisions as JSON, the fits as NPZ) in every way
a campaign can generate: bytes truncated, flipped or replaced; any JSON node
of the decisions replaced; any array of any fit given NaN, infinities,
zeros, a sign, a scale, another shape or dtype, or pickled objects; the
entry replaced by a link, a hard link or a FIFO. Each run must exit 0 with
no traceback, touch no file outside the cache, and print the clean run's
output whenever it warned about the entry. ``event`` counts the outcomes::

    python -m pytest tests/test_hostile_cache.py --hypothesis-profile big \
        --hypothesis-show-statistics

What may differ from a clean run is a change no check can see (a number of
the decisions' figures or a fit's mean moved, within what a real entry
could hold: docs/architecture.md); the statistics count those apart.
"""

from __future__ import annotations

import io
import json
import os
import shutil

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import benchsel
from benchsel.cli import main

SPEC = "MMLU=0.7,GSM8K=0.6"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """A board with no shipped fits, its clean output, and the two entries a run keeps."""
    root = tmp_path_factory.mktemp("hostile_cache")
    helm = benchsel.load_dataset("helm_lite")
    board = root / "board.csv"
    helm.subset(models=list(range(1, helm.n_models))).to_frame().to_csv(board)
    cache = root / "cache"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BENCHSEL_CACHE_DIR", str(cache))
        out = io.StringIO()
        from contextlib import redirect_stdout

        with redirect_stdout(out):
            assert main(["predict", str(board), "--observed", SPEC, "--json"]) == 0
    entries = {folder: next((cache / folder).iterdir()) for folder in ("auto", "fits")}
    return {"board": board, "clean": json.loads(out.getvalue()), "root": root,
            "names": {k: v.name for k, v in entries.items()},
            "bytes": {k: v.read_bytes() for k, v in entries.items()},
            "key": (cache / "key").read_bytes()}


# ------------------------------------------------------------------ damage
def _bytes_damage():
    return st.tuples(st.sampled_from(["truncate", "flip", "insert", "replace", "empty"]),
                     st.floats(0, 1), st.integers(0, 7), st.binary(min_size=1, max_size=64))


def _damage_bytes(data: bytes, how) -> bytes:
    op, where, bit, junk = how
    at = min(int(where * len(data)), len(data) - 1)
    if op == "truncate":
        return data[:at]
    if op == "flip":
        return data[:at] + bytes([data[at] ^ (1 << bit)]) + data[at + 1:]
    if op == "insert":
        return data[:at] + junk + data[at:]
    return b"" if op == "empty" else junk * 8


JSON_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                        st.floats(allow_nan=False), st.text(max_size=8),
                        st.just([]), st.just({}), st.just("__deep__"), st.just("__nan__"))


def _nodes(obj, path=()):
    yield path
    children = obj.items() if isinstance(obj, dict) else \
        enumerate(obj) if isinstance(obj, list) else ()
    for key, value in children:
        yield from _nodes(value, (*path, key))


def _damage_json(data: bytes, pick: float, value) -> bytes:
    obj = json.loads(data)
    paths = list(_nodes(obj))[1:]
    path = paths[min(int(pick * len(paths)), len(paths) - 1)]
    parent = obj
    for key in path[:-1]:
        parent = parent[key]
    marker = "\u0000marker\u0000"
    parent[path[-1]] = marker if value in ("__deep__", "__nan__") else value
    text = json.dumps(obj)
    fill = "[" * 50_000 + "]" * 50_000 if value == "__deep__" else "NaN"
    return text.replace(json.dumps(marker), fill).encode()


ARRAY_OPS = ["nan", "inf", "zero", "negate", "scale", "shape", "int8", "complex", "object",
             "text"]


def _damage_array(data: bytes, pick: float, op: str) -> bytes:
    with np.load(io.BytesIO(data)) as f:
        arrays = dict(f)
    names = sorted(k for k in arrays if k != "index")
    name = names[min(int(pick * len(names)), len(names) - 1)]
    a = arrays[name].astype(float)
    if op == "nan" and a.size:
        a.flat[a.size // 2] = np.nan
    elif op == "inf" and a.size:
        a.flat[0] = np.inf
    elif op == "zero":
        a = np.zeros_like(a)
    elif op == "negate":
        a = -a
    elif op == "scale":
        a = a * 1e6
    elif op == "shape":
        a = a.ravel()[:-1] if a.size else np.zeros(3)
    elif op == "int8":
        a = a.astype(np.int8)
    elif op == "complex":
        a = a.astype(complex)
    elif op == "object":
        a = np.array([{"a": 1}] * max(a.size, 1), dtype=object)
    elif op == "text":
        a = np.array(["x"] * max(a.size, 1))
    arrays[name] = a
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


DAMAGES = st.one_of(
    st.tuples(st.just("bytes"), st.sampled_from(["auto", "fits"]), _bytes_damage()),
    st.tuples(st.just("json"), st.just("auto"), st.tuples(st.floats(0, 1), JSON_VALUES)),
    st.tuples(st.just("array"), st.just("fits"),
              st.tuples(st.floats(0, 1), st.sampled_from(ARRAY_OPS))),
    st.tuples(st.just("type"), st.sampled_from(["auto", "fits"]),
              st.sampled_from(["link", "dangling link", "hard link", "fifo", "folder"])),
)


@settings(max_examples=settings.default.max_examples)  # big: 2,500 damaged caches
@given(damage=DAMAGES, sealed=st.booleans())
def test_a_damaged_cache_is_only_slower(pristine, capsys, monkeypatch, tmp_path_factory,
                                        damage, sealed):
    from _cache import kept

    from benchsel.cache_files import CacheFolder

    kind, folder, how = damage
    work = tmp_path_factory.mktemp("case")
    cache = work / "cache"
    for name in ("auto", "fits"):
        (cache / name).mkdir(parents=True, mode=0o700)
        (cache / name / pristine["names"][name]).write_bytes(pristine["bytes"][name])
    cache.chmod(0o700)
    (cache / "key").write_bytes(pristine["key"])
    (cache / "key").chmod(0o600)
    entry = cache / folder / pristine["names"][folder]
    victim = work / "victim.txt"
    victim.write_text("the user's own file\n")
    missing = work / "missing.txt"
    # Damaged contents are written as they are (their seal no longer matches), or
    # sealed again with the cache's key, as the user's own account could: then what
    # they hold must pass the checks.
    if kind in ("bytes", "json", "array"):
        damage_contents = {"bytes": _damage_bytes, "json": lambda d, h: _damage_json(d, *h),
                           "array": lambda d, h: _damage_array(d, *h)}[kind]
        if sealed:
            body = damage_contents(kept(entry), how)
            assert CacheFolder(entry.parent, pristine["key"]).write(entry.name, body)
        else:
            entry.write_bytes(damage_contents(entry.read_bytes(), how) if kind == "bytes"
                              else damage_contents(kept(entry), how))
    else:
        entry.unlink()
        if how == "link":
            entry.symlink_to(victim)
        elif how == "dangling link":
            entry.symlink_to(missing)
        elif how == "hard link":
            os.link(victim, entry)
        elif how == "fifo":
            os.mkfifo(entry)
        else:
            entry.mkdir()
    if folder == "fits":  # kept decisions would need no fit: make them be made again
        (cache / "auto" / pristine["names"]["auto"]).unlink()
    monkeypatch.setenv("BENCHSEL_CACHE_DIR", str(cache))
    code = main(["predict", str(pristine["board"]), "--observed", SPEC, "--json"])
    out, err = capsys.readouterr()
    assert code == 0 and "Traceback" not in err, err
    assert victim.read_text() == "the user's own file\n"
    assert not missing.exists() and not missing.is_symlink()
    warned = str(entry) in err
    same = json.loads(out) == pristine["clean"]
    label = {"bytes": lambda: f"bytes {how[0]} ({folder})",
             "json": lambda: f"json node := {type(how[1]).__name__}",
             "array": lambda: f"array {how[1]}",
             "type": lambda: f"{how} ({folder})"}[kind]()
    if kind != "type":
        label += ", sealed again" if sealed else ", unsealed"
    event(f"{label}: " + ("warned, clean output" if warned and same else
                          "clean output" if same else "undetected change"))
    # A warned entry was not used: the output is the clean run's.
    assert same or not warned, err
    # What no check can see is a change of value only, in an entry sealed again.
    if not same:
        assert sealed and kind in ("json", "array", "bytes"), (damage, err)
    shutil.rmtree(work)
