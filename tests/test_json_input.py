"""Bounded JSON reading (``benchsel._json``): depth before parsing, numbers in range."""

from __future__ import annotations

import json
import random

import pytest

from benchsel import _json
from benchsel._json import JSONInputError, load_file, loads, nesting_depth


def slow_depth(data: bytes) -> int:
    """Character by character: the obviously-correct reference."""
    deepest = depth = 0
    inside = escaped = False
    for ch in data.decode("utf-8"):
        if inside:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                inside = False
        elif ch == '"':
            inside = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def random_json(rng: random.Random, depth: int = 0):
    leaves = [1, 'a]\\"[', "\\\\", 'x\\\\\\"{', None, "", "[[", 2.5, "plain text " * 3]
    r = rng.random()
    if depth > 7 or r < 0.3:
        return rng.choice(leaves)
    if r < 0.65:
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    keys = ["k", "[", '\\"{', "\\\\", "}"]
    return {rng.choice(keys): random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))}


@pytest.mark.parametrize("chunk", [1, 2, 7, 1 << 20])
def test_depth_scanner_equals_the_character_by_character_reference(chunk, monkeypatch):
    monkeypatch.setattr(_json, "_CHUNK", chunk)
    rng = random.Random(chunk)
    for _ in range(200):
        text = json.dumps(random_json(rng)).encode()
        assert nesting_depth(text) == slow_depth(text), text


def test_deep_nesting_is_refused_before_parsing():
    with pytest.raises(JSONInputError, match=r"plan.json: JSON nested 100000 levels deep"):
        loads("[" * 100_000 + "]" * 100_000, "plan.json")
    assert loads("[" * 64 + "]" * 64, "x") is not None
    with pytest.raises(JSONInputError, match="nested 65 levels"):
        loads("[" * 65 + "]" * 65, "x")


def test_huge_integers_become_floats_and_constants_can_be_refused():
    assert loads('{"acc": 1' + "0" * 400 + "}", "x") == {"acc": float("inf")}
    assert loads("[10000000000000000000000000000000000000000]", "x") == [1e40]
    assert loads("[123456789012345678]", "x") == [123456789012345678]
    assert loads('{"a": NaN}', "x")["a"] != loads('{"a": NaN}', "x")["a"]
    with pytest.raises(JSONInputError, match=r"r.json: -Infinity is not a JSON number"):
        loads('{"selected": -Infinity}', "r.json", strict=True)


def test_file_size_is_checked_before_reading(tmp_path, monkeypatch):
    path = tmp_path / "big.json"
    path.write_text("[" + "0," * 1000 + "0]")
    with pytest.raises(JSONInputError, match=r"big.json: 2.0 KiB, larger than the 1000 bytes"):
        load_file(path, max_bytes=1000)
    monkeypatch.setenv("BENCHSEL_MAX_JSON_BYTES", "100")
    with pytest.raises(JSONInputError, match="larger than the 100 bytes"):
        load_file(path)
    monkeypatch.delenv("BENCHSEL_MAX_JSON_BYTES")
    assert len(load_file(path)) == 1001
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_file(tmp_path / "missing.json")
    with pytest.raises(JSONInputError, match="is a folder"):
        load_file(tmp_path)


def test_invalid_json_names_the_input():
    with pytest.raises(JSONInputError, match=r"^samples.jsonl, line 3: not valid JSON"):
        loads('{"doc_id": 1,', "samples.jsonl, line 3")


def test_long_base64_strings_stay_on_disk_and_read_back_the_same(tmp_path):
    import base64

    from benchsel._json import FileText, load_file_lazily

    data = base64.b64encode(bytes(range(256)) * 1000).decode()
    obj = {"a": {"data": data, "name": "x" * 70_000 + '"\\'}, "b": [1, 2.5, None, "short"],
           "c": data[:100]}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(obj, indent=1))
    lazy = load_file_lazily(path, long_strings=1000)
    assert isinstance(lazy["a"]["data"], FileText) and len(lazy["a"]["data"]) == len(data)
    assert "".join(lazy["a"]["data"].pieces(4096)) == data
    assert lazy["a"]["name"] == obj["a"]["name"]  # not base64: parsed as usual
    assert lazy["b"] == obj["b"] and lazy["c"] == obj["c"]
    with pytest.raises(JSONInputError, match="nested 100 levels"):
        path.write_text("[" * 100 + "]" * 100)
        load_file_lazily(path)


def test_an_object_naming_a_key_twice_is_refused():
    """Python's json keeps the last value of a repeated key without a word."""
    with pytest.raises(JSONInputError, match=r"obs.json: the key 'MedQA' appears twice"):
        loads('{"MedQA": 0.5, "x": {"a": 1}, "MedQA": 0.9}', "obs.json")
    with pytest.raises(JSONInputError, match=r"the key 'a' appears twice"):
        loads('[{"a": 1}, {"b": {"a": 1, "a": 1}}]', "x")
    assert loads('{"a": {"a": 1}, "b": [{"a": 2}]}', "x") == {"a": {"a": 1}, "b": [{"a": 2}]}


@pytest.mark.parametrize("read", ["loads", "load_file", "load_file_lazily"])
def test_a_text_of_too_many_values_is_refused_before_parsing(read, tmp_path, monkeypatch):
    """Parsed, ``{},`` (3 bytes) is an 80-byte dict: the file size alone bounds nothing."""
    monkeypatch.setattr(_json, "MAX_VALUES", 1000)
    path = tmp_path / "many.json"
    path.write_text('{"x": [' + ",".join(["{}"] * 1001) + "]}")
    reader = {"loads": lambda p: loads(p.read_bytes(), str(p)), "load_file": load_file,
              "load_file_lazily": _json.load_file_lazily}[read]
    with pytest.raises(JSONInputError, match=r"many.json: about 2,003 JSON values; at most "
                                             r"1,000 are read"):
        reader(path)
    path.write_text('{"x": [' + ",".join(["{}"] * 400) + "]}")
    assert len(reader(path)["x"]) == 400
