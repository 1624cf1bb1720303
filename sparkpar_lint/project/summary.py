"""What a module's top-level functions do, as plain data another module's analysis can use.

A summary is computed once per module content (parse + stage graph, no rules) and kept in memory
for the run and, with the cache on, on disk under the cache directory by content hash: a module
imported by a hundred files is summarised once, never re-parsed per importer. Summaries do not
follow the module's own imports (one level), so a file's findings depend only on its own text and
the text of the project modules it imports, which is what its cache key covers.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import libcst as cst

from sparkpar_lint.project.locate import function_module, module_file

_FORMAT = "1"
_MAX_MODULE_BYTES = 4 * 1024 * 1024  # larger modules are generated code, not helpers
_DATA_KINDS = ("DataFrame", "GroupedData", "RDD", "DStream")


@dataclass(frozen=True)
class Returned:
    """The Spark value a function returns, analysed with its parameters unknown."""

    kind: str
    param: int | None = None  # the value is this parameter after the function's operations
    sourced: bool = False  # read inside the function (a source stage starts the chain)
    streaming: bool = False
    watermark: bool = False
    order: str = "unordered"  # an Order kind, or "preserved" (the parameter's order passes through)
    order_by: tuple[str, ...] = ()
    order_keys: tuple[str, ...] = ()
    partitioning: str = "unknown"  # a Partitioning kind, or "preserved"
    partition_keys: tuple[str, ...] = ()
    columns: tuple[str, ...] | None = None
    unique: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class CombinerUse:
    """A parameter the function hands to a Spark operator as its combiner."""

    param: int
    slot: int | str  # the operator's argument position or keyword
    receiver: str  # RDD, DStream, ...
    method: str
    receiver_param: int | None = None


@dataclass(frozen=True)
class FunctionSummary:
    name: str
    params: tuple[str, ...] = ()
    returns: Returned | None = None
    combiners: tuple[CombinerUse, ...] = ()


@dataclass
class ModuleSummary:
    functions: dict[str, FunctionSummary] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps({name: asdict(f) for name, f in self.functions.items()})

    @classmethod
    def from_json(cls, text: str) -> ModuleSummary:
        functions = {}
        for name, data in json.loads(text).items():
            returns = data["returns"]
            if returns is not None:
                returns = Returned(**{
                    **returns,
                    **{k: tuple(returns[k]) for k in ("order_by", "order_keys", "partition_keys")},
                    "columns": tuple(returns["columns"]) if returns["columns"] is not None else None,
                    "unique": tuple(tuple(s) for s in returns["unique"]),
                })
            functions[name] = FunctionSummary(
                name=data["name"],
                params=tuple(data["params"]),
                returns=returns,
                combiners=tuple(CombinerUse(**c) for c in data["combiners"]),
            )
        return cls(functions)


def summarize(graph, module: cst.Module) -> ModuleSummary:
    """The summary of a module from its stage graph (built with unknown parameters)."""
    from sparkpar_lint.graph.user_functions import parameter_names

    defs = {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef)}
    summary = ModuleSummary()
    calls_in = _calls_by_function(defs, graph)
    for name, function in defs.items():
        params = tuple(parameter_names(function))
        returned = graph.function_returns.get(name)
        combiners = tuple(_combiner_uses(graph, calls_in.get(name, ()), params))
        summary.functions[name] = FunctionSummary(name, params, _returned(graph, returned, params), combiners)
    return summary


def _returned(graph, value, params: tuple[str, ...]) -> Returned | None:
    from sparkpar_lint.graph.uniqueness import output_columns, unique_sets
    from sparkpar_lint.graph.values import SparkValue

    if not isinstance(value, SparkValue):
        return None
    if value.node is None:
        return Returned(kind=value.kind, streaming=value.streaming) if value.kind not in _DATA_KINDS else None
    node = graph.node(value.node)
    chain = [node, *graph.upstream(node)]
    root = chain[-1]
    sourced = root.spec is not None and root.spec.source
    param = None if sourced else _receiver_param(root, params)
    through = param is not None and len(root.inputs) == 0
    order, partitioning = node.output_order, node.output_partitioning
    keeps_order = through and all(n.spec is not None and n.spec.order_effect == "preserves" for n in chain)
    keeps_partitioning = through and all(
        n.spec is not None and n.spec.partitioning_effect == "preserves" for n in chain
    )
    columns = output_columns(graph, node)
    return Returned(
        kind=value.kind,
        param=param,
        sourced=sourced,
        streaming=node.streaming,
        watermark=node.has_watermark_upstream,
        order="preserved" if keeps_order else order.kind,
        order_by=order.by,
        order_keys=order.keys,
        partitioning="preserved" if keeps_partitioning else partitioning.kind,
        partition_keys=partitioning.keys,
        columns=tuple(sorted(columns)) if columns is not None else None,
        unique=tuple(tuple(sorted(s)) for s in unique_sets(graph, node)),
    )


def _receiver_param(node, params: tuple[str, ...]) -> int | None:
    """The parameter a chain starts from: `df.filter(...)` in `def f(df)` starts from `df`."""
    call = node.call
    if call is None or not isinstance(call.func, cst.Attribute):
        return None
    receiver = call.func.value
    if isinstance(receiver, cst.Name) and receiver.value in params:
        return params.index(receiver.value)
    return None


def _calls_by_function(defs: dict[str, cst.FunctionDef], graph) -> dict[str, list]:
    """The graph's operator nodes taking functions, by the top-level def whose body holds them."""
    wanted = {id(n.call): n for n in graph.nodes if n.call is not None and n.spec is not None and n.spec.functions}
    if not wanted:
        return {}
    found: dict[str, list] = {}
    for name, function in defs.items():
        stack: list[cst.CSTNode] = [function.body]
        while stack:
            current = stack.pop()
            if id(current) in wanted:
                found.setdefault(name, []).append(wanted[id(current)])
            stack.extend(current.children)
    return found


def _combiner_uses(graph, nodes, params: tuple[str, ...]):
    seen = set()
    for node in nodes:
        if node.spec.function_role != "combiner" or (id(node.call)) in seen:
            continue
        seen.add(id(node.call))
        positional = [a.value for a in node.call.args if a.keyword is None and not a.star]
        slots = [(i, positional[i]) for i in node.spec.functions if i < len(positional)]
        slots += [(a.keyword.value, a.value) for a in node.call.args if a.keyword is not None]
        chain = [node, *graph.upstream(node)]
        for slot, expr in slots:
            if isinstance(expr, cst.Name) and expr.value in params:
                yield CombinerUse(params.index(expr.value), slot, node.receiver, node.method,
                                  _receiver_param(chain[-1], params))


# ---------------------------------------------------------------- the run's summaries


class ProjectIndex:
    """Summaries of the project modules a run's files import, each computed once per content."""

    # One per process: a worker analysing many files summarises each imported module once.
    _memo: dict[str, ModuleSummary] = {}

    def __init__(self, summary_dir: Path | None = None) -> None:
        self.summary_dir = Path(summary_dir) if summary_dir is not None else None
        self._by_path: dict[str, ModuleSummary | None] = {}  # one read per module per analysis

    def function(self, importer: str, qualified: str) -> tuple[FunctionSummary, str] | None:
        """The summary of the project function `qualified` names, and its module file."""
        located = function_module(importer, qualified)
        if located is None:
            return None
        path, name = located
        summary = self.module(path)
        found = summary.functions.get(name) if summary is not None else None
        return (found, path) if found is not None else None

    def star_name(self, importer: str, star_modules: list[str], name: str) -> str | None:
        """The qualified name `name` has through a `from project.module import *`, if any."""
        for star in star_modules:
            path = module_file(importer, star)
            summary = self.module(path) if path is not None else None
            if summary is not None and name in summary.functions:
                return f"{star}.{name}" if not star.endswith(".") else star + name
        return None

    def module(self, path: str) -> ModuleSummary | None:
        if path not in self._by_path:
            self._by_path[path] = self._module(path)
        return self._by_path[path]

    def _module(self, path: str) -> ModuleSummary | None:
        try:
            if os.path.getsize(path) > _MAX_MODULE_BYTES:
                return None
            with open(path, "rb") as handle:
                data = handle.read(_MAX_MODULE_BYTES + 1)
        except OSError:
            return None
        key = _content_key(data)
        if key in self._memo:
            return self._memo[key]
        summary = self._read(key)
        if summary is None:
            summary = _compute(path, data)
            if summary is None:
                return None
            self._write(key, summary)
        self._memo[key] = summary
        return summary

    def _read(self, key: str) -> ModuleSummary | None:
        if self.summary_dir is None:
            return None
        try:
            return ModuleSummary.from_json((self.summary_dir / f"{key}.json").read_text("utf-8"))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None  # missing or damaged: computed again and rewritten

    def _write(self, key: str, summary: ModuleSummary) -> None:
        if self.summary_dir is None:
            return
        tmp = None
        try:
            self.summary_dir.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.summary_dir, prefix=".summary-", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(summary.to_json())
            os.replace(tmp, self.summary_dir / f"{key}.json")
            tmp = None
        except OSError:
            pass  # no cache, same answers
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)


def _content_key(data: bytes) -> str:
    from sparkpar_lint.cache import analysis_fingerprint

    digest = hashlib.sha256(f"summary{_FORMAT}\0{analysis_fingerprint()}\0".encode())
    digest.update(data)
    return digest.hexdigest()


def _compute(path: str, data: bytes) -> ModuleSummary | None:
    """Parse and build the module's graph once; a module that cannot be read gives no summary."""
    from sparkpar_lint.graph.builder import build_graph
    from sparkpar_lint.parsing import parse_module, with_deep_stack
    from sparkpar_lint.runner import decode

    def work() -> ModuleSummary:
        module = parse_module(decode(data))
        return summarize(build_graph(module, path), module)

    try:
        return with_deep_stack(work)
    except MemoryError:
        raise
    except Exception:  # a broken helper module must not stop the importer's analysis
        return None


_DEF = r"^[ \t]*(?:async[ \t]+)?def[ \t]+({name})\b"


def definition_line(path: str, name: str) -> tuple[int, int] | None:
    """(line, column) of `def name` in `path`: read only when a finding names the helper."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read(_MAX_MODULE_BYTES)
    except OSError:
        return None
    match = re.search(_DEF.format(name=re.escape(name)), text, re.MULTILINE)
    if match is None:
        return None
    line = text.count("\n", 0, match.start(1)) + 1
    return line, match.start(1) - (text.rfind("\n", 0, match.start(1)) + 1)
