"""The module import graph of the two packages has no cycle and no import from a lower layer up.

Every `import` counts, wherever it is written: at the top, inside a function, under
`if TYPE_CHECKING:`. A function-level import still ties the two modules together (the one cannot
be read, moved or tested without the other), so it is no way around a cycle. ARCHITECTURE.md
("Layers") explains the order; a new module must be given a layer below before this test passes.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("sparkpar_lint", "pytest_sparkpar")

# Bottom to top. A module may import from its own layer and the layers below it. `name.*` is the
# package `name` and everything under it; the longest pattern that matches a module decides.
LAYERS: list[tuple[str, list[str]]] = [
    (
        "base",
        [
            "sparkpar_lint",
            "sparkpar_lint.model",
            "sparkpar_lint.streams",
            "sparkpar_lint.settings",
            "sparkpar_lint.isolation",
            "sparkpar_lint.parsing",
            "sparkpar_lint.long_chains",
            "sparkpar_lint.catalogue",
            "sparkpar_lint.suppressions",
            "sparkpar_lint.ruledocs",
            "sparkpar_lint.decoding",
            "sparkpar_lint.output.escape",
            "sparkpar_lint.runtime.*",
        ],
    ),
    (
        "sources",
        [
            "sparkpar_lint.discovery",
            "sparkpar_lint.config",
            "sparkpar_lint.selection",
            "sparkpar_lint.sources.*",
            "sparkpar_lint.project",
            "sparkpar_lint.project.locate",
            "sparkpar_lint.cache",
        ],
    ),
    ("graph", ["sparkpar_lint.graph.*", "sparkpar_lint.sql.*", "sparkpar_lint.project.*"]),
    ("confidence", ["sparkpar_lint.confidence", "sparkpar_lint.confidence_filter"]),
    ("edits", ["sparkpar_lint.edits.*"]),
    ("rules", ["sparkpar_lint.rules.*"]),
    ("analysis", ["sparkpar_lint.analysis", "sparkpar_lint.notebook_lint"]),
    ("fix engine", ["sparkpar_lint.fixes", "sparkpar_lint.fixes.engine", "sparkpar_lint.fixes.text_edits"]),
    (
        "run and outputs",
        [
            "sparkpar_lint.runner",
            "sparkpar_lint.changed",
            "sparkpar_lint.fingerprints",
            "sparkpar_lint.verdicts",
            "sparkpar_lint.command_input",
            "sparkpar_lint.output.*",
            "sparkpar_lint.fixes.*",
        ],
    ),
    (
        "commands",
        [
            "sparkpar_lint.cli",
            "sparkpar_lint.fixes.command",
            "sparkpar_lint.graph.render",
            "sparkpar_lint.plan.*",
            "sparkpar_lint.server.*",
        ],
    ),
    ("pytest plugin", ["pytest_sparkpar.*"]),
]


def _modules(root: Path) -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _imports(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, int]]:
    """(module imported, line) for every import of a module of the packages, however written."""
    is_package = path.name == "__init__.py"
    here = name.split(".") if is_package else name.split(".")[:-1]
    found: list[tuple[str, int]] = []

    def known(dotted: str) -> str | None:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str | None] = []
        if isinstance(node, ast.Import):
            targets = [known(alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            # `from package import module` imports the module; `from module import name`, the module.
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else known(base) for a in node.names]
        found += [(target, node.lineno) for target in targets if target and target != name]
    return sorted(set(found))


def _layer_of(module: str) -> int | None:
    best: tuple[int, int] | None = None
    for index, (_, patterns) in enumerate(LAYERS):
        for pattern in patterns:
            prefix = pattern.removesuffix(".*")
            matches = module == prefix or (pattern.endswith(".*") and module.startswith(prefix + "."))
            if matches and (best is None or len(pattern) > best[0]):
                best = (len(pattern), index)
    return None if best is None else best[1]


def _graph(root: Path) -> tuple[dict[str, list[tuple[str, int]]], dict[str, Path]]:
    modules = _modules(root)
    return {name: _imports(name, path, modules) for name, path in modules.items()}, modules


def _cycles(graph: dict[str, list[tuple[str, int]]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted({t for t, _ in graph[start]})))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted({t for t, _ in graph[successor]}))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
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
                    if len(component) > 1:
                        components.append(sorted(component))
    return components


@functools.cache
def layer_violations(root: Path = ROOT) -> tuple[list[str], list[str], list[str]]:
    """(modules without a layer, cycles, upward imports), each as readable lines."""
    graph, modules = _graph(root)
    unplaced = [name for name in graph if _layer_of(name) is None]
    cycles = []
    for component in _cycles(graph):
        members = set(component)
        inside = [
            f"{modules[a].relative_to(root)}:{line} imports {b}"
            for a in component
            for b, line in graph[a]
            if b in members
        ]
        cycles.append("cycle " + " <-> ".join(component) + ": " + "; ".join(inside))
    upward = []
    for name, targets in sorted(graph.items()):
        source = _layer_of(name)
        for target, line in targets:
            destination = _layer_of(target)
            if source is not None and destination is not None and destination > source:
                upward.append(
                    f"{modules[name].relative_to(root)}:{line} imports {target} "
                    f"(layer {LAYERS[source][0]!r} may not import layer {LAYERS[destination][0]!r})"
                )
    return unplaced, cycles, upward


def test_every_module_has_a_layer():
    unplaced, _, _ = layer_violations()
    assert not unplaced, "give these modules a layer in tests/test_import_layers.py: " + ", ".join(unplaced)


def test_no_import_cycle():
    _, cycles, _ = layer_violations()
    assert not cycles, "\n".join(cycles)


def test_no_upward_import():
    _, _, upward = layer_violations()
    assert not upward, "\n".join(upward)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_an_import_inside_a_function_that_closes_a_cycle_is_named(tmp_path):
    _write(
        tmp_path,
        {
            "sparkpar_lint/__init__.py": "",
            "sparkpar_lint/graph/__init__.py": "",
            "sparkpar_lint/graph/a.py": "from sparkpar_lint.graph.b import x\n",
            "sparkpar_lint/graph/b.py": "x = 1\ndef f():\n    from sparkpar_lint.graph import a\n",
            "pytest_sparkpar/__init__.py": "",
        },
    )
    _, cycles, upward = layer_violations(tmp_path)
    assert upward == []
    assert cycles == [
        "cycle sparkpar_lint.graph.a <-> sparkpar_lint.graph.b: "
        "sparkpar_lint/graph/a.py:1 imports sparkpar_lint.graph.b; "
        "sparkpar_lint/graph/b.py:3 imports sparkpar_lint.graph.a"
    ]


@pytest.mark.parametrize(
    "statement",
    [
        "from sparkpar_lint.analysis import analyze\n",
        "from .. import analysis\n",
        "import sparkpar_lint.analysis\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from sparkpar_lint.analysis import analyze\n",
    ],
)
def test_an_upward_import_is_named_however_it_is_written(tmp_path, statement):
    _write(
        tmp_path,
        {
            "sparkpar_lint/__init__.py": "",
            "sparkpar_lint/analysis.py": "",
            "sparkpar_lint/sources/__init__.py": "",
            "sparkpar_lint/sources/notebook.py": statement,
            "pytest_sparkpar/__init__.py": "",
        },
    )
    unplaced, cycles, upward = layer_violations(tmp_path)
    assert (unplaced, cycles) == ([], [])
    assert len(upward) == 1
    assert upward[0].startswith("sparkpar_lint/sources/notebook.py:")
    assert "imports sparkpar_lint.analysis (layer 'sources' may not import layer 'analysis')" in upward[0]
