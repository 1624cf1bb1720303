"""The proof of every fix on Spark: the fixed bad fixture gives one answer under every
interleaving, and it is the answer the original job gives under its sequential semantics
(up to a one-to-one renaming of an id column, where the fixture says the fix derives ids anew).

An unsafe fix (applied only with --unsafe-fixes) promises less: one answer under every
interleaving, and an answer the original job already gives, either its sequential answer or
one observed in its own runs: the permuted runs, and the sequential semantics with the rows
arriving sorted by the whole row (ascending and descending), or by one of their columns first,
orders an unordered input can come in;
or the answer of the fixture's hand-written fixed twin, which is one the original can give (a
random tie-break replaced by the selected columns picks among so many answers that a few runs
of the original would not show it); or, for a pick whose rows follow partition arrival (a limit
after an aggregation), as many rows as the original keeps, drawn from the rows the fixture's
`rows_picked_from` says it picks from.

A fix that numbers rows at the source (`_sparkpar_seq`) promises the sequential answer for the
rows in the order the source holds them; its runs keep that order and vary the partitioning.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("pyspark")

from spark_harness import is_runnable, load_job, run  # noqa: E402
from sparkpar_lint.analysis import analyze_module  # noqa: E402
from sparkpar_lint.edits.model import UNSAFE  # noqa: E402
from sparkpar_lint.fixes.engine import fix_source, fixable  # noqa: E402
from sparkpar_lint.parsing import parse_module  # noqa: E402
from sparkpar_lint.rules import all_rules  # noqa: E402
from sparkpar_lint.rules.fixers.sequence import SEQUENCE_COLUMN  # noqa: E402
from sparkpar_lint.suppressions import apply_suppressions  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
RUNS = 6
RULE_IDS = {rule.id for rule in all_rules()}


def _fixable_bad_fixtures() -> list[Path]:
    """The runnable bad fixtures with a finding `fix --unsafe-fixes` would apply. Read from one
    analysis, not by applying the fixes: every pytest process collects this module, the fast lane
    too, and applying them all took most of the suite's collection time. A fix that is offered
    but then rejected (it would not compile) leaves the job as it was, and its proof fails."""
    paths = []
    for path in sorted(FIXTURES.rglob("bad_*.py")):
        if not is_runnable(path):
            continue
        source = path.read_text("utf-8")
        findings = analyze_module(str(path), source, parse_module(source), RULE_IDS)
        if any(fixable(f, unsafe=True) for f in apply_suppressions(findings, source)):
            paths.append(path)
    return paths


FIXABLE = _fixable_bad_fixtures()


def test_some_bad_fixture_is_fixable():
    assert FIXABLE


@pytest.mark.spark
@pytest.mark.parametrize("path", FIXABLE, ids=[str(p.relative_to(FIXTURES)) for p in FIXABLE])
def test_fixed_job_gives_the_sequential_answer_of_the_original(cluster_spark, path: Path, tmp_path: Path):
    fixed = tmp_path / path.name
    outcome = fix_source(str(path), path.read_text("utf-8"), RULE_IDS, unsafe=True)
    fixed.write_text(outcome.fixed, "utf-8")
    original = load_job(path)
    expected = run(cluster_spark, original, None)
    fixed_job = load_job(fixed)
    renamed = getattr(original, "FIX_RENAMES_COLUMN", None)
    if SEQUENCE_COLUMN in outcome.fixed:
        # A sequence number promises the answer for the rows in the order the source holds them
        # (the sequential answer), under any partitioning: the source keeps its order, the
        # partition counts vary.
        outputs = [run(cluster_spark, fixed_job, seed, source_order=True) for seed in [None, *range(RUNS)]]
        assert all(output == expected for output in outputs)
        return
    outputs = [run(cluster_spark, fixed_job, seed) for seed in [None, *range(RUNS)]]
    if renamed is None and outputs[0] != expected and any(f.fix.safety == UNSAFE for f in outcome.applied):
        assert all(output == outputs[0] for output in outputs)
        observed = [run(cluster_spark, original, seed) for seed in range(RUNS)]
        observed += [run(cluster_spark, original, None, arrival) for arrival in ("ascending", "descending")]
        twin = path.with_name(path.name.replace("bad_", "fixed_", 1))
        if outputs[0] not in observed and twin.is_file():
            observed.append(run(cluster_spark, load_job(twin), None))
        if outputs[0] not in observed and hasattr(original, "rows_picked_from"):
            # A pick from rows in no order (a limit after an aggregation): any as many of them.
            pool = run(cluster_spark, SimpleNamespace(**{**vars(original), "job": original.rows_picked_from}), None)
            if len(outputs[0]) == len(expected) and not Counter(outputs[0]) - Counter(pool):
                observed.append(outputs[0])
        if outputs[0] not in observed:
            # Rows sorted by one of their columns (a table written sorted by it): how a fix that
            # orders by the values a function reads picks one of the original's answers.
            columns = sorted(
                {c for rows in original.INPUTS.values() for row in rows if isinstance(row, dict) for c in row}
            )
            observed += [
                run(cluster_spark, original, None, arrival, arrival_columns=(column,))
                for column in columns
                for arrival in ("ascending", "descending")
            ]
        assert outputs[0] in observed
    elif renamed is None:
        assert all(output == expected for output in outputs)
    else:
        assert all(output == outputs[0] for output in outputs)
        assert _same_up_to_renaming(outputs[0], expected, renamed)


def _same_up_to_renaming(rows: list, expected: list, column: int) -> bool:
    """Equal but for a one-to-one renaming of the values in `column` (ids a fix derives anew)."""

    def rest(row):
        return row[:column] + row[column + 1 :]

    rows, expected = sorted(rows, key=lambda r: repr(rest(r))), sorted(expected, key=lambda r: repr(rest(r)))
    if len(rows) != len(expected) or any(rest(a) != rest(b) for a, b in zip(rows, expected)):
        return False
    forward, backward = {}, {}
    for a, b in zip(rows, expected):
        if (
            forward.setdefault(a[column], b[column]) != b[column]
            or backward.setdefault(b[column], a[column]) != a[column]
        ):
            return False
    return True
