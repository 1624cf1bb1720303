"""How many of the fixtures' bad jobs does `pytest --sparkpar-confirm` confirm, and does it ever
confirm a finding on a fixed twin? What does the directed audit cost against the plain suite?

    python bench/confirm_fixtures.py [--runs N] [--seed S] [--keep DIR]

Builds a throwaway project: every runnable fixture (`INPUTS` and `def job`) copied into a `jobs`
package, and one ordinary test per job that runs it on the `spark` fixture's session and compares
its rows with what its first run as written returned (as a team's snapshot test would). Then runs
the real pytest twice: plain, and with `--sparkpar-confirm`, and reads the verdicts file.

Printed: per fixture, the verdicts of its findings; the share of bad jobs with a confirmed
finding of the rule its `# expect:` marker names; findings confirmed on fixed twins; both
suites' wall time. Figures only: nothing here asserts anything.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
EXPECT = re.compile(r"(?:#|--)\s*expect:\s*(SPX\d{3}(?:\s*,\s*SPX\d{3})*)")

TEST_HEAD = """
import json
from pathlib import Path

from pyspark.sql import SparkSession

SparkSession.builder.getOrCreate()  # some jobs build a Window at import, which needs a context

from jobs import {modules}  # noqa: E402

HERE = Path(__file__).parent


def first_seen(name, value):
    path = HERE / "seen" / f"{{name}}.json"
    path.parent.mkdir(exist_ok=True)
    if not path.exists():
        path.write_text(json.dumps(value))
    return json.loads(path.read_text())


def rows_of(module, spark):
    schema = getattr(module, "SCHEMA", {{}})
    frames = {{name: spark.createDataFrame(list(rows), schema.get(name)) for name, rows in module.INPUTS.items()}}
    for name, frame in frames.items():
        frame.createOrReplaceTempView(name)
    result = module.job(spark, **frames)
    # An RDD job may return bare values (an RDD of ids), a DataFrame job Rows, a driver job a list.
    rows = [repr(tuple(row)) if isinstance(row, tuple) else repr(row)
            for row in (result.collect() if hasattr(result, "collect") else result)]
    return rows if getattr(module, "OUTPUT", "bag") == "sequence" else sorted(rows)
"""

TEST_CASE = """

def test_{name}(spark):
    rows = rows_of({name}, spark)
    assert rows == first_seen("{name}", rows)
"""


def runnable(path: Path) -> bool:
    text = path.read_text("utf-8")
    # Jobs that write to a fixed path outside the project would share it between the two suites.
    return "INPUTS" in text and "def job(" in text and '"path":' not in text


def build(project: Path) -> dict[str, Path]:
    jobs = project / "jobs"
    jobs.mkdir(parents=True)
    (jobs / "__init__.py").write_text("")
    names = {}
    for path in sorted(FIXTURES.rglob("*.py")):
        if path.name.startswith(("bad_", "fixed_")) and runnable(path):
            name = f"{path.parent.name}_{path.stem}"
            shutil.copy(path, jobs / f"{name}.py")
            names[name] = path
    tests = project / "tests"
    tests.mkdir()
    text = TEST_HEAD.format(modules=", ".join(names)) + "".join(TEST_CASE.format(name=n) for n in names)
    (tests / "test_jobs.py").write_text(text)
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["."]\n')
    return names


def pytest_run(project: Path, *args: str) -> tuple[float, str]:
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    return time.monotonic() - start, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="perturbed runs per reached test (default 10)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="build the project here and keep it")
    args = parser.parse_args()
    project = args.keep or Path(tempfile.mkdtemp(prefix="sparkpar-confirm-"))
    names = build(project)
    plain, _ = pytest_run(project)
    shutil.rmtree(project / "tests" / "seen")  # what the runs as written saw: each suite records its own
    confirm, out = pytest_run(
        project, "--sparkpar-confirm", f"--sparkpar-runs={args.runs}", f"--sparkpar-seed={args.seed}"
    )
    verdicts = json.loads((project / ".sparkpar" / "verdicts.json").read_text())["verdicts"].values()
    by_job: dict[str, list[dict]] = {}
    for entry in verdicts:
        by_job.setdefault(Path(entry["path"]).stem, []).append(entry)
    bad_total = bad_confirmed = fixed_confirmed = 0
    for name, source in names.items():
        entries = by_job.get(name, [])
        expected = {rule for found in EXPECT.findall(source.read_text("utf-8")) for rule in re.split(r"\s*,\s*", found)}
        shown = ", ".join(f"{e['rule']}:{e['line']} {e['verdict']}" for e in sorted(entries, key=lambda e: e["line"]))
        print(f"{name:60} {shown or 'no findings'}")
        if source.name.startswith("bad_"):
            bad_total += 1
            bad_confirmed += any(e["verdict"] == "confirmed" and e["rule"] in expected for e in entries)
        else:
            fixed_confirmed += sum(e["verdict"] == "confirmed" for e in entries)
    kinds = Counter(e["verdict"] for e in verdicts)
    print()
    print(
        f"bad jobs with the expected finding confirmed: {bad_confirmed}/{bad_total} = {bad_confirmed / bad_total:.0%}"
    )
    print(f"findings confirmed on fixed twins: {fixed_confirmed}")
    print(f"all verdicts: {dict(kinds)}")
    print(
        f"plain suite {plain:.1f} s; --sparkpar-confirm {confirm:.1f} s ({confirm / plain:.2f}x), {args.runs} runs per reached test"
    )
    print(next((line for line in out.splitlines() if line.startswith("sparkpar: audited")), ""))
    if args.keep is None:
        shutil.rmtree(project)


if __name__ == "__main__":
    main()
