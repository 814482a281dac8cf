"""No file is destroyed, and every refusal says what to do instead (issue 11's classes)."""

from __future__ import annotations

import os
import threading

import pytest

from benchsel import load_dataset
from benchsel.cli import main


def run(capsys, *args):
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_output_through_a_symlink_keeps_the_link(tmp_path, capsys):
    target = tmp_path / "real.json"
    target.write_text("old\n")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    code, _, err = run(capsys, "select", "helm_lite", "-k", 2, "--json", "-o", link)
    assert code == 0, err
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert target.read_text().startswith("{")


def test_output_to_a_fifo_writes_through_it(tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    code, _, err = run(capsys, "select", "helm_lite", "-k", 2, "--json", "-o", fifo)
    reader.join(timeout=30)
    assert code == 0, err
    assert received and received[0].startswith("{")
    assert not fifo.is_file() and fifo.exists()  # still a FIFO, not replaced


def test_output_into_a_missing_folder_or_onto_a_folder(tmp_path, capsys):
    code, _, err = run(capsys, "select", "helm_lite", "-k", 2, "-o", tmp_path / "no" / "x.json")
    assert code == 1
    assert f"the folder {tmp_path / 'no'} does not exist" in err and ".tmp" not in err
    code, _, err = run(capsys, "select", "helm_lite", "-k", 2, "-o", tmp_path)
    assert code == 1 and "is a folder" in err


def test_samples_file_never_overwrites_the_question_data(tmp_path, capsys):
    from benchsel.datasets import bundled_path

    source = bundled_path("glue_rte")
    data = tmp_path / "rte.npz"
    data.write_bytes(source.read_bytes())
    before = data.read_bytes()
    code, _, err = run(capsys, "coreset", data, "-n", 10, "--emit-lm-eval-samples", "rte", data)
    assert code == 1 and "refusing to overwrite an input file" in err
    assert data.read_bytes() == before


def test_include_and_exclude_of_the_same_name_names_it(capsys):
    code, _, err = run(capsys, "select", "helm_lite", "-k", 2, "--include", "MMLU",
                       "--exclude", "MMLU")
    assert code == 1 and "'MMLU': both included and excluded" in err


def test_a_budget_below_every_cost_warns(tmp_path, capsys):
    items = load_dataset("helm_lite").items
    costs = tmp_path / "costs.csv"
    costs.write_text("benchmark,cost\n" + "".join(f"{name},100\n" for name in items))
    code, out, err = run(capsys, "select", "helm_lite", "--costs", costs, "--budget", 10)
    assert code == 0
    assert "nothing selected" in err and "raise the budget to at least 100" in err


def test_a_long_file_read_as_wide_suggests_the_long_format(tmp_path, capsys):
    data = tmp_path / "long.csv"
    data.write_text("model,benchmark,score\na,x,1\na,y,2\nb,x,3\nb,y,4\nc,x,2\nc,y,1\n")
    code, _, err = run(capsys, "select", data, "-k", 1)
    assert code == 1 and "--input-format long" in err


@pytest.mark.parametrize("cell, hint", [("10%", "write 10 for 10%"),
                                        ('"0,5"', "write 0.5 for 0,5")])
def test_almost_numbers_say_what_to_write(tmp_path, capsys, cell, hint):
    data = tmp_path / "board.csv"
    data.write_text(f"model,x,y\na,{cell},{cell}\nb,{cell},{cell}\nc,{cell},{cell}\n")
    code, _, err = run(capsys, "select", data, "-k", 1)
    assert code == 1 and hint in err and "column 'x'" in err
    mixed = tmp_path / "mixed.csv"
    mixed.write_text(f"model,x,y\na,1,{cell}\nb,2,3\nc,3,1\n")
    code, _, err = run(capsys, "select", mixed, "-k", 1)
    assert code == 1 and hint in err and "line 2" in err


def test_a_folder_without_runs_says_what_data_can_be(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    code, _, err = run(capsys, "select", tmp_path / "empty", "-k", 1)
    assert code == 1 and "no lm-eval output found" in err and "bundled name" in err


def _damaged_archives(tmp_path):
    """A real NPZ archive, then damaged the ways a disk or a download damages one."""
    import io

    import numpy as np

    helm = load_dataset("helm_lite")
    buf = io.BytesIO()
    np.savez(buf, B=np.nan_to_num(helm.values), models=np.array(helm.models),
             benchmarks=np.array(helm.items))
    good = buf.getvalue()
    header = good.find(b"'shape': (")
    central = good.find(b"PK\x01\x02")
    cases = {
        "truncated": good[: len(good) // 2],
        "bad-crc": good[:400] + bytes([good[400] ^ 0xFF]) + good[401:],
        "huge-shape": good[: header + 10] + b"99999999999" + good[header + 10:],
        "garbled": good[:200] + b"\x00" * 300 + good[500:],
        # bit 0 of a member's flags in the central directory: "encrypted"
        "encrypted-flag": good[:central + 8] + bytes([good[central + 8] | 1]) + good[central + 9:],
    }
    for name, data in cases.items():
        path = tmp_path / f"{name}.npz"
        path.write_bytes(data)
        yield name, path


def test_damaged_archives_are_named_errors(tmp_path, capsys):
    for name, path in _damaged_archives(tmp_path):
        code, _, err = run(capsys, "select", path, "-k", 1)
        assert code == 1, name
        assert err.startswith(f"benchsel: error: {path}:"), (name, err)
        assert "Traceback" not in err


def test_text_that_is_not_utf8_names_the_file(tmp_path, capsys):
    bad = tmp_path / "scores.json"
    bad.write_bytes(b'{"MMLU": 0.5\xff}')
    code, _, err = run(capsys, "predict", "helm_lite", "--observed", bad)
    assert code == 1 and str(bad) in err
    board = tmp_path / "board.csv"
    board.write_bytes(b"model,x,y\na\xe9,1,2\nb,2,3\nc,3,1\n")
    code, _, err = run(capsys, "select", board, "-k", 1)
    assert code == 1 and str(board) in err and "UTF-8" in err
