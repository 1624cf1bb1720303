"""The planner's own operator model: a chain (or small graph) of abstract operators.

It is deliberately independent of Spark and of the stage graph, so the cost model and the
heuristics can be used and tested alone (`sparkpar plan --model chain.json`). The vocabulary is the
papers': an operator is `stateless`, `partitioned` (per-key state, Spark's groupBy/agg) or
`stateful` (arbitrary or unknown state: never replicated); selectivity is a number (rows out per
row in) and a class from the auto-parallelizing paper's Table 1 (`exactly-one`, `at-most-one`,
`any`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KINDS = ("stateless", "partitioned", "stateful")
SELECTIVITY_CLASSES = ("exactly-one", "at-most-one", "any")


class ModelError(ValueError):
    """A chain/graph description that cannot be planned; the message names the file and problem."""


def selectivity_class_of(selectivity: float) -> str:
    if selectivity == 1.0:
        return "exactly-one"
    return "at-most-one" if selectivity < 1.0 else "any"


@dataclass(frozen=True)
class Operator:
    name: str
    kind: str = "stateless"
    key: tuple[str, ...] = ()  # partitioning key of a `partitioned` operator
    cost: float = 1.0  # seconds (or any time unit) per input row
    selectivity: float = 1.0  # rows out per row in
    selectivity_class: str = ""  # derived from `selectivity` when empty
    # Columns copied unchanged from input to output; None means "all of them" (SPL's Always).
    forwarded: frozenset[str] | None = None
    # Bounded-linear scalability f_b(x; u) of the fission paper: the key's domain size, say.
    max_replicas: int | None = None
    fused_with: tuple[str, ...] = ()  # fusion dependencies (SPL pragmas; Figure 5's o12/o14)
    origin: str = ""  # where it came from: a stage-graph node, a profile row
    # Python source of each key component, for advice: `F.window("t", "10 minutes")` is one
    # component of a job's key, not the columns "t" and "10 minutes". Empty: repr of each name.
    key_code: tuple[str, ...] = ()
    streaming: bool = False  # part of a streaming query: keyed state lives in its checkpoint
    api: str = ""  # the Spark API it is called on (DataFrame, RDD, ...); empty in --model chains

    def __post_init__(self) -> None:
        if not self.selectivity_class:
            object.__setattr__(self, "selectivity_class", selectivity_class_of(self.selectivity))

    @property
    def parallelizable(self) -> bool:
        """Table 1: unknown state or unknown (prolific) selectivity is never parallelized."""
        return self.kind != "stateful" and self.selectivity_class != "any"

    def code_of(self, component: str) -> str:
        """The Python expression for one key component, usable as a `repartition` argument."""
        for name, code in zip(self.key, self.key_code):
            if name == component:
                return code
        return repr(component)

    def forwards(self, columns: Iterable[str]) -> bool:
        return self.forwarded is None or set(columns) <= self.forwarded

    def scalability(self, replicas: int) -> float:
        """f<o>(x): linear for stateless operators, bounded linear for partitioned ones."""
        if self.kind == "stateful":
            return 1.0
        if self.max_replicas is not None:
            return float(min(replicas, self.max_replicas))
        return float(replicas)


@dataclass
class OperatorGraph:
    """Operators and the streams between them; a chain is the common case."""

    operators: list[Operator]
    edges: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def chain(cls, operators: Sequence[Operator]) -> OperatorGraph:
        ops = list(operators)
        return cls(ops, [(a.name, b.name) for a, b in zip(ops, ops[1:])])

    def __post_init__(self) -> None:
        self.by_name = {op.name: op for op in self.operators}
        if len(self.by_name) != len(self.operators):
            raise ModelError("operator names must be unique")
        for src, dst in self.edges:
            for end in (src, dst):
                if end not in self.by_name:
                    raise ModelError(f"edge names an unknown operator {end!r}")

    def successors(self, name: str) -> list[str]:
        return [dst for src, dst in self.edges if src == name]

    def predecessors(self, name: str) -> list[str]:
        return [src for src, dst in self.edges if dst == name]

    def fan_in(self, name: str) -> int:
        return len(self.predecessors(name))

    def fan_out(self, name: str) -> int:
        return len(self.successors(name))

    @property
    def is_chain(self) -> bool:
        names = [op.name for op in self.operators]
        return self.edges == list(zip(names, names[1:]))


@dataclass(frozen=True)
class PlanModel:
    """A chain plus the machine: what `sparkpar plan --model` reads."""

    operators: tuple[Operator, ...]
    cores: int = 8
    thread_switch_cost: float = 0.0  # delta of the fission paper, per row crossing a queue
    replication_cost: float = 0.0  # c_p: per-row ordering cost, times log2(replicas)
    max_threads: int | None = None  # brute-force thread budget; default 2 x cores
    # Per operator, the names of the operators it reads (joins, unions, fan-out); None: a chain
    # in list order. An operator with no inputs is a source.
    inputs: tuple[tuple[str, ...], ...] | None = None

    @property
    def thread_budget(self) -> int:
        return self.max_threads or 2 * self.cores


# --- reading a model file ------------------------------------------------------------------

_TOP_KEYS = {"cores", "thread_switch_cost", "replication_cost", "max_threads", "operators"}
_OP_KEYS = {"name", "kind", "key", "cost", "selectivity", "selectivity_class", "forwarded", "max_replicas", "inputs"}


def load_model(path: str | Path) -> PlanModel:
    """Read a chain written as JSON; every problem is a ModelError naming the file."""
    path = Path(path)
    from sparkpar_lint.discovery import NotASourceFile, describe_read_error, read_source_bytes

    try:
        text = read_source_bytes(str(path)).decode("utf-8")
    except FileNotFoundError:
        raise ModelError(f"{path}: no such file") from None
    except (OSError, NotASourceFile) as error:
        raise ModelError(describe_read_error(str(path), error)) from None
    except UnicodeDecodeError as error:
        raise ModelError(f"{path}: cannot read: {error}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ModelError(f"{path}: not valid JSON: {error.msg} at line {error.lineno} column {error.colno}") from None
    except RecursionError:
        raise ModelError(f"{path}: nested too deeply to be a model (a model is a list of operator objects)") from None
    try:
        return model_from_dict(data)
    except ModelError as error:
        raise ModelError(f"{path}: {error}") from None


def model_from_dict(data: object) -> PlanModel:
    if not isinstance(data, dict):
        raise ModelError('the model must be a JSON object with an "operators" list')
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise ModelError(f"unknown key(s) {', '.join(sorted(unknown))}; expected {', '.join(sorted(_TOP_KEYS))}")
    ops = data.get("operators")
    if not isinstance(ops, list) or not ops:
        raise ModelError('"operators" must be a non-empty list (source first, sink last)')
    operators = tuple(_operator_from_dict(op, index) for index, op in enumerate(ops))
    if len({op.name for op in operators}) != len(operators):
        raise ModelError("operator names must be unique")
    if not any(op.cost > 0 for op in operators):
        raise ModelError("at least one operator must have a positive cost")
    max_threads = data.get("max_threads")
    inputs = None
    if any(isinstance(op, dict) and "inputs" in op for op in ops):
        inputs = tuple(_inputs(op) for op in ops)
        _check_graph(operators, inputs)
    return PlanModel(
        operators=operators,
        cores=_whole(data, "cores", 8),
        thread_switch_cost=_number(data, "thread_switch_cost", 0.0),
        replication_cost=_number(data, "replication_cost", 0.0),
        max_threads=None if max_threads is None else _whole(data, "max_threads", 0),
        inputs=inputs,
    )


def _inputs(raw: dict[str, Any]) -> tuple[str, ...]:
    value = raw.get("inputs", [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ModelError(f'operator {raw["name"]!r}: "inputs" must be a list of operator names')
    return tuple(value)


def _check_graph(operators: tuple[Operator, ...], inputs: tuple[tuple[str, ...], ...]) -> None:
    names = {op.name for op in operators}
    for op, reads in zip(operators, inputs):
        for name in reads:
            if name not in names:
                raise ModelError(f'operator {op.name!r}: "inputs" names an unknown operator {name!r}')
        if len(set(reads)) != len(reads):
            raise ModelError(f'operator {op.name!r}: "inputs" lists an operator twice')
    reads_of = dict(zip((op.name for op in operators), inputs))
    done: set[str] = set()
    for start in reads_of:  # depth-first, iteratively: a cycle has no source to start from
        stack, path = [(start, iter(reads_of[start]))], {start}
        while stack:
            name, pending = stack[-1]
            following = next(pending, None)
            if following is None:
                stack.pop()
                path.discard(name)
                done.add(name)
            elif following in path:
                raise ModelError(f'operator {following!r}: "inputs" form a cycle')
            elif following not in done:
                stack.append((following, iter(reads_of[following])))
                path.add(following)


def graph_from_dict(data: dict[str, Any]) -> OperatorGraph:
    """A stream graph: {"operators": [...], "edges": [[from, to], ...]} (a chain if no edges).

    Operators take the model's keys plus "fused_with" (fusion dependencies, as in SPL pragmas).
    """
    ops = data.get("operators")
    if not isinstance(ops, list) or not ops:
        raise ModelError('"operators" must be a non-empty list')
    operators = []
    for index, raw in enumerate(ops):
        fused = raw.get("fused_with", []) if isinstance(raw, dict) else []
        plain = {k: v for k, v in raw.items() if k != "fused_with"} if isinstance(raw, dict) else raw
        op = _operator_from_dict(plain, index)
        operators.append(Operator(**{**op.__dict__, "fused_with": _names(fused, f'{op.name}: "fused_with"')}))
    if "edges" not in data:
        return OperatorGraph.chain(operators)
    edges = data["edges"]
    if not isinstance(edges, list) or not all(
        isinstance(e, list) and len(e) == 2 and all(isinstance(x, str) for x in e) for e in edges
    ):
        raise ModelError('"edges" must be a list of [from, to] operator-name pairs')
    return OperatorGraph(operators, [tuple(e) for e in edges])


def _operator_from_dict(raw: object, index: int) -> Operator:
    where = f"operators[{index}]"
    if not isinstance(raw, dict):
        raise ModelError(f"{where} must be an object")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise ModelError(f'{where}: "name" must be a non-empty string')
    where = f"operator {name!r}"
    unknown = set(raw) - _OP_KEYS
    if unknown:
        raise ModelError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    kind = raw.get("kind", "stateless")
    if kind not in KINDS:
        raise ModelError(f'{where}: "kind" must be one of {", ".join(KINDS)}, not {kind!r}')
    key = _names(raw.get("key", []), f'{where}: "key"')
    if kind == "partitioned" and not key:
        raise ModelError(f'{where}: a partitioned operator needs a non-empty "key"')
    selectivity = _number(raw, "selectivity", 1.0, where=where)
    if selectivity <= 0:
        raise ModelError(f'{where}: "selectivity" must be > 0')
    sel_class = raw.get("selectivity_class", "")
    if sel_class and sel_class not in SELECTIVITY_CLASSES:
        raise ModelError(f'{where}: "selectivity_class" must be one of {", ".join(SELECTIVITY_CLASSES)}')
    forwarded = raw.get("forwarded")
    max_replicas = raw.get("max_replicas")
    return Operator(
        name=name,
        kind=kind,
        key=key,
        cost=_number(raw, "cost", 1.0, where=where),
        selectivity=selectivity,
        selectivity_class=sel_class,
        forwarded=None if forwarded is None else frozenset(_names(forwarded, f'{where}: "forwarded"')),
        max_replicas=None if max_replicas is None else _whole(raw, "max_replicas", 1, where=where),
    )


def _names(value: object, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ModelError(f"{where} must be a column name or a list of column names")
    return tuple(value)


def _number(
    data: dict[str, Any], key: str, default: float, *, integer: bool = False, minimum: float = 0, where: str = ""
) -> float:
    value = data.get(key, default)
    label = f'{where}: "{key}"' if where else f'"{key}"'
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ModelError(f"{label} must be a number, not {value!r}")
    if integer and int(value) != value:
        raise ModelError(f"{label} must be a whole number, not {value!r}")
    if value < minimum:
        raise ModelError(f"{label} must be >= {minimum}, not {value!r}")
    return int(value) if integer else float(value)


def _whole(data: dict[str, Any], key: str, default: int, *, where: str = "") -> int:
    """A whole number >= 1, typed as the int `_number` returns for it."""
    return int(_number(data, key, default, integer=True, minimum=1, where=where))
