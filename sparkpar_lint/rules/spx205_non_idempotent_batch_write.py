"""SPX205 non-idempotent-batch-write: a `foreachBatch` function that appends, or pushes rows out,
with nothing that makes a replayed micro-batch write the same thing only once."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator

import libcst as cst
import libcst.matchers as m

from sparkpar_lint.graph.assignments import resolved
from sparkpar_lint.graph.imports import ImportTable
from sparkpar_lint.graph.passed_function import UserFunction
from sparkpar_lint.graph.per_task_values import per_task_values
from sparkpar_lint.graph.stage_graph import LazySpan, StageGraph, StageNode
from sparkpar_lint.graph.user_functions import is_bound_method, parameter_names
from sparkpar_lint.model import Finding, RelatedLocation, Severity
from sparkpar_lint.project.methods import MethodSummary
from sparkpar_lint.rules.base import Invalid, Rule, RuleContext, Valid

# Text in the function that makes a replay write once: Delta's idempotent-write options. (A MERGE
# is an upsert, not an append, so it is never reported; an append beside it still is.)
_IDEMPOTENT_MARKERS = ("txnversion", "txnappid")
# Sinks whose appends are upserts by primary key: a replay rewrites the same rows.
_UPSERT_FORMATS = ("cassandra",)
# The Elasticsearch connector's format: with a document id column (`es.mapping.id`) every row is
# indexed, upserted or updated under its own id, so a replay rewrites the same documents. Without
# it Elasticsearch makes up the ids and a replay adds the rows again; `create` fails on replay.
_ES_FORMAT = re.compile(r"""format\(\s*['"](?:es|org\.elasticsearch\.spark\.sql)['"]""")
_ES_CREATE = re.compile(r"""es\.write\.operation['"]\s*[:,]\s*['"]create['"]""")
# Calls that only report the batch id; using it there makes no write idempotent.
_LOGGING = frozenset({"print", "debug", "info", "warning", "warn", "error", "log", "exception"})
_CLOCK_MADE = "made from the clock (or a random id)"
# Actions that push each row to an outside system.
_PUSHES = frozenset({"foreach", "foreachPartition"})


class NonIdempotentBatchWrite(Rule):
    id = "SPX205"
    name = "non-idempotent-batch-write"
    severity = Severity.WARNING
    summary = "A foreachBatch function appends with no batch id: a replayed micro-batch is written twice."
    VALID = [
        # A declarative pipeline's batch sink keyed on its batch id: Delta skips a replayed version.
        Valid(
            textwrap.dedent(
                """\
                from pyspark import pipelines as dp
                @dp.foreach_batch_sink(name="orders_out")
                def orders_out(df, batch_id):
                    (df.write.format("delta").option("txnAppId", "orders_out").option("txnVersion", batch_id)
                        .mode("append").saveAsTable("audit.orders"))
                """
            )
        ),
        # The version is the batch id; the clock only names the log line.
        Valid(
            textwrap.dedent(
                """\
                import time
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                def save(batch, batch_id):
                    started = time.time()
                    (batch.write.format("delta").option("txnAppId", "orders").option("txnVersion", batch_id)
                        .mode("append").save("/lake/orders"))
                    print("batch took", time.time() - started)
                orders.writeStream.foreachBatch(save).start()
                """
            )
        ),
        # A bound method keying its overwrite on the batch id (its parameters follow `self`).
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                class Sink:
                    def save(self, batch, batch_id):
                        batch.write.mode("overwrite").parquet(f"/out/batch={batch_id}")
                    def run(self):
                        orders.writeStream.foreachBatch(self.save).start()
                """)
        ),
        # Delta's idempotent writes: a replayed (txnAppId, txnVersion) is skipped.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                def save(batch, batch_id):
                    (batch.write.format("delta").option("txnAppId", "orders-sink")
                        .option("txnVersion", batch_id).mode("append").save("/lake/orders"))
                orders.writeStream.foreachBatch(save).option("checkpointLocation", "/cp").start()
                """)
        ),
        # An upsert: replaying the batch merges the same rows again, nothing is added.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                from delta.tables import DeltaTable
                def upsert(batch, batch_id):
                    target = DeltaTable.forPath(spark, "/lake/orders")
                    target.alias("t").merge(batch.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().execute()
                orders.writeStream.foreachBatch(upsert).start()
                """)
        ),
        # The append runs only while the table does not exist yet: a replay finds it and merges.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                from delta.tables import DeltaTable
                def upsert(batch, batch_id):
                    if spark.catalog.tableExists("orders"):
                        target = DeltaTable.forName(spark, "orders")
                        target.alias("t").merge(batch.alias("s"), "t.id = s.id").whenNotMatchedInsertAll().execute()
                    else:
                        batch.write.format("delta").mode("append").saveAsTable("orders")
                orders.writeStream.foreachBatch(upsert).start()
                """)
        ),
        # One directory per batch, overwritten on replay.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                def save(batch, batch_id):
                    batch.write.mode("overwrite").parquet(f"/out/batch={batch_id}")
                orders.writeStream.foreachBatch(save).start()
                """)
        ),
        # The same in SQL: the batch's own partition, overwritten on replay; and a MERGE on a key.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                def save(batch, batch_id):
                    batch.createOrReplaceTempView("new_orders")
                    batch.sparkSession.sql(
                        f"INSERT OVERWRITE TABLE audit.orders PARTITION (batch = {batch_id}) SELECT * FROM new_orders"
                    )
                orders.writeStream.foreachBatch(save).start()
                """)
        ),
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                def save(batch, batch_id):
                    batch.createOrReplaceTempView("new_orders")
                    batch.sparkSession.sql("MERGE INTO audit.orders t USING new_orders s ON t.id = s.id "
                                           "WHEN NOT MATCHED THEN INSERT *")
                orders.writeStream.foreachBatch(save).start()
                """)
        ),
        # Cassandra appends are upserts by primary key; a batch id handed to a helper that keys on it.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                def save(batch, batch_id):
                    batch.write.format("org.apache.spark.sql.cassandra").mode("append").save()
                def keyed(batch, batch_id):
                    write_once(batch, batch_id)
                def write_once(frame, version):
                    frame.write.mode("overwrite").parquet(f"/out/v={version}")
                orders.writeStream.foreachBatch(save).start()
                orders.writeStream.foreachBatch(keyed).start()
                """)
        ),
        # Elasticsearch documents keyed by a column of the row (`es.mapping.id`), in a settings dict
        # or on the chain: a replay indexes the same ids again and replaces them.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                search_conf = {"es.nodes": "es:9200", "es.mapping.id": "order_id", "es.write.operation": "upsert"}
                def index(batch, batch_id):
                    batch.write.format("org.elasticsearch.spark.sql").options(**search_conf).mode("append").save("orders")
                def index_raw(batch, batch_id):
                    batch.write.format("es").option("es.mapping.id", "order_id").mode("append").save("orders_raw")
                orders.writeStream.foreachBatch(index).start()
                orders.writeStream.foreachBatch(index_raw).start()
                """)
        ),
        # A plain streaming sink: Spark's file sink commits each batch once.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                orders.writeStream.format("parquet").option("path", "/out").start()
                """)
        ),
        # Partitions keyed by the batch id: a replay overwrites its own partition, and no other.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                from pyspark.sql import functions as F
                def save(batch, batch_id):
                    (batch.withColumn("batch", F.lit(batch_id)).write.mode("overwrite")
                        .option("partitionOverwriteMode", "dynamic").partitionBy("batch").parquet("/out"))
                orders.writeStream.foreachBatch(save).start()
                """)
        ),
        # The batch id stamped into a column of a per-batch partition that the write overwrites.
        # (Appended with the same stamp, a replay adds the rows again: see the INVALID near miss.)
        # The clock only reaches a log line; the location is fixed and overwritten.
        Valid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                import datetime
                def save(batch, batch_id):
                    print("batch at", datetime.datetime.now())
                    batch.write.mode("overwrite").parquet("/out/latest")
                orders.writeStream.foreachBatch(save).start()
                """)
        ),
        # Near misses of the replayed ForeachWriter: `open` skips an epoch the table already holds,
        # or the insert is an upsert on the event's key.
        Valid(
            textwrap.dedent("""\
                import psycopg2
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                class EventWriter:
                    def open(self, partition_id, epoch_id):
                        self.conn = psycopg2.connect("dbname=events")
                        done = self.conn.cursor().execute("SELECT 1 FROM epochs WHERE p = %s AND e = %s", (partition_id, epoch_id))
                        return done is None
                    def process(self, row):
                        self.conn.cursor().execute("INSERT INTO events VALUES (%s, %s)", (row.id, row.amount))
                    def close(self, error):
                        self.conn.commit()
                spark.readStream.format("kafka").load().writeStream.foreach(EventWriter()).start()
                """)
        ),
        Valid(
            textwrap.dedent("""\
                import psycopg2
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                class EventWriter:
                    def open(self, partition_id, epoch_id):
                        self.conn = psycopg2.connect("dbname=events")
                        return True
                    def process(self, row):
                        self.conn.cursor().execute(
                            "INSERT INTO events VALUES (%s, %s) ON CONFLICT (id) DO NOTHING", (row.id, row.amount)
                        )
                    def close(self, error):
                        self.conn.commit()
                spark.readStream.format("kafka").load().writeStream.foreach(EventWriter()).start()
                """)
        ),
    ]
    INVALID = [
        # A ForeachWriter made by a factory: `open` ignores the epoch id, `process` inserts, so a
        # replayed epoch or a retried task inserts its rows again.
        Invalid(
            textwrap.dedent("""\
                import psycopg2
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                def make_writer(dsn):
                    class EventWriter:
                        def open(self, partition_id, epoch_id):
                            print(f"open {partition_id} {epoch_id}")
                            self.conn = psycopg2.connect(dsn)
                            return True
                        def process(self, row):
                            self.conn.cursor().execute("INSERT INTO events VALUES (%s, %s)", (row.id, row.amount))
                        def close(self, error):
                            self.conn.commit()
                    return EventWriter()
                writer = make_writer("dbname=events")
                spark.readStream.format("kafka").load().writeStream.foreach(writer).start()
                """),
            line=16,
            column=52,
            related_lines=(5,),
        ),
        # `@dp.foreach_batch_sink` makes the function a foreachBatch body: the append is replayed.
        Invalid(
            textwrap.dedent(
                """\
                from pyspark import pipelines as dp
                @dp.foreach_batch_sink(name="orders_out")
                def orders_out(df, batch_id):
                    df.write.format("delta").mode("append").saveAsTable("audit.orders")
                """
            ),
            line=4,
            column=44,
            related_lines=(2,),
        ),
        # An idempotency version read from the clock: a replay gets a new one and commits again.
        Invalid(
            textwrap.dedent(
                """\
                import time
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                def save(batch, batch_id):
                    version = int(time.time())
                    (batch.write.format("delta").option("txnAppId", "orders").option("txnVersion", version)
                        .mode("append").save("/lake/orders"))
                orders.writeStream.foreachBatch(save).start()
                """
            ),
            line=8,
            column=24,
            related_lines=(9,),
        ),
        # The batch id stamps the rows, but the location is a fresh random name every run.
        Invalid(
            textwrap.dedent(
                """\
                import uuid
                from pyspark.sql import SparkSession, functions as F
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                def save(batch, batch_id):
                    run = uuid.uuid4().hex
                    batch.withColumn("batch", F.lit(batch_id)).write.mode("overwrite").parquet(f"/out/{run}")
                orders.writeStream.foreachBatch(save).start()
                """
            ),
            line=7,
            column=71,
            related_lines=(8,),
        ),
        # The MERGE is an upsert, but the append beside it adds the new rows again on replay.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                from delta.tables import DeltaTable
                def scd2(batch, batch_id):
                    current = DeltaTable.forPath(spark, "/lake/dim")
                    current.alias("t").merge(batch.alias("s"), "t.id = s.id").whenMatchedUpdateAll().execute()
                    mode = "append"
                    batch.write.format("delta").save("/lake/dim", mode=mode)
                orders.writeStream.foreachBatch(scd2).start()
                """),
            line=9,
            column=32,
            related_lines=(10,),
        ),
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                def save(batch, batch_id):
                    print(f"writing batch {batch_id}")
                    batch.write.mode("append").parquet("/out/orders")
                orders.writeStream.foreachBatch(save).option("checkpointLocation", "/cp").start()
                """),
            line=6,
            column=31,
            related_lines=(7,),
        ),
        # A SQL INSERT run from the batch function appends as `insertInto` does.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                def save(batch, batch_id):
                    batch.createOrReplaceTempView("new_orders")
                    batch.sparkSession.sql("INSERT INTO audit.orders SELECT * FROM new_orders")
                orders.writeStream.foreachBatch(save).start()
                """),
            line=6,
            column=28,
            related_lines=(7,),
        ),
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                orders.writeStream.foreachBatch(lambda df, _: df.write.insertInto("audit.orders")).start()
                """),
            line=4,
            column=55,
            related_lines=(4,),
        ),
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                def notify(rows):
                    for row in rows:
                        send(row)
                def push(batch, batch_id):
                    batch.foreachPartition(notify)
                orders.writeStream.foreachBatch(push).start()
                """),
            line=8,
            column=10,
            related_lines=(9,),
        ),
        # A directory named by the clock: a replay writes the same rows to a second directory.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                import datetime
                def save(batch, batch_id):
                    stamp = datetime.datetime.now().isoformat()
                    batch.write.parquet(f"/out/{stamp}")
                orders.writeStream.foreachBatch(save).start()
                """),
            line=7,
            column=16,
            related_lines=(8,),
        ),
        # Dynamic partition overwrite per micro-batch: a day spanning two batches keeps the second.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                def save(batch, batch_id):
                    (batch.write.mode("overwrite").option("partitionOverwriteMode", "dynamic")
                        .partitionBy("day").parquet("/out/daily"))
                orders.writeStream.foreachBatch(save).start()
                """),
            line=5,
            column=17,
            related_lines=(7,),
        ),
        # The batch function handed over as a bound method: `batch` follows `self`, the id is unused.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                class Sink:
                    def save(self, batch, batch_id):
                        batch.write.mode("append").parquet("/out/orders")
                    def run(self):
                        orders.writeStream.foreachBatch(self.save).start()
                """),
            line=6,
            column=35,
            related_lines=(8,),
        ),
        # Near miss of the batch-keyed partitions: the id is only a column value of an append.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                from pyspark.sql import functions as F
                def save(batch, batch_id):
                    batch.withColumn("batch", F.lit(batch_id)).write.mode("append").parquet("/out")
                orders.writeStream.foreachBatch(save).start()
                """),
            line=6,
            column=68,
            related_lines=(7,),
        ),
        # Near miss of the keyed Elasticsearch write: with no `es.mapping.id` Elasticsearch makes up
        # a new id for every row, so a replay indexes each document a second time.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                search_conf = {"es.nodes": "es:9200", "es.write.operation": "index"}
                def index(batch, batch_id):
                    batch.write.format("org.elasticsearch.spark.sql").options(**search_conf).mode("append").save("orders")
                orders.writeStream.foreachBatch(index).start()
                """),
            line=6,
            column=92,
            related_lines=(7,),
        ),
        # The near miss: the append in the branch where the table exists runs again on replay.
        Invalid(
            textwrap.dedent("""\
                from pyspark.sql import SparkSession
                spark = SparkSession.builder.getOrCreate()
                orders = spark.readStream.format("kafka").load()
                def save(batch, batch_id):
                    if spark.catalog.tableExists("orders"):
                        batch.write.format("delta").mode("append").saveAsTable("orders")
                    else:
                        batch.write.format("delta").mode("append").saveAsTable("orders")
                orders.writeStream.foreachBatch(save).start()
                """),
            line=6,
            column=51,
            related_lines=(9,),
        ),
    ]

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        graph = ctx.graph
        for node in graph.nodes:
            writer = _replayed_writer(graph, node)
            if writer is not None:
                klass, push, foreach = writer
                yield self.finding(
                    ctx,
                    LazySpan(graph, cst.ensure_type(foreach.func, cst.Attribute).attr, foreach),
                    f"`foreach` hands each row to `{klass.name.value}`, whose `open` never checks the epoch id "
                    f"and whose `{push}` pushes rows out: when Spark replays an epoch after a failure, or "
                    "retries a task, the rows already sent are sent again. Return False from "
                    "`open(partition_id, epoch_id)` for an epoch the target already holds, or make the "
                    "write an upsert on a key",
                    related=(RelatedLocation(LazySpan(graph, klass.name), f"`{klass.name.value}` is defined here"),),
                )
        for node in graph.nodes:
            if node.spec is None or node.spec.function_role != "batch":
                continue
            functions = [f for f in node.functions if f.role == "batch"]
            if not functions:
                continue
            fresh = _fresh_names(graph, functions)
            # A name or version made from the clock differs on replay, whatever else keys the write.
            safe = any(_replay_safe(ctx.graph, f.node, fresh) for f in functions)
            related = (RelatedLocation(node.span, f"`{node.method}` runs it once per micro-batch, again on replay"),)
            for later, what in _unkeyed_outputs(graph, node, functions, fresh, safe):
                message = (
                    f"{what} in a `foreachBatch` function that keys no write on the batch id: when Spark replays "
                    "a micro-batch after a failure, its rows are written again. Make the write idempotent "
                    "(Delta `txnAppId`/`txnVersion` options, a `MERGE` on a key, or an overwrite of a "
                    "per-batch location keyed by the batch id)"
                )
                if what.endswith(_CLOCK_MADE):
                    message = (
                        f"{what} in a `foreachBatch` function: when Spark replays a micro-batch after a "
                        "failure, the value is new and the batch's rows are written again. Key the write on "
                        "the batch id the function is given (`txnVersion` = batch id, a location "
                        "`.../batch={batch_id}`)"
                    )
                yield self.finding(ctx, later.span, message, related=related)
            dynamic = _DYNAMIC_OVERWRITE.search(ctx.source) is not None
            for function in functions if not safe else ():
                for mode_call in _partition_overwrites(function.node, dynamic):
                    message = (
                        "overwrites the partitions this micro-batch writes to (dynamic partition overwrite) "
                        "in a `foreachBatch` function: rows an earlier micro-batch wrote to the same "
                        "partition (a date that spans two batches) are deleted, so the table depends on how "
                        "the input was split into micro-batches. Append with a batch-keyed idempotent write, "
                        "or `MERGE` on a key"
                    )
                    span = LazySpan(graph, cst.ensure_type(mode_call.func, cst.Attribute).attr, mode_call)
                    yield self.finding(ctx, span, message, related=related)


def _unkeyed_outputs(
    graph: StageGraph, batch: StageNode, functions: list[UserFunction], fresh: tuple[set[int], set[str]], safe: bool
) -> Iterator[tuple[StageNode, str]]:
    downstream = list(graph.downstream(batch))
    seen = {n.id for n in downstream}
    # Writes the function makes of other frames (a monitoring row, a lookup table), itself or in
    # the helpers it calls: they run again on replay as much as the batch's own write does.
    calls = _calls_reached(graph, [f.node for f in functions])
    reached = [n for n in graph.nodes if n.id not in seen and n.call is not None and id(n.call) in calls]
    for later in downstream + reached:
        if later.spec is None:
            continue
        if later.spec.sink and later.receiver == "Writer" and _clock_version(later.call, *fresh):
            yield later, f"`{later.method}` is keyed on a Delta `txnVersion` {_CLOCK_MADE}"
        elif later.spec.sink and later.receiver == "Writer" and _fresh_location(later, *fresh):
            yield later, f"`{later.method}` writes to a location {_CLOCK_MADE}"
        elif safe:
            continue
        elif (
            later.spec.sink
            and later.receiver == "Writer"
            and _appends(graph, later)
            and not _upserts(later)
            and not _keyed_es_write(graph, later)
        ):
            if not any(_anti_join(n) for n in graph.upstream(later)) and not _first_write_only(graph, later):
                # A SQL INSERT is a write stage with no call: name it as the SQL says it.
                yield later, "`INSERT INTO` appends" if later.call is None else f"`{later.method}` appends"
        elif later.method in _PUSHES:
            yield later, f"`{later.method}` pushes every row out"


# Calls that push a ForeachWriter's rows to an outside system (a database cursor, a producer, an
# HTTP or key-value client); SQL saying so makes the push an upsert.
_WRITER_PUSHES = frozenset(
    {
        "execute",
        "executemany",
        "execute_batch",
        "execute_values",
        "insert_one",
        "insert_many",
        "send",
        "produce",
        "post",
        "put_item",
        "put_record",
        "put_records",
        "publish",
    }
)
_UPSERT_SQL = re.compile(r"on\s+conflict|merge\s+into|upsert|replace\s+into|on\s+duplicate\s+key", re.IGNORECASE)


def _replayed_writer(graph: StageGraph, node: StageNode) -> tuple[cst.ClassDef, str, cst.Call] | None:
    """`writeStream.foreach(writer).start()` with a ForeachWriter class (`open`, `process`) whose `open`
    does not use its epoch id beyond logging and whose methods push rows out with no upsert in
    sight: (the class, the pushing call's name, the `foreach` call)."""
    if node.receiver != "StreamWriter" or node.spec is None or not node.spec.sink or node.call is None:
        return None
    # Writer settings are not stages: read `.foreach(writer)` off the chain `start` is called on.
    link = node.call.func.value if isinstance(node.call.func, cst.Attribute) else None
    while isinstance(link, cst.Call) and isinstance(link.func, cst.Attribute) and link.func.attr.value != "foreach":
        link = link.func.value
    if not isinstance(link, cst.Call) or not link.args:
        return None
    klass = _writer_class(graph, link.args[0].value, node)
    if klass is None:
        return None
    methods = {d.name.value: d for d in klass.body.body if isinstance(d, cst.FunctionDef)}
    if "process" not in methods:
        return None
    opened = methods.get("open")
    params = parameter_names(opened)[1:] if opened is not None else []
    if opened is not None and (len(params) < 2 or _used_beyond_logging(graph, opened, params[1], depth=0)):
        return None
    if _UPSERT_SQL.search(cst.Module([]).code_for_node(klass)):
        return None
    push = next(
        (c for c in m.findall(klass, m.Call()) if isinstance(c, cst.Call) and _callee_name(c) in _WRITER_PUSHES), None
    )
    return (klass, _callee_name(push), link) if push is not None else None


def _writer_class(graph: StageGraph, expr: cst.BaseExpression, at: StageNode) -> cst.ClassDef | None:
    """The class of the writer object: `Writer()`, or a name bound to it, or to a call of a module
    function that returns `Writer()` (a factory defining the class inside)."""
    classes = {d.name.value: d for d in graph.definitions if isinstance(d, cst.ClassDef)}
    functions = {d.name.value: d for d in graph.definitions if isinstance(d, cst.FunctionDef)}
    if isinstance(expr, cst.Name):
        expr = resolved(graph, expr, at) or expr
    if not isinstance(expr, cst.Call) or not isinstance(expr.func, cst.Name):
        return None
    called = expr.func.value
    if called in classes:
        return classes[called]
    factory = functions.get(called)
    if factory is None:
        return None
    for returned in m.findall(factory, m.Return()):
        value = returned.value if isinstance(returned, cst.Return) else None
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
            made = value.func.value
            classes_inside = [c for c in m.findall(factory, m.ClassDef()) if isinstance(c, cst.ClassDef)]
            inner = next((c for c in classes_inside if c.name.value == made), None)
            if inner is not None:
                return inner
    return None


def _calls_reached(graph: StageGraph, functions: list[cst.FunctionDef | cst.Lambda]) -> set[int]:
    """Ids of the calls in the functions and in the module's functions and methods they call, to a
    depth of three."""
    helpers = {d.name.value: d for d in graph.definitions if isinstance(d, cst.FunctionDef)}
    inherited = _inherited(graph)
    calls: set[int] = set()
    bodies: list[cst.FunctionDef | cst.Lambda] = list(functions)
    done: set[int] = set()
    for _ in range(4):
        found: list[cst.FunctionDef | cst.Lambda] = []
        for body in bodies:
            if id(body) in done:
                continue
            done.add(id(body))
            for call in m.findall(body, m.Call()):
                if not isinstance(call, cst.Call):
                    continue
                calls.add(id(call))
                helper = _helper_called(call, helpers)
                if helper is not None:
                    found.append(helper)
                elif (base := _inherited_called(call, helpers, inherited)) is not None:
                    # A base class's template method: the overrides it calls run the batch.
                    found.extend(_overrides_reached(base, helpers, inherited))
        bodies = found
    return calls


# The module's functions by name; the methods its classes inherit from other modules, by name.
_Helpers = dict[str, cst.FunctionDef]
_Inherited = dict[str, MethodSummary]


def _inherited(graph: StageGraph) -> dict[str, MethodSummary]:
    """Methods the module's classes inherit from project classes of other modules, by name."""
    found: dict[str, MethodSummary] = {}
    for methods in graph.inherited.values():
        for name, method in methods.items():
            found.setdefault(name, method)
    return found


def _inherited_called(call: cst.Call, helpers: _Helpers, inherited: _Inherited) -> MethodSummary | None:
    """The inherited method's summary for `self.name(...)` when the module does not define `name`."""
    func = call.func
    if isinstance(func, cst.Attribute) and m.matches(func.value, m.Name("self")) and func.attr.value not in helpers:
        return inherited.get(func.attr.value)
    return None


def _overrides_reached(
    method: MethodSummary, helpers: _Helpers, inherited: _Inherited, depth: int = 0
) -> list[cst.FunctionDef]:
    """The module's methods an inherited method calls through `self.`, through inherited ones too."""
    found: list[cst.FunctionDef] = []
    for called in method.self_calls:
        helper = helpers.get(called.method)
        if helper is not None and is_bound_method(helper):
            found.append(helper)
        elif called.method in inherited and depth < 3:
            found.extend(_overrides_reached(inherited[called.method], helpers, inherited, depth + 1))
    return found


def _fresh_names(graph: StageGraph, functions: list[UserFunction]) -> tuple[set[int], set[str]]:
    """Clock and random reads in the batch functions (ids of the calls), and the names bound to
    values computed from them (`stamp = datetime.now().isoformat()`)."""
    reads: set[int] = set()
    names: set[str] = set()
    for function in functions:
        found = {id(v.call) for v in per_task_values(function.node, graph.imports or ImportTable())}
        if not found:
            continue
        reads |= found
        assigns = [a for a in m.findall(function.node, m.Assign()) if isinstance(a, cst.Assign)]
        for _ in range(2):  # `a = now(); b = f"{a}/x"`: one step of chaining
            for assign in assigns:
                if _mentions(assign.value, reads, names):
                    names.update(t.target.value for t in assign.targets if isinstance(t.target, cst.Name))
    return reads, names


def _mentions(expr: cst.CSTNode, reads: set[int], names: set[str]) -> bool:
    stack = [expr]
    while stack:
        current = stack.pop()
        if id(current) in reads or (isinstance(current, cst.Name) and current.value in names):
            return True
        stack.extend(current.children)
    return False


def _fresh_location(sink: StageNode, reads: set[int], names: set[str]) -> bool:
    """The sink's path is computed from a clock or random value: every run, a replay included,
    writes a new location, so nothing replaces the first attempt's output."""
    if (not reads and not names) or sink.call is None:
        return False
    paths = [a.value for a in sink.call.args if a.keyword is None or a.keyword.value in ("path", "name")][:1]
    return any(_mentions(p, reads, names) for p in paths)


def _clock_version(node: cst.CSTNode | None, reads: set[int], names: set[str]) -> bool:
    """A Delta `txnVersion` option (`.option("txnVersion", v)`, `.options(txnVersion=v)`) whose
    value is computed from the clock or a random id: a replay gets a version Delta has not seen,
    so it commits the rows a second time."""
    if node is None or (not reads and not names):
        return False
    for call in m.findall(node, m.Call(func=m.Attribute(attr=m.Name("option") | m.Name("options")))):
        if not isinstance(call, cst.Call):
            continue
        for index, arg in enumerate(call.args):
            keyed = arg.keyword is not None and arg.keyword.value.lower() == "txnversion"
            named = index == 1 and _literal_node(call.args[0].value) == "txnversion"
            if (keyed or named) and _mentions(arg.value, reads, names):
                return True
    return False


# Spark's dynamic partition overwrite, set for the session or the write.
_DYNAMIC_OVERWRITE = re.compile(r"partitionOverwriteMode['\"]\s*,\s*['\"]dynamic", re.IGNORECASE)
_FILE_WRITES = frozenset({"save", "saveAsTable", "parquet", "orc", "json", "csv", "text", "insertInto"})


def _partition_overwrites(function: cst.CSTNode, dynamic: bool) -> list[cst.Call]:
    """`.mode("overwrite")` calls of write chains that partition the output and overwrite only
    the partitions written (dynamic mode), read off the code: writer settings are not stages."""
    found = []
    for call in m.findall(function, m.Call(func=m.Attribute())):
        if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
            continue
        if call.func.attr.value not in _FILE_WRITES:
            continue
        links: list[tuple[str, cst.Call]] = []  # (method, call) down the chain
        link = call.func.value
        while isinstance(link, cst.Call) and isinstance(link.func, cst.Attribute):
            links.append((link.func.attr.value, link))
            link = link.func.value
        named = dict(links)
        mode = named.get("mode")
        if mode is None or not mode.args or _literal_node(mode.args[0].value) != "overwrite":
            continue
        options = [c for method, c in links if method == "option" and len(c.args) == 2]
        chained = any(
            _literal_node(c.args[0].value) == "partitionoverwritemode" and _literal_node(c.args[1].value) == "dynamic"
            for c in options
        )
        if "partitionBy" in named and (dynamic or chained):
            found.append(mode)
    return found


def _appends(graph: StageGraph, sink: StageNode) -> bool:
    """The writer chain ends in an append: `mode("append")`, `mode=...`, or `insertInto`."""
    if sink.method == "insertInto":
        return sink.keywords.get("overwrite") != "True"
    mode = _literal(sink.keywords.get("mode")) or _assigned_literal(graph, sink, sink.keywords.get("mode"))
    link = sink.call.func.value if sink.call is not None and isinstance(sink.call.func, cst.Attribute) else None
    # Writer settings are not stages: read `.mode(...)` off the chain the sink is called on.
    while mode is None and isinstance(link, cst.Call) and isinstance(link.func, cst.Attribute):
        if link.func.attr.value == "mode" and link.args:
            value = link.args[0].value
            mode = _assigned_literal(graph, sink, value.value) if isinstance(value, cst.Name) else _literal_node(value)
        link = link.func.value
    return mode == "append"


_EXISTS = frozenset({"tableExists", "isDeltaTable", "exists"})


def _first_write_only(graph: StageGraph, sink: StageNode) -> bool:
    """The write runs only while its target does not exist yet (`if spark.catalog.tableExists(t):
    merge ... else: append`): a replayed batch finds the target and takes the other branch, which
    is checked on its own."""
    if sink.call is None:
        return False
    for function in graph.definitions:
        for branch in m.findall(function, m.If()):
            if not isinstance(branch, cst.If):
                continue
            test, negated = branch.test, False
            if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                test, negated = test.expression, True
            if not isinstance(test, cst.Call) or _callee_name(test) not in _EXISTS:
                continue
            missing = branch.body if negated else branch.orelse
            if isinstance(missing, cst.IndentedBlock | cst.Else) and any(
                c is sink.call for c in m.findall(missing, m.Call())
            ):
                return True
    return False


def _upserts(sink: StageNode) -> bool:
    code = cst.Module([]).code_for_node(sink.call).lower() if sink.call is not None else ""
    return any(name in code for name in _UPSERT_FORMATS)


def _keyed_es_write(graph: StageGraph, sink: StageNode) -> bool:
    """An Elasticsearch write whose settings name a document id column (`es.mapping.id`), on the
    chain itself or in a dict of the module handed to `.options(**conf)`."""
    if sink.call is None:
        return False
    code = cst.Module([]).code_for_node(sink.call).lower()
    if not _ES_FORMAT.search(code):
        return False
    names = {
        a.value.value
        for call in m.findall(sink.call, m.Call(func=m.Attribute(attr=m.Name("options"))))
        if isinstance(call, cst.Call)
        for a in call.args
        if isinstance(a.value, cst.Name)
    }
    for assign in graph.nodes_of(cst.Assign) if names else ():
        if isinstance(assign.value, cst.Dict) and any(
            isinstance(t.target, cst.Name) and t.target.value in names for t in assign.targets
        ):
            code += " " + cst.Module([]).code_for_node(assign.value).lower()
    return "es.mapping.id" in code and _ES_CREATE.search(code) is None


def _assigned_literal(graph: StageGraph, sink: StageNode, name: str | None) -> str | None:
    """`mode = "append"` ... `write.jdbc(..., mode=mode)`: the string the name is bound to in the
    function that makes the write, when it is bound to exactly one. A parameter's default counts
    when no call in the module passes that parameter (`def save(df, mode="append")`)."""
    if not name or not name.isidentifier() or sink.call is None:
        return None
    for function in graph.definitions:
        if not isinstance(function, cst.FunctionDef) or not any(c is sink.call for c in m.findall(function, m.Call())):
            continue
        values = {
            _literal_node(a.value)
            for a in m.findall(function, m.Assign())
            if isinstance(a, cst.Assign) and any(m.matches(t.target, m.Name(name)) for t in a.targets)
        }
        default = _unpassed_default(graph, function, name)
        if default is not None:
            values.add(_literal_node(default))
        return values.pop() if len(values) == 1 else None
    return None


def _unpassed_default(graph: StageGraph, function: cst.FunctionDef, name: str) -> cst.BaseExpression | None:
    """The default of parameter `name` when no call of the function in the module passes it."""
    params = list(function.params.params)
    found = next((p for p in params if p.name.value == name), None)
    if found is None or found.default is None:
        return None
    position = params.index(found) - (1 if is_bound_method(function) else 0)
    for call in graph.nodes_of(cst.Call):
        func = call.func
        called = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
        if called != function.name.value:
            continue
        positional = [a for a in call.args if a.keyword is None]
        if len(positional) > position or any(a.keyword is not None and a.keyword.value == name for a in call.args):
            return None
    return found.default


def _anti_join(node: StageNode) -> bool:
    """Rows already in the target are removed first (`join(target, key, "left_anti")`)."""
    if node.method != "join" or node.call is None:
        return False
    return any(_literal_node(a.value) in ("left_anti", "leftanti", "anti") for a in node.call.args)


def _literal(text: str | None) -> str | None:
    return text.strip("'\"").lower() if text and text[0] in "'\"" else None


def _literal_node(expr: cst.BaseExpression) -> str | None:
    value = expr.evaluated_value if isinstance(expr, cst.SimpleString) else None
    return value.lower() if isinstance(value, str) else None


def _replay_safe(graph: StageGraph, function: cst.Lambda | cst.FunctionDef, fresh: tuple[set[int], set[str]]) -> bool:
    """The function keys something on the batch id, or writes through an idempotent API (with a
    version that is not read from the clock)."""
    code = cst.Module([]).code_for_node(function).lower()
    if any(marker in code for marker in _IDEMPOTENT_MARKERS) and not _clock_version(function, *fresh):
        return True
    params = parameter_names(function)
    if is_bound_method(function):
        params = params[1:]  # `foreachBatch(self.save)`: (self, batch, batch_id)
    if len(params) < 2:
        return False
    # The id stamped into a column (`lit(batch_id)`) keys a write only where that write replaces
    # what it keys (an overwrite by partition); appended, a replay adds the same rows again.
    stamped_only = "overwrite" not in code
    return _used_beyond_logging(graph, function, params[1], depth=0, stamped_only=stamped_only)


def _used_beyond_logging(
    graph: StageGraph, function: cst.FunctionDef | cst.Lambda, name: str, depth: int, stamped_only: bool = False
) -> bool:
    """The name is read other than in a print/log call (or, with `stamped_only`, a `lit(...)`
    column value); handed to a helper of the module, it counts only if the helper uses the
    parameter it lands in."""
    helpers = {d.name.value: d for d in graph.definitions if isinstance(d, cst.FunctionDef)}
    inherited = _inherited(graph)

    class _Uses(cst.CSTVisitor):
        def __init__(self) -> None:
            self.calls: list[cst.Call] = []
            self.found = False

        def visit_Call(self, node: cst.Call) -> None:
            self.calls.append(node)

        def leave_Call(self, node: cst.Call) -> None:
            self.calls.pop()

        def visit_Parameters(self, node: cst.Parameters) -> bool:
            return False

        # A keyword's name (`epoch_id=epoch_id`) and an attribute's (`self.epoch_id`) are not reads.
        def visit_Arg(self, node: cst.Arg) -> bool:
            node.value.visit(self)
            return False

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

        def visit_Name(self, node: cst.Name) -> None:
            if node.value != name or any(_logs(c) or (stamped_only and _callee_name(c) == "lit") for c in self.calls):
                return
            call = self.calls[-1] if self.calls else None
            base = _inherited_called(call, helpers, inherited) if call is not None else None
            if base is not None and call is not None and depth < 3:
                param = _parameter_of(call, node, base.params)
                if param is None or _inherited_uses(graph, base, param, helpers, inherited, depth + 1):
                    self.found = True
                return
            passed = _passed_to_helper(call, node, helpers)
            if passed is None or depth >= 3:
                self.found = True
            elif _used_beyond_logging(graph, *passed, depth=depth + 1):
                self.found = True

    uses = _Uses()
    function.body.visit(uses)
    return uses.found


def _inherited_uses(
    graph: StageGraph, method: MethodSummary, param: str, helpers: _Helpers, inherited: _Inherited, depth: int
) -> bool:
    """An inherited method reads `param` other than in a log call, itself or in the methods it
    hands it to (the module's overrides, or other inherited methods)."""
    if any(p == param and not any(_logging_name(c) for c in calls) for p, calls in method.reads):
        return True
    for called in method.self_calls:
        targets = [i for i, a in enumerate(called.args) if a == param]
        keywords = [k for k, a in called.kwargs if a == param]
        if not targets and not keywords:
            continue
        helper = helpers.get(called.method)
        if helper is not None and is_bound_method(helper):
            names = parameter_names(helper)[1:]
            landed = [names[i] for i in targets if i < len(names)] + [k for k in keywords if k in names]
            if len(landed) < len(targets) + len(keywords):
                return True  # into `*args` or a name the override does not take: unknown
            if any(_used_beyond_logging(graph, helper, name, depth=depth) for name in landed):
                return True
        elif called.method in inherited and depth < 3:
            base = inherited[called.method]
            landed = [base.params[i] for i in targets if i < len(base.params)] + keywords
            if any(_inherited_uses(graph, base, name, helpers, inherited, depth + 1) for name in landed):
                return True
        else:
            return True  # a method nobody here defines: it may key on the id
    return False


def _parameter_of(call: cst.Call, name: cst.Name, params: tuple[str, ...]) -> str | None:
    """The parameter (after `self`) a whole-argument name lands in; None when it is not one."""
    positional = [a for a in call.args if a.keyword is None]
    for arg in call.args:
        if arg.value is name and not arg.star:
            if arg.keyword is not None:
                return arg.keyword.value if arg.keyword.value in params else None
            position = positional.index(arg)
            return params[position] if position < len(params) else None
    return None


def _helper_called(call: cst.Call, helpers: _Helpers) -> cst.FunctionDef | None:
    """The module's function a call runs: `helper(...)`, or `self.helper(...)` for a method."""
    func = call.func
    if isinstance(func, cst.Name):
        return helpers.get(func.value)
    if isinstance(func, cst.Attribute) and m.matches(func.value, m.Name("self")):
        found = helpers.get(func.attr.value)
        return found if found is not None and is_bound_method(found) else None
    return None


def _logs(call: cst.Call) -> bool:
    """A print or a logger call (`info`, `write_log`, `log_event`): it reports, it keys nothing."""
    return _logging_name(_callee_name(call))


def _logging_name(name: str) -> bool:
    return name in _LOGGING or name.lower().startswith("log") or name.lower().endswith("_log")


def _callee_name(call: cst.Call) -> str:
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")


def _passed_to_helper(call: cst.Call | None, name: cst.Name, helpers: _Helpers) -> tuple[cst.FunctionDef, str] | None:
    """(helper, parameter) when `name` is a whole argument of a call to a module function, or of
    `self.method(...)` (a method of the module, its parameters after `self`)."""
    helper = _helper_called(call, helpers) if call is not None else None
    if call is None or helper is None:
        return None
    params = parameter_names(helper)
    if isinstance(call.func, cst.Attribute) and is_bound_method(helper):
        params = params[1:]
    positional = [a for a in call.args if a.keyword is None]
    for arg in call.args:
        if arg.value is name:
            if arg.keyword is not None:
                return (helper, arg.keyword.value) if arg.keyword.value in params else None
            position = positional.index(arg)
            return (helper, params[position]) if position < len(params) else None
    return None
