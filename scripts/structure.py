"""The package's shape, read from its own imports: layers, arrows back up, circles.

Usage: python scripts/structure.py [--src src/benchsel] [--json out.json]

Every module of the package is put in one layer of :data:`LAYERS`, from the
bottom (primitives) to the top (the command line). A module may import
from its own layer and the layers below it; an import of a higher layer is
an *arrow back up*. An *import circle* is a set of modules that reach each
other through imports (a strongly connected component of more than one
module), counting imports inside functions too: moving an import into a
function hides a circle from Python, not from the reader. Imports under
``if TYPE_CHECKING:`` (annotations only) never run and are not counted.

The report also lists the folders whose modules sit in more than one layer
(issue 53: folders should be layers), the imports of the package made
inside functions (each should be there for start-up time alone), and the
source files over :data:`MAX_LINES` lines.

``tests/test_layers.py`` allows no arrow back up and no circle, no folder
in more than one layer beyond :data:`KNOWN_MIXED_FOLDERS` (a list that may
only shrink: an entry that is no longer true fails too), and no more than
:data:`MAX_FUNCTION_IMPORTS` imports of the package inside functions.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

#: The layers, bottom first; a module belongs to the layer of the longest
#: prefix (dotted, without ``benchsel.``) that names it or its package.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("primitives", (
        "_arrays", "_frames", "_json", "_linalg", "_lowrank", "_memory", "_npz", "_parallel",
        "_patterns", "_reuse", "_ridge", "_text", "_version", "aggregates", "bounds", "cache_files",
        "exceptions", "matrix", "names", "outputs", "progress", "splits", "transforms",
    )),
    ("data", ("datasets", "inputs", "io", "lmeval", "lmeval_samples", "sources")),
    ("maths", ("gaussian", "selection")),
    ("predictors and calibration", ("calibration", "prediction")),
    ("models", ("coreset", "models")),
    ("plans and observations", ("observations", "plan")),
    ("evaluation, analyses and report", ("analyses", "evaluation", "report")),
    ("commands", ("commands",)),
    ("command line and package", ("", "__main__", "cli")),
)

#: Folders whose modules sit in more than one layer today (issue 53 moves them).
KNOWN_MIXED_FOLDERS: frozenset[str] = frozenset()

#: Most imports of the package inside functions: each is there for start-up time
#: alone (the parser's --bounds type and the commands before numpy, _memory's
#: _json for the parser, scikit-learn for question-level plans only, the
#: evaluation and analyses packages for select --bootstrap and plan's budget);
#: raise it only with such a reason.
MAX_FUNCTION_IMPORTS = 9

#: Longest source file the layering allows (issue 53).
MAX_LINES = 600


@dataclass(frozen=True)
class Import:
    """One ``import`` statement of the package by one of its modules."""

    importer: str
    imported: str
    line: int
    in_function: bool


@dataclass
class Structure:
    """The modules of a package, their layers and their imports of each other."""

    package: str
    files: dict[str, Path]
    imports: list[Import] = field(default_factory=list)

    def layer(self, module: str) -> int:
        """Index in :data:`LAYERS` of ``module`` (a dotted name without the package)."""
        best, where = -1, None
        for index, (_, prefixes) in enumerate(LAYERS):
            for prefix in prefixes:
                if (module == prefix or not prefix
                        or module.startswith(prefix + ".")) and len(prefix) > best:
                    best, where = len(prefix), index
        if where is None:
            raise ValueError(f"module {module!r} is in no layer of LAYERS")
        return where

    def edges(self) -> set[tuple[str, str]]:
        """Distinct (importer, imported) pairs, imports inside functions included."""
        return {(i.importer, i.imported) for i in self.imports}

    def back_arrows(self) -> set[tuple[str, str]]:
        """The pairs whose imported module lies in a higher layer than its importer."""
        return {(a, b) for a, b in self.edges() if self.layer(b) > self.layer(a)}

    def circles(self) -> list[tuple[str, ...]]:
        """Strongly connected components of more than one module, each sorted."""
        graph: dict[str, list[str]] = {m: [] for m in self.files}
        for a, b in self.edges():
            graph[a].append(b)
        return [tuple(sorted(c)) for c in _components(graph) if len(c) > 1]

    def mixed_folders(self) -> dict[str, list[str]]:
        """Folders whose modules sit in more than one layer: folder -> layer names."""
        by_folder: dict[str, set[int]] = {}
        for module, path in self.files.items():
            if "." in module or path.name == "__init__.py":
                folder = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
                if folder:
                    by_folder.setdefault(folder, set()).add(self.layer(module))
        return {f: [LAYERS[i][0] for i in sorted(s)] for f, s in sorted(by_folder.items())
                if len(s) > 1}

    def function_imports(self) -> list[Import]:
        """Imports of the package made inside a function, one per statement."""
        seen, out = set(), []
        for i in self.imports:
            if i.in_function and (i.importer, i.line) not in seen:
                seen.add((i.importer, i.line))
                out.append(i)
        return out

    def long_files(self) -> dict[str, int]:
        """Modules over :data:`MAX_LINES` lines: module -> lines."""
        lengths = {m: len(p.read_text(encoding="utf-8").splitlines())
                   for m, p in self.files.items()}
        return {m: n for m, n in sorted(lengths.items()) if n > MAX_LINES}


def _components(graph: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                out.append(component)
    return out


def read_structure(src: Path) -> Structure:
    """Read every module under ``src`` (a package folder) and its imports of the package.

    Module names drop the package's own name (``benchsel.io`` is ``io``; the
    package itself is ``""``). Only imports that name a module of the
    package count; ``from .x import name`` counts ``x.name`` when that is a
    module, else ``x``.
    """
    src = Path(src)
    package = src.name
    files: dict[str, Path] = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        files[".".join(parts)] = path
    structure = Structure(package, files)
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        here = module.split(".") if module else []
        if path.name != "__init__.py":
            here = here[:-1]
        _collect(structure, module, here, tree, in_function=False)
    return structure


def _collect(structure: Structure, module: str, here: list[str], node, *, in_function) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and ast.unparse(child.test) in ("TYPE_CHECKING",
                                                                    "typing.TYPE_CHECKING"):
            continue  # imports for annotations only: never run
        inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                   ast.Lambda))
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            for target in _targets(structure, here, child):
                if target != module:
                    structure.imports.append(Import(module, target, child.lineno, in_function))
        _collect(structure, module, here, child, in_function=inside)


def _targets(structure: Structure, here: list[str], node) -> list[str]:
    """The package's modules an import statement names."""
    package, files = structure.package, structure.files

    def local(dotted: str) -> str | None:
        if dotted == package:
            return ""
        if dotted.startswith(package + "."):
            name = dotted[len(package) + 1:]
            return name if name in files else None
        return None

    if isinstance(node, ast.Import):
        found = (local(alias.name) for alias in node.names)
        return [name for name in found if name is not None]
    if node.level:
        base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
        dotted = ".".join([package, *base, *([node.module] if node.module else [])])
    else:
        dotted = node.module or ""
    out = []
    for alias in node.names:
        name = local(f"{dotted}.{alias.name}")
        if name is None:
            name = local(dotted)
        if name is not None:
            out.append(name)
    return out


def report(structure: Structure) -> dict:
    """Everything the command prints, as JSON-ready data."""
    back = sorted(structure.back_arrows())
    return {
        "modules": len(structure.files),
        "arrows": len(structure.edges()),
        "back_arrows": [
            {"from": a, "to": b, "from_layer": LAYERS[structure.layer(a)][0],
             "to_layer": LAYERS[structure.layer(b)][0]} for a, b in back],
        "circles": [list(c) for c in structure.circles()],
        "mixed_folders": structure.mixed_folders(),
        "function_imports": [
            {"module": i.importer, "imports": i.imported, "line": i.line}
            for i in structure.function_imports()],
        "long_files": structure.long_files(),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path,
                        default=Path(__file__).resolve().parents[1] / "src" / "benchsel")
    parser.add_argument("--json", type=Path, help="also write the report as JSON here")
    args = parser.parse_args(argv)
    data = report(read_structure(args.src))
    name = lambda m: m or "(package)"  # noqa: E731
    print(f"{data['modules']} modules, {data['arrows']} import arrows")
    print(f"{len(data['back_arrows'])} arrows back up:")
    for arrow in data["back_arrows"]:
        print(f"  {name(arrow['from'])} ({arrow['from_layer']}) -> "
              f"{name(arrow['to'])} ({arrow['to_layer']})")
    print(f"{len(data['circles'])} import circles:")
    for circle in data["circles"]:
        print("  " + " <-> ".join(circle))
    print(f"{len(data['mixed_folders'])} folders in more than one layer:")
    for folder, layers in data["mixed_folders"].items():
        print(f"  {folder}/: {', '.join(layers)}")
    print(f"{len(data['function_imports'])} imports of the package inside functions")
    print(f"{len(data['long_files'])} files over {MAX_LINES} lines:")
    for module, lines in data["long_files"].items():
        print(f"  {module}: {lines}")
    if args.json:
        args.json.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
