"""Builds the stage graph of one module by abstract interpretation of its statements.

Values are followed through method chains, variables and reassignments, calls of the module's own
functions (inlined with their arguments bound), window specs and column expressions held in
variables, and import aliases. Every `def` is also analysed on its own with unknown parameters, so
helpers that are never called in the module are still checked.
"""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any, cast

import libcst as cst

from sparkpar_lint.catalogue import OperatorSpec, load_catalogue
from sparkpar_lint.graph.imported_calls import caller_context, imported_call
from sparkpar_lint.graph.imports import FUNCTIONS_MODULE, ImportTable
from sparkpar_lint.graph.passed_function import UserFunction
from sparkpar_lint.graph.passthrough import passthrough_functions, star_passthrough
from sparkpar_lint.graph.positions import Positions
from sparkpar_lint.graph.previews import PREVIEW_FUNCTIONS, SIZE_FUNCTIONS, discarded, shown_expressions, truth_tested
from sparkpar_lint.graph.stage_graph import (
    ColumnCall,
    ColumnExpr,
    LazySpan,
    Order,
    Partitioning,
    StageGraph,
    StageNode,
    WindowSpecValue,
)
from sparkpar_lint.graph.user_functions import is_bound_method, parameter_names
from sparkpar_lint.graph.values import (
    UNKNOWN,
    ColumnValue,
    DictValue,
    DriverValue,
    FunctionValue,
    MaybeSparkValue,
    NumberValue,
    ProcessorValue,
    QualifiedName,
    SequenceValue,
    SparkValue,
    StringValue,
    TemplateValue,
    Value,
    WindowValue,
)
from sparkpar_lint.graph.visiting import children
from sparkpar_lint.project.constants import constant_value
from sparkpar_lint.project.methods import inherited_methods
from sparkpar_lint.sql import bridge as sql_bridge

DATA_KINDS = frozenset({"DataFrame", "GroupedData", "CoGroupedData", "RDD", "DStream"})
WINDOW_CLASS = "pyspark.sql.Window"
SESSION_CLASS = "pyspark.sql.SparkSession"
CONTEXT_CLASSES = {
    "pyspark.SparkContext": "SparkContext",
    "pyspark.streaming.StreamingContext": "StreamingContext",
}
# Lower-case names that still say "Spark" when called on a value of unknown type; every other
# guess needs a camelCase catalogue name, since pandas and plain Python use the lower-case ones.
_GUESSABLE_LOWER = frozenset({"select", "limit", "distinct", "repartition"})
_SESSION_METHODS = frozenset({"read", "readStream", "createDataFrame", "sparkContext"})
_SESSION_METHODS_BY_NAME = frozenset({"sql", "table", "range"})
_CONTEXT_METHODS = frozenset({"parallelize", "textFile", "wholeTextFiles"})
_TYPE_ANNOTATIONS = {
    "DataFrame": "DataFrame",
    "RDD": "RDD",
    "DStream": "DStream",
    "GroupedData": "GroupedData",
    "SparkSession": "SparkSession",
    "SparkContext": "SparkContext",
}
# Libraries whose results are never Spark values, though some share Spark's method names
# (polars' `select`/`limit`, pandas' `groupby`).
_NOT_SPARK_LIBRARIES = frozenset(
    {
        "pandas",
        "numpy",
        "polars",
        "dask",
        "modin",
        "ibis",
        "duckdb",
        "sqlalchemy",
        "pyarrow",
        "pyspark",
        "builtins",
        "os",
        "sys",
        "json",
        "re",
        "math",
        "random",
        "time",
        "datetime",
        "itertools",
        "functools",
        "collections",
        "operator",
        "typing",
        "pathlib",
        "logging",
        "uuid",
        "sklearn",
        "torch",
        "tensorflow",
    }
)
_BUILTIN_NAMES = frozenset(dir(builtins))
# Methods of estimators (MLlib, scikit-learn style) that train a model on the DataFrame they get.
_TRAINING_METHODS = frozenset({"fit", "fit_transform", "fitMultiple", "train", "trainImplicit"})
MAX_INLINE_DEPTH = 4
# Decorators of declarative pipelines that make a function the body of a foreachBatch sink.
_BATCH_SINK_DECORATORS = frozenset({"pyspark.pipelines.foreach_batch_sink", "dlt.foreach_batch_sink"})
# A Delta Live Tables dataset read by name, as `spark.readStream.table(name)` (or `spark.read`) reads it.
_PIPELINE_READS = {"dlt.read_stream": "StreamReader", "dlt.read": "Reader"}
# Argument values that can change what a helper's body builds.
_INFORMATIVE = (SparkValue, ColumnValue, WindowValue, FunctionValue, SequenceValue, DictValue, DriverValue)


def _scope_of(value: FunctionValue | ProcessorValue) -> Scope:
    # graph.values cannot name Scope (it is defined here); every such value is made here with one.
    return cast(Scope, value.scope)


class Scope:
    def __init__(self, parent: Scope | None, imports: ImportTable) -> None:
        self.parent = parent
        self.imports = imports
        self.variables: dict[str, Value] = {}
        self.returns: list[Value] = []
        self.is_class = False  # a class body: its functions are the methods `self.name()` calls

    def lookup(self, name: str) -> Value | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.variables:
                return scope.variables[name]
            scope = scope.parent
        return None

    def rebind(self, name: str, value: Value) -> None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.variables:
                scope.variables[name] = value
                return
            scope = scope.parent


def build_graph(
    module: cst.Module,
    path: str,
    project: Any = None,
    callers_of: frozenset[str] = frozenset(),
    source: str | None = None,
) -> StageGraph:
    """`project` (project.summary.ProjectIndex) answers for functions imported from the project's
    other modules; None analyses the module alone. The top-level functions named in `callers_of`
    get their parameters from what the project's callers pass (graph.imported_calls). `source`,
    the text `module` was parsed from, spares generating it again to place findings."""
    return GraphBuilder(module, path, project, callers_of, source).build()


class GraphBuilder:
    def __init__(
        self,
        module: cst.Module,
        path: str,
        project: Any = None,  # project.summary.ProjectIndex, a layer above this one
        callers_of: frozenset[str] = frozenset(),
        source: str | None = None,
    ) -> None:
        self.module = module
        self.project = project
        self.callers_of = callers_of
        self.graph = StageGraph(path, module=module)
        self.catalogue = load_catalogue()
        # Positions are resolved per node on first use (a finding, a fix, `sparkpar graph`): most
        # files never report anything.
        self.graph.position_source = lambda: Positions(module, source)
        self.inline_stack: list[cst.FunctionDef] = []
        self.call_sites: list[cst.Call] = []
        self.pending: list[tuple[cst.FunctionDef, Scope]] = []
        self.analysed: set[int] = set()
        self.node_at: dict[tuple[int, int, str, tuple[int, ...]], int] = {}
        self.plain_results: dict[int, Value] = {}
        # Temp views registered so far (lower-cased name -> node id, read as a stream?): SQL
        # reading one continues it.
        self.views: dict[str, tuple[int, bool]] = {}
        # Every scope made, emptied once the graph is built (see `build`).
        self.scopes: list[Scope] = []

    # ---------------------------------------------------------------- driver

    def build(self) -> StageGraph:
        scope = self.scope(None, ImportTable())
        self.exec_block(self.module.body, scope)
        while self.pending:
            function, defined_in = self.pending.pop(0)
            if id(function) not in self.analysed:
                self.analysed.add(id(function))
                wanted = defined_in is scope and function.name.value in self.callers_of
                context = caller_context(self, function) if wanted else {}
                returned = self.run_function(function, defined_in, [], context)
                if defined_in is scope:
                    self.graph.function_returns[function.name.value] = returned
        self.graph.imports = scope.imports
        # A scope holds its functions' values and they hold the scope: emptied, the module's
        # tree is freed as soon as the last reference goes, not by a full collector pass.
        for made in self.scopes:
            made.variables.clear()
        return self.graph

    def scope(self, parent: Scope | None, imports: ImportTable) -> Scope:
        made = Scope(parent, imports)
        self.scopes.append(made)
        return made

    def span(self, node: cst.CSTNode, end_node: cst.CSTNode | None = None) -> LazySpan:
        return LazySpan(self.graph, node, end_node)

    # ------------------------------------------------------------ statements

    def exec_block(self, body: Sequence[cst.CSTNode], scope: Scope) -> None:
        for statement in body:
            self.exec_statement(statement, scope)

    def exec_statement(self, statement: cst.CSTNode, scope: Scope) -> None:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                self.exec_small(small, scope)
        elif isinstance(statement, cst.FunctionDef):
            self.define_function(statement, scope)
        elif isinstance(statement, cst.ClassDef):
            self.graph.definitions.append(statement)
            if self.project is not None and statement.bases:
                found = inherited_methods(self.project, self.graph.path, statement, scope.imports.resolve_name)
                if found:
                    self.graph.inherited[statement.name.value] = found
            class_scope = self.scope(scope, ImportTable(scope.imports))
            class_scope.is_class = True
            self.exec_block(statement.body.body, class_scope)
            # A module's own class is not Spark: its instances must not be guessed as DataFrames.
            scope.variables[statement.name.value] = UNKNOWN
            if any(_is_processor_base(self.ev(b.value, scope)) for b in statement.bases):
                scope.variables[statement.name.value] = ProcessorValue(statement, class_scope)
        elif isinstance(statement, cst.For):
            iterated = self.ev(statement.iter, scope)
            item = iterated.items[0] if isinstance(iterated, SequenceValue) and iterated.items else UNKNOWN
            self.bind(statement.target, item, scope)
            self.exec_block(statement.body.body, scope)
            if statement.orelse:
                self.exec_block(statement.orelse.body.body, scope)
        elif isinstance(statement, cst.If):
            self.exec_branches(statement, scope)
        elif isinstance(statement, cst.While):
            self.graph.size_read.update(truth_tested(statement.test))
            self.ev(statement.test, scope)
            self.exec_block(statement.body.body, scope)
            orelse = statement.orelse
            while orelse is not None:
                if isinstance(orelse, cst.If):
                    self.ev(orelse.test, scope)
                self.exec_block(orelse.body.body, scope)
                orelse = orelse.orelse if isinstance(orelse, cst.If) else None
        elif isinstance(statement, cst.With):
            for with_item in statement.items:
                value = self.ev(with_item.item, scope)
                if with_item.asname is not None:
                    self.bind(with_item.asname.name, value, scope)
            self.exec_block(statement.body.body, scope)
        elif isinstance(statement, (cst.Try, cst.TryStar)):
            self.exec_block(statement.body.body, scope)
            for handler in statement.handlers:
                self.exec_block(handler.body.body, scope)
            for extra in (statement.orelse, statement.finalbody):
                if extra is not None:
                    self.exec_block(extra.body.body, scope)
        elif isinstance(statement, cst.Match):
            self.ev(statement.subject, scope)
            for case in statement.cases:
                self.exec_block(case.body.body, scope)

    def exec_branches(self, statement: cst.If, scope: Scope) -> None:
        """Only one branch of an if/elif/else runs: each starts from the state before the `if`, and
        afterwards a name holds what the last branch assigning it gave it (branches never chain)."""
        before = dict(scope.variables)
        merged = dict(before)
        branch: cst.If | cst.Else | None = statement
        while branch is not None:
            scope.variables.clear()
            scope.variables.update(before)
            if isinstance(branch, cst.If):
                self.graph.size_read.update(truth_tested(branch.test))
                self.ev(branch.test, scope)
            self.exec_block(branch.body.body, scope)
            merged.update({name: v for name, v in scope.variables.items() if before.get(name) is not v})
            branch = branch.orelse if isinstance(branch, cst.If) else None
        scope.variables.clear()
        scope.variables.update(merged)

    def exec_small(self, small: cst.BaseSmallStatement, scope: Scope) -> None:
        if isinstance(small, cst.Assign):
            value = self.ev(small.value, scope)
            for target in small.targets:
                self.bind(target.target, value, scope)
        elif isinstance(small, cst.AnnAssign):
            if small.value is not None:
                self.bind(small.target, self.ev(small.value, scope), scope)
        elif isinstance(small, cst.AugAssign):
            self.ev(small.value, scope)
        elif isinstance(small, cst.Expr):
            # A result nobody keeps: shown by a notebook or REPL, dropped by a script (graph.previews).
            self.graph.previewed_args.update(discarded(small.value))
            self.ev(small.value, scope)
        elif isinstance(small, cst.Return):
            if small.value is not None:
                scope.returns.append(self.ev(small.value, scope))
        elif isinstance(small, (cst.Import, cst.ImportFrom)):
            scope.imports.add(small)
            for name in _imported_names(small):
                scope.variables.pop(name, None)

    def bind(self, target: cst.BaseExpression, value: Value, scope: Scope) -> None:
        if isinstance(target, cst.Name):
            scope.variables[target.value] = value
            if isinstance(value, SparkValue) and value.kind in ("Broadcast", "Accumulator"):
                self.graph.shared_variables[target.value] = value.kind
        elif isinstance(target, (cst.Tuple, cst.List)):
            items = value.items if isinstance(value, SequenceValue) else ()
            for index, element in enumerate(target.elements):
                item = items[index] if index < len(items) else UNKNOWN
                self.bind(element.value, item, scope)
        elif isinstance(target, (cst.Attribute, cst.Subscript)):
            self.ev(target.value, scope)

    # ------------------------------------------------------------- functions

    def define_function(self, function: cst.FunctionDef, scope: Scope) -> None:
        self.graph.definitions.append(function)
        is_udf = any(self._is_udf_factory(self.ev(d.decorator, scope)) for d in function.decorators)
        user_function = self.user_function(function, function.name.value, "udf" if is_udf else "")
        scope.variables[function.name.value] = FunctionValue(user_function, scope, udf=is_udf)
        self.pending.append((function, scope))
        for decorator in function.decorators:
            self._batch_sink(decorator.decorator, FunctionValue(user_function, scope), scope)

    def _batch_sink(self, decorator: cst.BaseExpression, function: FunctionValue, scope: Scope) -> None:
        """`@dp.foreach_batch_sink(name=...)` over `def sink(df, batch_id)`: a declarative
        pipeline runs the function on each micro-batch, as `writeStream.foreachBatch(sink)` does."""
        func = decorator.func if isinstance(decorator, cst.Call) else decorator
        if not isinstance(func, cst.Attribute):
            return
        named = self.ev(func, scope)
        if not isinstance(named, QualifiedName) or named.name not in _BATCH_SINK_DECORATORS:
            return
        spec = self.catalogue.operator("StreamWriter", "foreachBatch")
        call = decorator if isinstance(decorator, cst.Call) else None
        receiver = SparkValue("StreamWriter", None, True)
        self.apply_operator(receiver, spec, func, call, [function], {}, scope, "foreach_batch_sink")

    def _is_udf_factory(self, value: Value) -> bool:
        if isinstance(value, QualifiedName):
            return value.name in (f"{FUNCTIONS_MODULE}.udf", f"{FUNCTIONS_MODULE}.pandas_udf")
        return isinstance(value, FunctionValue) and value.udf

    def user_function(self, node: cst.FunctionDef | cst.Lambda, name: str, role: str) -> UserFunction:
        return UserFunction(
            name=name, node=node, span=self.span(node.name if isinstance(node, cst.FunctionDef) else node), role=role
        )

    def run_function(
        self, function: cst.FunctionDef | cst.Lambda, defined_in: Scope, args: list[Value], kwargs: dict[str, Value]
    ) -> Value:
        """Evaluate a def or lambda with its parameters bound; the value it returns."""
        scope = self.scope(defined_in, ImportTable(defined_in.imports))
        names = parameter_names(function)
        params = function.params
        annotated = {p.name.value: p.annotation for p in params.params if p.annotation is not None}
        for index, name in enumerate(names):
            if index < len(args):
                value = args[index]
            elif name in kwargs:
                value = kwargs[name]
            else:
                value = self._annotated_value(annotated.get(name), name)
            scope.variables[name] = value
        if isinstance(function, cst.Lambda):
            return self.ev(function.body, scope)
        self.inline_stack.append(function)
        try:
            self.exec_block(_statements(function.body), scope)
        finally:
            self.inline_stack.pop()
        informative = [v for v in scope.returns if v is not UNKNOWN and not isinstance(v, NumberValue)]
        return informative[-1] if informative else UNKNOWN

    def _annotated_value(self, annotation: cst.Annotation | None, name: str) -> Value:
        if annotation is not None:
            text = self.module.code_for_node(annotation.annotation).split(".")[-1].strip("'\"")
            if text in _TYPE_ANNOTATIONS:
                return SparkValue(_TYPE_ANNOTATIONS[text])
        return MaybeSparkValue(name)

    def inline(self, callee: FunctionValue, call: cst.Call, scope: Scope, bound_self: Value | None = None) -> Value:
        args, kwargs = self.ev_args(call, scope)
        if bound_self is not None:
            args = [bound_self, *args]
        function = callee.function.node
        if function in self.inline_stack or len(self.inline_stack) >= MAX_INLINE_DEPTH:
            return UNKNOWN
        if any(isinstance(v, _INFORMATIVE) for v in [*args, *kwargs.values()]):
            self.call_sites.append(call)
            try:
                return self.run_function(function, _scope_of(callee), args, kwargs)
            finally:
                self.call_sites.pop()
        # Arguments that tell nothing give the same result every call: walk the body once.
        if id(function) not in self.plain_results:
            self.plain_results[id(function)] = self.run_function(function, _scope_of(callee), args, kwargs)
        return self.plain_results[id(function)]

    def ev_args(self, call: cst.Call, scope: Scope) -> tuple[list[Value], dict[str, Value]]:
        args: list[Value] = []
        kwargs: dict[str, Value] = {}
        for arg in call.args:
            value = self.ev(arg.value, scope)
            if arg.keyword is not None:
                kwargs[arg.keyword.value] = value
            elif arg.star == "*" and isinstance(value, SequenceValue):
                args.extend(value.items)
            elif not arg.star:
                args.append(value)
        return args, kwargs

    # ----------------------------------------------------------- expressions

    def ev(self, expr: cst.BaseExpression, scope: Scope) -> Value:
        method = getattr(self, f"ev_{type(expr).__name__}", None)
        if method is not None:
            value: Value = method(expr, scope)
            return value
        for child in children(expr):
            if isinstance(child, cst.BaseExpression):
                self.ev(child, scope)
            elif isinstance(child, cst.CSTNode):
                for grandchild in children(child):
                    if isinstance(grandchild, cst.BaseExpression):
                        self.ev(grandchild, scope)
        return UNKNOWN

    def ev_Name(self, expr: cst.Name, scope: Scope) -> Value:
        value = scope.lookup(expr.value)
        if value is not None:
            return value
        qualified = scope.imports.resolve_name(expr.value)
        if qualified is None and self.project is not None:
            qualified = self.project.star_name(self.graph.path, scope.imports.all_star_modules(), expr.value)
            if qualified is None:
                # A literal set in a star-imported module or a `%run` notebook (`KEYS = ["id"]`).
                found = self.project.star_constant(self.graph.path, scope.imports.all_star_modules(), expr.value)
                if found is not None:
                    return constant_value(found[0], self.span(expr))
        if qualified is None:
            qualified = star_passthrough(scope.imports.all_star_modules(), expr.value)
        if qualified is not None:
            return QualifiedName(qualified)
        return MaybeSparkValue(expr.value)

    def ev_Attribute(self, expr: cst.Attribute, scope: Scope) -> Value:
        return self.ev_chain(expr, scope)

    def ev_chain(self, expr: cst.Call | cst.Attribute, scope: Scope) -> Value:
        """A method chain evaluated from its innermost receiver outwards in a loop, not by recursion:
        feature-engineering code chains thousands of calls, deeper than Python's recursion limit."""
        links: list[cst.Call | cst.Attribute] = []
        node: cst.BaseExpression = expr
        while True:
            if isinstance(node, cst.Attribute):
                links.append(node)
                node = node.value
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
                links.append(node)
                node = node.func.value
            else:
                break
        value = self.ev(node, scope)
        for link in reversed(links):
            if isinstance(link, cst.Call):
                # Only calls of a method (`x.m(...)`) were linked above.
                value = self.method_call(value, cast(cst.Attribute, link.func), link, scope)
            else:
                value = self.attribute_of(value, link, scope)
        return value

    def attribute_of(self, base: Value, expr: cst.Attribute, scope: Scope) -> Value:
        attr = expr.attr.value
        if isinstance(base, QualifiedName):
            return QualifiedName(f"{base.name}.{attr}")
        if isinstance(base, MaybeSparkValue):
            base = self.guess(base, attr, scope, expr.value)
        if isinstance(base, SparkValue):
            spec = self.catalogue.operator(base.kind, attr)
            if spec is not None and spec.is_property:
                return self.apply_operator(base, spec, expr, None, [], {}, scope)
            if base.kind == "DataFrame":
                return ColumnValue(ColumnExpr(columns=(attr,)))
            return UNKNOWN
        if isinstance(base, ColumnValue):
            return base
        if isinstance(base, MaybeSparkValue) or base is UNKNOWN:
            return MaybeSparkValue(attr)
        return UNKNOWN

    def ev_Call(self, expr: cst.Call, scope: Scope) -> Value:
        func = expr.func
        if isinstance(func, cst.Name) and func.value in PREVIEW_FUNCTIONS:
            self.graph.previewed_args.update(shown_expressions(expr))
        if isinstance(func, cst.Name) and func.value in SIZE_FUNCTIONS:
            self.graph.size_read.update(id(arg.value) for arg in expr.args)
        if isinstance(func, cst.Attribute):
            return self.ev_chain(expr, scope)
        callee = self.ev(func, scope)
        if isinstance(callee, QualifiedName):
            return self.qualified_call(callee.name, expr, scope)
        if isinstance(callee, FunctionValue):
            if callee.udf:
                return self.udf_call(callee, expr, scope)
            return self.inline(callee, expr, scope)
        if isinstance(callee, ProcessorValue):
            self.ev_args(expr, scope)
            return dataclasses.replace(callee, instance=True)
        args, kwargs = self.ev_args(expr, scope)
        copies = (
            isinstance(func, cst.Name) and func.value in ("list", "tuple") and callee == MaybeSparkValue(func.value)
        )
        if copies and len(args) == 1 and not kwargs and isinstance(args[0], SequenceValue):
            return args[0]  # `list(KEYS)` (the unshadowed builtin): the same names as KEYS
        return MaybeSparkValue("<call>") if isinstance(callee, MaybeSparkValue) else UNKNOWN

    def method_call(self, receiver: Value, func: cst.Attribute, call: cst.Call, scope: Scope) -> Value:
        method = func.attr.value
        if isinstance(receiver, MaybeSparkValue) and receiver.name == "self" and isinstance(func.value, cst.Name):
            own = _own_method(scope, method)
            if own is not None:
                # `self._load()` in a method: the class's own method, run with this call's arguments;
                # when that shows nothing, the result is typed by its use, as any unknown call's.
                value = self.inline(own, call, scope, bound_self=receiver)
                return MaybeSparkValue("<call>") if value is UNKNOWN else value
        if isinstance(receiver, MaybeSparkValue):
            receiver = self.guess(receiver, method, scope, func.value)
        if isinstance(receiver, QualifiedName):
            return self.qualified_call(f"{receiver.name}.{method}", call, scope)
        args, kwargs = self.ev_args(call, scope)
        if isinstance(receiver, SparkValue):
            spec = self.catalogue.operator(receiver.kind, method)
            return self.apply_operator(receiver, spec, func, call, args, kwargs, scope, method)
        if isinstance(receiver, ColumnValue):
            return self.column_method(receiver, method, args, kwargs)
        if isinstance(receiver, WindowValue):
            return WindowValue(_window_step(receiver.spec, method, args, kwargs, bool(call.args)))
        if isinstance(receiver, StringValue) and method == "format":
            return UNKNOWN
        if method in _TRAINING_METHODS:
            self.graph.training_inputs.update(
                a.node for a in [*args, *kwargs.values()] if isinstance(a, SparkValue) and a.node is not None
            )
        if isinstance(receiver, MaybeSparkValue):
            return MaybeSparkValue("<call>")
        return UNKNOWN

    def guess(self, value: MaybeSparkValue, method: str, scope: Scope, where: cst.BaseExpression) -> Value:
        """Type a value of unknown origin by what is done to it, and remember the type."""
        kind = None
        lowered = value.name.lower()
        if method in _SESSION_METHODS or (
            method in _SESSION_METHODS_BY_NAME and ("spark" in lowered or "session" in lowered)
        ):
            kind = "SparkSession"
        elif method in _CONTEXT_METHODS:
            kind = "SparkContext"
        elif method != method.lower() or method in _GUESSABLE_LOWER:
            for candidate in ("DataFrame", "GroupedData", "RDD", "DStream"):
                if self.catalogue.operator(candidate, method) is not None:
                    kind = candidate
                    break
        if kind is None:
            return value
        typed = SparkValue(kind)
        if isinstance(where, cst.Name):
            scope.rebind(where.value, typed)
        return typed

    # --------------------------------------------------------------- operators

    def apply_operator(
        self,
        receiver: SparkValue,
        spec: OperatorSpec | None,
        func: cst.Attribute,
        call: cst.Call | None,
        args: list[Value],
        kwargs: dict[str, Value],
        scope: Scope,
        method: str | None = None,
    ) -> Value:
        method = method or func.attr.value
        batch = spec is not None and spec.function_role == "batch"  # foreachBatch: the function sees data
        if receiver.kind not in DATA_KINDS and not (spec and (spec.source or spec.sink)) and not batch:
            if spec is None:
                return UNKNOWN
            if spec.returns == "driver":
                return UNKNOWN
            return SparkValue(spec.returns, receiver.node, receiver.streaming or spec.streaming)
        if spec is not None and spec.function_role == "dataframe" and args:
            return self.call_value(args[0], [SparkValue(receiver.kind, receiver.node, receiver.streaming)], scope)
        if receiver.kind == "SparkSession" and method == "sql" and args:
            analysed, result = sql_bridge.run_query(self, args[0])
            if analysed and result is not None:
                self.graph.sql_results[id(call)] = result
                return SparkValue("DataFrame", result)
        node = self.make_node(receiver, spec, method, func, call, args, kwargs, scope)
        sql_bridge.register_view(self.views, method, args, receiver.node, receiver.streaming)
        if spec is not None and spec.function_role == "batch":
            for function in node.functions:
                value = FunctionValue(function, scope)
                batch_args: list[Value] = [SparkValue("DataFrame", node.id)]
                if is_bound_method(function.node):
                    batch_args = [MaybeSparkValue("self"), *batch_args]  # `foreachBatch(self.save)`
                self.call_value(value, batch_args, scope)
        if spec is None:
            return SparkValue(receiver.kind, node.id, node.streaming)
        if spec.returns == "driver":
            return DriverValue(node.id)
        if spec.returns not in DATA_KINDS and spec.returns not in ("Writer", "StreamWriter"):
            return UNKNOWN if spec.returns == "list" else SparkValue(spec.returns, node.id)
        keys = node.keys if spec.returns == "GroupedData" else ()
        return SparkValue(spec.returns, node.id, node.streaming, keys)

    def call_value(self, callee: Value, args: list[Value], scope: Scope) -> Value:
        if isinstance(callee, FunctionValue):
            function = callee.function.node
            if function in self.inline_stack or len(self.inline_stack) >= MAX_INLINE_DEPTH:
                return UNKNOWN
            return self.run_function(function, _scope_of(callee) or scope, args, {})
        return UNKNOWN

    def make_node(
        self,
        receiver: SparkValue,
        spec: OperatorSpec | None,
        method: str,
        func: cst.Attribute,
        call: cst.Call | None,
        args: list[Value],
        kwargs: dict[str, Value],
        scope: Scope,
    ) -> StageNode:
        span = self.span(func.attr, call) if call is not None else self.span(func.attr)
        inputs = [receiver.node] if receiver.node is not None else []
        data_args = [a for a in [*args, *kwargs.values()] if isinstance(a, SparkValue) and a.kind in DATA_KINDS]
        inputs += [a.node for a in data_args if a.node is not None]
        key = (id(func.attr), id(call), method, tuple(inputs))
        if key in self.node_at:
            # The same call reached again (a helper analysed alone and inlined): one node. Reached
            # outside any inlining too, it does not depend on a caller's arguments.
            node = self.graph.node(self.node_at[key])
            if not self.call_sites:
                node.call_site = None
            return node
        streaming = receiver.streaming or any(a.streaming for a in data_args) or bool(spec and spec.streaming)
        node = StageNode(
            id=0,
            receiver=receiver.kind,
            method=method,
            spec=spec,
            span=span,
            call=call,
            inputs=inputs,
            streaming=streaming,
            keys=receiver.keys
            + (
                _key_names(args, kwargs, expressions=spec.partitioning_effect in _HASHING)
                if spec and spec.keys == "args"
                else ()
            ),
            columns=_columns_of([*args, *kwargs.values()])
            + _sql_columns(args if spec and spec.sql_columns else [], self),
            functions=self.functions_of(spec, call, args, kwargs, scope),
            keywords=_keyword_texts(call, self.module),
            positional_count=len(args),
            first_number=_first_number(args),
            callables=_callable_names(spec, args, kwargs),
            function_slots=_function_slots(spec, args, kwargs),
            call_site=self.span(self.call_sites[0]) if self.call_sites else None,
        )
        if spec is not None and spec.keys == "pair-key":
            node.keys = ("[0]",)
        self.graph.add(node)
        self.node_at[key] = node.id
        self.derive_flow(node)
        return node

    def functions_of(
        self,
        spec: OperatorSpec | None,
        call: cst.Call | None,
        args: list[Value],
        kwargs: dict[str, Value],
        scope: Scope,
    ) -> list[UserFunction]:
        if spec is None or not spec.functions or call is None:
            return []
        found = []
        positional = [a for a in call.args if a.keyword is None]
        for index in spec.functions:
            arg = args[index] if index < len(args) else None
            if isinstance(arg, ProcessorValue) and arg.instance:
                found.extend(self.processor_methods(arg, spec.function_role))
            if isinstance(arg, FunctionValue):
                found.append(dataclasses.replace(arg.function, role=spec.function_role))
            elif spec.function_role == "batch" and (own := _self_method(positional[index : index + 1], scope)):
                # `foreachBatch(self.save)`: the class's own method, called with the batch after `self`.
                found.append(dataclasses.replace(own.function, role=spec.function_role))
            elif index < len(positional):
                continue
        for name in ("f", "func", "function", "zeroValue", "partitionFunc"):
            passed = kwargs.get(name)
            if isinstance(passed, FunctionValue):
                found.append(dataclasses.replace(passed.function, role=spec.function_role))
        self.graph.user_functions.extend(found)
        return found

    def processor_methods(self, processor: ProcessorValue, role: str) -> list[UserFunction]:
        """A StatefulProcessor's `handleInputRows`: what Spark runs per key and micro-batch."""
        return [
            self.user_function(item, item.name.value, role)
            # A ProcessorValue is made from its class statement (see build), hence the cast.
            for item in cast(cst.ClassDef, processor.node).body.body
            if isinstance(item, cst.FunctionDef) and item.name.value == "handleInputRows"
        ]

    def derive_flow(self, node: StageNode) -> None:
        """The data-trace type and partitioning of the node's output edge."""
        upstream = self.graph.input_of(node)
        spec = node.spec
        node.input_order = upstream.output_order if upstream else Order()
        node.input_partitioning = upstream.output_partitioning if upstream else Partitioning()
        node.has_watermark_upstream = bool(
            any(self.graph.node(i).has_watermark_upstream for i in node.inputs) or (spec and spec.watermark)
        )
        if spec is None:
            node.output_order, node.output_partitioning = Order(), Partitioning()
            return
        if spec.source:
            node.output_order = Order("sequence", established_by=node.id)
            node.output_partitioning = Partitioning("source", established_by=node.id)
            return
        node.output_order = _order_after(node, spec)
        node.output_partitioning = _partitioning_after(node, spec)

    # ---------------------------------------------------- column expressions

    def qualified_call(self, name: str, call: cst.Call, scope: Scope) -> Value:
        if name.startswith(FUNCTIONS_MODULE + "."):
            return self.column_function(name[len(FUNCTIONS_MODULE) + 1 :], call, scope)
        args, kwargs = self.ev_args(call, scope)
        if name.startswith(WINDOW_CLASS + "."):
            method = name[len(WINDOW_CLASS) + 1 :]
            start = WindowSpecValue(span=self.span(call))
            return WindowValue(_window_step(start, method, args, kwargs, bool(call.args)))
        if name.startswith(SESSION_CLASS):
            last = name.rsplit(".", 1)[-1]
            return (
                SparkValue("SparkSession")
                if last in ("getOrCreate", "create", "active", "getActiveSession")
                else QualifiedName(name)
            )
        for class_name, kind in CONTEXT_CLASSES.items():
            if name == class_name or name.startswith(class_name + "."):
                return SparkValue(kind)
        reader = _PIPELINE_READS.get(name)
        if reader is not None and isinstance(call.func, cst.Attribute):
            spec = self.catalogue.operator(reader, "table")
            return self.apply_operator(SparkValue(reader), spec, call.func, call, args, kwargs, scope, "table")
        frame = passthrough_functions().get(name)
        if frame is not None and frame < len(args) and isinstance(args[frame], SparkValue):
            return args[frame]  # the same rows come back (`collectMetrics(spark, df, ...)`)
        passed = [*args, *kwargs.values()]
        if name.split(".")[0] in _NOT_SPARK_LIBRARIES:
            imported = None
        elif passed and not any(_spark_like(v) for v in passed):
            imported = None  # nothing Spark goes in (`_to_java_column(col)`): not worth a summary
        else:
            # What this module hands to its project's functions: the callers' side of a summary.
            self.graph.outgoing_calls.append((name, args, kwargs))
            imported = imported_call(self, name, call, args, kwargs)
        if imported is not None:
            return imported
        if name.split(".")[0] not in _NOT_SPARK_LIBRARIES:
            # A project or library helper (`tables.load(...)`): typed later by what is done to it.
            return MaybeSparkValue("<call>")
        return UNKNOWN

    def column_function(self, function: str, call: cst.Call, scope: Scope) -> Value:
        args, kwargs = self.ev_args(call, scope)
        spec = self.catalogue.functions.get(function)
        if spec is not None and spec.frame_hint and args and isinstance(args[0], SparkValue):
            return args[0]  # `broadcast(df)` is df with a join hint: the same rows, still a stream if df is
        if spec is not None and spec.udf_factory:
            wrapped = next((a for a in args if isinstance(a, FunctionValue)), None)
            if wrapped is not None:
                return dataclasses.replace(wrapped, udf=True)
            return QualifiedName(f"{FUNCTIONS_MODULE}.{function}")
        inner = _columns_of([*args, *kwargs.values()])
        if spec is not None and spec.sql_expression:
            inner = inner + _sql_columns(args, self)
        wrapped_calls = tuple(dataclasses.replace(c, enclosing=(function, *c.enclosing)) for c in inner.calls)
        this = ColumnCall(function=function, span=self.span(call), spec=spec, call=call)
        # `lit("x")` holds a value, not a column name.
        names = () if spec is not None and spec.constant else tuple(a.text for a in args if isinstance(a, StringValue))
        return ColumnValue(ColumnExpr((this, *wrapped_calls), names + inner.columns))

    def udf_call(self, callee: FunctionValue, call: cst.Call, scope: Scope) -> Value:
        args, kwargs = self.ev_args(call, scope)
        function = dataclasses.replace(callee.function, role="udf")
        if function not in self.graph.user_functions:
            self.graph.user_functions.append(function)
        this = ColumnCall(function=function.name, span=self.span(call), spec=None, call=call, udf=function)
        inner = _columns_of([*args, *kwargs.values()])
        return ColumnValue(ColumnExpr((this, *inner.calls), inner.columns))

    def column_method(self, receiver: ColumnValue, method: str, args: list[Value], kwargs: dict[str, Value]) -> Value:
        if method == "over":
            window = next((a.spec for a in [*args, *kwargs.values()] if isinstance(a, WindowValue)), None)
            if window is None:
                # A spec we cannot see: assume it is ordered rather than guess a finding.
                window = WindowSpecValue(has_partition=True, has_order=True)
            self.graph.window_specs.append(window)
            calls = tuple(
                c if c.window is not None else dataclasses.replace(c, window=window) for c in receiver.expr.calls
            )
            return ColumnValue(ColumnExpr(calls, receiver.expr.columns))
        return ColumnValue(receiver.expr + _columns_of([*args, *kwargs.values()]))

    # ---------------------------------------------------------- literal forms

    def ev_Integer(self, expr: cst.Integer | cst.Float, scope: Scope) -> Value:
        return NumberValue(expr.evaluated_value)

    ev_Float = ev_Integer

    def ev_SimpleString(self, expr: cst.SimpleString, scope: Scope) -> Value:
        value = _string_value(expr)
        return StringValue(value, self.span(expr), expr) if isinstance(value, str) else UNKNOWN

    def ev_ConcatenatedString(self, expr: cst.ConcatenatedString, scope: Scope) -> Value:
        value = expr.evaluated_value
        if isinstance(value, str):
            return StringValue(value, self.span(expr), expr)
        return TemplateValue(expr) if value is None else UNKNOWN  # None: it holds an f-string

    def ev_FormattedString(self, expr: cst.FormattedString, scope: Scope) -> Value:
        # What an f-string shows is computed all the same: `print(f"{deduped.count()} rows")`.
        for part in expr.parts:
            if isinstance(part, cst.FormattedStringExpression):
                self.ev(part.expression, scope)
        return TemplateValue(expr)

    def ev_List(self, expr: cst.List | cst.Tuple | cst.Set, scope: Scope) -> Value:
        items: list[Value] = []
        for element in expr.elements:
            value = self.ev(element.value, scope)
            if isinstance(element, cst.StarredElement) and isinstance(value, SequenceValue):
                items.extend(value.items)
            else:
                items.append(value)
        return SequenceValue(tuple(items))

    ev_Tuple = ev_List
    ev_Set = ev_List

    def ev_Dict(self, expr: cst.Dict, scope: Scope) -> Value:
        items = []
        for element in expr.elements:
            if isinstance(element, cst.DictElement):
                items.append((self.ev(element.key, scope), self.ev(element.value, scope)))
            else:
                self.ev(element.value, scope)
        return DictValue(tuple(items))

    def ev_ListComp(self, expr: cst.ListComp | cst.GeneratorExp | cst.SetComp, scope: Scope) -> Value:
        inner = self.scope(scope, scope.imports)
        comprehension: cst.CompFor | None = expr.for_in
        while comprehension is not None:
            iterated = self.ev(comprehension.iter, inner)
            item = iterated.items[0] if isinstance(iterated, SequenceValue) and iterated.items else UNKNOWN
            self.bind(comprehension.target, item, inner)
            for condition in comprehension.ifs:
                self.ev(condition.test, inner)
            comprehension = comprehension.inner_for_in
        return SequenceValue((self.ev(expr.elt, inner),))

    ev_GeneratorExp = ev_ListComp
    ev_SetComp = ev_ListComp

    def ev_Lambda(self, expr: cst.Lambda, scope: Scope) -> Value:
        return FunctionValue(self.user_function(expr, "<lambda>", ""), scope)

    def ev_Subscript(self, expr: cst.Subscript, scope: Scope) -> Value:
        base = self.ev(expr.value, scope)
        index = None
        for element in expr.slice:
            if isinstance(element.slice, cst.Index):
                index = self.ev(element.slice.value, scope)
        if isinstance(base, DriverValue):
            # `rows[0]`, `rows[-3:]` pick rows by position; a pandas frame's `pdf["a"]`, `pdf[cols]`
            # pick columns, and only a slice (`pdf[:10]`) picks rows.
            node = self.graph.node(base.node)
            sliced = any(isinstance(e.slice, cst.Slice) for e in expr.slice)
            if sliced or (node.method != "toPandas" and not isinstance(index, (StringValue, SequenceValue))):
                node.indexed = True
            return UNKNOWN
        if isinstance(base, SparkValue) and base.kind == "DataFrame":
            if len(expr.slice) > 1 or isinstance(index, SequenceValue):
                # `df["a", "b"]`, `df[["a", "b"]]`, `df[cols]`: a projection keeps order and partitioning.
                return SparkValue("DataFrame", base.node, base.streaming)
            name = index.text if isinstance(index, StringValue) else None
            return ColumnValue(ColumnExpr(columns=(name,) if name else ()))
        if isinstance(base, MaybeSparkValue) and (len(expr.slice) > 1 or isinstance(index, SequenceValue)):
            return MaybeSparkValue(base.name)
        if isinstance(base, SequenceValue) and base.items:
            return base.items[0]
        if isinstance(base, DictValue) and isinstance(index, StringValue):
            # `conf["dedup_keys"]` of a settings dict spelled out (here or in a `%run` notebook).
            return next((v for k, v in base.items if isinstance(k, StringValue) and k.text == index.text), UNKNOWN)
        if isinstance(base, ColumnValue):
            return base
        return UNKNOWN

    def ev_BinaryOperation(self, expr: cst.BaseExpression, scope: Scope) -> Value:
        # `a + b + c ...` nests to the left; walked in a loop so thousands of terms do not recurse.
        operations: list[cst.BinaryOperation | cst.BooleanOperation] = []
        while isinstance(expr, (cst.BinaryOperation, cst.BooleanOperation)):
            operations.append(expr)
            expr = expr.left
        value = self.ev(expr, scope)
        for operation in reversed(operations):
            right = self.ev(operation.right, scope)
            if (
                isinstance(operation, cst.BinaryOperation)
                and isinstance(operation.operator, cst.Add)
                and all(isinstance(p, (StringValue, TemplateValue)) for p in (value, right))
            ):
                value = TemplateValue(operation)  # "SELECT ..." + "FROM ...": SQL analysis reads it
            else:
                value = _merge_columns([value, right])
        return value

    ev_BooleanOperation = ev_BinaryOperation

    def ev_UnaryOperation(self, expr: cst.UnaryOperation, scope: Scope) -> Value:
        return _merge_columns([self.ev(expr.expression, scope)])

    def ev_Comparison(self, expr: cst.Comparison, scope: Scope) -> Value:
        parts = [self.ev(expr.left, scope)]
        parts += [self.ev(target.comparator, scope) for target in expr.comparisons]
        return _merge_columns(parts)

    def ev_IfExp(self, expr: cst.IfExp, scope: Scope) -> Value:
        self.ev(expr.test, scope)
        body, orelse = self.ev(expr.body, scope), self.ev(expr.orelse, scope)
        # `df if full else 0`: the branch that says something about the data.
        return body if body is not UNKNOWN and not isinstance(body, NumberValue) else orelse

    def ev_NamedExpr(self, expr: cst.NamedExpr, scope: Scope) -> Value:
        value = self.ev(expr.value, scope)
        self.bind(expr.target, value, scope)
        return value

    def ev_Await(self, expr: cst.Await, scope: Scope) -> Value:
        return self.ev(expr.expression, scope)


# ------------------------------------------------------------------ helpers


def _statements(body: cst.BaseSuite) -> Sequence[cst.BaseStatement]:
    if isinstance(body, cst.IndentedBlock):
        return body.body
    # The one other kind of suite: `def f(): a; b` on the line of its header.
    return [cst.SimpleStatementLine(body=cast(cst.SimpleStatementSuite, body).body)]


def _imported_names(statement: cst.Import | cst.ImportFrom) -> list[str]:
    if isinstance(statement.names, cst.ImportStar):  # only `from m import *` has one
        return []
    names = []
    for alias in statement.names:
        name: cst.BaseExpression = alias.asname.name if alias.asname else alias.name
        while isinstance(name, cst.Attribute):
            name = name.value
        if isinstance(name, cst.Name):
            names.append(name.value)
    return names


def _spark_like(value: Value) -> bool:
    """A value worth following into a project helper: Spark data or a session, a value of unknown
    type (a parameter, another call's result), or a function. Strings, numbers, columns are not."""
    return isinstance(value, (SparkValue, FunctionValue, MaybeSparkValue))


def _own_method(scope: Scope, name: str) -> FunctionValue | None:
    """The method `name` of the class whose method is running, if the module defines it."""
    current: Scope | None = scope
    while current is not None:
        if current.is_class:
            found = current.variables.get(name)
            return found if isinstance(found, FunctionValue) and not found.udf else None
        current = current.parent
    return None


def _self_method(args: list[cst.Arg], scope: Scope) -> FunctionValue | None:
    """`self.name` as an argument, naming a method of the class whose method is running."""
    if not args or args[0].keyword is not None:
        return None
    value = args[0].value
    if isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and value.value.value == "self":
        return _own_method(scope, value.attr.value)
    return None


def _is_processor_base(value: Value) -> bool:
    return isinstance(value, QualifiedName) and value.name.rsplit(".", 1)[-1] == "StatefulProcessor"


def _flatten(values: Iterable[Value]) -> list[Value]:
    flat: list[Value] = []
    for value in values:
        if isinstance(value, SequenceValue):
            flat.extend(_flatten(value.items))
        else:
            flat.append(value)
    return flat


def _key_names(args: list[Value], kwargs: dict[str, Value], *, expressions: bool = False) -> tuple[str, ...]:
    """Key columns among the arguments; with `expressions`, a computed key is one key (its source)."""
    names = []
    for value in _flatten([*args, *(kwargs[k] for k in ("cols", "subset", "col") if k in kwargs)]):
        if isinstance(value, StringValue):
            names.append(value.text)
        elif isinstance(value, ColumnValue):
            expression = _key_expression(value.expr) if expressions else None
            names.extend((expression,) if expression else value.expr.columns)
    return tuple(names)


# Grouping and hash partitioning: a computed key is one hash key. Sort keys stay columns, which
# is what the order rules compare.
_HASHING = ("hash", "by-args")
# Functions that name a column, or only say how to sort by it: the key is still that column.
_NAMING_FUNCTIONS = frozenset(
    {"col", "column", "asc", "desc", "asc_nulls_first", "asc_nulls_last", "desc_nulls_first", "desc_nulls_last"}
)


def _key_expression(expr: ColumnExpr) -> str | None:
    """The source text of a key computed by a function, `F.window("t", "10 minutes")`: one key,
    not the columns "t" and "10 minutes" (its string arguments are not all columns, and the key
    column it makes has another name). None for a plain column (`col("k")`, `df.k`, `desc("k")`)."""
    top = expr.calls[0] if expr.calls else None
    if top is None or top.enclosing or top.call is None or top.udf is not None or top.function in _NAMING_FUNCTIONS:
        return None
    return cst.Module([]).code_for_node(top.call)


def _columns_of(values: Iterable[Value]) -> ColumnExpr:
    expr = ColumnExpr()
    for value in _flatten(values):
        if isinstance(value, ColumnValue):
            expr = expr + value.expr
        elif isinstance(value, DictValue):
            expr = expr + _agg_dict(value)
            # `withColumns({"rank": row_number().over(w)})`: the dict's values are the columns made.
            for _key, item in value.items:
                if isinstance(item, ColumnValue):
                    expr = expr + item.expr
    return expr


def _agg_dict(value: DictValue) -> ColumnExpr:
    """`agg({"v": "first"})`: each value names an aggregate function."""
    from sparkpar_lint.catalogue import load_catalogue

    functions = load_catalogue().functions
    calls = []
    for _key, function in value.items:
        if isinstance(function, StringValue) and function.text in functions:
            calls.append(
                ColumnCall(function=function.text, span=function.span, spec=functions[function.text], from_sql=True)
            )
    return ColumnExpr(tuple(calls), tuple(k.text for k, _ in value.items if isinstance(k, StringValue)))


def _sql_columns(args: list[Value], builder: GraphBuilder) -> ColumnExpr:
    calls = []
    for value in args:
        if isinstance(value, StringValue):
            from sparkpar_lint.sql.expressions import column_calls  # sqlglot: only when needed

            calls.extend(column_calls(value, builder))
    return ColumnExpr(tuple(calls))


def _merge_columns(parts: list[Value]) -> Value:
    columns = [p for p in parts if isinstance(p, ColumnValue)]
    if not columns:
        return UNKNOWN
    return ColumnValue(_columns_of(columns))


def _keyword_texts(call: cst.Call | None, module: cst.Module) -> dict[str, str]:
    if call is None:
        return {}
    return {a.keyword.value: module.code_for_node(a.value) for a in call.args if a.keyword is not None}


def _window_step(
    spec: WindowSpecValue, method: str, args: list[Value], kwargs: dict[str, Value], given: bool
) -> WindowSpecValue:
    """One builder call on a window spec; `given`: the call has arguments (`partitionBy()` has none)."""
    names = _key_names(args, kwargs)
    if method == "partitionBy":
        return dataclasses.replace(
            spec, partition_by=spec.partition_by + names, has_partition=spec.has_partition or given
        )
    if method == "orderBy":
        terms = _flatten([*args, *kwargs.values()])
        constant = bool(terms) and all(_is_constant(t) for t in terms)
        named = (
            isinstance(t, StringValue) or _is_constant(t) or (isinstance(t, ColumnValue) and t.expr.columns)
            for t in terms
        )
        opaque = (given and not terms) or not all(named)
        return dataclasses.replace(
            spec,
            order_by=spec.order_by + names,
            has_order=True,
            order_constant=constant and (spec.order_constant or not spec.has_order),
            order_opaque=spec.order_opaque or opaque,
        )
    if method == "rowsBetween":
        return dataclasses.replace(spec, has_frame=True, rows_frame=_frame_bounds(args, kwargs))
    if method == "rangeBetween":
        return dataclasses.replace(spec, has_frame=True, rows_frame=None)
    return spec


_FRAME_BOUNDS = {"currentRow": 0.0, "unboundedPreceding": float("-inf"), "unboundedFollowing": float("inf")}


def _frame_bounds(args: list[Value], kwargs: dict[str, Value]) -> tuple[float, float] | None:
    """`rowsBetween(Window.currentRow, 1)` -> (0, 1); None when a bound is not a number or a
    `Window` constant."""
    bounds = []
    for value in [*args[:2], *(kwargs[k] for k in ("start", "end") if k in kwargs)]:
        if isinstance(value, NumberValue):
            bounds.append(float(value.value))
        elif isinstance(value, QualifiedName) and value.name.rsplit(".", 1)[-1] in _FRAME_BOUNDS:
            bounds.append(_FRAME_BOUNDS[value.name.rsplit(".", 1)[-1]])
        else:
            return None
    return (bounds[0], bounds[1]) if len(bounds) == 2 else None


def _is_constant(value: Value) -> bool:
    """A column expression with no column in it, such as `lit(1)` or `lit("x")`."""
    if not isinstance(value, ColumnValue) or value.expr.columns:
        return False
    return bool(value.expr.calls) and all(c.spec is not None and c.spec.constant for c in value.expr.calls)


def _function_arguments(
    spec: OperatorSpec, args: list[Value], kwargs: dict[str, Value]
) -> list[tuple[int | str, Value]]:
    """(position or keyword, value): the arguments in the spec's function positions, then every keyword."""
    return [*((i, args[i]) for i in spec.functions if i < len(args)), *kwargs.items()]


def _callable_names(spec: OperatorSpec | None, args: list[Value], kwargs: dict[str, Value]) -> dict[int | str, str]:
    """Imported or builtin callables (`operator.add`, `max`) in the spec's function positions."""
    if spec is None or not spec.functions:
        return {}
    named: dict[int | str, str] = {}
    for where, value in _function_arguments(spec, args, kwargs):
        if isinstance(value, QualifiedName):
            named[where] = value.name
        elif isinstance(value, MaybeSparkValue) and value.name in _BUILTIN_NAMES:
            named[where] = value.name  # an unshadowed builtin such as max
    return named


def _function_slots(
    spec: OperatorSpec | None, args: list[Value], kwargs: dict[str, Value]
) -> dict[int | str, UserFunction]:
    if spec is None or not spec.functions:
        return {}
    slots: dict[int | str, UserFunction] = {}
    for where, value in _function_arguments(spec, args, kwargs):
        if isinstance(value, FunctionValue):
            slots[where] = dataclasses.replace(value.function, role=spec.function_role)
    return slots


def _first_number(args: list[Value]) -> int | None:
    first = args[0] if args else None
    return first.value if isinstance(first, NumberValue) and isinstance(first.value, int) else None


def _first_literal(node: StageNode) -> str | None:
    if node.call is None:
        return node.keywords.get("numPartitions")  # a SQL hint stage: `/*+ COALESCE(1) */`
    for arg in node.call.args:
        if arg.keyword is None and isinstance(arg.value, cst.Integer):
            return arg.value.value
        if arg.keyword is None:
            return str(node.first_number) if node.first_number is not None else None
    return node.keywords.get("numPartitions")


def _order_after(node: StageNode, spec: OperatorSpec) -> Order:
    effect = spec.order_effect
    if effect == "preserves" or (effect == "by-count" and _first_literal(node) == "1"):
        return node.input_order
    if effect == "establishes-total":
        return Order("total", by=node.keys, established_by=node.id)
    if effect == "establishes-per-key":
        return Order("per-key", keys=node.keys, established_by=node.id)
    if effect == "sorts-within-partitions":
        partitioning = node.input_partitioning
        if partitioning.kind == "hash":
            return Order("per-key", by=node.keys, keys=partitioning.keys, established_by=node.id)
        if partitioning.kind == "single":
            return Order("total", by=node.keys, established_by=node.id)
        return Order("within-partition", by=node.keys, established_by=node.id)
    return Order()


def _partitioning_after(node: StageNode, spec: OperatorSpec) -> Partitioning:
    effect = spec.partitioning_effect
    if effect == "preserves":
        return node.input_partitioning
    if effect == "by-args":
        if node.keys:
            return Partitioning("hash", node.keys, node.id)
        return Partitioning("single" if _first_literal(node) == "1" else "round-robin", (), node.id)
    if effect == "by-count":
        return Partitioning("single" if _first_literal(node) == "1" else "unknown", (), node.id)
    if effect == "unless-preserved":
        if node.keywords.get("preservesPartitioning") == "True":
            return node.input_partitioning
        return Partitioning("unknown", (), node.id)
    keys = node.keys if effect in ("hash", "range") else ()
    return Partitioning(effect, keys, node.id)


def _string_value(expr: cst.SimpleString) -> str | bytes:
    """`expr.evaluated_value` (ast.literal_eval, which compiles the literal: most of the cost of a
    module full of column names) read straight off the text when that is the same: no prefix,
    no escape, no carriage return or NUL (which compiling would change or refuse)."""
    text = expr.value
    if text[0] in "'\"" and not any(c in text for c in "\\\r\0"):
        quote = 3 if len(text) >= 6 and text[:3] in ("'''", '"""') else 1
        return text[quote:-quote]
    return expr.evaluated_value
