"""The stage graph (SPEC §1): operator invocations on Spark values and the data-trace types of the
edges between them. Lint rules, fixes, the plugin's "likely cause" and the planner all read this.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import libcst as cst
from libcst.metadata import CodeRange

from sparkpar_lint.catalogue import FunctionSpec, OperatorSpec
from sparkpar_lint.graph.imports import ImportTable
from sparkpar_lint.graph.passed_function import UserFunction
from sparkpar_lint.graph.positions import Positions
from sparkpar_lint.graph.user_functions import mutated_outer_names
from sparkpar_lint.model import Span

T = TypeVar("T")
N = TypeVar("N", bound=cst.CSTNode)

UNORDERED = "unordered"


class LazySpan(Span):
    """A Span whose numbers are looked up in the graph's positions only when first read.

    Equal, hashed and ordered like the plain Span with the same numbers; pickles as one.
    """

    _where: tuple[StageGraph, cst.CSTNode, cst.CSTNode | None]

    def __init__(self, graph: StageGraph, start: cst.CSTNode, end: cst.CSTNode | None = None) -> None:
        object.__setattr__(self, "_where", (graph, start, end))

    def __getattr__(self, name: str) -> int:
        if name not in ("line", "column", "end_line", "end_column"):
            raise AttributeError(name)
        graph, start, end = self._where
        first, last = graph.positions[start].start, graph.positions[end or start].end
        numbers = dict(
            zip(("line", "column", "end_line", "end_column"), (first.line, first.column, last.line, last.column))
        )
        for field_name, value in numbers.items():
            object.__setattr__(self, field_name, value)
        return numbers[name]

    def plain(self) -> Span:
        return Span(self.line, self.column, self.end_line, self.end_column)

    def anchor(self) -> cst.CSTNode | None:
        """The node this span covers exactly; None when it runs on to another node or lies in
        SQL text."""
        where = self.__dict__.get("_where")
        return where[1] if where is not None and where[2] is None else None

    def __reduce__(self) -> tuple[type[Span], tuple[int, int, int, int]]:
        return (Span, (self.line, self.column, self.end_line, self.end_column))

    def __repr__(self) -> str:
        return repr(self.plain())

    def __hash__(self) -> int:
        return hash(self.plain())

    def __eq__(self, other: object) -> bool:
        return self.plain() == (other.plain() if isinstance(other, LazySpan) else other)

    def __lt__(self, other: Span) -> bool:
        return self.plain() < (other.plain() if isinstance(other, LazySpan) else other)

    def __le__(self, other: Span) -> bool:
        return self.plain() <= (other.plain() if isinstance(other, LazySpan) else other)

    def __gt__(self, other: Span) -> bool:
        return self.plain() > (other.plain() if isinstance(other, LazySpan) else other)

    def __ge__(self, other: Span) -> bool:
        return self.plain() >= (other.plain() if isinstance(other, LazySpan) else other)


@dataclass(frozen=True)
class Order:
    """The data-trace type of an edge: unordered (U), per-key (O(K)) or totally ordered.

    `sequence` is the arrival order of a source (the sequential semantics); `within-partition` is
    a sort whose partitions are not keyed, so it orders nothing a consumer can name.
    """

    kind: str = UNORDERED  # unordered | sequence | total | per-key | within-partition
    by: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    established_by: int | None = None  # id of the node that established it

    @property
    def is_ordered(self) -> bool:
        return self.kind in ("sequence", "total", "per-key")


@dataclass(frozen=True)
class Partitioning:
    kind: str = "unknown"  # unknown | round-robin | hash | single | range | source
    keys: tuple[str, ...] = ()
    established_by: int | None = None


@dataclass(frozen=True)
class WindowSpecValue:
    partition_by: tuple[str, ...] = ()
    order_by: tuple[str, ...] = ()
    has_partition: bool = False
    has_order: bool = False
    has_frame: bool = False
    span: Span | None = None  # where the spec starts being built
    # `rowsBetween(start, end)` as numbers (unbounded: infinite), when both bounds are read.
    rows_frame: tuple[float, float] | None = None
    # Every orderBy argument is a constant (`lit(1)`): the spec orders nothing.
    order_constant: bool = False
    # Some orderBy argument is neither a literal column name nor a constant.
    order_opaque: bool = False


@dataclass(frozen=True)
class ColumnCall:
    """One application of a column function inside a column expression."""

    function: str  # short name in pyspark.sql.functions, or the UDF's name
    span: Span
    spec: FunctionSpec | None
    enclosing: tuple[str, ...] = ()  # functions wrapping this call, outermost first
    window: WindowSpecValue | None = None
    call: cst.Call | None = field(default=None, compare=False, repr=False)
    udf: UserFunction | None = None
    from_sql: bool = False  # found in a SQL string (expr, selectExpr, agg dict)
    sql: object = field(default=None, compare=False, repr=False)  # sql.site.SqlSite: where, for fixes


@dataclass(frozen=True)
class ColumnExpr:
    calls: tuple[ColumnCall, ...] = ()
    columns: tuple[str, ...] = ()  # column names referenced by literal name

    def __add__(self, other: ColumnExpr) -> ColumnExpr:
        return ColumnExpr(self.calls + other.calls, self.columns + other.columns)


@dataclass(frozen=True)
class ImportedCall:
    """A call of a function defined in another module of the project, as that module's summary
    describes it (sparkpar_lint.project): findings here name the helper as a related location."""

    function: str
    path: str  # the helper's module file
    sourced: bool = False  # the helper reads the rows it returns
    columns: tuple[str, ...] | None = None  # the columns it returns, when known
    unique: tuple[frozenset[str], ...] = ()  # column sets its result is unique on
    # Lookups joined in: (join keys, columns the lookup brought), each a function of its keys.
    lookups: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class SqlProjection:
    """What a SQL SELECT list does to its input's columns (lower-cased names): the columns it
    passes through as they are, the names it gives to computed values, and whether it has `*`."""

    passed: frozenset[str]
    defined: frozenset[str]
    star: bool

    def changes(self, column: str) -> bool:
        name = column.lower()
        return name in self.defined or (not self.star and name not in self.passed)


@dataclass
class StageNode:
    id: int
    receiver: str  # DataFrame, GroupedData, RDD, DStream, ...
    method: str
    spec: OperatorSpec | None  # None: an API the catalogue does not know (degrades to unknown)
    span: Span  # from the method name to the end of the call
    call: cst.Call | None = field(default=None, repr=False)
    inputs: list[int] = field(default_factory=list)
    streaming: bool = False
    keys: tuple[str, ...] = ()  # literal key/sort columns among the arguments
    columns: ColumnExpr = field(default_factory=ColumnExpr)  # column expressions in the arguments
    functions: list[UserFunction] = field(default_factory=list)
    keywords: dict[str, str] = field(default_factory=dict)  # keyword -> source text
    positional_count: int = 0
    # The first positional argument's whole number when known but not spelled there (a name set
    # to it, here or in a `%run` notebook): `coalesce(partitions)` with `partitions = 1`.
    first_number: int | None = None
    # Library callables passed where the catalogue expects a function, by argument position or
    # keyword: `reduceByKey(operator.add)` -> {0: "operator.add"}, `reduce(max)` -> {0: "max"}.
    callables: dict[int | str, str] = field(default_factory=dict)
    # The module's own functions passed where the catalogue expects one, by position or keyword.
    function_slots: dict[int | str, UserFunction] = field(default_factory=dict)
    # Built while a helper was inlined with real arguments: the outermost call of that helper.
    call_site: LazySpan | None = None
    input_order: Order = field(default_factory=Order)
    output_order: Order = field(default_factory=Order)
    input_partitioning: Partitioning = field(default_factory=Partitioning)
    output_partitioning: Partitioning = field(default_factory=Partitioning)
    has_watermark_upstream: bool = False
    indexed: bool = False  # the driver-side result is subscripted, e.g. collect()[0]
    # Stages built from SQL text: the construct and the literal holding it (sql.site.SqlSite).
    sql: object = field(default=None, repr=False)
    # A SQL SELECT: which columns it keeps and which it rewrites (Python stages read their call).
    projection: SqlProjection | None = None
    # A call of another project module's function, standing for what that function does.
    imported: ImportedCall | None = None

    @property
    def api(self) -> str:
        return f"{self.receiver}.{self.method}"

    @property
    def state(self) -> str:
        if self.spec is None:
            return "unknown"
        if self.spec.state == "partitioned":
            return f"partitioned({', '.join(self.keys)})" if self.keys else "partitioned"
        if self.spec.state == "function":
            return "unknown" if any(_mutates(f) for f in self.functions) else "stateless"
        return self.spec.state

    @property
    def selectivity(self) -> str:
        if self.spec is None:
            return "any"
        if self.spec.selectivity == "function":
            return "any"
        if any(c.spec is not None and c.spec.generator for c in self.columns.calls):
            return "any"
        return self.spec.selectivity

    @property
    def forwarding(self) -> str:
        if self.spec is None:
            return "unknown"
        if self.spec.forwarding == "keys" and self.keys:
            return ", ".join(self.keys)
        if self.spec.forwarding == "function":
            return "unknown"
        return self.spec.forwarding

    @property
    def order_requirement(self) -> str:
        if self.spec is None:
            return "unknown"
        if any(c.spec is not None and c.spec.order_sensitive for c in self.columns.calls):
            return "per-key" if self.receiver == "GroupedData" else "total"
        return self.spec.order_requirement

    @property
    def order_effect(self) -> str:
        return "unknown" if self.spec is None else self.spec.order_effect

    @property
    def is_shuffle(self) -> bool:
        return self.spec is not None and self.spec.shuffle


def _mutates(function: UserFunction) -> bool:
    return bool(mutated_outer_names(function))


@dataclass
class StageGraph:
    path: str
    nodes: list[StageNode] = field(default_factory=list)
    # Window specs built anywhere in the module, for rules about specs themselves (SPX401).
    window_specs: list[WindowSpecValue] = field(default_factory=list)
    # Every function the module hands to Spark to run on executors.
    user_functions: list[UserFunction] = field(default_factory=list)
    # Every def and class the builder walked through, for rules that look helpers up by name.
    definitions: list[cst.FunctionDef | cst.ClassDef] = field(default_factory=list, repr=False)
    # ids of the expressions passed straight to `display(...)`/`print(...)` (graph.previews).
    previewed_args: set[int] = field(default_factory=set, repr=False, compare=False)
    # id of a `spark.sql(...)` call -> the node id of its query's result (SQL nodes carry no call).
    sql_results: dict[int, int] = field(default_factory=dict, repr=False, compare=False)
    # ids of driver results read only for how many rows they hold: `len(x)`, `bool(x)`, `if x:`.
    size_read: set[int] = field(default_factory=set, repr=False, compare=False)
    # Makes the LibCST positions of the CST nodes; see `positions`.
    position_source: Callable[[], Mapping[cst.CSTNode, CodeRange]] | None = field(default=None, repr=False)
    _positions: Mapping[cst.CSTNode, CodeRange] | None = field(default=None, repr=False)
    # Names bound to Spark's shared variables, by kind ("Broadcast", "Accumulator"): updating an
    # accumulator from a task is the sanctioned way to count, unlike a captured container.
    shared_variables: dict[str, str] = field(default_factory=dict)
    # The module-level import table, for rules that resolve names inside user function bodies
    # (`time.time`, `datetime.now`).
    imports: ImportTable | None = field(default=None, repr=False)
    # Stages whose DataFrame is handed to model training (`estimator.fit(df)`).
    training_inputs: set[int] = field(default_factory=set)
    _consumer_index: tuple[int, dict[int, list[StageNode]]] | None = field(default=None, repr=False, compare=False)
    _call_index: tuple[int, dict[int, list[StageNode]]] | None = field(default=None, repr=False, compare=False)
    _derived: dict[str, tuple[int, Any]] = field(default_factory=dict, repr=False, compare=False)
    # What each top-level def returns when analysed on its own (graph.values.Value), by name: the
    # module's summary for the modules importing it (sparkpar_lint.project).
    function_returns: dict[str, object] = field(default_factory=dict, repr=False, compare=False)
    # Methods the module's classes inherit from project classes of other modules: class name ->
    # method name -> project.methods.MethodSummary (what the base method does with its parameters).
    inherited: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False, compare=False)
    # Calls of (possibly) project functions: (dotted name, args, kwargs) as graph.values.Value.
    outgoing_calls: list[tuple[str, list[Any], dict[str, Any]]] = field(default_factory=list, repr=False, compare=False)
    # `[tool.sparkpar] unique-columns` (graph.declared_keys): "col" or "table.col".
    unique_columns: tuple[str, ...] = ()
    # The module the graph was built from, for fixes that rewrite around a stage's statement.
    module: cst.Module | None = field(default=None, repr=False, compare=False)

    @property
    def positions(self) -> Mapping[cst.CSTNode, CodeRange]:
        """LibCST positions of the module's CST nodes (graph.positions.Positions: each computed
        when first asked for; iterating them all costs about three parses)."""
        if self._positions is None:
            self._positions = self.position_source() if self.position_source else {}
        return self._positions

    def release(self) -> None:
        """Empty what the rules read, keeping what places a span: once a lint has its findings
        (their fixes dropped), the stages' spans no longer point back at the graph through the
        stages, so the module's tree is freed as soon as the findings go, not by a full pass of
        the collector over every tree a worker has linted."""
        self.nodes, self.window_specs, self.user_functions, self.definitions = [], [], [], []
        self.previewed_args, self.size_read, self.training_inputs = set(), set(), set()
        self.sql_results, self.shared_variables, self.function_returns = {}, {}, {}
        self.outgoing_calls, self.imports = [], None
        self._consumer_index = self._call_index = None
        self._derived = {}

    def nodes_of(self, kind: type[N]) -> list[N]:
        """The module's CST nodes of exactly this type, in file order, without placing them all."""
        positions = self.positions
        if isinstance(positions, Positions):
            return positions.nodes_of(kind)
        return [node for node in positions if type(node) is kind and isinstance(node, kind)]

    def statement_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The innermost statement holding `node`, when the positions can tell without placing
        every node (None otherwise)."""
        positions = self.positions
        return positions.statement_of(node) if isinstance(positions, Positions) else None

    def span_of(self, node: cst.CSTNode) -> Span:
        code_range = self.positions[node]
        start, end = code_range.start, code_range.end
        return Span(start.line, start.column, end.line, end.column)

    def node(self, node_id: int) -> StageNode:
        return self.nodes[node_id]

    def add(self, node: StageNode) -> StageNode:
        node.id = len(self.nodes)
        self.nodes.append(node)
        return node

    def input_of(self, node: StageNode) -> StageNode | None:
        return self.nodes[node.inputs[0]] if node.inputs else None

    def upstream(self, node: StageNode) -> Iterator[StageNode]:
        """The main-input chain above `node`, nearest first."""
        current = self.input_of(node)
        seen = set()
        while current is not None and current.id not in seen:
            seen.add(current.id)
            yield current
            current = self.input_of(current)

    def consumers(self, node: StageNode) -> list[StageNode]:
        # Indexed once per graph size: rules ask for consumers of many nodes, and a scan each time
        # made a 50,000-line module quadratic.
        if self._consumer_index is None or self._consumer_index[0] != len(self.nodes):
            index: dict[int, list[StageNode]] = {}
            for candidate in self.nodes:
                for i in dict.fromkeys(candidate.inputs):
                    index.setdefault(i, []).append(candidate)
            self._consumer_index = (len(self.nodes), index)
        return list(self._consumer_index[1].get(node.id, ()))

    def analyses_of(self, call: cst.Call) -> list[StageNode]:
        """Every node made by this call (a helper's call, analysed once per call site), in
        creation order; indexed once per graph size like `consumers`."""
        if self._call_index is None or self._call_index[0] != len(self.nodes):
            index: dict[int, list[StageNode]] = {}
            for candidate in self.nodes:
                if candidate.call is not None:
                    index.setdefault(id(candidate.call), []).append(candidate)
            self._call_index = (len(self.nodes), index)
        return list(self._call_index[1].get(id(call), ()))

    def downstream(self, node: StageNode) -> Iterator[StageNode]:
        """Every node reachable from `node`, in creation order. Walked through `consumers`: a scan
        of every later node per call made one finding per line of a long module quadratic."""
        reached: set[int] = set()
        frontier = [node]
        while frontier:
            for consumer in self.consumers(frontier.pop()):
                if consumer.id not in reached:
                    reached.add(consumer.id)
                    frontier.append(consumer)
        reached.discard(node.id)
        yield from (self.nodes[i] for i in sorted(reached))

    def reaching(self, test: Callable[[StageNode], bool]) -> set[int]:
        """ids of the nodes from which a node passing `test` is reachable (one passing itself
        included): one walk up the inputs from every node that passes, where testing each node's
        `downstream` made a finding on every branch of a long UNION ALL chain quadratic."""
        reached = {node.id for node in self.nodes if test(node)}
        frontier = list(reached)
        while frontier:
            for i in self.nodes[frontier.pop()].inputs:
                if i not in reached:
                    reached.add(i)
                    frontier.append(i)
        return reached

    def derived(self, name: str, compute: Callable[[StageGraph], T]) -> T:
        """`compute(self)`, kept under `name` until the graph gains nodes: for a fact about the
        whole module that each finding reads (e.g. which stages a `return` hands back)."""
        kept = self._derived.get(name)
        if kept is None or kept[0] != len(self.nodes):
            kept = (len(self.nodes), compute(self))
            self._derived[name] = kept
        return kept[1]
