"""SPX106 unordered-limit: `limit`, `take`, `first()`, `collect()[0]` ... after a shuffle, unsorted."""

from __future__ import annotations

from collections.abc import Iterator

from sparkpar_lint.graph.order_flow import unordering_shuffle
from sparkpar_lint.graph.stage_graph import StageGraph, StageNode
from sparkpar_lint.model import Finding, RelatedLocation, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid

_PRELUDE = (
    "from pyspark.sql import SparkSession, functions as F\n"
    "spark = SparkSession.builder.getOrCreate()\n"
    'events = spark.read.parquet("events")\n'
)

# Driver actions that display or count rows: which rows a limit kept changes nothing there.
_PREVIEWS = frozenset({"show", "count", "isEmpty"})
_FIX_BY_RECEIVER = {
    "DataFrame": "add `orderBy(<sort column>, <tie-breaker>)` before it",
    "RDD": "use `takeOrdered(n, key=...)` or `sortBy(...)` before it",
}


class UnorderedLimit(Rule):
    id = "SPX106"
    name = "unordered-limit"
    severity = Severity.ERROR
    summary = "A limit, take or first row is picked from rows a shuffle left in arbitrary order."
    VALID = [
        Valid(
            _PRELUDE
            + 'top_pages = events.groupBy("page").count().orderBy(F.desc("count"), "page").limit(10)\n'
        ),
        Valid(_PRELUDE + 'counts = events.groupBy("page").count()\n'
              'ranked = counts.sort("count", "page")\n'
              'ranked.select("page").take(5)\n'),
        # A global aggregate is one row: taking it is deterministic.
        Valid(_PRELUDE + 'latest = events.agg(F.max("ts")).collect()[0][0]\n'
              'n = events.groupBy().agg(F.countDistinct("user")).first()\n'
              'm = events.select(F.max("ts")).head()\n'),
        # No shuffle upstream (a source read in order) and whole results are not SPX106's concern.
        Valid(_PRELUDE + 'events.limit(20).show()\nevents.groupBy("page").count().collect()\n'),
        # A preview for a person, not a result.
        Valid(_PRELUDE + 'events.join(spark.read.parquet("users"), "user").limit(5).show()\n'),
        Valid(_PRELUDE + 'events.rdd.map(lambda r: (r.page, 1)).reduceByKey(lambda a, b: a + b)'
              '.takeOrdered(5, key=lambda kv: -kv[1])\n'),
        # pandas head after a pandas groupby.
        Valid("import pandas as pd\npdf = pd.DataFrame()\npdf.groupby('k').sum().head(5)\n"),
        # A local list, not a Spark result.
        Valid(_PRELUDE + 'rows = [1, 2]\nfirst = rows[0]\n'),
    ]
    INVALID = [
        Invalid(
            _PRELUDE + 'top_pages = events.groupBy("page").count().limit(10)\n',
            line=4,
            column=43,
            related_lines=(4,),
        ),
        Invalid(
            _PRELUDE + 'ranked = events.orderBy("ts")\n'
            'deduped = ranked.dropDuplicates(["user"])\n'
            "sample = deduped.take(5)\n",
            line=6,
            column=17,
            related_lines=(5,),
        ),
        Invalid(
            _PRELUDE + "def busiest_user(df):\n"
            '    per_user = df.groupBy("user").agg(F.count("*").alias("n"))\n'
            '    return per_user.collect()[0]["user"]\n'
            "busiest_user(events)\n",
            line=6,
            column=20,
            related_lines=(5,),
        ),
        Invalid(
            "from pyspark import SparkContext\n"
            "sc = SparkContext.getOrCreate()\n"
            'words = sc.textFile("logs").flatMap(str.split).map(lambda w: (w, 1))\n'
            "first_word = words.reduceByKey(lambda a, b: a + b).first()\n",
            line=4,
            column=51,
            related_lines=(4,),
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        graph = ctx.graph
        for node in graph.nodes:
            if not _picks_rows_by_position(node) or _only_previewed(graph, node):
                continue
            shuffle = unordering_shuffle(graph, node)
            if shuffle is not None:
                yield self._finding(ctx, node, shuffle)

    def _finding(self, ctx: RuleContext, node: StageNode, shuffle: StageNode) -> Finding:
        what = f"`{node.method}()[...]`" if node.indexed else f"`{node.method}`"
        fix = _FIX_BY_RECEIVER.get(node.receiver, _FIX_BY_RECEIVER["DataFrame"])
        message = (
            f"{what} keeps whichever rows come first, and `{shuffle.method}` left them in an order "
            f"that changes with partitioning; {fix}"
        )
        related = (RelatedLocation(shuffle.span, f"`{shuffle.method}` shuffles the rows here"),)
        return self.finding(ctx, node.span, message, related=related)


def _only_previewed(graph: StageGraph, node: StageNode) -> bool:
    """`limit(n).show()`: a person glances at some rows; nothing is computed from which ones."""
    consumers = graph.consumers(node)
    return bool(consumers) and all(c.method in _PREVIEWS for c in consumers)


def _picks_rows_by_position(node: StageNode) -> bool:
    if node.spec is None:
        return False
    if node.spec.order_requirement == "total":
        return True
    return node.indexed and node.spec.returns == "driver"
