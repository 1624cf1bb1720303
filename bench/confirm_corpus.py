"""Do a team's own tests confirm the corpus findings that are true and clear the ones that are
false? Each case re-expresses, in a few lines of our own code and data, the shape of one judged
finding of the real-world corpus (bench/realworld/cases.json, `dev` split), with the data the
judgement turned on: duplicates that differ or are copies, ties or unique keys, a combiner that
is or is not commutative. Each job gets an ordinary snapshot test (its rows compared with what its
first run as written returned); the real `sparkpar lint` and `pytest --sparkpar-confirm` then run
on that project, on real Spark.

    python bench/confirm_corpus.py [--runs N] [--budget T] [--seed S] [--keep DIR]

Printed per case: the manifest's verdict, the lint finding (rule, confidence), the plugin's
verdict; then how many true findings were confirmed and how many false ones cleared (not
reproduced), the commands and the wall time. Figures only: nothing here asserts anything.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "bench" / "realworld" / "cases.json"


@dataclass(frozen=True)
class Case:
    """One modelled finding: the manifest case (`repo:path:line`), the rule it judged, and a job
    module defining `data(spark)`, the input the test builds, and `job(input)`, which returns a
    DataFrame, an RDD or a list of rows."""

    case: str
    rule: str
    name: str
    job: str


CASES = (
    # --- judged true ---
    Case(
        "SwapnilBhoyar/spark-programs:drop_duplicate.py:25",
        "SPX102",
        "staff_unique_pay",
        """
        def data(spark):
            rows = [(i, f"clerk{i % 30}", 1000 * (i % 3)) for i in range(300)]  # ids differ in each pair
            return spark.createDataFrame(rows, "id int, name string, pay int")


        def job(staff):
            return staff.dropDuplicates(["name", "pay"])
        """,
    ),
    Case(
        "SwapnilBhoyar/spark-programs:drop_duplicate.py:31",
        "SPX101",
        "staff_first_id",
        """
        from pyspark.sql import functions as F


        def data(spark):
            rows = [(i, f"clerk{i % 30}", 1000 * (i % 3)) for i in range(300)]
            return spark.createDataFrame(rows, "id int, name string, pay int")


        def job(staff):
            return staff.groupBy("name", "pay").agg(F.first("id").alias("id"))
        """,
    ),
    Case(
        "MehmetEray/PySpark-Streaming-Processes:maashesabi_mapreduce_reducebykey.py:26",
        "SPX108",
        "average_pay_combiner",
        """
        def data(spark):
            return spark.sparkContext.parallelize([(f"team{i % 4}", (100 + i, 1)) for i in range(200)])


        def job(pay):
            # The count slot adds a salary: neither associative nor commutative.
            return pay.reduceByKey(lambda x, y: (x[0] + y[0], y[0] + y[1]))
        """,
    ),
    Case(
        "mohankrishna02/interview-scenerios-spark-sql:Scenerio9.py:29",
        "SPX106",
        "most_common_first",
        """
        def data(spark):
            return spark.createDataFrame([(f"racer{i % 7}", i % 4) for i in range(90)], "name string, place int")


        def job(results):
            counts = results.where("place = 1").groupBy("name").count()
            return [counts.first()[0]]  # meant: the name with most wins; gets the first group to arrive
        """,
    ),
    Case(
        "mahmoudparsian/pyspark-algorithms:code/chap07/dataframe_creation_aggregate_multiple_columns.py:117",
        "SPX101",
        "meals_per_diner",
        """
        from pyspark.sql import functions as F


        def data(spark):
            rows = [(f"diner{i % 5}", f"dish{i}", float(i)) for i in range(80)]
            return spark.createDataFrame(rows, "diner string, dish string, price double")


        def job(meals):
            return meals.groupBy("diner").agg(F.collect_list("dish").alias("dishes"), F.collect_list("price"))
        """,
    ),
    Case(
        "kirankaranth/JNJRepo:src/pipelines/JDE_02_MD_PLNT_MTR/code/jde_02_md_plnt_mtr/graph/DEDUPLICATE.py:12",
        "SPX104",
        "plant_keep_one",
        """
        from pyspark.sql import Window
        from pyspark.sql import functions as F


        def data(spark):
            rows = [(f"p{i % 10}", f"r{i % 2}", i) for i in range(200)]
            return spark.createDataFrame(rows, "plant string, region string, meter int")


        def job(plants):
            # Ordered by the partition keys themselves: every row of a window ties.
            by_key = Window.partitionBy("plant", "region").orderBy(F.col("plant").asc(), F.col("region").desc())
            return plants.withColumn("n", F.row_number().over(by_key)).where("n = 1").drop("n")
        """,
    ),
    Case(
        "SRVivek1/pyspark-rdd-dataframe-examples:dataframe/curation/dsl/more_functions_2.py:30",
        "SPX104",
        "pay_rank_with_ties",
        """
        from pyspark.sql import Window
        from pyspark.sql import functions as F


        def data(spark):
            rows = [(f"emp{i}", f"unit{i % 3}", 500.0 * (i % 4)) for i in range(120)]  # many equal pays
            return spark.createDataFrame(rows, "name string, unit string, pay double")


        def job(people):
            return people.withColumn("rank", F.row_number().over(Window.partitionBy("unit").orderBy("pay")))
        """,
    ),
    Case(
        "SUDHA489/DataEngineer_Training:week2/day8/part2.py:22",
        "SPX105",
        "customer_surrogate_key",
        """
        from pyspark.sql import functions as F


        def data(spark):
            return spark.createDataFrame([(f"cust{i}", f"town{i % 7}") for i in range(50)], "name string, town string")


        def job(customers):
            return customers.withColumn("customer_sk", F.monotonically_increasing_id())
        """,
    ),
    Case(
        "SRVivek1/pyspark-rdd-dataframe-examples:dataframe/curation/dsl/more_functions.py:85",
        "SPX101",
        "heaviest_after_lost_sort",
        """
        from pyspark.sql import functions as F


        def data(spark):
            rows = [(f"owner{i % 6}", 50.0 + (i * 37) % 90) for i in range(150)]
            return spark.createDataFrame(rows, "owner string, weight double")


        def job(weighings):
            return weighings.orderBy(F.col("weight").desc()).groupBy("owner").agg(F.first("weight", True).alias("top"))
        """,
    ),
    Case(
        "mokoe004/clickstream-analysis-simulation:spark_agg/sessionizer.py:24",
        "SPX101",
        "session_paths",
        """
        from pyspark.sql import functions as F


        def data(spark):
            rows = [(f"s{i % 8}", f"/page{i % 11}") for i in range(160)]
            return spark.createDataFrame(rows, "session string, page string")


        def job(clicks):
            visited = clicks.groupBy("session").agg(F.collect_list("page").alias("pages"))
            return visited.select("session", F.concat_ws(" > ", "pages").alias("path"))
        """,
    ),
    Case(
        "xogur/pyspark-apps:homework/ch10_3/dataframe_cache.py:77",
        "SPX102",
        "company_headcount",
        """
        def data(spark):
            rows = [(i % 12, 10 * i, i) for i in range(240)]  # several snapshots per company
            return spark.createDataFrame(rows, "company_id int, headcount int, recorded int")


        def job(snapshots):
            firms = snapshots.sparkSession.createDataFrame([(c, f"firm{c}") for c in range(12)], "company_id int, title string")
            latest = snapshots.dropDuplicates(["company_id"])
            return firms.join(latest, "company_id").select("title", "headcount")
        """,
    ),
    Case(
        "WaleedChughtai-106/AI-Powered-E-Commerce-Recommendation-and-Customer-Analytics-System-Using-PySpark:"
        "backend/preprocessing/join_datasets.py:72",
        "SPX104",
        "dominant_payment",
        """
        from pyspark.sql import Window
        from pyspark.sql import functions as F


        def data(spark):
            rows = [(f"order{i % 40}", ("card", "voucher", "cash")[i % 3], 25.0) for i in range(160)]  # even splits
            return spark.createDataFrame(rows, "order_id string, kind string, amount double")


        def job(payments):
            biggest = Window.partitionBy("order_id").orderBy(F.col("amount").desc())
            ranked = payments.withColumn("n", F.row_number().over(biggest))
            return ranked.where("n = 1").select("order_id", "kind")
        """,
    ),
    # --- judged false ---
    Case(
        "LePhyX/pyspark-streaming-graph-platform:pipeline/graph.py:52",
        "SPX102",
        "seller_edges",
        """
        from pyspark.sql import functions as F


        def data(spark):
            return spark.createDataFrame([(f"shop{i % 9}", f"item{i % 13}") for i in range(300)], "src string, dst string")


        def job(sales):
            edges = sales.withColumn("relation", F.lit("OFFERS"))
            return edges.dropDuplicates(["src", "dst"])  # the only other column is a constant
        """,
    ),
    Case(
        "digital-land/pyspark-jobs:src/jobs/pipeline.py:1057",
        "SPX101",
        "organisation_name",
        """
        from pyspark.sql import functions as F


        def data(spark):
            return spark.createDataFrame([(i, f"org{i % 6}") for i in range(120)], "entry int, org string")


        def job(entries):
            names = entries.sparkSession.createDataFrame(
                [(f"org{o}", f"Council {o}") for o in range(6)], "org string, org_name string"
            )
            joined = entries.join(names.distinct(), "org")  # one name per organisation
            return joined.groupBy("org").agg(F.count("entry").alias("entries"), F.first("org_name").alias("name"))
        """,
    ),
    Case(
        "digital-land/pyspark-jobs:src/jobs/transform/task_transformer.py:115",
        "SPX101",
        "issue_severity",
        """
        from pyspark.sql import functions as F


        def data(spark):
            rows = [(f"set{i % 3}", f"res{i % 5}", ("missing", "invalid")[i % 2]) for i in range(200)]
            return spark.createDataFrame(rows, "dataset string, resource string, issue string")


        def job(issues):
            kinds = issues.sparkSession.createDataFrame(
                [("missing", "error"), ("invalid", "warning")], "issue string, severity string"
            )
            typed = issues.join(kinds, "issue")  # severity follows from the issue, a group key
            return typed.groupBy("dataset", "resource", "issue").agg(
                F.count("*").alias("n"), F.first("severity").alias("severity")
            )
        """,
    ),
    Case(
        "syedhassaanahmed/databricks-notebooks:machine_availability.py:87",
        "SPX101",
        "shift_hours",
        """
        from pyspark.sql import functions as F


        def data(spark):
            rows = [(f"line{i % 4}", ("day", "evening", "night")[i % 3], 6 + 8 * (i % 3)) for i in range(60)]
            return spark.createDataFrame(rows, "line string, shift string, start int")


        def job(runs):
            hours = runs.withColumn("hours", (F.col("start") + 8) - F.col("start"))  # every shift lasts 8
            return hours.groupBy("line").agg(F.first("hours").alias("hours"))
        """,
    ),
    Case(
        "ywzhang188/spark-learn:spark_dataframe/dataframe_udf.py:75",
        "SPX101",
        "count_of_a",
        """
        from pyspark.sql import functions as F
        from pyspark.sql.types import IntegerType


        @F.udf(IntegerType())
        def count_a(values):
            return sum(1 for value in values if value == "a")


        def data(spark):
            return spark.createDataFrame([(i % 6, "abc"[i % 3]) for i in range(120)], "key int, letter string")


        def job(letters):
            return letters.groupBy("key").agg(count_a(F.collect_list("letter")).alias("a_count"))
        """,
    ),
    Case(
        "wacko-professional/dec-final-project:silver/silver_customers.py:35",
        "SPX104",
        "customers_ranked_unused",
        """
        from pyspark.sql import Window
        from pyspark.sql import functions as F


        def data(spark):
            rows = [(f"c{i % 20}", 100 + i % 3, f"city{i}") for i in range(120)]
            return spark.createDataFrame(rows, "customer_id string, updated_at int, city string")


        def job(customers):
            newest = Window.partitionBy("customer_id").orderBy(F.col("updated_at").desc())
            ranked = customers.withColumn("row_num", F.row_number().over(newest))
            ranked.where("row_num = 1").count()  # looked at, never kept
            return customers.select("customer_id", "city")
        """,
    ),
    Case(
        "EbrahimAminiSharifi/pyspark-deduplication:soulutionOne.py:72",
        "SPX102",
        "linked_names",
        """
        from pyspark.sql import functions as F


        def data(spark):
            rows = [(i % 15, f"name{i % 15}", f"iban{i % 15}") for i in range(150)]
            return spark.createDataFrame(rows, "uid int, name string, iban string")


        def job(pairs):
            linked = pairs.groupBy("uid").agg(
                F.array_sort(F.collect_set("name")).alias("names"), F.array_sort(F.collect_set("iban")).alias("ibans")
            )
            return linked.dropDuplicates(["uid", "names", "ibans"])  # the subset is every column
        """,
    ),
    Case(
        "WaleedChughtai-106/AI-Powered-E-Commerce-Recommendation-and-Customer-Analytics-System-Using-PySpark:"
        "backend/preprocessing/clean_customers.py:40",
        "SPX102",
        "customers_by_key",
        """
        def data(spark):
            rows = [(f"c{i}", f"zip{i % 23}", f"town{i % 7}") for i in range(200)]  # the key is already unique
            return spark.createDataFrame(rows, "customer_id string, zip string, town string")


        def job(customers):
            return customers.dropDuplicates(["customer_id"])
        """,
    ),
    Case(
        "WaleedChughtai-106/AI-Powered-E-Commerce-Recommendation-and-Customer-Analytics-System-Using-PySpark:"
        "backend/preprocessing/feature_engineering.py:64",
        "SPX101",
        "order_total_paid",
        """
        from pyspark.sql import functions as F


        def data(spark):
            rows = [(f"o{i % 25}", f"cust{i % 25}", 10.0 + i % 4) for i in range(100)]
            return spark.createDataFrame(rows, "order_id string, customer string, paid double")


        def job(payments):
            per_order = payments.groupBy("order_id").agg(F.sum("paid").alias("order_total"))
            lines = payments.join(per_order, "order_id")  # one total per order, on every line
            return lines.groupBy("customer", "order_id").agg(F.first("order_total", True).alias("total"))
        """,
    ),
    Case(
        "digital-land/pyspark-jobs:src/jobs/transform/task_transformer.py:116",
        "SPX101",
        "issue_owner",
        """
        from pyspark.sql import functions as F


        def data(spark):
            rows = [(f"set{i % 4}", ("late", "wrong", "gone")[i % 3], i) for i in range(150)]
            return spark.createDataFrame(rows, "dataset string, issue string, line int")


        def job(issues):
            owners = issues.sparkSession.createDataFrame(
                [("late", "publisher"), ("wrong", "publisher"), ("gone", "platform")], "issue string, owner string"
            )
            owned = issues.join(owners, "issue")  # one owner per issue kind, a group key
            return owned.groupBy("dataset", "issue").agg(F.max("line").alias("last"), F.first("owner").alias("owner"))
        """,
    ),
    Case(
        "andyweaves/databricks-notebooks:common/privacy_functions.py:123",
        "SPX105",
        "fake_names_by_partition",
        """
        from pyspark.sql import functions as F


        def fake(frame):
            frame["alias"] = "user_" + frame["id"].astype(str)
            return frame[["id", "alias"]]


        def data(spark):
            return spark.range(200)


        def job(ids):
            # The partition id only batches rows for a row-wise function, which drops it.
            return ids.groupBy(F.spark_partition_id()).applyInPandas(fake, "id long, alias string")
        """,
    ),
)

TEST_HEAD = """
import json
from pathlib import Path

from jobs import {modules}

HERE = Path(__file__).parent


def first_seen(name, value):
    path = HERE / "seen" / f"{{name}}.json"
    path.parent.mkdir(exist_ok=True)
    if not path.exists():
        path.write_text(json.dumps(value))
    return json.loads(path.read_text())


def rows_of(result):
    rows = result.collect() if hasattr(result, "collect") else result
    return sorted(repr(tuple(row)) if isinstance(row, tuple) else repr(row) for row in rows)
"""

TEST_CASE = """

def test_{name}(spark):
    rows = rows_of({name}.job({name}.data(spark)))
    assert rows == first_seen("{name}", rows)
"""


def manifest() -> dict[str, dict]:
    """The judged cases by `repo:path:line` (notebook cells, which no case here models, left out)."""
    cases = json.loads(MANIFEST.read_text("utf-8"))
    return {f"{c['repo']}:{c['path']}:{c['line']}": c for c in cases if "cell" not in c}


def build(project: Path) -> None:
    jobs = project / "jobs"
    jobs.mkdir(parents=True)
    (jobs / "__init__.py").write_text("")
    for case in CASES:
        (jobs / f"{case.name}.py").write_text(textwrap.dedent(case.job).lstrip())
    tests = project / "tests"
    tests.mkdir()
    text = TEST_HEAD.format(modules=", ".join(c.name for c in CASES))
    (tests / "test_jobs.py").write_text(text + "".join(TEST_CASE.format(name=c.name) for c in CASES))
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["."]\n')


def run(project: Path, command: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    print("$ " + " ".join(command), flush=True)
    start = time.monotonic()
    done = subprocess.run(command, cwd=project, capture_output=True, text=True, check=False)
    return time.monotonic() - start, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8, help="perturbed runs per reached test (default 8)")
    parser.add_argument("--budget", type=float, default=60.0, help="seconds of perturbed runs per test (default 60)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="build the project here and keep it")
    args = parser.parse_args()
    judged = manifest()
    project = args.keep or Path(tempfile.mkdtemp(prefix="sparkpar-corpus-"))
    build(project)
    bin_dir = Path(sys.executable).parent
    _, linted = run(project, [str(bin_dir / "sparkpar"), "lint", "--no-cache", "--format", "json", "jobs/"])
    findings: dict[str, list[dict]] = {}
    for finding in json.loads(linted.stdout or "[]"):
        findings.setdefault(Path(finding["path"]).stem, []).append(finding)
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--sparkpar-confirm"]
    pytest += [f"--sparkpar-runs={args.runs}", f"--sparkpar-budget={args.budget:g}", f"--sparkpar-seed={args.seed}"]
    seconds, audited = run(project, pytest)
    verdicts_file = project / ".sparkpar" / "verdicts.json"
    entries = json.loads(verdicts_file.read_text())["verdicts"].values() if verdicts_file.exists() else []
    by_job: dict[str, list[dict]] = {}
    for entry in entries:
        by_job.setdefault(Path(entry["path"]).stem, []).append(entry)
    tally = {"TP": [0, 0, 0], "FP": [0, 0, 0]}  # modelled, reported by lint, confirmed (TP) or cleared (FP)
    print(f"\n{'case':58} {'manifest':8} {'lint':20} plugin")
    for case in CASES:
        verdict = judged.get(case.case, {}).get("verdict", "missing")
        found = [f for f in findings.get(case.name, []) if f["rule"] == case.rule]
        lint = ", ".join(f"{f['rule']} ({f.get('confidence', '?')})" for f in found) or f"no {case.rule}"
        kept = sorted(e["verdict"] for e in by_job.get(case.name, []) if e["rule"] == case.rule)
        print(f"{case.name:24} {case.case[:33]:33} {verdict:8} {lint:20} {', '.join(kept) or '-'}")
        if verdict in tally:
            wanted = "confirmed" if verdict == "TP" else "not-reproduced"
            counts = tally[verdict]
            counts[0] += 1
            counts[1] += bool(found)
            counts[2] += bool(kept) and all(k == wanted for k in kept)
    print()
    for verdict, done in (("TP", "confirmed"), ("FP", "cleared (not reproduced)")):
        modelled, reported, right = tally[verdict]
        print(
            f"{'true' if verdict == 'TP' else 'false'} findings {done}: {right}/{reported} that lint reports "
            f"({modelled} modelled, {modelled - reported} not reported by lint)"
        )
    lines = audited.stdout.splitlines()
    summary = [line for line in lines if re.match(r"sparkpar: (\d+ lint finding|audited)", line)] + lines[-1:]
    print("\n".join(summary) if len(summary) > 1 else audited.stdout[-3000:])
    print(f"--sparkpar-confirm wall time: {seconds:.1f} s")
    if args.keep is None:
        import shutil

        shutil.rmtree(project)


if __name__ == "__main__":
    main()
