"""Share of fixable findings that `sparkpar fix --unsafe-fixes` fixes, over a folder of Python
files (the fixtures) or the Python files of the judged corpus, with the checks every fix owes:
the fixed file parses, a second run changes nothing, no builtin becomes a Spark function.

A finding counts as fixable when its rule offers a fix (`fix_safety`); it counts as fixed when
the fixer applied a fix for it. Each finding left is listed with `--show-unfixed`'s reason.
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


def corpus_files(root: Path, cases: Path) -> list[Path]:
    data = json.loads(cases.read_text(encoding="utf-8"))
    data = data["cases"] if isinstance(data, dict) else data
    paths = {root / c["repo"].replace("/", "+") / c["path"] for c in data if c["path"].endswith(".py")}
    return sorted(p for p in paths if p.is_file())


def shadowed_builtins(original: str, fixed: str) -> list[str]:
    """Builtin names the fix imported from pyspark.sql.functions that the original did not."""

    def imported(code: str) -> set[str]:
        return {n for m in _BY_NAME.finditer(code) for n in re.split(r"[,\s]+", m.group(1)) if n}

    return sorted(n for n in imported(fixed) - imported(original) if n in dir(builtins))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, help="a folder of .py files (e.g. fixtures)")
    parser.add_argument("--corpus", type=Path, help="the snapshots folder of bench/realworld.py")
    parser.add_argument("--cases", type=Path, default=Path(__file__).parent / "realworld" / "cases.json")
    parser.add_argument("--quiet", action="store_true", help="figures only, no unfixed findings")
    args = parser.parse_args()
    if args.corpus:
        paths = corpus_files(args.corpus, args.cases)
    elif args.folder:
        paths = sorted(args.folder.rglob("*.py"))
    else:
        parser.error("give a folder or --corpus")
    rules = {rule.id: rule for rule in all_rules()}
    offered, fixed, left = Counter(), Counter(), []
    broken, not_idempotent, shadowed = [], [], []
    for path in paths:
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        outcome = fix_source(str(path), source, set(rules), unsafe=True)
        for finding in outcome.applied:
            offered[finding.rule_id] += 1
            fixed[finding.rule_id] += 1
        for finding in outcome.remaining:
            rule = rules.get(finding.rule_id)
            if rule is not None and rule.fix_safety:
                offered[finding.rule_id] += 1
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
    total_fixed, total = sum(fixed.values()), sum(offered.values())
    print(f"files: {len(paths)}")
    for rule_id in sorted(offered):
        print(f"  {rule_id}: {fixed[rule_id]}/{offered[rule_id]}")
    print(f"fixed: {total_fixed}/{total} = {total_fixed / total:.0%}" if total else "fixed: no fixable finding")
    for title, items in (
        ("no longer parse", broken),
        ("not idempotent", not_idempotent),
        ("builtins shadowed", shadowed),
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
