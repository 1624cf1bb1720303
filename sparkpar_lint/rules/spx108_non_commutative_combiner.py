"""SPX108 non-commutative-combiner: a combine function Spark applies in arbitrary order and grouping
that is not a commutative monoid operation."""

from __future__ import annotations

from collections.abc import Iterator
from textwrap import dedent

import libcst as cst

from sparkpar_lint.catalogue import OperatorSpec
from sparkpar_lint.graph import combiner_pairs, combiners
from sparkpar_lint.graph.passed_function import UserFunction
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.model import Finding, RelatedLocation, Severity, Span
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid

# PySpark's keyword names for combine functions, by the kind of fold they do.
KEYWORD_KINDS = {
    "func": "merge",
    "f": "merge",
    "op": "merge",
    "combOp": "merge",
    "combFunc": "merge",
    "mergeCombiners": "merge",
    "seqOp": "seq",
    "seqFunc": "seq",
    "mergeValue": "seq",
    "createCombiner": "create",
}


class NonCommutativeCombiner(Rule):
    id = "SPX108"
    name = "non-commutative-combiner"
    severity = Severity.ERROR
    summary = "A combiner that Spark applies in arbitrary order is not associative and commutative."
    VALID = [
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                pairs = spark.sparkContext.textFile("t").map(lambda l: (l[:4], int(l[4:])))
                totals = pairs.reduceByKey(lambda a, b: a + b)
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                import operator
                pairs = spark.sparkContext.textFile("t").map(lambda l: (l[:4], int(l[4:])))
                pairs.reduceByKey(operator.add).values().reduce(max)
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                stats = spark.sparkContext.textFile("t").map(lambda l: (l[:4], (float(l[4:]), 1)))
                stats.reduceByKey(lambda a, b: (a[0] + b[0], a[1] + b[1]))
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                pairs = spark.sparkContext.textFile("t").map(lambda l: (l[:4], int(l[4:])))
                pairs.aggregateByKey(0, lambda acc, v: acc - v, lambda a, b: a + b)
                """)
        ),
        # Casts around the fields: int() of a sum of ints is that sum, so the pairs still just add up.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                counted = spark.sparkContext.textFile("t").map(lambda l: (l[:4], (l[4:], 1)))
                counted.reduceByKey(lambda a, b: (int(a[0]) + int(b[0]), float(a[1]) + float(b[1])))
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                spark.sparkContext.textFile("t").map(lambda l: {l}).reduce(lambda a, b: a | b)
                """)
        ),
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                paths = spark.sparkContext.textFile("t").map(lambda l: (l[:4], [(int(l[4:8]), l[8:])]))
                paths.reduceByKey(lambda a, b: sorted(a + b))
                """)
        ),
        # Functions that agree: a per-partition (sum, count) merged tuple-wise, a max merged with max.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                pairs = spark.sparkContext.textFile("t").map(lambda l: (l[:4], int(l[4:])))
                pairs.combineByKey(lambda v: (v, 1), lambda a, v: (a[0] + v, a[1] + 1),
                                   lambda a, b: (a[0] + b[0], a[1] + b[1]))
                pairs.values().aggregate(0, lambda a, v: max(a, v), lambda a, b: max(a, b))
                """)
        ),
        # flatMap emits the list's elements: the values are the counts, not lists.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                bases = spark.sparkContext.textFile("t").flatMap(lambda s: [(c, 1) for c in s])
                bases.reduceByKey(lambda x, y: x + y)
                """)
        ),
        # A lambda that only forwards to a field-wise sum.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def add_pairs(a, b):
                    return (a[0] + b[0], a[1] + b[1])
                ages = spark.sparkContext.textFile("t").map(lambda l: (l[:4], (int(l[4:]), 1)))
                ages.reduceByKey(lambda a, b: add_pairs(a, b))
                """)
        ),
        # Field-wise through a record constructor, and a constant.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                from collections import namedtuple
                Stats = namedtuple("Stats", "n total top")
                stats = spark.sparkContext.textFile("t").map(lambda l: (l[:4], Stats(1, int(l[4:]), int(l[4:]))))
                stats.reduceByKey(lambda a, b: Stats(a.n + b.n, a.total + b.total, max(a.top, b.top)))
                spark.sparkContext.textFile("t").map(lambda l: (l, 1)).reduceByKey(lambda a, b: 1)
                """)
        ),
        # An ordered reduce of a parallelized list: concatenation is associative, and PySpark folds
        # the partitions' results in partition order.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                spark.sparkContext.parallelize(["a", "b", "c"], 2).reduce(lambda a, b: f"{a} {b}")
                """)
        ),
        # Python's own reduce on the driver is not a Spark combiner.
        Valid(
            dedent("""\
                from functools import reduce
                print(reduce(lambda a, b: a - b, [1, 2, 3]))
                """)
        ),
    ]
    INVALID = [
        # The same reduce after a shuffle: the partitions hold the words in shuffle order.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                spark.sparkContext.parallelize(["a", "b", "c"], 2).distinct().reduce(lambda a, b: f"{a} {b}")
                """),
            line=3,
            column=69,
        ),
        # A later-wins dict merge the code cannot show to be over disjoint keys: the hint only.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                seen = spark.sparkContext.textFile("t").map(lambda l: (l[:4], {l[4:]: 1}))
                seen.reduceByKey(lambda a, b: {**a, **b})
                """),
            line=4,
            column=17,
            severity=Severity.INFO,
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                pairs = spark.sparkContext.textFile("t").map(lambda l: (l[:4], int(l[4:])))
                net = pairs.reduceByKey(lambda a, b: a - b)
                """),
            line=4,
            column=24,
        ),
        # Near miss of the casts: halving one side inside int() is neither commutative nor associative.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                pairs = spark.sparkContext.textFile("t").map(lambda l: (l[:4], int(l[4:])))
                pairs.reduceByKey(lambda a, b: int(a / 2) + int(b))
                """),
            line=4,
            column=18,
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                clicks = spark.sparkContext.textFile("t").map(lambda l: (l[:4], l[4:]))
                paths = clicks.reduceByKey(lambda a, b: a + " > " + b)
                """),
            line=4,
            column=27,
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                pages = spark.sparkContext.textFile("t").map(lambda l: (l[:4], [l[4:]]))
                pages.reduceByKey(lambda a, b: a + b)
                """),
            line=4,
            column=18,
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def merge_profiles(a, b):
                    a.update(b)
                    return a
                spark.sparkContext.textFile("t").map(lambda l: (l[:4], {"v": l})).reduceByKey(merge_profiles)
                """),
            line=6,
            column=78,
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                pairs = spark.sparkContext.textFile("t").map(lambda l: (l[:4], int(l[4:])))
                pairs.values().fold(0, lambda a, b: (a + b) / 2)
                """),
            line=4,
            column=23,
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                pairs = spark.sparkContext.textFile("t").map(lambda l: (l[:4], int(l[4:])))
                pairs.reduceByKey(lambda a, b: merge_sessions(a, b))
                """),
            line=4,
            column=18,
            severity=Severity.INFO,
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                pages = F.collect_list("page")
                spark.read.parquet("c").groupBy("user").agg(
                    F.aggregate(pages, F.lit(""), lambda acc, x: F.concat(acc, x)).alias("path"))
                """),
            line=5,
            column=34,
        ),
        # Each function is fine alone; together they add up the partitions' maxima.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                nums = spark.sparkContext.parallelize(range(100), 4)
                peak = nums.aggregate(0, lambda a, v: max(a, v), lambda a, b: a + b)
                """),
            line=4,
            column=12,
        ),
        # A lambda held in a variable, and a helper that receives the combiner as a parameter:
        # reported where the helper is called, with the helper's line as the related location.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                pairs = spark.sparkContext.textFile("t").map(lambda l: (l[:4], int(l[4:])))
                def merged(rdd, combine):
                    return rdd.reduceByKey(combine)
                halve = lambda a, b: (a + b) / 2
                merged(pairs, halve)
                """),
            line=7,
            column=0,
            related_lines=(5,),
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        graph = ctx.graph
        for node in graph.nodes:
            if node.spec is not None and node.spec.function_role == "combiner" and node.call is not None:
                yield from self._combiners(ctx, graph, node, node.spec, node.call)
            yield from self._sql_folds(ctx, graph, node)

    def _combiners(
        self, ctx: RuleContext, graph: StageGraph, node: StageNode, spec: OperatorSpec, call: cst.Call
    ) -> Iterator[Finding]:
        kinds = spec.combiner_kinds or ("merge",) * len(spec.functions)
        positional = [a for a in call.args if a.keyword is None]
        slots: list[tuple[int | str, str, cst.BaseExpression]] = [
            (index, kind, positional[index].value)
            for index, kind in zip(spec.functions, kinds)
            if index < len(positional)
        ]
        slots += [
            (a.keyword.value, KEYWORD_KINDS.get(a.keyword.value, ""), a.value)
            for a in call.args
            if a.keyword is not None
        ]
        alone = []
        for where, kind, expr in slots:
            if kind not in (combiners.MERGE, combiners.SEQ):
                continue
            verdict = self._verdict(graph, node, where, kind, expr)
            alone.append(verdict)
            if verdict is not None and verdict.kind != combiners.SAFE:
                yield self._finding(ctx, graph, node.method, expr, verdict, _passed_in(node, where, expr))
        if all(v is not None and v.kind == combiners.SAFE for v in alone):
            yield from self._pair(
                ctx,
                node,
                spec,
                call,
                {KEYWORD_KINDS.get(w, w) if isinstance(w, str) else k: node.function_slots.get(w) for w, k, _ in slots},
            )

    def _pair(
        self,
        ctx: RuleContext,
        node: StageNode,
        spec: OperatorSpec,
        call: cst.Call,
        by_kind: dict[str, UserFunction | None],
    ) -> Iterator[Finding]:
        """Functions each fine alone that disagree with one another: one finding for the call."""
        positional = [a.value for a in call.args if a.keyword is None]
        keyword = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        seq, merge = by_kind.get(combiners.SEQ), by_kind.get(combiners.MERGE)
        if node.method == "fold":
            seq = merge
        if seq is None or merge is None:
            return
        zero = keyword.get("zeroValue", positional[0] if positional and "create" not in by_kind else None)
        create = by_kind.get("create")
        if (zero is None) == (create is None):
            return
        verdict = combiner_pairs.pair_verdict(
            zero, create.node if create else None, seq.node, merge.node, spec.returns == "driver"
        )
        if verdict.kind == combiners.UNSAFE:
            message = (
                f"the functions of `{node.method}` disagree: each partition is folded with one and the "
                f"partial results are merged with the other, so the result depends on the partition "
                f"count ({verdict.proof}); use functions that compute the same thing (a per-partition "
                "`max` merged with `max`, a sum merged with `+`)"
            )
            yield self.finding(ctx, node.call_site or node.span, message)

    def _verdict(
        self, graph: StageGraph, node: StageNode, where: int | str, kind: str, expr: cst.BaseExpression
    ) -> combiners.Verdict | None:
        if where in node.callables:
            return combiners.classify_named(node.callables[where])
        function = node.function_slots.get(where) or _function_for(node, expr)
        if function is None:
            return None  # a value we cannot see (a parameter, an attribute): nothing to judge
        shape = _value_shape(graph, node) if kind == combiners.MERGE else None
        target = _forwarded_helper(graph, function.node) or function.node
        if kind == combiners.MERGE and _fieldwise_constructor(target):
            return combiners.Verdict(combiners.SAFE)
        verdict = combiners.classify(target, kind, shape)
        if verdict.kind == combiners.UNSAFE and _ordered_fold(node) and _associative_kind(verdict):
            # PySpark folds partition results on the driver in partition order, and the partitions
            # hold the input in order: an associative combiner gives one answer.
            return combiners.Verdict(combiners.SAFE)
        if (
            verdict.kind == combiners.UNSAFE
            and "dict merge" in (verdict.proof or "")
            and not _fixed_dict_keys(graph, node)
        ):
            # Later-wins merges are safe when keys never repeat; the code does not show they do.
            return combiners.Verdict(combiners.UNKNOWN)
        return verdict

    def _sql_folds(self, ctx: RuleContext, graph: StageGraph, node: StageNode) -> Iterator[Finding]:
        for call in node.columns.calls:
            if call.spec is None or not call.spec.higher_order_fold or call.call is None:
                continue
            args = [a.value for a in call.call.args]
            if len(args) < 3 or not isinstance(args[2], cst.Lambda) or not _unordered_array(node, call.function):
                continue
            verdict = combiners.classify(args[2], combiners.SEQ)
            if verdict.kind != combiners.SAFE:
                yield self._finding(ctx, graph, call.function, args[2], verdict)

    def _finding(
        self,
        ctx: RuleContext,
        graph: StageGraph,
        method: str,
        expr: cst.BaseExpression,
        verdict: combiners.Verdict,
        call_site: Span | None = None,
    ) -> Finding:
        span = graph.span_of(expr)
        related: tuple[RelatedLocation, ...] = ()
        if call_site is not None:
            # A helper got the combiner as a parameter: the call that passes it is at fault.
            related = (RelatedLocation(span, f"`{method}` in the helper applies it here"),)
            span = call_site
        if verdict.kind == combiners.UNSAFE:
            message = (
                f"`{method}` applies this combiner in arbitrary order and grouping, and its result depends on that ({verdict.proof}); "
                "use an associative and commutative combiner (sum, max, set union, tuple-wise sums) "
                "or carry an order key and sort"
            )
            return self.finding(ctx, span, message, related=related)
        message = (
            f"cannot prove the combiner of `{method}` associative and commutative; "
            "property-test it with sparkpar.check_combiner"
        )
        return self.finding(ctx, span, message, severity=Severity.INFO, related=related)


def _passed_in(node: StageNode, where: int | str, expr: cst.BaseExpression) -> Span | None:
    """The helper call that handed this combiner in, when the operator sits in an inlined helper
    and its function argument is a name the helper did not define itself."""
    function = node.function_slots.get(where)
    if node.call_site is None or function is None or function.node is expr or not isinstance(expr, cst.Name):
        return None
    return node.call_site


# PySpark's RDD reduce/fold/aggregate collect the per-partition results and fold them in
# partition order (unlike the ...ByKey combiners and treeReduce, which merge in shuffle order).
_ORDERED_FOLDS = frozenset({"reduce", "fold", "aggregate"})


def _ordered_fold(node: StageNode) -> bool:
    return node.receiver == "RDD" and node.method in _ORDERED_FOLDS and node.input_order.kind in ("sequence", "total")


def _associative_kind(verdict: combiners.Verdict) -> bool:
    """Concatenations and later-wins merges are associative; only their order matters."""
    proof = verdict.proof or ""
    return "concatenation" in proof or "concatenates" in proof or "dict merge" in proof


_FIELDWISE = (cst.Add, cst.Multiply, cst.BitOr, cst.BitAnd)


def _fieldwise_constructor(function: cst.FunctionDef | cst.Lambda) -> bool:
    """`Stats(a.n + b.n, max(a.top, b.top))`: a record built field by field, each field a sum,
    product, union, max or min of the same field of both sides."""
    body: cst.BaseExpression | None
    if isinstance(function, cst.Lambda):
        body = function.body
    else:
        body = _returned(function)
    params = [p.name.value for p in function.params.params]
    if len(params) != 2 or not isinstance(body, cst.Call) or not isinstance(body.func, cst.Name):
        return False
    if not body.func.value[:1].isupper() or not body.args:
        return False
    a, b = params

    def field(expr: cst.BaseExpression, side: str) -> tuple[str, str] | None:
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == side:
            return ("attr", expr.attr.value)
        if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name) and expr.value.value == side:
            index = expr.slice[0].slice
            if isinstance(index, cst.Index) and isinstance(index.value, (cst.Integer, cst.SimpleString)):
                return ("item", index.value.value)
        return None

    def both_sides(left: cst.BaseExpression, right: cst.BaseExpression) -> bool:
        """The same field of `a` and of `b`, one on each side."""
        pairs = ((field(left, a), field(right, b)), (field(left, b), field(right, a)))
        return any(x is not None and x == y for x, y in pairs)

    def combines(expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _FIELDWISE):
            return both_sides(expr.left, expr.right)
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in ("max", "min"):
            return len(expr.args) == 2 and both_sides(expr.args[0].value, expr.args[1].value)
        return False

    return all(combines(arg.value) for arg in body.args)


def _fixed_dict_keys(graph: StageGraph, node: StageNode) -> bool:
    """Every value upstream is a dict literal with the same literal keys: merges overwrite."""
    for upstream in graph.upstream(node):
        if not upstream.functions:
            if upstream.is_shuffle:
                return False
            continue
        body = _returned(upstream.functions[0].node)
        if isinstance(body, cst.Tuple) and len(body.elements) == 2:
            body = body.elements[1].value
        return isinstance(body, cst.Dict) and all(
            isinstance(e, cst.DictElement) and isinstance(e.key, (cst.SimpleString, cst.Integer)) for e in body.elements
        )
    return False


def _forwarded_helper(graph: StageGraph, function: cst.FunctionDef | cst.Lambda) -> cst.FunctionDef | None:
    """`lambda a, b: add_pairs(a, b)`: the module's own def the lambda only forwards to."""
    if not isinstance(function, cst.Lambda) or not isinstance(function.body, cst.Call):
        return None
    call = function.body
    params = [p.name.value for p in function.params.params]
    passed = [a.value.value if isinstance(a.value, cst.Name) and a.keyword is None else None for a in call.args]
    if not isinstance(call.func, cst.Name) or passed != params:
        return None
    defs = [d for d in graph.definitions if isinstance(d, cst.FunctionDef) and d.name.value == call.func.value]
    return defs[0] if len(defs) == 1 and len(defs[0].params.params) == len(params) else None


def _function_for(node: StageNode, expr: cst.BaseExpression) -> UserFunction | None:
    for function in node.functions:
        if function.node is expr:
            return function
        if isinstance(expr, cst.Name) and function.name == expr.value:
            return function
    return None


def _value_shape(graph: StageGraph, node: StageNode) -> str | None:
    """What the nearest upstream function emits as values: `(k, [v])` makes `a + b` a concatenation."""
    for upstream in graph.upstream(node):
        if not upstream.functions:
            if upstream.is_shuffle:
                return None
            continue
        function = upstream.functions[0]
        body = _returned(function.node)
        if upstream.method in ("flatMap", "flatMapValues"):
            body = _element(body)  # each element of the returned collection is one record
        if function.role == "row" and isinstance(body, cst.Tuple) and len(body.elements) == 2:
            keyed = node.spec is not None and node.spec.forwarding == "keys"  # a ...ByKey combiner
            return combiners.shape_of_value(body.elements[1].value if keyed else body)
        if function.role == "value":
            return combiners.shape_of_value(body)
        return combiners.shape_of_value(body) if function.role == "row" else None
    return None


def _element(collection: cst.BaseExpression | None) -> cst.BaseExpression | None:
    if isinstance(collection, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
        return collection.elt
    if isinstance(collection, (cst.List, cst.Tuple, cst.Set)) and collection.elements:
        return collection.elements[0].value
    return None


def _returned(function: cst.FunctionDef | cst.Lambda) -> cst.BaseExpression | None:
    if isinstance(function, cst.Lambda):
        return function.body
    statements = function.body.body if isinstance(function.body, cst.IndentedBlock) else []
    last = statements[-1] if statements else None
    if isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[0], cst.Return):
        return last.body[0].value
    return None


def _unordered_array(node: StageNode, fold: str) -> bool:
    """The folded array is built by an order-sensitive collect (`collect_list`) in the same
    expression, with no `array_sort` in between."""
    from sparkpar_lint.catalogue import load_catalogue

    functions = load_catalogue().functions
    for call in node.columns.calls:
        if call.spec is None or not call.spec.order_sensitive or fold not in call.enclosing:
            continue
        inner = call.enclosing[call.enclosing.index(fold) + 1 :]
        if not any(functions[n].order_normalizing for n in inner if n in functions):
            return True
    return False
