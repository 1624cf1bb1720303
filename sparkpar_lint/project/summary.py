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
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import libcst as cst

from sparkpar_lint.graph.visiting import children
from sparkpar_lint.project.constants import Literal, module_constants
from sparkpar_lint.project.locate import function_module, module_file
from sparkpar_lint.project.methods import MethodSummary, SelfCall, class_methods

if TYPE_CHECKING:  # the graph modules load when a module is summarised, not with the runner
    from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
    from sparkpar_lint.graph.values import Value

_FORMAT = "4"
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
class ArgFacts:
    """What a caller's DataFrame argument is known to be, at the call."""

    kind: str
    sourced: bool = False
    streaming: bool = False
    columns: tuple[str, ...] | None = None
    unique: tuple[tuple[str, ...], ...] = ()
    # Lookups joined in upstream: (join keys, the columns the lookup brought in).
    lookups: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class CallFacts:
    """One call of a (possibly) project function: its dotted name as the module imports it."""

    target: str
    args: tuple[ArgFacts | None, ...] = ()
    kwargs: tuple[tuple[str, ArgFacts], ...] = ()

    def argument(self, index: int, name: str) -> ArgFacts | None:
        if index < len(self.args):
            return self.args[index]
        return dict(self.kwargs).get(name)


@dataclass(frozen=True)
class FunctionSummary:
    name: str
    params: tuple[str, ...] = ()
    returns: Returned | None = None
    combiners: tuple[CombinerUse, ...] = ()


@dataclass
class ModuleSummary:
    functions: dict[str, FunctionSummary] = field(default_factory=dict)
    calls: list[CallFacts] = field(default_factory=list)
    # Modules it star-imports (`from .DEDUPLICATE import *` in a package's __init__): re-exports.
    stars: list[str] = field(default_factory=list)
    # Names it imports from its own package (`from .DEDUPLICATE import DEDUPLICATE`): re-exports.
    names: dict[str, str] = field(default_factory=dict)
    # Top-level names set to a literal (`KEYS = ["id"]`): a star import or `%run` brings them along.
    constants: dict[str, Literal] = field(default_factory=dict)
    # Top-level classes: their bound methods (a subclass in another module inherits them).
    classes: dict[str, dict[str, MethodSummary]] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(
            {
                "functions": {name: asdict(f) for name, f in self.functions.items()},
                "calls": [asdict(c) for c in self.calls],
                "stars": self.stars,
                "names": self.names,
                "constants": self.constants,
                "classes": {k: {n: asdict(m) for n, m in ms.items()} for k, ms in self.classes.items()},
            }
        )

    @classmethod
    def from_json(cls, text: str) -> ModuleSummary:
        data = json.loads(text)
        calls = [
            CallFacts(
                c["target"],
                tuple(_arg_from(a) for a in c["args"]),
                tuple((k, f) for k, a in c["kwargs"] if (f := _arg_from(a)) is not None),  # stored without Nones
            )
            for c in data["calls"]
        ]
        return cls(
            cls._functions_from(data["functions"]),
            calls,
            list(data["stars"]),
            dict(data["names"]),
            dict(data["constants"]),
            {k: {n: _method_from(m) for n, m in ms.items()} for k, ms in data["classes"].items()},
        )

    @staticmethod
    def _functions_from(stored: dict[str, Any]) -> dict[str, FunctionSummary]:
        functions = {}
        for name, data in stored.items():
            returns = data["returns"]
            if returns is not None:
                returns = Returned(
                    **{
                        **returns,
                        **{k: tuple(returns[k]) for k in ("order_by", "order_keys", "partition_keys")},
                        "columns": tuple(returns["columns"]) if returns["columns"] is not None else None,
                        "unique": tuple(tuple(s) for s in returns["unique"]),
                    }
                )
            functions[name] = FunctionSummary(
                name=data["name"],
                params=tuple(data["params"]),
                returns=returns,
                combiners=tuple(CombinerUse(**c) for c in data["combiners"]),
            )
        return functions


def _method_from(data: dict[str, Any]) -> MethodSummary:
    return MethodSummary(
        data["name"],
        tuple(data["params"]),
        tuple(
            SelfCall(c["method"], tuple(c["args"]), tuple((k, v) for k, v in c["kwargs"])) for c in data["self_calls"]
        ),
        tuple((p, tuple(calls)) for p, calls in data["reads"]),
    )


def _arg_from(data: dict[str, Any] | None) -> ArgFacts | None:
    if data is None:
        return None
    return ArgFacts(
        kind=data["kind"],
        sourced=data["sourced"],
        streaming=data["streaming"],
        columns=tuple(data["columns"]) if data["columns"] is not None else None,
        unique=tuple(tuple(u) for u in data["unique"]),
        lookups=tuple((tuple(on), tuple(cols)) for on, cols in data["lookups"]),
    )


def summarize(graph: StageGraph, module: cst.Module) -> ModuleSummary:
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
    if graph.imports is not None:
        summary.stars = list(graph.imports.star_modules)
        summary.names = {local: q for local, q in graph.imports.names.items() if q.startswith(".")}
    summary.constants = module_constants(module)
    summary.classes = {s.name.value: class_methods(s) for s in module.body if isinstance(s, cst.ClassDef)}
    for target, args, kwargs in graph.outgoing_calls:
        facts = tuple(_arg_facts(graph, a) for a in args)
        named = tuple((k, f) for k, f in ((k, _arg_facts(graph, v)) for k, v in kwargs.items()) if f is not None)
        # Kept even when nothing is known of the arguments: a caller passing a frame of unknown
        # origin must stop its callee from assuming what the other callers pass.
        summary.calls.append(CallFacts(target, facts, named))
    return summary


def _arg_facts(graph: StageGraph, value: Value) -> ArgFacts | None:
    from sparkpar_lint.graph.uniqueness import output_columns, unique_sets
    from sparkpar_lint.graph.values import SparkValue

    if not isinstance(value, SparkValue) or value.node is None or value.kind != "DataFrame":
        return None
    node = graph.node(value.node)
    chain = [node, *graph.upstream(node)]
    root = chain[-1]
    columns = output_columns(graph, node)
    return ArgFacts(
        kind=value.kind,
        sourced=_read_from_source(root),
        streaming=node.streaming,
        columns=tuple(sorted(columns)) if columns is not None else None,
        unique=tuple(tuple(sorted(u)) for u in unique_sets(graph, node)),
        lookups=tuple(_lookups(graph, chain)),
    )


def _read_from_source(root: StageNode) -> bool:
    """The chain starts at a read: a source operator, or a project helper that reads one."""
    return (root.spec is not None and root.spec.source) or (root.imported is not None and root.imported.sourced)


def _lookups(graph: StageGraph, chain: list[StageNode]) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """Joins of lookups upstream whose brought-in columns reach the end of the chain unchanged."""
    from sparkpar_lint.graph.uniqueness import is_unique_on, join_keys, output_columns

    found: list[tuple[tuple[str, ...], set[str]]] = []
    for node in reversed(chain):  # from the source down to the argument
        if node.method == "join" and len(node.inputs) > 1:
            on = join_keys(node)
            other = graph.node(node.inputs[1])
            side = output_columns(graph, other)
            # A lookup brings one value per key when it is unique on the keys, or is a reference
            # table spelled out on the driver (`createDataFrame(rows, [key, ...])`). Rows read
            # from storage and joined on a column they repeat (one resource, many endpoints) are
            # not a lookup.
            root = ([other, *graph.upstream(other)])[-1]
            keyed = bool(on and (is_unique_on(graph, other, on) or root.method == "createDataFrame"))
            if on and side and keyed:
                found.append((tuple(on), set(side) - set(on)))
            continue
        if (
            node.spec is None
            or node.receiver == "GroupedData"
            or node.spec.forwarding not in ("all", "selected", "dropped")
        ):
            found = []  # an aggregation or an unknown step: nothing above it is known to hold
            continue
        if node.method == "withColumn" and node.call is not None and node.call.args:
            redefined = node.call.args[0].value
            name = redefined.evaluated_value if isinstance(redefined, cst.SimpleString) else None
            found = [(on, cols - {name}) for on, cols in found]
    return [(on, tuple(sorted(cols))) for on, cols in found if cols]


def _returned(graph: StageGraph, value: object, params: tuple[str, ...]) -> Returned | None:
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


def _receiver_param(node: StageNode, params: tuple[str, ...]) -> int | None:
    """The parameter a chain starts from: `df.filter(...)` in `def f(df)` starts from `df`."""
    call = node.call
    if call is None or not isinstance(call.func, cst.Attribute):
        return None
    receiver = call.func.value
    if isinstance(receiver, cst.Name) and receiver.value in params:
        return params.index(receiver.value)
    return None


def _calls_by_function(defs: dict[str, cst.FunctionDef], graph: StageGraph) -> dict[str, list[StageNode]]:
    """The graph's operator nodes taking functions, by the top-level def whose body holds them."""
    wanted = {id(n.call): n for n in graph.nodes if n.call is not None and n.spec is not None and n.spec.functions}
    if not wanted:
        return {}
    found: dict[str, list[StageNode]] = {}
    for name, function in defs.items():
        stack: list[cst.CSTNode] = [function.body]
        while stack:
            current = stack.pop()
            if id(current) in wanted:
                found.setdefault(name, []).append(wanted[id(current)])
            stack.extend(children(current))
    return found


def _combiner_uses(graph: StageGraph, nodes: Iterable[StageNode], params: tuple[str, ...]) -> Iterator[CombinerUse]:
    seen = set()
    for node in nodes:
        # Every node here has a call and a spec (see _calls_by_function).
        if node.spec is None or node.call is None:
            continue
        if node.spec.function_role != "combiner" or (id(node.call)) in seen:
            continue
        seen.add(id(node.call))
        positional = [a.value for a in node.call.args if a.keyword is None and not a.star]
        slots: list[tuple[int | str, cst.BaseExpression]] = [
            (i, positional[i]) for i in node.spec.functions if i < len(positional)
        ]
        slots += [(a.keyword.value, a.value) for a in node.call.args if a.keyword is not None]
        chain = [node, *graph.upstream(node)]
        for slot, expr in slots:
            if isinstance(expr, cst.Name) and expr.value in params:
                yield CombinerUse(
                    params.index(expr.value), slot, node.receiver, node.method, _receiver_param(chain[-1], params)
                )


# ---------------------------------------------------------------- the run's summaries


class ProjectIndex:
    """Summaries of the project modules a run's files import, each computed once per content."""

    # One per process: a worker analysing many files summarises each imported module once.
    _memo: dict[str, ModuleSummary] = {}

    def __init__(self, summary_dir: Path | None = None, *, leaf: bool = False) -> None:
        self.summary_dir = Path(summary_dir) if summary_dir is not None else None
        # A leaf index (the one summaries are computed with) answers for imported functions but
        # never looks for callers: summaries stay one level deep.
        self.leaf = leaf
        self._by_path: dict[tuple[str, bool], ModuleSummary | None] = {}  # one read per module per analysis

    def function(self, importer: str, qualified: str) -> tuple[FunctionSummary, str] | None:
        """The summary of the project function `qualified` names, and its module file."""
        located = function_module(importer, qualified)
        if located is None:
            return None
        return self._defined(*located)

    def _defined(self, path: str, name: str) -> tuple[FunctionSummary, str] | None:
        """`name` in module `path`, or re-exported by it from a module it star-imports (one level)."""
        summary = self.module(path)
        if summary is None:
            return None
        if name in summary.functions:
            return summary.functions[name], path
        if name in summary.names:
            located = function_module(path, summary.names[name])
            inner = self.module(located[0]) if located is not None else None
            if located is not None and inner is not None and located[1] in inner.functions:
                return inner.functions[located[1]], located[0]
        for star in summary.stars:
            source = module_file(path, star)
            inner = self.module(source) if source is not None else None
            if source is not None and inner is not None and name in inner.functions:
                return inner.functions[name], source
        return None

    def class_methods(self, importer: str, qualified: str) -> dict[str, MethodSummary] | None:
        """The methods of the project class `qualified` names (its own body, not its bases)."""
        located = function_module(importer, qualified)
        summary = self.module(located[0]) if located is not None else None
        return summary.classes.get(located[1]) if summary is not None and located is not None else None

    def callers(self, path: str, name: str) -> list[CallFacts]:
        """Every call of function `name` of module `path` from the other modules of its project."""
        from sparkpar_lint.project.locate import importers_index, is_test_file, project_root

        root = project_root(path) if not self.leaf else None
        if root is None:
            return []
        here = os.path.realpath(path)
        index = importers_index(root)
        importers = list(index.get(here, ()))
        # A package's __init__ that star-imports this module re-exports it: its importers too.
        importers += [i for p in list(importers) if os.path.basename(p) == "__init__.py" for i in index.get(p, ())]
        found = []
        for importer in dict.fromkeys(importers):
            if is_test_file(importer):
                continue  # a test's sample frames say nothing about the job's real inputs
            summary = self.module(importer, full=True)
            for call in summary.calls if summary is not None else ():
                if call.target.rpartition(".")[2] != name:
                    continue
                located = function_module(importer, call.target)
                defined = self._defined(*located) if located is not None else None
                if defined is not None and defined[1] == here:
                    found.append(call)
        return found

    def star_name(self, importer: str, star_modules: list[str], name: str) -> str | None:
        """The qualified name `name` has through a `from project.module import *`, if any."""
        for star in star_modules:
            path = module_file(importer, star)
            if path is not None and self._defined(path, name) is not None:
                return f"{star}.{name}" if not star.endswith(".") else star + name
        return None

    def star_constant(self, importer: str, star_modules: list[str], name: str) -> tuple[Literal] | None:
        """The literal `name` is set to in a module star-imported here (a `%run` notebook is one),
        in a 1-tuple (the literal may be None); the first module defining it wins, as its
        functions do."""
        for star in star_modules:
            path = module_file(importer, star)
            summary = self.module(path) if path is not None else None
            if summary is not None and name in summary.constants:
                return (summary.constants[name],)
        return None

    def module(self, path: str, full: bool = False) -> ModuleSummary | None:
        """The module's summary; `full`: computed with its own imports' summaries (its calls then
        see what imported helpers return), for the callers' side."""
        if (path, full) not in self._by_path:
            self._by_path[(path, full)] = self._module(path, full)
        return self._by_path[(path, full)]

    def _module(self, path: str, full: bool) -> ModuleSummary | None:
        data = _read_module(path)
        if data is None:
            return None
        key = _content_key(data, dependency_digest(path, data) if full else "")
        if key in self._memo:
            return self._memo[key]
        summary = self._read(key)
        if summary is None:
            summary = _compute(path, data, ProjectIndex(self.summary_dir, leaf=True) if full else None)
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


def _read_module(path: str) -> bytes | None:
    try:
        if os.path.getsize(path) > _MAX_MODULE_BYTES:
            return None
        with open(path, "rb") as handle:
            return handle.read(_MAX_MODULE_BYTES + 1)
    except OSError:
        return None


def dependency_digest(path: str, data: bytes) -> str:
    """The files and contents of the project modules `data` (at `path`) imports."""
    from sparkpar_lint.project.locate import imported_modules

    digest = hashlib.sha256()
    for module in imported_modules(path, data):
        digest.update(module.encode("utf-8", "surrogateescape") + b"\0" + module_digest(module))
    return digest.hexdigest()


@lru_cache(maxsize=65536)
def module_digest(path: str) -> bytes:
    """A module file's content hash; one read per run (`forget_digests` at a run's start)."""
    content = _read_module(path)
    return hashlib.sha256(content).digest() if content is not None else b"missing"


def _content_key(data: bytes, dependencies: str = "") -> str:
    from sparkpar_lint.cache import analysis_fingerprint

    digest = hashlib.sha256(f"summary{_FORMAT}\0{analysis_fingerprint()}\0{dependencies}\0".encode())
    digest.update(data)
    return digest.hexdigest()


def _compute(path: str, data: bytes, project: ProjectIndex | None = None) -> ModuleSummary | None:
    """Parse and build the module's graph once; a module that cannot be read gives no summary."""
    from sparkpar_lint.graph.builder import build_graph
    from sparkpar_lint.parsing import parse_module, with_deep_stack

    def work() -> ModuleSummary:
        module = parse_module(_python_text(path, data))
        graph = build_graph(module, path, project)
        summary = summarize(graph, module)
        graph.release()  # its tree freed now, not by a full collector pass
        return summary

    try:
        return with_deep_stack(work)
    except MemoryError:
        raise
    except Exception:  # a broken helper module must not stop the importer's analysis
        return None


def _python_text(path: str, data: bytes) -> str:
    """A module's text; a notebook's (the target of a `%run`) with its magics masked."""
    from sparkpar_lint.decoding import decode
    from sparkpar_lint.sources import is_notebook
    from sparkpar_lint.sources.notebook import read_notebook

    return read_notebook(path, data).virtual.text if is_notebook(path, data) else decode(data)


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
