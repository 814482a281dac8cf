"""The package's layers (scripts/structure.py): no arrow back up, no import circle."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def structure_module():
    spec = importlib.util.spec_from_file_location("structure", ROOT / "scripts" / "structure.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["structure"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("structure", None)


@pytest.fixture(scope="module")
def benchsel_structure(structure_module):
    return structure_module.read_structure(ROOT / "src" / "benchsel")


def test_no_module_imports_a_layer_above_its_own(benchsel_structure):
    assert sorted(benchsel_structure.back_arrows()) == []


def test_no_import_circle(benchsel_structure):
    assert benchsel_structure.circles() == []


def test_every_module_has_a_layer_and_mixed_folders_only_shrink(structure_module,
                                                               benchsel_structure):
    for module in benchsel_structure.files:
        benchsel_structure.layer(module)  # raises for a module in no layer
    mixed = set(benchsel_structure.mixed_folders())
    assert mixed <= structure_module.KNOWN_MIXED_FOLDERS, "a folder newly spans two layers"
    assert mixed == structure_module.KNOWN_MIXED_FOLDERS, (
        "a folder is one layer now: remove it from KNOWN_MIXED_FOLDERS")


def test_imports_inside_functions_are_few(structure_module, benchsel_structure):
    inside = benchsel_structure.function_imports()
    assert len(inside) <= structure_module.MAX_FUNCTION_IMPORTS, [
        f"{i.importer}:{i.line} imports {i.imported}" for i in inside]


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_check_sees_arrows_back_up_circles_and_imports_in_functions(
        structure_module, tmp_path, monkeypatch):
    # A made-up package with one arrow back up (matrix -> cli), one circle
    # (prediction.a <-> prediction.b, half of it inside a function) and a
    # relative import two levels up.
    package = _write(tmp_path / "benchsel", {
        "__init__.py": "",
        "matrix.py": "from .cli import main\n",
        "cli.py": "import benchsel.names\n",
        "prediction/__init__.py": "",
        "prediction/a.py": "from . import b\n",
        "prediction/b.py": "def f():\n    from .a import g\n",
        "prediction/c.py": "from ..matrix import thing\nfrom .. import names\n"
                           "if TYPE_CHECKING:\n    from ..cli import main\n",
        "names.py": "import numpy\n",
    })
    found = structure_module.read_structure(package)
    assert found.back_arrows() == {("matrix", "cli")}
    assert found.circles() == [("prediction.a", "prediction.b")]
    inside = found.function_imports()
    assert [(i.importer, i.imported, i.line) for i in inside] == [
        ("prediction.b", "prediction.a", 2)]
    assert {("prediction.c", "matrix"), ("prediction.c", "names")} <= found.edges()
    monkeypatch.setattr(structure_module, "MAX_LINES", 1)
    assert found.long_files() == {"prediction.b": 2, "prediction.c": 4}


def test_every_public_name_of_every_module_resolves():
    # A lazy name (PEP 562) or an __all__ entry left pointing at a module that moved
    # fails only when someone asks for it; the import check above cannot see it.
    import importlib
    import pkgutil

    import benchsel

    broken = []
    for info in pkgutil.walk_packages(benchsel.__path__, "benchsel."):
        if info.name == "benchsel.__main__":  # runs the command line
            continue
        module = importlib.import_module(info.name)
        lazy = getattr(module, "_LAZY", {})  # names a module imports on first use
        for name in (*getattr(module, "__all__", ()), *lazy):
            try:
                getattr(module, name)
            except (AttributeError, ImportError) as err:
                broken.append(f"{info.name}.{name}: {err}")
    for name in benchsel.__all__:
        try:
            getattr(benchsel, name)
        except (AttributeError, ImportError) as err:
            broken.append(f"benchsel.{name}: {err}")
    assert broken == []
