"""Share of fixable findings that `sparkpar fix --unsafe-fixes` fixes, over a folder of Python
files (the fixtures) or the Python files of the judged corpus, with the checks every fix owes:
the fixed file parses, a second run changes nothing, no builtin becomes a Spark function, no line
the fix adds is longer than the file's longest line or 100 characters.

A finding counts as fixable when its rule offers a fix (`fix_safety`); it counts as fixed when
the fixer applied a fix for it. Each finding left is listed with `--show-unfixed`'s reason.
On the corpus it also splits the figure by the manifest's verdict on each finding (true, false,
debatable): a fix for a false finding is no help to anyone.
Prints figures; asserts nothing.

    python bench/fix_coverage.py fixtures
    python bench/fix_coverage.py --corpus /work/snapshots [--cases bench/realworld/cases.json]
"""

from __future__ import annotations

import argparse
import builtins
import json
import re
from collections import Counter
from pathlib import Path

from sparkpar_lint.fixes.engine import fix_source
from sparkpar_lint.fixes.unfixed import why_unfixed
from sparkpar_lint.rules import all_rules

_BY_NAME = re.compile(r"from pyspark\.sql\.functions import \(?([^\n)]+)")


def corpus_cases(root: Path, cases: Path) -> tuple[list[Path], dict[str, list[tuple[int, int, set, str]]]]:
    """The corpus's Python files, and per file its judged cases as (first line, last line, rules,
    truth), matched as bench/realworld.py matches them. A case judged FN is a real problem the
    linter once missed, so a finding there is true too."""
    data = json.loads(cases.read_text(encoding="utf-8"))
    data = data["cases"] if isinstance(data, dict) else data
    judged: dict[str, list[tuple[int, int, set, str]]] = {}
    for case in data:
        path = str(root / case["repo"].replace("/", "+") / case["path"])
        rules = {rule for rule in (case.get("rule"), case.get("expected_rule")) if rule}
        truth = {"TP": "true", "FN": "true", "FP": "false"}.get(case["verdict"], "debatable")
        judged.setdefault(path, []).append((case["line"], case.get("end_line", case["line"]), rules, truth))
    paths = {Path(path) for path in judged if path.endswith(".py")}
    return sorted(p for p in paths if p.is_file()), judged


def truth_of(judged: dict, path: Path, finding) -> str:
    for first, last, rules, truth in judged.get(str(path), ()):
        if finding.rule_id in rules and first <= finding.span.line <= last:
            return truth
    return "unjudged"


def shadowed_builtins(original: str, fixed: str) -> list[str]:
    """Builtin names the fix imported from pyspark.sql.functions that the original did not."""

    def imported(code: str) -> set[str]:
        return {n for m in _BY_NAME.finditer(code) for n in re.split(r"[,\s]+", m.group(1)) if n}

    return sorted(n for n in imported(fixed) - imported(original) if n in dir(builtins))


def lines_too_long(original: str, fixed: str) -> list[str]:
    """Lines the fix added that are longer than the original's longest line or 100 characters,
    whichever is larger (issue #14's limit)."""
    old = original.splitlines()
    limit = max(100, max(map(len, old), default=0))
    return [line for line in set(fixed.splitlines()) - set(old) if len(line) > limit]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, help="a folder of .py files (e.g. fixtures)")
    parser.add_argument("--corpus", type=Path, help="the snapshots folder of bench/realworld.py")
    parser.add_argument("--cases", type=Path, default=Path(__file__).parent / "realworld" / "cases.json")
    parser.add_argument("--quiet", action="store_true", help="figures only, no unfixed findings")
    args = parser.parse_args()
    judged: dict = {}
    if args.corpus:
        paths, judged = corpus_cases(args.corpus, args.cases)
    elif args.folder:
        paths = sorted(args.folder.rglob("*.py"))
    else:
        parser.error("give a folder or --corpus")
    rules = {rule.id: rule for rule in all_rules()}
    offered, fixed, left = Counter(), Counter(), []
    by_truth: dict[str, Counter] = {}  # corpus: verdict -> fixed / offered
    broken, not_idempotent, shadowed, too_long = [], [], [], []
    for path in paths:
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        outcome = fix_source(str(path), source, set(rules), unsafe=True)
        for finding in outcome.applied:
            offered[finding.rule_id] += 1
            fixed[finding.rule_id] += 1
            truth = truth_of(judged, path, finding)
            by_truth.setdefault(truth, Counter()).update(("offered", "fixed"))
        for finding in outcome.remaining:
            rule = rules.get(finding.rule_id)
            if rule is not None and rule.fix_safety:
                offered[finding.rule_id] += 1
                truth = truth_of(judged, path, finding)
                by_truth.setdefault(truth, Counter()).update(("offered",))
                rejected = (finding.rule_id, finding.span.line, finding.span.column) in outcome.rejected
                left.append(
                    f"{path}:{finding.span.line}: {finding.rule_id} {why_unfixed(finding, rule, True, rejected)}"
                )
        if not outcome.changed:
            continue
        try:
            compile(outcome.fixed, str(path), "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            broken.append(str(path))
        if fix_source(str(path), outcome.fixed, set(rules), unsafe=True).fixed != outcome.fixed:
            not_idempotent.append(str(path))
        shadowed += [f"{path}: {name}" for name in shadowed_builtins(source, outcome.fixed)]
        too_long += [f"{path}: {line.strip()[:80]}" for line in lines_too_long(source, outcome.fixed)]
    total_fixed, total = sum(fixed.values()), sum(offered.values())
    print(f"files: {len(paths)}")
    for rule_id in sorted(offered):
        print(f"  {rule_id}: {fixed[rule_id]}/{offered[rule_id]}")
    print(f"fixed: {total_fixed}/{total} = {total_fixed / total:.0%}" if total else "fixed: no fixable finding")
    if judged:
        for truth in ("true", "false", "debatable", "unjudged"):
            if truth in by_truth:
                done, of = by_truth[truth]["fixed"], by_truth[truth]["offered"]
                print(f"  of findings judged {truth}: {done}/{of} = {done / of:.0%}")
    for title, items in (
        ("no longer parse", broken),
        ("not idempotent", not_idempotent),
        ("builtins shadowed", shadowed),
        ("new lines longer than the file's longest line or 100 characters", too_long),
    ):
        print(f"{title}: {len(items)}")
        for item in items:
            print(f"  {item}")
    if not args.quiet:
        print("left unfixed:")
        for line in left:
            print(f"  {line}")


if __name__ == "__main__":
    main()
