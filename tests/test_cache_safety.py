"""The cache folder as an attacker with write access to it would leave it.

Every case ends in the output of a clean run (the same as with the cache
off) or a clean error; no target of a planted link is touched; no run hangs.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import stat
import zipfile

import numpy as np
import pytest

import benchsel
from benchsel.cli import main

SPEC = "MMLU=0.7,GSM8K=0.6"


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """HELM Lite less its first model: a board with no shipped fits, so every fit is cached."""
    helm = benchsel.load_dataset("helm_lite")
    path = tmp_path_factory.mktemp("board") / "board.csv"
    helm.subset(models=list(range(1, helm.n_models))).to_frame().to_csv(path)
    return path


def predict(capsys, monkeypatch, board, cache) -> tuple[dict, str]:
    monkeypatch.setenv("BENCHSEL_CACHE_DIR", str(cache))
    assert main(["predict", str(board), "--observed", SPEC, "--json"]) == 0
    out = capsys.readouterr()
    return json.loads(out.out), out.err


@pytest.fixture(scope="module")
def clean(board):
    """What a run with the cache off prints."""
    import contextlib

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(["predict", str(board), "--observed", SPEC, "--json"]) == 0
    return json.loads(buffer.getvalue())


def entries(cache) -> dict[str, object]:
    """The cache's two entries after a first run: ``auto`` (decisions) and ``fits``."""
    found = {folder: sorted((cache / folder).iterdir()) for folder in ("auto", "fits")}
    assert all(len(v) == 1 for v in found.values()), found
    return {folder: paths[0] for folder, paths in found.items()}


def test_the_folders_are_private_and_the_entries_are_read_back(capsys, monkeypatch, board,
                                                               clean, tmp_path):
    cache = tmp_path / "cache"
    assert predict(capsys, monkeypatch, board, cache)[0] == clean
    for folder in (cache, cache / "auto", cache / "fits"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    for entry in entries(cache).values():
        assert stat.S_IMODE(entry.stat().st_mode) & 0o077 == 0, entry
    got, err = predict(capsys, monkeypatch, board, cache)
    assert got == clean and "cache" not in err.lower()


@pytest.mark.parametrize("folder", ["auto", "fits"])
@pytest.mark.parametrize("target", ["existing", "missing"])
def test_a_link_planted_in_the_cache_is_never_written_through(capsys, monkeypatch, board,
                                                               clean, tmp_path, folder, target):
    cache = tmp_path / "cache"
    predict(capsys, monkeypatch, board, cache)
    entry = entries(cache)[folder]
    victim = tmp_path / "victim.txt"
    if target == "existing":
        victim.write_text("the user's own file\n")
    entry.unlink()
    entry.symlink_to(victim)
    got, err = predict(capsys, monkeypatch, board, cache)
    assert got == clean
    if target == "existing":
        assert victim.read_text() == "the user's own file\n"
    else:
        assert not victim.exists() and not victim.is_symlink()
    # The link was ignored and replaced by a file of benchsel's, not followed.
    assert entry.is_file() and not entry.is_symlink()
    assert f"{entry}: a link, not a cache file; ignored" in err


@pytest.mark.parametrize("folder", ["auto", "fits"])
def test_a_fifo_planted_in_the_cache_does_not_hang_a_run(capsys, monkeypatch, board, clean,
                                                         tmp_path, folder):
    cache = tmp_path / "cache"
    predict(capsys, monkeypatch, board, cache)
    entry = entries(cache)[folder]
    entry.unlink()
    os.mkfifo(entry)

    def hung(*_):
        raise TimeoutError("predict waited on a FIFO in the cache")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(120)
    try:
        got, err = predict(capsys, monkeypatch, board, cache)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert got == clean
    assert f"{entry}: not a regular file of yours; ignored" in err
    assert entry.is_file()  # replaced by rename, never opened for writing


def test_a_cache_folder_others_can_write_is_not_used(capsys, monkeypatch, board, clean,
                                                     tmp_path):
    cache = tmp_path / "shared"
    cache.mkdir()
    cache.chmod(0o777)
    got, err = predict(capsys, monkeypatch, board, cache)
    assert got == clean
    assert "others can write it" in err and str(cache) in err
    assert list(cache.iterdir()) == []


def test_a_linked_subfolder_is_not_written_into(capsys, monkeypatch, board, clean, tmp_path):
    cache, elsewhere = tmp_path / "cache", tmp_path / "elsewhere"
    cache.mkdir(mode=0o700)
    elsewhere.mkdir()
    (cache / "fits").symlink_to(elsewhere)
    got, err = predict(capsys, monkeypatch, board, cache)
    assert got == clean
    assert f"{cache / 'fits'}: is not a private folder of yours" in err
    assert list(elsewhere.iterdir()) == []


def test_a_cache_folder_name_too_long_is_only_slower(capsys, monkeypatch, board, clean,
                                                     tmp_path):
    got, err = predict(capsys, monkeypatch, board, tmp_path / ("x" * 300))
    assert got == clean
    assert "cannot be used" in err


def _rewrite_npz(data: bytes, change) -> bytes:
    with np.load(io.BytesIO(data)) as f:
        arrays = dict(f)
    change(arrays)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _huge_member(data: bytes) -> bytes:
    """Replace the first fit's mean by a header declaring 10^12 float64 values."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        members = {name: z.read(name) for name in z.namelist()}
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (10**6, 10**6)})
    members["0.mean.npy"] = b"\x93NUMPY\x01\x00" + header.getvalue()[8:]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, member in members.items():
            z.writestr(name, member)
    return out.getvalue()


def _first_gaussian(arrays) -> str:
    index = json.loads(str(arrays["index"][()]))
    return str(next(i for i, (kind, _, _) in enumerate(index) if kind != "svd"))


def _set(name: str, change):
    """Change array ``name`` of the first Gaussian fit."""
    def edit(arrays):
        key = f"{_first_gaussian(arrays)}.{name}"
        arrays[key] = change(arrays[key].copy())
    return edit


def _set_all(name: str, change):
    """Change array ``name`` of every fit that has one."""
    def edit(arrays):
        for key in [k for k in arrays if k.endswith(f".{name}")]:
            arrays[key] = change(arrays[key].copy())
    return edit


def _edit_json(change):
    def edit(data: bytes) -> bytes:
        obj = json.loads(data)
        change(obj)
        return json.dumps(obj).encode()
    return edit


def _asymmetric(a):
    a[0, 1] = 5.0
    return a


# Each damage takes an entry's contents and returns new ones.
DAMAGE = {
    "fits truncated": ("fits", lambda d: d[: len(d) // 2]),
    "fits std_scale 0": ("fits", lambda d: _rewrite_npz(d, _set("std_scale", lambda a: 0 * a))),
    "fits std_mean +3": ("fits", lambda d: _rewrite_npz(d, _set("std_mean", lambda a: a + 3))),
    "fits covariance not symmetric": ("fits", lambda d: _rewrite_npz(
        d, _set("covariance", _asymmetric))),
    "fits index nested": ("fits", lambda d: _rewrite_npz(d, lambda a: a.__setitem__(
        "index", np.array("[" * 100_000 + "]" * 100_000)))),
    "fits member of 10^12 values": ("fits", _huge_member),
    "decisions not JSON": ("auto", lambda d: b"{not json"),
    "decisions nested": ("auto", lambda d: b"[" * 100_000 + b"]" * 100_000),
    "decisions method edited": ("auto", _edit_json(lambda o: o.__setitem__(
        "choices", [{**c, "method": "mean"} for c in o["choices"]]))),
    "decisions residual not finite": ("auto", lambda d: d.replace(
        b'"encoding": "float64-zlib"', b'"encoding": "bits"', 1)),
}


@pytest.mark.parametrize("sealed", [False, True], ids=["unsealed", "sealed again"])
@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_a_damaged_or_altered_entry_is_skipped_with_one_warning(capsys, monkeypatch, board,
                                                                clean, tmp_path, case, sealed):
    """Changed by hand, an entry's seal no longer matches; sealed again with the cache's
    key (as the user's own account could), the checks of what it holds refuse it."""
    from _cache import kept as kept_body

    from benchsel.cache_files import CacheFolder

    cache = tmp_path / "cache"
    predict(capsys, monkeypatch, board, cache)
    folder, damage = DAMAGE[case]
    kept = entries(cache)
    entry = kept[folder]
    body = damage(kept_body(entry))
    if sealed:
        assert CacheFolder(entry.parent, (cache / "key").read_bytes()).write(entry.name, body)
    else:
        entry.write_bytes(body)
    if folder == "fits":  # decisions kept would need no fit: make them be made again
        kept["auto"].unlink()
    got, err = predict(capsys, monkeypatch, board, cache)
    assert got == clean
    warned = [line for line in err.splitlines() if str(entry) in line]
    assert len(warned) == 1, err
    assert ("not sealed by this cache's key" in warned[0]) != sealed, warned
    assert "Traceback" not in err
    # And the entry was written anew: the next run reads it without a word.
    again, err = predict(capsys, monkeypatch, board, cache)
    assert again == clean and str(entry) not in err


def _scale_residuals(data: bytes) -> bytes:
    from benchsel._arrays import decode_array, encode_array

    obj = json.loads(data)
    for entry in obj["residuals"]:
        entry["residual"] = encode_array(100 * decode_array(entry["residual"], "residual"))
    return json.dumps(obj).encode()


# Values a check of what the entry holds cannot tell from true ones (docs/architecture.md):
# only the seal catches them.
BY_HAND = {
    "fits mean +3": ("fits", lambda d: _rewrite_npz(d, _set_all("mean", lambda a: a + 3))),
    "decisions residuals x100": ("auto", _scale_residuals),
}


@pytest.mark.parametrize("case", sorted(BY_HAND))
def test_values_changed_by_hand_are_caught_by_the_seal(capsys, monkeypatch, board, clean,
                                                       tmp_path, case):
    from _cache import kept as kept_body

    from benchsel.cache_files import CacheFolder

    cache = tmp_path / "cache"
    predict(capsys, monkeypatch, board, cache)
    folder, change = BY_HAND[case]
    kept = entries(cache)
    entry, pristine = kept[folder], kept[folder].read_bytes()
    body = change(kept_body(entry))
    entry.write_bytes(body)
    if folder == "fits":
        kept["auto"].unlink()
    got, err = predict(capsys, monkeypatch, board, cache)
    assert got == clean and "not sealed by this cache's key" in err
    # The same change sealed with the key would be used: the change is real, and
    # the seal is all that stands against it (besides the folder being the user's).
    entry.write_bytes(pristine)
    if folder == "fits":
        for path in (cache / "auto").iterdir():
            path.unlink()
    assert CacheFolder(entry.parent, (cache / "key").read_bytes()).write(entry.name, body)
    assert predict(capsys, monkeypatch, board, cache)[0] != clean


def test_csv_output_starts_no_spreadsheet_formula(capsys, tmp_path):
    helm = benchsel.load_dataset("helm_lite")
    renamed = {"MMLU": "=1+1", "GSM8K": "@GSM8K"}
    board = tmp_path / "board.csv"
    helm.to_frame().rename(columns=renamed).to_csv(board)
    # New models whose names would each start a formula, given the two renamed benchmarks.
    hostile = ['=HYPERLINK("http://evil.example/","click")', "+cmd|' /C calc'!A0", "-2+3",
               "@SUM(A1)"]
    observed = tmp_path / "new.csv"
    observed.write_text('model,"=1+1",@GSM8K\n' + "".join(
        f'"{name.replace(chr(34), chr(34) * 2)}",0.{60 + i},0.{50 + i}\n'
        for i, name in enumerate(hostile)))
    assert main(["predict", str(board), "--observed", str(observed), "--format", "csv",
                 "--method", "gaussian"]) == 0
    import csv

    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    texts = [*rows[0], *(row[0] for row in rows[1:])]
    for cell in texts:
        assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell
    assert {"'=1+1", "'=1+1 std", "'@GSM8K", "'@GSM8K std"} <= set(rows[0])
    assert [row[0] for row in rows[1:]] == ["'" + name for name in hostile]
    for row in rows[1:]:  # numbers stay numbers
        assert all(np.isfinite(float(v)) for v in row[1:])
    # JSON keeps every name exact.
    assert main(["predict", str(board), "--observed", str(observed), "--json",
                 "--method", "gaussian"]) == 0
    strings = set()
    json.loads(capsys.readouterr().out, object_hook=lambda o: strings.update(
        v for v in o.values() if isinstance(v, str)) or o)
    assert set(hostile) <= strings


@pytest.mark.parametrize("damage", ["truncated", "std_scale 0", "index not a file of fits"])
def test_damaged_shipped_fits_are_refitted_with_one_warning(capsys, monkeypatch, tmp_path,
                                                            damage):
    """The package's own fits are read back as the cache's are: a damaged install is
    only slower."""
    from importlib import resources

    from _compare import assert_json_close

    from benchsel.prediction import shipped

    assert main(["predict", "helm_lite", "--observed", SPEC, "--json"]) == 0
    intact = json.loads(capsys.readouterr().out)
    folder = tmp_path / "fits"
    shutil.copytree(str(resources.files("benchsel.datasets").joinpath("fits")), folder)
    target = folder / "helm_lite.npz"
    if damage == "truncated":
        target.write_bytes(target.read_bytes()[:1000])
    elif damage == "std_scale 0":
        target.write_bytes(_rewrite_npz(target.read_bytes(), _set_all("std_scale",
                                                                      lambda a: 0 * a)))
    else:
        index = json.loads((folder / "index.json").read_text())
        index["boards"] = {k: "../../../etc/passwd" for k in index["boards"]}
        (folder / "index.json").write_text(json.dumps(index))
    monkeypatch.setattr(shipped, "_folder", lambda: folder)
    shipped._index.cache_clear()
    try:
        assert main(["predict", "helm_lite", "--observed", SPEC, "--json"]) == 0
        out, err = capsys.readouterr()
    finally:
        shipped._index.cache_clear()
    # Refitted rather than read: equal to rounding, not to the bit.
    assert_json_close(json.loads(out), intact, rel=1e-6)
    assert len([line for line in err.splitlines() if "shipped fits" in line]) == 1, err
