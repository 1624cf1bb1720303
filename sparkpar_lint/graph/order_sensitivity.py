"""Does a grouped or per-partition function depend on the order of its rows?

Spark hands `applyInPandas`, `mapInPandas`, `mapPartitions`, `groupByKey().mapValues` ... their
rows in whatever order the shuffle delivered them. A body that reads rows by position (`iloc[0]`,
`shift`, `ffill`, `next(it)`) or carries a value from one row to the next in a loop computes a
different answer for each arrival order, unless it first sorts by a deterministic key (the SORT
before an ordered stage of the data-trace-types paper). Positional reads of the group's key columns
are fine: they are constant within a group.

The analysis walks the body in statement order, tracking which names hold the rows (a pandas frame
or series, an iterator of rows, an iterator of frames) and whether they are sorted yet. The lint
rule, the pytest plugin's "likely cause" and the fixer all use `find_order_dependence`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import cast

import libcst as cst

from sparkpar_lint.graph.user_functions import parameter_names
from sparkpar_lint.graph.visiting import children, visit

FRAME = "frame"  # a pandas DataFrame or Arrow table: the group's rows
SERIES = "series"  # one column of it
ROWS = "rows"  # a Python iterable of rows or values
FRAMES = "frames"  # an iterator of frames (mapInPandas, applyInPandasWithState)
PAIR = "pair"  # (key, rows) from groupByKey
GROUPS = "groups"  # a tuple of row iterables (RDD cogroup values)
KEY = "key"  # the group key, or a column of it: constant within the group
# The row holding a column's extreme (`idxmax()`, `argmin()`): chosen by value, not by arrival.
# Ties aside, like a sort by that column, which is accepted too. `inner` says what it is:
PICK = "pick"
LABEL, POSITION = "label", "position"  # idxmax/idxmin give an index label, argmax/argmin a position

# Methods that read rows by position or in sequence.
POSITIONAL_METHODS = frozenset(
    {
        "head",
        "tail",
        "shift",
        "diff",
        "cumsum",
        "cumprod",
        "cummax",
        "cummin",
        "cumcount",
        "pct_change",
        "interpolate",
        "ffill",
        "bfill",
        "pad",
        "backfill",
        "rolling",
        "expanding",
        "ewm",
        "first_valid_index",
        "last_valid_index",
        "nth",
        "first",
        "last",
        "take",
        "slice",
    }
)
POSITIONAL_INDEXERS = frozenset({"iloc", "iat"})
VALUE_PICKS = {"idxmax": LABEL, "idxmin": LABEL, "argmax": POSITION, "argmin": POSITION}
SORT_METHODS = frozenset({"sort_values", "sort_index", "sort_by", "sort"})
# Conversions that keep the rows (and their order) in a Python iterable.
ROW_CONVERSIONS = frozenset(
    {"tolist", "to_list", "to_numpy", "to_pylist", "itertuples", "iterrows", "to_dict", "to_records", "to_pydict"}
)
ROW_ATTRIBUTES = frozenset({"values", "array"})
# Attributes that describe a frame's size or schema, never its rows: `pdf.shape[0]` is a count.
SHAPE_ATTRIBUTES = frozenset({"shape", "size", "ndim", "empty", "columns", "dtypes"})
ROW_WRAPPERS = frozenset({"list", "tuple", "iter", "reversed", "enumerate"})
FILL_METHODS = frozenset({"ffill", "bfill", "pad", "backfill"})
_ORDERING = (cst.LessThan, cst.GreaterThan, cst.LessThanEqual, cst.GreaterThanEqual)
_FOLD_AUG = (cst.AddAssign, cst.SubtractAssign, cst.MultiplyAssign, cst.BitOrAssign, cst.BitAndAssign)
_FOLD_BIN = (cst.Add, cst.Subtract, cst.Multiply, cst.BitOr, cst.BitAnd)
MAX_HELPER_DEPTH = 3
# Functions that split rows into parts by their position (shuffled or not, seeded or not).
POSITIONAL_SPLITTERS = frozenset({"train_test_split"})
# Time-series models (statsmodels) that read their input as a sequence: the fit and the forecast
# follow the order the values come in, whatever index they carry.
SEQUENCE_MODELS = frozenset(
    {"ExponentialSmoothing", "SimpleExpSmoothing", "Holt", "ARIMA", "SARIMAX", "AutoReg", "STL"}
)
# NumPy conversions that keep the values (and their order): `np.asarray(pdf["v"])` is `.values`.
ARRAY_CONVERSIONS = frozenset({"asarray", "array"})


@dataclass(frozen=True)
class Data:
    kind: str
    sorted: bool = False
    inner: str = ROWS  # PAIR: the kind of element [1]


@dataclass(frozen=True)
class OrderDependence:
    node: cst.CSTNode  # where the order-dependent operation starts
    operation: str  # what it is, for the message
    helper: str | None = None  # the helper function it is in, when not the function itself


class _Found(Exception):
    def __init__(self, dependence: OrderDependence) -> None:
        self.dependence = dependence


def parameter_kinds(function: cst.Lambda | cst.FunctionDef, role: str, receiver: str) -> dict[str, Data]:
    """What each parameter of a function Spark calls holds, by the catalogue's function role."""
    names = parameter_names(function)
    if names[:1] == ["self"]:
        names = names[1:]  # a processor's method: Spark passes the key and the rows after self
    count = len(names)
    if role == "group":
        kinds = [KEY, FRAME][-count:] if count <= 2 else []
    elif role == "cogroup":
        kinds = [KEY, FRAME, FRAME][-count:] if count <= 3 else []
    elif role == "stateful-group":
        kinds = [KEY, FRAMES, KEY] if receiver == "GroupedData" else [ROWS, KEY]
    elif role == "stateful-processor":
        kinds = [KEY, FRAMES]
    elif role == "partition":
        kinds = [FRAMES] if receiver == "DataFrame" and count == 1 else [ROWS]
    elif role == "partition-with-index":
        kinds = [KEY, ROWS]
    elif role == "value":
        kinds = [ROWS]
    elif role == "cogroup-value":
        kinds = [GROUPS]
    elif role == "grouped-row":
        kinds = [PAIR]
    else:
        kinds = []
    return {name: Data(kind) for name, kind in zip(names, kinds) if kind != KEY} | {
        name: Data(KEY) for name, kind in zip(names, kinds) if kind == KEY
    }


def find_order_dependence(
    function: cst.Lambda | cst.FunctionDef,
    kinds: Mapping[str, Data],
    key_columns: tuple[str, ...] = (),
    helpers: Mapping[str, cst.FunctionDef] | None = None,
) -> OrderDependence | None:
    """The first order-dependent operation in the body, or None when it is order-insensitive."""
    analysis = _Analysis(dict(kinds), set(key_columns), dict(helpers or {}), depth=0)
    # Spark builds each group's frame afresh: its index is 0..n-1, so a label is a position.
    analysis.fresh_index = {name for name, data in kinds.items() if data.kind == FRAME}
    if isinstance(function, cst.FunctionDef):
        analysis.seeds = _seeding_nexts(_statements(function.body))
    try:
        if isinstance(function, cst.Lambda):
            analysis.value(function.body)
        else:
            analysis.block(_statements(function.body))
    except _Found as found:
        return found.dependence
    return None


def _numbers_rows(expr: cst.BaseExpression) -> bool:
    """`range(len(pdf))`, `np.arange(len(pdf))`, `np.arange(pdf.shape[0])`: 0..n-1 in row order."""
    if not isinstance(expr, cst.Call) or len(expr.args) != 1:
        return False
    func = expr.func
    name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
    if name not in ("range", "arange"):
        return False
    size = expr.args[0].value
    if isinstance(size, cst.Call) and isinstance(size.func, cst.Name) and size.func.value == "len":
        return True
    return (
        isinstance(size, cst.Subscript) and isinstance(size.value, cst.Attribute) and size.value.attr.value == "shape"
    )


def _statements(body: cst.BaseSuite) -> list[cst.BaseStatement]:
    if isinstance(body, cst.IndentedBlock):
        return list(body.body)
    # The one other kind of suite: `def f(): a; b` on the line of its header.
    return [cst.SimpleStatementLine(body=cast(cst.SimpleStatementSuite, body).body)]


def _literal_strings(node: cst.CSTNode | None) -> list[str] | None:
    """The string literals of `"a"` or `["a", "b"]`; None when anything else is there."""
    if isinstance(node, cst.SimpleString):
        return [node.evaluated_value] if isinstance(node.evaluated_value, str) else None
    if isinstance(node, (cst.List, cst.Tuple)):
        strings: list[str] = []
        for element in node.elements:
            values = _literal_strings(element.value)
            if values is None:
                return None
            strings += values
        return strings
    return None


def _keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    return next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def _literal_int_index(node: cst.Subscript) -> bool:
    """`[0]`, `[-1]`, `[:5]`, `[1:]`: a position, not a label or a column name."""
    if len(node.slice) != 1:
        return False
    element = node.slice[0].slice
    if isinstance(element, cst.Index):
        value = element.value
        if isinstance(value, cst.UnaryOperation):
            value = value.expression
        return isinstance(value, cst.Integer)
    if isinstance(element, cst.Slice):
        bounds = [b for b in (element.lower, element.upper) if b is not None]
        return bool(bounds) and all(
            isinstance(b.expression if isinstance(b, cst.UnaryOperation) else b, cst.Integer) for b in bounds
        )
    return False


def _column_position(element: cst.BaseSlice) -> bool:
    """The column part of `iat[row, 0]` / `iloc[row, "v"]`-like indexing: a literal."""
    return isinstance(element, cst.Index) and isinstance(element.value, (cst.Integer, cst.SimpleString))


def _root_frame(expr: cst.BaseExpression) -> str | None:
    """`pdf` of `pdf`, `pdf["v"]`, `pdf.v`: the frame a column selection starts from."""
    while isinstance(expr, (cst.Subscript, cst.Attribute)):
        if (
            isinstance(expr, cst.Subscript)
            and _literal_strings(expr.slice[0].slice.value if isinstance(expr.slice[0].slice, cst.Index) else None)
            is None
        ):
            return None
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None


def _names_in(node: cst.CSTNode) -> set[str]:
    found: set[str] = set()

    class _Visitor(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.add(name.value)

        def visit_Lambda(self, _node: cst.Lambda) -> bool:
            return False

    visit(node, _Visitor())
    return found


class _Analysis:
    def __init__(self, env: dict[str, Data], keys: set[str], helpers: dict[str, cst.FunctionDef], depth: int) -> None:
        self.env = env
        self.keys = keys
        self.helpers = helpers
        self.depth = depth
        self.seeds: set[int] = set()  # `next(it)` calls that only seed an order-free fold
        self.fresh_index: set[str] = set()  # frames whose index labels are still their positions

    def report(self, node: cst.CSTNode, operation: str) -> None:
        raise _Found(OrderDependence(node, operation))

    # ------------------------------------------------------------------ statements

    def block(self, statements: Sequence[cst.CSTNode]) -> None:
        for index, statement in enumerate(statements):
            if isinstance(statement, cst.For):
                self.loop(statement, statements[index + 1 :])
            else:
                self.statement(statement)

    def statement(self, statement: cst.CSTNode) -> None:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                self.small(small)
        elif isinstance(statement, cst.FunctionDef):
            self.helpers[statement.name.value] = statement  # analysed where it is called
        elif isinstance(statement, cst.For):
            self.loop(statement, [])
        elif isinstance(statement, (cst.If, cst.While)):
            self.value(statement.test)
            self.block(statement.body.body)
            orelse = statement.orelse
            while orelse is not None:
                if isinstance(orelse, cst.If):
                    self.value(orelse.test)
                self.block(orelse.body.body)
                orelse = orelse.orelse if isinstance(orelse, cst.If) else None
        elif isinstance(statement, cst.With):
            for item in statement.items:
                data = self.value(item.item)
                if item.asname is not None:
                    self.bind(item.asname.name, data)
            self.block(statement.body.body)
        elif isinstance(statement, (cst.Try, cst.TryStar)):
            self.block(statement.body.body)
            for handler in statement.handlers:
                self.block(handler.body.body)
            for extra in (statement.orelse, statement.finalbody):
                if extra is not None:
                    self.block(extra.body.body)

    def small(self, small: cst.CSTNode) -> None:
        if isinstance(small, cst.Assign):
            data = self.value(small.value)
            for target in small.targets:
                if isinstance(target.target, cst.Subscript) and _numbers_rows(small.value):
                    frame = self.value(target.target.value)
                    if frame is not None and frame.kind == FRAME and not frame.sorted:
                        self.report(small.value, "numbering rows by position")
            for target in small.targets:
                self.bind(target.target, data)
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            self.bind(small.target, self.value(small.value))
        elif isinstance(small, cst.AugAssign):
            self.value(small.value)
        elif isinstance(small, (cst.Expr, cst.Return)) and small.value is not None:
            self.value(small.value)

    def bind(self, target: cst.BaseExpression, data: Data | None) -> None:
        if isinstance(target, cst.Name):
            self.fresh_index.discard(target.value)
            if data is None:
                self.env.pop(target.value, None)
            else:
                self.env[target.value] = data
        elif isinstance(target, (cst.Tuple, cst.List)):
            parts: list[Data | None] = [None] * len(target.elements)
            if data is not None and data.kind == PAIR and len(parts) == 2:
                parts = [Data(KEY), Data(data.inner, data.sorted)]
            elif data is not None and data.kind == GROUPS:
                parts = [Data(ROWS, data.sorted)] * len(parts)
            for element, part in zip(target.elements, parts):
                self.bind(element.value, part)
        elif isinstance(target, (cst.Attribute, cst.Subscript)):
            if isinstance(target, cst.Attribute) and target.attr.value == "index":
                self.fresh_index -= _names_in(target.value)  # `pdf.index = ...`: new labels
            self.value(target.value)

    # ------------------------------------------------------------------ loops

    def loop(self, loop: cst.For, rest: Sequence[cst.CSTNode]) -> None:
        iterated = self.value(loop.iter)
        if iterated is not None and iterated.kind in (ROWS, SERIES, FRAMES) and not iterated.sorted:
            carried = _carried_value(loop, rest)
            if carried is not None:
                self.report(*carried)
        item = None
        if iterated is not None and iterated.kind == FRAMES:
            item = Data(FRAME)
        elif iterated is not None and iterated.kind == GROUPS:
            item = Data(ROWS, iterated.sorted)
        self.bind(loop.target, item)
        self.block(loop.body.body)
        if loop.orelse is not None:
            self.block(loop.orelse.body.body)

    # ------------------------------------------------------------------ expressions

    def value(self, expr: cst.CSTNode) -> Data | None:
        method = getattr(self, f"value_{type(expr).__name__}", None)
        if method is not None:
            found: Data | None = method(expr)
            return found
        found = None
        for child in children(expr):
            if isinstance(child, cst.BaseExpression):
                found = self.value(child) or found
            elif isinstance(child, cst.CSTNode):
                for grandchild in children(child):
                    if isinstance(grandchild, cst.BaseExpression):
                        found = self.value(grandchild) or found
        return Data(found.kind, found.sorted) if found is not None and found.kind in (FRAME, SERIES) else None

    def value_Name(self, expr: cst.Name) -> Data | None:
        return self.env.get(expr.value)

    def value_Lambda(self, expr: cst.Lambda) -> None:
        return None  # its parameters shadow; a lambda applied per group (`apply`) sees one group

    def value_Attribute(self, expr: cst.Attribute) -> Data | None:
        base = self.value(expr.value)
        if base is None or base.kind == KEY:
            return base
        attr = expr.attr.value
        if base.kind in (FRAME, SERIES):
            if attr in POSITIONAL_INDEXERS:
                if not base.sorted:
                    self.report(expr, f"`.{attr}`")
                return Data(KEY)  # the row it selects is no longer the rows
            if attr in ROW_ATTRIBUTES:
                return Data(ROWS, base.sorted)
            if attr in SHAPE_ATTRIBUTES:
                return None
            if base.kind == FRAME and attr in self.keys:
                return Data(KEY)
            return Data(SERIES, base.sorted) if base.kind == FRAME else base
        return None

    def value_Subscript(self, expr: cst.Subscript) -> Data | None:
        picked = self._picked_row(expr)
        if picked is not None:
            return picked
        base = self.value(expr.value)
        for element in expr.slice:
            if isinstance(element.slice, cst.Index):
                self.value(element.slice.value)
        if base is None or base.kind == KEY:
            return base
        positional = _literal_int_index(expr)
        if base.kind == FRAME:
            names = _literal_strings(expr.slice[0].slice.value) if isinstance(expr.slice[0].slice, cst.Index) else None
            if names and set(names) <= self.keys:
                return Data(KEY)
            return Data(SERIES if names and len(names) == 1 else FRAME, base.sorted)
        if base.kind == PAIR and positional:
            index = expr.slice[0].slice
            if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer) and index.value.value == "1":
                return Data(base.inner, base.sorted)
            return Data(KEY)
        if base.kind == GROUPS:
            return Data(ROWS, base.sorted)
        if base.kind in (ROWS, SERIES, FRAMES) and positional:
            if not base.sorted:
                self.report(
                    expr, f"`{'[' + cst.Module([]).code_for_node(expr.slice[0]) + ']'}` on rows in arrival order"
                )
            return None
        return None

    def _picked_row(self, expr: cst.Subscript) -> Data | None:
        """`pdf.iloc[pdf["v"].idxmax()]`, `pdf.iloc[i:i + 1]` with `i = s.argmax()`: the row
        holding the column's extreme, whichever position it arrived at (ties aside, as for a
        sort by that column). A label stands for a position only while the frame keeps the index
        Spark gave it; otherwise None, and the positional read is judged as usual."""
        indexer = expr.value
        if not (isinstance(indexer, cst.Attribute) and indexer.attr.value in POSITIONAL_INDEXERS):
            return None
        first, *rest = expr.slice
        if any(not _column_position(element.slice) for element in rest):
            return None
        picks = self._picks(first.slice)
        if not picks:
            return None
        if LABEL in picks and _root_frame(indexer.value) not in self.fresh_index:
            return None
        frame = self.value(indexer.value)
        if frame is None or frame.kind not in (FRAME, SERIES):
            return None
        return Data(KEY)  # the row it selects is no longer the rows

    def _picks(self, element: cst.BaseSlice) -> set[str]:
        """What picks the row(s) of an index or slice (labels, positions); empty when something else does."""
        if isinstance(element, cst.Slice):
            bounds = [b for b in (element.lower, element.upper) if b is not None]
            if element.step is not None or not bounds:
                return set()
            found = [self._pick_of(b) for b in bounds]
            return set() if None in found else {f for f in found if f is not None}
        if not isinstance(element, cst.Index):  # an Index or a Slice: there is no other kind
            return set()
        value = element.value
        if isinstance(value, cst.List) and value.elements:
            found = [self._pick_of(e.value) for e in value.elements]
            return set() if None in found else {f for f in found if f is not None}
        pick = self._pick_of(value)
        return {pick} if pick is not None else set()

    def _pick_of(self, expr: cst.BaseExpression) -> str | None:
        """LABEL or POSITION when `expr` is a picked row, or one plus/minus a number."""
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract)):
            if isinstance(expr.right, cst.Integer):
                return self._pick_of(expr.left)
            return None
        data = self.value(expr)
        return data.inner if data is not None and data.kind == PICK else None

    def value_Call(self, expr: cst.Call) -> Data | None:
        func = expr.func
        if isinstance(func, cst.Attribute):
            return self.method_call(expr, func)
        args = [self.value(a.value) for a in expr.args]
        if not isinstance(func, cst.Name):
            self.value(func)
            return None
        name = func.value
        if name in self.env:
            return None
        first = args[0] if args else None
        if name == "sorted":
            return Data(ROWS, True) if first is not None else None
        if name in ROW_WRAPPERS:
            return Data(ROWS, first.sorted) if first is not None and first.kind != KEY else None
        if name in POSITIONAL_SPLITTERS:
            self._positional_split(expr, args)
        if name in SEQUENCE_MODELS:
            self._sequence_model(expr, name, args)
        if name == "next":
            if first is not None and first.kind in (ROWS, FRAMES, SERIES) and not first.sorted:
                if id(expr) not in self.seeds:
                    self.report(expr, "`next(...)` takes whichever row arrives first")
            return Data(FRAME) if first is not None and first.kind == FRAMES else None
        if name in self.helpers and self.depth < MAX_HELPER_DEPTH:
            self.call_helper(name, expr, args)
        return None

    def method_call(self, expr: cst.Call, func: cst.Attribute) -> Data | None:
        base = self.value(func.value)
        args = [self.value(a.value) for a in expr.args]
        method = func.attr.value
        if method in VALUE_PICKS and len(expr.args) <= 1:
            of = base if base is not None else (args[0] if args else None)  # `s.argmax()`, `np.argmax(s)`
            if (
                of is not None
                and of.kind in (FRAME, SERIES, ROWS)
                and (base is not None or VALUE_PICKS[method] == POSITION)
            ):
                return Data(PICK, inner=VALUE_PICKS[method])
        if base is None:
            if method in POSITIONAL_SPLITTERS:
                self._positional_split(expr, args)
            if method in SEQUENCE_MODELS:
                self._sequence_model(expr, method, args)
            if method in ARRAY_CONVERSIONS and args and args[0] is not None and args[0].kind in (SERIES, ROWS):
                return Data(ROWS, args[0].sorted)
            if method == "join" and isinstance(func.value, (cst.SimpleString, cst.ConcatenatedString)):
                if args and args[0] is not None and args[0].kind in (ROWS, SERIES) and not args[0].sorted:
                    self.report(expr, "`str.join` over rows in arrival order")
            if method in ("concat", "DataFrame", "from_pandas", "concat_tables"):
                if any(a is not None and a.kind in (ROWS, FRAMES, FRAME) for a in args):
                    return Data(FRAME)
            return None
        if base.kind == KEY:
            return base
        if base.kind not in (FRAME, SERIES, ROWS, FRAMES):
            return None
        if method in SORT_METHODS:
            sorted_now = self._sorts_by_data(expr)
            inplace = _keyword(expr, "inplace")
            in_place = method == "sort" or (isinstance(inplace, cst.Name) and inplace.value == "True")
            if sorted_now and in_place and isinstance(func.value, cst.Name):
                self.env[func.value.value] = replace(base, sorted=True)
            return replace(base, sorted=base.sorted or sorted_now)
        inplace = _keyword(expr, "inplace")
        if isinstance(inplace, cst.Name) and inplace.value == "True":
            self.fresh_index -= _names_in(func.value)  # `pdf.dropna(inplace=True)`: labels no longer positions
        if base.kind in (FRAME, SERIES) and not base.sorted:
            self.check_method(expr, method)
        if method in ROW_CONVERSIONS:
            return Data(ROWS, base.sorted)
        if base.kind in (FRAME, SERIES):
            return base
        return None

    def _positional_split(self, expr: cst.Call, args: list[Data | None]) -> None:
        """`train_test_split(pdf)`: which rows land in each part follows their position."""
        if any(a is not None and a.kind in (FRAME, SERIES, ROWS) and not a.sorted for a in args):
            self.report(expr, "`train_test_split` (rows split by position)")

    def _sequence_model(self, expr: cst.Call, name: str, args: list[Data | None]) -> None:
        """`ExponentialSmoothing(np.asarray(pdf["sales"]))`: the model reads the values as a series."""
        if args and args[0] is not None and args[0].kind in (FRAME, SERIES, ROWS) and not args[0].sorted:
            self.report(expr, f"`{name}` (a time-series model reads the values in row order)")

    def check_method(self, expr: cst.Call, method: str) -> None:
        if method in POSITIONAL_METHODS:
            self.report(expr, f"`.{method}()`")
        if method == "assign":
            for arg in expr.args:
                if arg.keyword is not None and _numbers_rows(arg.value):
                    self.report(arg.value, "numbering rows by position")
        if method in ("drop_duplicates", "duplicated"):
            keep = _keyword(expr, "keep")
            has_subset = bool(expr.args) and (expr.args[0].keyword is None or _keyword(expr, "subset") is not None)
            if not (isinstance(keep, cst.Name) and keep.value == "False") and (has_subset or keep is not None):
                self.report(expr, f"`.{method}()` keeping the first/last row")
        if method == "fillna":
            fill = _keyword(expr, "method")
            if isinstance(fill, cst.SimpleString) and fill.evaluated_value in FILL_METHODS:
                self.report(expr, f"`.fillna(method={fill.value})`")

    def _sorts_by_data(self, call: cst.Call) -> bool:
        """A sort orders the rows unless it sorts only by the group key, constant in the group."""
        by = _keyword(call, "by") or (call.args[0].value if call.args and call.args[0].keyword is None else None)
        names = _literal_strings(by) if by is not None else None
        return not (names and set(names) <= self.keys)

    def call_helper(self, name: str, call: cst.Call, args: list[Data | None]) -> None:
        helper = self.helpers[name]
        params = parameter_names(helper)
        env = {p: a for p, a in zip(params, args) if a is not None}
        if not env:
            return
        nested = _Analysis(env, self.keys, self.helpers, self.depth + 1)
        try:
            nested.block(_statements(helper.body))
        except _Found as found:
            raise _Found(replace(found.dependence, helper=found.dependence.helper or name)) from None

    def value_ListComp(self, expr: cst.ListComp | cst.GeneratorExp | cst.SetComp) -> Data | None:
        comprehension = expr.for_in
        iterated = self.value(comprehension.iter)
        saved = dict(self.env)
        self.bind(comprehension.target, Data(FRAME) if iterated is not None and iterated.kind == FRAMES else None)
        element = getattr(expr, "elt", None)
        if element is not None:
            self.value(element)
        self.env = saved
        if iterated is None or iterated.kind == KEY:
            return None
        return Data(ROWS, iterated.sorted)

    value_GeneratorExp = value_ListComp
    value_SetComp = value_ListComp


# ---------------------------------------------------------------------- values carried by loops


def _carried_value(loop: cst.For, rest: Sequence[cst.CSTNode]) -> tuple[cst.CSTNode, str] | None:
    """A value one iteration leaves for the next (`prev = r.ts`), a running total emitted per row,
    the last row kept (`last = r`), or a first match returned from inside the loop."""
    events = _LoopEvents(_names_in(loop.target), _flags(loop))
    events.block(loop.body.body)
    assigns: dict[str, list[str]] = {}
    for kind, name, _, detail in events.events:
        if kind == "assign":
            assigns.setdefault(name, []).append(detail)
    after: set[str] = set()
    for statement in rest:
        after |= _names_in(statement)
    for kind, name, node, detail in events.events:
        if kind == "return":
            return node, "a `return` inside the loop keeps whichever matching row comes first"
        if kind == "read" and name in events.flags:
            continue  # `if first:` only tells the first row from the others, whichever it is
        if kind == "read" and name in assigns:
            if all(d == "fold" for d in assigns[name]):
                return node, f"`{name}` is a running value emitted row by row"
            if detail == "compared" and all(d in ("guarded", "first") for d in assigns[name]):
                continue  # arg-max: `if best is None or r.ts > best.ts: best = r`
            if events.assigned_before_read(name, node):
                continue
            return node, f"`{name}` carries a value from the previous row"
        if kind == "assign" and detail == "sequence":
            return node, f"`{name}` is built up row by row in arrival order"
        if kind == "assign" and detail == "last" and name in after:
            return node, f"`{name}` keeps whichever row comes last"
        if kind == "assign" and detail == "first" and "guarded" not in assigns[name] and name in after:
            return node, f"`{name}` keeps whichever row comes first"
        if kind == "subassign" and detail == "last":
            return node, f"`{name}[...]` keeps whichever row comes last for each key"
    return None


class _LoopEvents:
    """Reads and writes inside a loop body, in execution order, with the guard they sit under."""

    def __init__(self, loop_names: set[str], flags: frozenset[str] = frozenset()) -> None:
        self.loop_names = loop_names
        self.flags = flags
        self.first_row = 0  # depth of `if first:` branches (flag tests) we are in
        self.events: list[tuple[str, str, cst.CSTNode, str]] = []
        self.guards: list[set[str]] = []  # names compared with <, >, `is` in enclosing `if` tests
        self.local: set[str] = set()

    def assigned_before_read(self, name: str, read: cst.CSTNode) -> bool:
        for kind, event_name, node, detail in self.events:
            if node is read:
                return False
            if kind == "assign" and event_name == name and detail != "first":
                return True
        return False

    def guarded(self) -> bool:
        return any(self.guards)

    def reads(self, expr: cst.CSTNode | None, skip: str | None = None) -> None:
        if expr is None:
            return
        events = self.events

        def ordering(node: cst.Comparison) -> bool:
            return any(isinstance(t.operator, _ORDERING + (cst.Is, cst.IsNot)) for t in node.comparisons)

        class _Visitor(cst.CSTVisitor):
            def __init__(self) -> None:
                self.in_ordering = 0

            def visit_Comparison(self, node: cst.Comparison) -> None:
                self.in_ordering += ordering(node)

            def leave_Comparison(self, node: cst.Comparison) -> None:
                self.in_ordering -= ordering(node)

            def visit_Name(self, node: cst.Name) -> None:
                if node.value != skip:
                    events.append(("read", node.value, node, "compared" if self.in_ordering else ""))

            def visit_Lambda(self, node: cst.Lambda) -> bool:
                return False

            def visit_Attribute(self, node: cst.Attribute) -> bool:
                visit(node.value, self)
                return False

        visit(expr, _Visitor())

    def block(self, statements: Sequence[cst.CSTNode]) -> None:
        for statement in statements:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    self.small(small)
            elif isinstance(statement, cst.If):
                self.branch(statement)
            elif isinstance(statement, (cst.For, cst.While)):
                self.reads(statement.iter if isinstance(statement, cst.For) else statement.test)
                self.block(statement.body.body)
            elif isinstance(statement, (cst.With, cst.Try)):
                self.block(statement.body.body)

    def branch(self, statement: cst.If) -> None:
        start = len(self.events)
        self.reads(statement.test)
        read = {n for k, n, _, _ in self.events[start:] if k == "read"}
        compared = {n for k, n, _, d in self.events[start:] if k == "read" and d == "compared"}
        flagged = bool(read & self.flags)
        self.guards.append(compared - self.loop_names)
        self.first_row += flagged
        self.block(statement.body.body)
        self.first_row -= flagged
        self.guards.pop()
        orelse = statement.orelse
        if isinstance(orelse, cst.If):
            self.branch(orelse)
        elif orelse is not None:
            self.block(orelse.body.body)

    def small(self, small: cst.CSTNode) -> None:
        if isinstance(small, cst.Assign):
            targets = [t.target for t in small.targets]
            own = targets[0].value if len(targets) == 1 and isinstance(targets[0], cst.Name) else None
            builds = own and own in _names_in(small.value) and _evidently_sequence(small.value)
            self.reads(small.value, skip=own if own and (_is_fold(own, small.value) or builds) else None)
            for target in targets:
                self.assign(target, small.value, small)
        elif isinstance(small, cst.AugAssign):
            self.reads(small.value)
            if isinstance(small.target, cst.Name):
                name = small.target.value
                fold = isinstance(small.operator, _FOLD_AUG) and not _evidently_sequence(small.value)
                self.local.add(name)
                self.events.append(("assign", name, small, "fold" if fold else "sequence"))
        elif isinstance(small, cst.Return):
            if small.value is not None and _names_in(small.value) & (self.loop_names | self.local):
                self.events.append(("return", "", small, ""))
        elif isinstance(small, cst.Expr):
            self.reads(small.value)

    def assign(self, target: cst.BaseExpression, value: cst.BaseExpression, where: cst.CSTNode) -> None:
        from_row = bool(_names_in(value) & (self.loop_names | self.local))
        if isinstance(target, cst.Name):
            name = target.value
            if _is_fold(name, value):
                detail = "fold"
            elif name in _names_in(value) and _evidently_sequence(value):
                detail = "sequence"  # `path = path + [r.page]`: every row, in arrival order
            elif self.guarded():
                detail = "guarded"
            elif self.first_row:
                detail = "first" if from_row else ""
            else:
                detail = "last" if from_row else ""
            self.local.add(name)
            self.events.append(("assign", name, where, detail))
        elif isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
            root = target.value.value
            index = target.slice[0].slice
            self.reads(index.value if isinstance(index, cst.Index) else None)
            last = from_row and root not in _names_in(value) and not self.guarded()
            if root not in self.local and root not in self.loop_names:
                self.events.append(("subassign", root, where, "last" if last else ""))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                if isinstance(element.value, cst.Name):
                    self.local.add(element.value.value)


def _seeding_nexts(statements: Sequence[cst.CSTNode]) -> set[int]:
    """`first = next(it)` whose value only seeds accumulators that a later `for r in it` loop
    folds order-free (`low = min(low, x)`, `if x > high: high = x`, `n += 1`): the first row is
    one of the values folded, whichever it is."""
    flat: list[cst.CSTNode] = []
    for statement in statements:
        flat.extend(statement.body.body if isinstance(statement, (cst.Try, cst.TryStar)) else [statement])
    seeds: set[int] = set()
    for index, statement in enumerate(flat):
        small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) else None
        if not (
            isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name)
        ):
            continue
        call = small.value
        if not (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Name)
            and call.func.value == "next"
            and call.args
            and isinstance(call.args[0].value, cst.Name)
        ):
            continue
        iterator = call.args[0].value.value
        derived = {small.targets[0].target.value}
        for index_after, later in enumerate(flat[index + 1 :], start=index + 1):
            if isinstance(later, cst.For) and isinstance(later.iter, cst.Name) and later.iter.value == iterator:
                if _folds_only(later, derived, flat[index_after + 1 :]):
                    seeds.add(id(call))
                break
            for node in _assignments(later):
                if _names_in(node.value) & derived:
                    derived |= {t.target.value for t in node.targets if isinstance(t.target, cst.Name)}
    return seeds


def _assignments(statement: cst.CSTNode) -> list[cst.Assign]:
    found: list[cst.Assign] = []

    class _Visitor(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            found.append(node)

    visit(statement, _Visitor())
    return found


def _folds_only(loop: cst.For, derived: set[str], rest: Sequence[cst.CSTNode]) -> bool:
    """Every seeded name read after the loop is only folded or replaced under a comparison inside it."""
    events = _LoopEvents(_names_in(loop.target))
    events.block(loop.body.body)
    after: set[str] = set()
    for statement in rest:
        after |= _names_in(statement)
    for name in derived & after:
        details = [d for kind, n, _, d in events.events if kind == "assign" and n == name]
        if not details or any(d not in ("fold", "guarded") for d in details):
            return False
    return _carried_value(loop, rest) is None


def _flags(loop: cst.For) -> frozenset[str]:
    """Names the loop only ever sets to constants (`first = False`): they say whether a row was
    seen, not which one."""
    constant: set[str] = set()
    other: set[str] = set()

    class _Assigns(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    literal = isinstance(node.value, (cst.Integer, cst.SimpleString)) or (
                        isinstance(node.value, cst.Name) and node.value.value in ("True", "False", "None")
                    )
                    (constant if literal else other).add(target.target.value)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            if isinstance(node.target, cst.Name):
                other.add(node.target.value)

    visit(loop.body, _Assigns())
    return frozenset(constant - other)


def _is_fold(name: str, value: cst.BaseExpression) -> bool:
    """`n = n + x`, `n = max(n, x)`: an order-free accumulation (when nothing else reads `n`)."""
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, _FOLD_BIN):
        sides = (value.left, value.right)
        own = [s for s in sides if isinstance(s, cst.Name) and s.value == name]
        other = [s for s in sides if s not in own]
        return len(own) == 1 and name not in _names_in(other[0]) and not _evidently_sequence(other[0])
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in ("max", "min"):
        return any(isinstance(a.value, cst.Name) and a.value.value == name for a in value.args)
    return False


def _evidently_sequence(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.List, cst.ListComp)):
        return True
    if isinstance(expr, cst.Tuple):
        return True
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in ("str", "list", "tuple"):
        return True
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        return _evidently_sequence(expr.left) or _evidently_sequence(expr.right)
    return False
