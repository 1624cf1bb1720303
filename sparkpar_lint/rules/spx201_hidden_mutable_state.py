"""SPX201 hidden-mutable-state: a function Spark runs in tasks writes to state it does not own."""

from __future__ import annotations

from collections.abc import Iterator
from textwrap import dedent

import libcst as cst

from sparkpar_lint.graph.executor_functions import executor_functions
from sparkpar_lint.graph.passed_function import UserFunction
from sparkpar_lint.graph.processors import state_handles
from sparkpar_lint.graph.user_functions import imported_modules, mutations
from sparkpar_lint.model import Finding, RelatedLocation, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid


class HiddenMutableState(Rule):
    id = "SPX201"
    name = "hidden-mutable-state"
    severity = Severity.ERROR
    summary = "A function Spark runs on executors mutates a global, a closure variable or a captured object."
    VALID = [
        # A container created inside the function is its own.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def tokens(line):
                    seen = set()
                    out = []
                    for word in line.split():
                        if word not in seen:
                            seen.add(word)
                            out.append(word)
                    return out
                spark.sparkContext.textFile("t").flatMap(tokens)
                """)
        ),
        # Reading a broadcast lookup table is clean.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                sc = spark.sparkContext
                names = sc.broadcast({"a": 1})
                sc.textFile("t").map(lambda w: names.value.get(w, 0))
                """)
        ),
        # Accumulators are Spark's sanctioned shared counters.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                sc = spark.sparkContext
                bad_rows = sc.accumulator(0)
                def parse(line):
                    if not line:
                        bad_rows.add(1)
                    return line.split(',')
                sc.textFile("t").map(parse)
                """)
        ),
        # foreachBatch runs on the driver: plain Python state is fine there.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                batches = []
                def remember(batch_df, batch_id):
                    batches.append(batch_id)
                spark.readStream.format("rate").load().writeStream.foreachBatch(remember).start()
                """)
        ),
        # A combiner that mutates its own accumulator argument.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                def merge(acc, value):
                    acc.append(value)
                    return acc
                spark.sparkContext.textFile("t").map(lambda l: (l, [l])).reduceByKey(merge)
                """)
        ),
        # A global mutated by a driver-side helper that Spark never runs.
        Valid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                SEEN = []
                def note(path):
                    SEEN.append(path)
                    return spark.read.parquet(path)
                note("p").select("a")
                """)
        ),
        # `os.remove` is a function of the imported module: the task deletes its own scratch file.
        Valid(
            dedent("""\
                import os
                import tempfile
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def sizes(paths):
                    for path in paths:
                        scratch = tempfile.mkstemp()[1]
                        with open(scratch, "w") as out:
                            out.write(path)
                        yield (path, os.path.getsize(scratch))
                        os.remove(scratch)
                spark.sparkContext.textFile("p").mapPartitions(sizes).collect()
            """)
        ),
    ]
    INVALID = [
        # Imported by name, not as a module: `pending` is a list every task has its own copy of.
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession
                from jobs.queue import pending
                spark = SparkSession.builder.getOrCreate()
                def drop_done(line):
                    pending.remove(line)
                    return line
                spark.sparkContext.textFile("t").map(drop_done).collect()
            """),
            line=5,
            column=4,
            related_lines=(4,),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                visits = {}
                @F.udf('int')
                def visit_number(user):
                    visits[user] = visits.get(user, 0) + 1
                    return visits[user]
                spark.read.parquet("e").withColumn("n", visit_number("user"))
                """),
            line=6,
            column=4,
            related_lines=(5,),
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                counter = 0
                def number(row):
                    global counter
                    counter += 1
                    return (counter, row)
                spark.read.parquet("e").rdd.map(number)
                """),
            line=6,
            column=4,
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                errors = []
                spark.sparkContext.textFile("t").foreach(lambda line: errors.append(line))
                """),
            line=4,
            column=54,
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                import itertools
                ids = itertools.count()
                spark.sparkContext.textFile("t").map(lambda line: (next(ids), line))
                """),
            line=5,
            column=51,
        ),
        Invalid(
            dedent("""\
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                class Parser:
                    def __init__(self):
                        self.lines = 0
                    def parse(self, line):
                        self.lines += 1
                        return line.split(',')
                    def run(self, sc):
                        return sc.textFile('t').map(self.parse)
                """),
            line=7,
            column=8,
        ),
        Invalid(
            dedent("""\
                import pandas as pd
                from pyspark.sql.functions import pandas_udf
                stats = {'batches': 0}
                @pandas_udf('double')
                def scaled(v: pd.Series) -> pd.Series:
                    stats['batches'] += 1
                    return v / stats['batches']
                def job(df):
                    return df.select(scaled('v'))
                """),
            line=6,
            column=4,
        ),
        # A processor's own attribute, shared by every key its task handles; the state handle is fine.
        Invalid(
            dedent("""\
                from pyspark.sql.streaming.stateful_processor import StatefulProcessor
                class Totals(StatefulProcessor):
                    def init(self, handle):
                        self.total = handle.getValueState("total", "t long")
                        self.rows_seen = 0
                    def handleInputRows(self, key, rows, timer_values):
                        for pdf in rows:
                            self.rows_seen += len(pdf)
                            self.total.update((len(pdf),))
                        yield from ()
                def run(stream):
                    return stream.groupBy("k").transformWithStateInPandas(Totals(), "t long", "append", "None")
                """),
            line=8,
            column=12,
            related_lines=(6,),
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        graph = ctx.graph
        modules = imported_modules(graph.module)
        for function, is_method in executor_functions(graph):
            handles = state_handles(graph, function) if function.role == "stateful-processor" else frozenset()
            for name, where in mutations(function, receiver_is_captured=is_method, modules=modules):
                if graph.shared_variables.get(name) == "Accumulator":
                    continue
                if handles and _through_handle(where, handles):
                    continue  # `self.count.update(...)`: Spark's state store, kept per key
                yield self._finding(ctx, function, name, where)

    def _finding(self, ctx: RuleContext, function: UserFunction, name: str, where: cst.CSTNode) -> Finding:
        label = "`self`" if name == "self" else f"`{name}`"
        message = (
            f"`{function.name}` runs in Spark tasks and mutates {label}, which it does not own: "
            "every executor process updates its own copy, so the result depends on how rows are "
            "partitioned and the driver never sees the updates. Keep per-key state in an "
            "aggregation or a state API, or count with an accumulator"
        )
        related = (RelatedLocation(function.span, f"`{function.name}` is defined here and Spark runs it in tasks"),)
        return self.finding(ctx, ctx.graph.span_of(where), message, related=related)


def _through_handle(where: cst.CSTNode, handles: frozenset[str]) -> bool:
    """The mutation is a call on a state handle attribute: `self.<handle>.<method>(...)`."""
    call = where.value if isinstance(where, cst.Expr) else where
    func = call.func if isinstance(call, cst.Call) else None
    target = func.value if isinstance(func, cst.Attribute) else None
    return (
        isinstance(target, cst.Attribute)
        and isinstance(target.value, cst.Name)
        and target.value.value == "self"
        and target.attr.value in handles
    )
