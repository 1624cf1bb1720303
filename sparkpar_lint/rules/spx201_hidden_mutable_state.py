"""SPX201 hidden-mutable-state: a function Spark runs in tasks writes to state it does not own."""

from __future__ import annotations

from collections.abc import Iterator
from textwrap import dedent

import libcst as cst

from sparkpar_lint.graph.processors import state_handles
from sparkpar_lint.graph.user_functions import executor_functions, imported_modules, mutations
from sparkpar_lint.model import Finding, RelatedLocation, Severity
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid

_PRELUDE = "from pyspark.sql import SparkSession, functions as F\nspark = SparkSession.builder.getOrCreate()\n"


class HiddenMutableState(Rule):
    id = "SPX201"
    name = "hidden-mutable-state"
    severity = Severity.ERROR
    summary = "A function Spark runs on executors mutates a global, a closure variable or a captured object."
    VALID = [
        # A container created inside the function is its own.
        Valid(
            _PRELUDE
            + "def tokens(line):\n    seen = set()\n    out = []\n"
            + "    for word in line.split():\n        if word not in seen:\n            seen.add(word)\n"
            + "            out.append(word)\n    return out\n"
            + 'spark.sparkContext.textFile("t").flatMap(tokens)\n'
        ),
        # Reading a broadcast lookup table is clean.
        Valid(
            _PRELUDE
            + "sc = spark.sparkContext\n"
            + 'names = sc.broadcast({"a": 1})\n'
            + 'sc.textFile("t").map(lambda w: names.value.get(w, 0))\n'
        ),
        # Accumulators are Spark's sanctioned shared counters.
        Valid(
            _PRELUDE
            + "sc = spark.sparkContext\n"
            + "bad_rows = sc.accumulator(0)\n"
            + "def parse(line):\n    if not line:\n        bad_rows.add(1)\n    return line.split(',')\n"
            + 'sc.textFile("t").map(parse)\n'
        ),
        # foreachBatch runs on the driver: plain Python state is fine there.
        Valid(
            _PRELUDE
            + "batches = []\n"
            + "def remember(batch_df, batch_id):\n    batches.append(batch_id)\n"
            + 'spark.readStream.format("rate").load().writeStream.foreachBatch(remember).start()\n'
        ),
        # A combiner that mutates its own accumulator argument.
        Valid(
            _PRELUDE
            + "def merge(acc, value):\n    acc.append(value)\n    return acc\n"
            + 'spark.sparkContext.textFile("t").map(lambda l: (l, [l])).reduceByKey(merge)\n'
        ),
        # A global mutated by a driver-side helper that Spark never runs.
        Valid(
            _PRELUDE
            + "SEEN = []\n"
            + "def note(path):\n    SEEN.append(path)\n    return spark.read.parquet(path)\n"
            + 'note("p").select("a")\n'
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
            _PRELUDE
            + "visits = {}\n"
            + "@F.udf('int')\n"
            + "def visit_number(user):\n"
            + "    visits[user] = visits.get(user, 0) + 1\n"
            + "    return visits[user]\n"
            + 'spark.read.parquet("e").withColumn("n", visit_number("user"))\n',
            line=6,
            column=4,
            related_lines=(5,),
        ),
        Invalid(
            _PRELUDE
            + "counter = 0\n"
            + "def number(row):\n"
            + "    global counter\n"
            + "    counter += 1\n"
            + "    return (counter, row)\n"
            + 'spark.read.parquet("e").rdd.map(number)\n',
            line=6,
            column=4,
        ),
        Invalid(
            _PRELUDE + "errors = []\n" + 'spark.sparkContext.textFile("t").foreach(lambda line: errors.append(line))\n',
            line=4,
            column=54,
        ),
        Invalid(
            _PRELUDE
            + "import itertools\n"
            + "ids = itertools.count()\n"
            + 'spark.sparkContext.textFile("t").map(lambda line: (next(ids), line))\n',
            line=5,
            column=51,
        ),
        Invalid(
            _PRELUDE
            + "class Parser:\n"
            + "    def __init__(self):\n        self.lines = 0\n"
            + "    def parse(self, line):\n        self.lines += 1\n        return line.split(',')\n"
            + "    def run(self, sc):\n        return sc.textFile('t').map(self.parse)\n",
            line=7,
            column=8,
        ),
        Invalid(
            "import pandas as pd\n"
            "from pyspark.sql.functions import pandas_udf\n"
            "stats = {'batches': 0}\n"
            "@pandas_udf('double')\n"
            "def scaled(v: pd.Series) -> pd.Series:\n"
            "    stats['batches'] += 1\n"
            "    return v / stats['batches']\n"
            "def job(df):\n"
            "    return df.select(scaled('v'))\n",
            line=6,
            column=4,
        ),
        # A processor's own attribute, shared by every key its task handles; the state handle is fine.
        Invalid(
            "from pyspark.sql.streaming.stateful_processor import StatefulProcessor\n"
            "class Totals(StatefulProcessor):\n"
            "    def init(self, handle):\n"
            '        self.total = handle.getValueState("total", "t long")\n'
            "        self.rows_seen = 0\n"
            "    def handleInputRows(self, key, rows, timer_values):\n"
            "        for pdf in rows:\n"
            "            self.rows_seen += len(pdf)\n"
            "            self.total.update((len(pdf),))\n"
            "        yield from ()\n"
            'def run(stream):\n    return stream.groupBy("k").transformWithStateInPandas(Totals(), "t long", "append", "None")\n',
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

    def _finding(self, ctx: RuleContext, function, name: str, where) -> Finding:
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
