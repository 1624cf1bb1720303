"""The plan's advice that `sparkpar fix --select SPX4` applies: the job's SPX4xx findings that
carry a fix, as advice lines naming the command.

Only rewrites that need no profile are fixes: those that take a serial stretch apart along a key
the job already uses (SPX402: `coalesce(1)`/`repartition(1)` in front of per-key work becomes
`repartition("key")`, with the order kept per key; SPX401: a window without `partitionBy` is
partitioned by the key its rows are already hash-partitioned or later grouped by). A partition
count, in `repartition(n, ...)` or `spark.sql.shuffle.partitions`, stays advice: its value comes
from a profile and a calibration that `fix` cannot see, a keyed `repartition` in front of an
aggregation trades away its map-side partial aggregation, and a stateful streaming query keeps
the count recorded in its checkpoint whatever the code says.
"""

from __future__ import annotations

import shlex

import libcst as cst

from sparkpar_lint.analysis import analyze_module
from sparkpar_lint.edits.model import UNSAFE, Fix
from sparkpar_lint.suppressions import apply_suppressions

PLAN_RULES = ("SPX401", "SPX402")


def fix_advice(path: str, source: str, module: cst.Module) -> tuple[str, ...]:
    findings = apply_suppressions(analyze_module(path, source, module, PLAN_RULES), source)
    advice = []
    for finding in findings:
        if not isinstance(finding.fix, Fix) or finding.rule_id not in PLAN_RULES:  # a Fix or None
            continue
        flag = " --unsafe-fixes" if finding.fix.safety == UNSAFE else ""
        advice.append(
            f"line {finding.span.line}: {finding.fix.description} ({finding.rule_id}); a rewrite that "
            f"needs no profile: `sparkpar fix --select {finding.rule_id}{flag} {shlex.quote(path)}` makes it"
        )
    return tuple(advice)
