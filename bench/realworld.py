"""How does sparkpar do on code nobody here wrote? Recall and precision on the judged corpus.

    python bench/realworld.py SNAPSHOT_DIR [--split dev|test|all] [--fix] [--json]
                              [--cases FILE] [--snapshots FILE]

SNAPSHOT_DIR holds one extracted snapshot per repository of the manifest, as
SNAPSHOT_DIR/<owner>+<name>/ (see the README's development section for how to rebuild it). The
manifest is `bench/realworld/cases.json` (judged cases) and `bench/realworld/snapshots.json`
(repo + commit). The real `sparkpar lint --format json --no-cache` runs once per repository on
every file the manifest names; its findings are matched to the cases (same file, the finding's
first line within the case's lines, the same notebook cell when both carry one, and the rule the
case names or expects).

Each repository falls in a fixed split: `test` when the SHA-256 of its name is divisible by 3,
else `dev` (about a third in `test`). Rules are designed from `dev` cases only; `test` cases are
scored, never read while designing. The per-rule table and the case listings cover `--split`
(default `dev`); a summary always gives all, dev, test and each batch of `snapshots.json`.

Printed per rule and overall:
- real problems (TP and FN cases, by `expected_rule`), how many sparkpar reports now, recall;
- judged cases reported now: true (TP/FN cases), false (FP cases), debatable, and
  precision = true / (true + false), and beside it with debatable counted as false;
then the misses, the false positives still reported, and the findings no case judges; then the
summary per split and batch, per confidence level when the findings carry one, and per repository
(findings, judged false, debatable), flagging a repository with more than 10 findings of which most
are false or debatable.
`--fix` also runs `sparkpar fix --unsafe-fixes` on a copy of those files and reports files that no
longer parse, fixes that are not idempotent, findings left by rule and fixable findings left.
Figures only: nothing here asserts anything.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REAL = ("TP", "FN")
BATCH = 400  # files per sparkpar run: keeps command lines well under the OS limit
SPLITS = ("dev", "test")
CONFIDENCES = ("high", "medium", "low")  # best first
CROWDED = 10  # more findings than this in one repository, most of them false: a user gives up


def split(repo: str) -> str:
    """The fixed split of REPO: never changes, so a test case is never seen while designing."""
    return "test" if int(hashlib.sha256(repo.encode("utf-8")).hexdigest(), 16) % 3 == 0 else "dev"


@dataclass
class Measured:
    """Everything one lint pass over the manifest's files produced."""

    findings: list[dict] = field(default_factory=list)  # each with "repo" added
    errors: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # repos without a snapshot directory


def snapshot_dir(root: Path, repo: str) -> Path:
    return root / repo.replace("/", "+")


def sparkpar_command() -> list[str]:
    """The `sparkpar` installed beside this interpreter, else the one on PATH."""
    beside = Path(sys.executable).parent / "sparkpar"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("sparkpar")
    if found is None:
        sys.exit("realworld: error: no `sparkpar` command beside this Python or on PATH")
    return [found]


def run_sparkpar(args: list[str], cwd: Path, files: list[str], config: Path) -> list[tuple]:
    """Run `sparkpar ARGS --config CONFIG FILES` in batches; (returncode, stdout, stderr) each."""
    results = []
    for start in range(0, len(files), BATCH):
        batch = files[start : start + BATCH]
        done = subprocess.run(
            [*sparkpar_command(), *args, "--config", str(config), "--", *batch],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "NO_COLOR": "1"},
        )
        results.append((done.returncode, done.stdout, done.stderr))
    return results


def files_by_repo(cases: list[dict]) -> dict[str, list[str]]:
    by_repo: dict[str, set[str]] = {}
    for case in cases:
        by_repo.setdefault(case["repo"], set()).add(case["path"])
    return {repo: sorted(paths) for repo, paths in sorted(by_repo.items())}


def lint(root: Path, by_repo: dict[str, list[str]], config: Path) -> Measured:
    measured = Measured()
    for repo, paths in by_repo.items():
        base = snapshot_dir(root, repo)
        if not base.is_dir():
            measured.missing.append(repo)
            continue
        present = [p for p in paths if (base / p).is_file()]
        measured.errors += [f"{repo}: {p}: not in the snapshot" for p in paths if p not in present]
        if not present:
            continue
        # Every finding, whatever the default shows: the figures are given per confidence.
        lint = ["lint", "--format", "json", "--no-cache", "--min-confidence", "low"]
        for code, out, err in run_sparkpar(lint, base, present, config):
            measured.errors += [f"{repo}: {line}" for line in err.splitlines() if line.strip()]
            try:
                findings = json.loads(out) if out.strip() else []
            except json.JSONDecodeError:
                measured.errors.append(f"{repo}: sparkpar exited {code} without JSON output")
                continue
            for finding in findings:
                finding["repo"] = repo
                finding["path"] = Path(finding["path"]).as_posix()
                measured.findings.append(finding)
    return measured


def case_rules(case: dict) -> set[str]:
    return {rule for rule in (case.get("rule"), case.get("expected_rule")) if rule}


def matches(case: dict, finding: dict) -> bool:
    """Same file, first line in the case's lines, same cell when both know one, a rule it names."""
    if (case["repo"], case["path"]) != (finding["repo"], finding["path"]):
        return False
    if finding["rule"] not in case_rules(case):
        return False
    if "cell" in case and "cell" in finding and case["cell"] != finding["cell"]:
        return False
    return case["line"] <= finding["line"] <= case.get("end_line", case["line"])


def ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def score(cases: list[dict], findings: list[dict]) -> dict:
    """Per-rule and overall figures, plus the cases and findings worth listing."""
    reported_by: list[list[dict]] = [[f for f in findings if matches(c, f)] for c in cases]
    judged_ids = {id(f) for hits in reported_by for f in hits}
    rows: dict[str, Counter] = {}

    def row(rule: str) -> Counter:
        return rows.setdefault(rule, Counter())

    misses, false_positives = [], []
    for case, hits in zip(cases, reported_by):
        verdict = case["verdict"]
        if verdict in REAL:
            expected = case.get("expected_rule") or case.get("rule")
            found = bool(hits)
            for key in (expected, "ALL"):
                row(key)["real"] += 1
                row(key)["found"] += found
            if not found:
                misses.append(case)
        for rule in sorted({f["rule"] for f in hits}) + (["ALL"] if hits else []):
            kind = {"TP": "true", "FN": "true", "FP": "false"}.get(verdict, "debatable")
            row(rule)[kind] += 1
        if verdict == "FP" and hits:
            false_positives.append(case)
    for finding in findings:
        if id(finding) not in judged_ids:
            row(finding["rule"])["unjudged"] += 1
            row("ALL")["unjudged"] += 1
    figures = {}
    for rule in sorted(rows, key=lambda r: (r == "ALL", r)):
        c = rows[rule]
        figures[rule] = {
            "real": c["real"],
            "found": c["found"],
            "recall": ratio(c["found"], c["real"]),
            "true": c["true"],
            "false": c["false"],
            "debatable": c["debatable"],
            "precision": ratio(c["true"], c["true"] + c["false"]),
            "precision_debatable_false": ratio(c["true"], c["true"] + c["false"] + c["debatable"]),
            "unjudged": c["unjudged"],
        }
    unjudged = [f for f in findings if id(f) not in judged_ids]
    return {"rules": figures, "misses": misses, "false_positives": false_positives, "unjudged": unjudged}


ROW = "{:<8}{:>6}{:>7}{:>8}{:>6}{:>7}{:>11}{:>11}{:>11}{:>10}"


def where(item: dict) -> str:
    cell = f" cell {item['cell']}" if "cell" in item else ""
    return f"{item['repo']} {item['path']}:{item['line']}{cell}"


def percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def print_report(cases: list[dict], measured: Measured, result: dict) -> None:
    repos = {c["repo"] for c in cases}
    files = {(c["repo"], c["path"]) for c in cases}
    print(f"cases: {len(cases)}  repos: {len(repos)}  files: {len(files)}  findings now: {len(measured.findings)}")
    for repo in measured.missing:
        print(f"snapshot missing (its cases count as not found): {repo}")
    print()
    header = ("rule", "real", "found", "recall", "true", "false", "debatable", "precision", "deb=false", "unjudged")
    print(ROW.format(*header))
    for rule, f in result["rules"].items():
        print(
            ROW.format(
                rule,
                f["real"],
                f["found"],
                percent(f["recall"]),
                f["true"],
                f["false"],
                f["debatable"],
                percent(f["precision"]),
                percent(f["precision_debatable_false"]),
                f["unjudged"],
            )
        )
    print(
        "\nreal = TP+FN cases expecting that rule; found = reported now; true/false/debatable ="
        " judged cases reported now\nby that rule; precision = true / (true + false); deb=false ="
        " true / (true + false + debatable);\nunjudged = findings now that no case judges."
    )
    print(f"\nMisses: real problems not reported now ({len(result['misses'])})")
    for case in result["misses"]:
        print(
            f"  {where(case)}  {case.get('expected_rule') or case.get('rule')}  "
            f"[{case.get('kind', '?')}] {case['reason']}"
        )
    print(f"\nFalse positives still reported ({len(result['false_positives'])})")
    for case in result["false_positives"]:
        print(f"  {where(case)}  {case['rule']}  {case['reason']}")
    print(f"\nUnjudged findings in the manifest's files ({len(result['unjudged'])})")
    for finding in result["unjudged"]:
        print(f"  {where(finding)}  {finding['rule']}  {finding['message'][:100]}")
    if measured.errors:
        print(f"\nErrors and warnings from sparkpar ({len(measured.errors)})")
        for line in measured.errors:
            print(f"  {line}")


# --- summary: splits, batches, confidence, repositories ------------------------------------------


def overall(cases: list[dict], findings: list[dict]) -> dict:
    """The ALL row of `score` for CASES, from the findings in their repositories."""
    repos = {c["repo"] for c in cases}
    none = {"real": 0, "found": 0, "recall": None, "true": 0, "false": 0, "debatable": 0}
    none |= {"precision": None, "precision_debatable_false": None}
    return {
        **none,
        **score(cases, [f for f in findings if f["repo"] in repos])["rules"].get("ALL", {}),
        "cases": len(cases),
    }


def at_least(finding: dict, level: str) -> bool:
    """FINDING's confidence is LEVEL or better (a finding without one counts as the lowest)."""
    rank = CONFIDENCES.index(finding["confidence"]) if finding.get("confidence") in CONFIDENCES else len(CONFIDENCES)
    return rank <= CONFIDENCES.index(level)


def per_repo(cases: list[dict], findings: list[dict]) -> dict[str, Counter]:
    """Findings now per repository, and how many of them a FP or debatable case judges."""
    rows: dict[str, Counter] = {c["repo"]: Counter() for c in cases}
    for finding in findings:
        verdicts = {c["verdict"] for c in cases if matches(c, finding)}
        row = rows.setdefault(finding["repo"], Counter())
        row["findings"] += 1
        if verdicts & set(REAL) or "TP" in verdicts:
            row["true"] += 1
        elif "FP" in verdicts:
            row["false"] += 1
        elif verdicts:
            row["debatable"] += 1
    return rows


def crowded(row: Counter) -> bool:
    return row["findings"] > CROWDED and 2 * (row["false"] + row["debatable"]) > row["findings"]


def summary(cases: list[dict], findings: list[dict], batches: dict[str, str]) -> dict:
    """Figures for all cases, each split, each batch, each confidence level; findings per repo."""
    groups: dict[str, list[dict]] = {"all": cases}
    for name in SPLITS:
        groups[name] = [c for c in cases if split(c["repo"]) == name]
    for batch in sorted(set(batches.values())):
        members = [c for c in cases if batches.get(c["repo"]) == batch]
        groups[f"batch {batch}"] = members
        for name in SPLITS:
            groups[f"batch {batch} {name}"] = [c for c in members if split(c["repo"]) == name]
    repos = per_repo(cases, findings)
    figures = {}
    for name, members in groups.items():
        names = {c["repo"] for c in members}
        counts = [repos[r]["findings"] for r in names]
        figures[name] = {
            **overall(members, findings),
            "repos": len(names),
            "max_findings_per_repo": max(counts, default=0),
            "crowded_repos": sorted(r for r in names if crowded(repos[r])),
        }
    confidence = {}
    if any("confidence" in f for f in findings):
        for level in CONFIDENCES:
            confidence[level] = overall(cases, [f for f in findings if f.get("confidence") == level])
        for level in CONFIDENCES[:2]:
            for name in groups:  # each split and each batch: the default must hold on fresh code
                confidence[f">= {level} {name}"] = overall(groups[name], [f for f in findings if at_least(f, level)])
    return {"groups": figures, "confidence": confidence, "repos": {r: dict(c) for r, c in sorted(repos.items())}}


SUMMARY_ROW = "{:<26}{:>6}{:>6}{:>6}{:>7}{:>8}{:>6}{:>7}{:>11}{:>11}{:>11}{:>10}"


def print_summary(result: dict) -> None:
    header = ("cases", "repos", "real", "found", "recall", "true", "false", "debatable", "precision", "deb=false")
    print("\n--- all, dev, test and per batch (every case, whatever --split) ---")
    print(SUMMARY_ROW.format("", *header, "max/repo"))
    for name, f in result["groups"].items():
        print(SUMMARY_ROW.format(name, *summary_cells(f), f["max_findings_per_repo"]))
    print("max/repo = most findings now in one repository's judged files.")
    if result["confidence"]:
        print("\n--- per confidence of the findings (a case counts under each level that reports it) ---")
        print(SUMMARY_ROW.format("confidence", *header, ""))
        for name, f in result["confidence"].items():
            print(SUMMARY_ROW.format(name, *summary_cells(f), ""))
    print(f"\n--- per repository: findings now, judged true / false / debatable ({len(result['repos'])}) ---")
    for repo, row in sorted(result["repos"].items(), key=lambda item: (-item[1].get("findings", 0), item[0])):
        flag = "  <- more than 10, most false or debatable" if crowded(Counter(row)) else ""
        print(
            f"  {row.get('findings', 0):>4} {row.get('true', 0):>4} {row.get('false', 0):>4}"
            f" {row.get('debatable', 0):>4}  [{split(repo)}] {repo}{flag}"
        )


def summary_cells(f: dict) -> list:
    return [
        f["cases"],
        f.get("repos", ""),
        f["real"],
        f["found"],
        percent(f["recall"]),
        f["true"],
        f["false"],
        f["debatable"],
        percent(f["precision"]),
        percent(f["precision_debatable_false"]),
    ]


# --- --fix ---------------------------------------------------------------------------------------


def parseable(path: Path) -> frozenset | None:
    """What of PATH Python can parse: {0} for a whole .py file, the code cells of a notebook.

    None when the file is unreadable (or a notebook's JSON is broken). Notebook lines that are
    IPython magics or shell escapes are blanked first: they never parsed as Python.
    """
    try:
        text = path.read_bytes()
        if path.suffix != ".ipynb":
            ast.parse(text)
            return frozenset({0})
    except (SyntaxError, ValueError, OSError):
        return frozenset()
    try:
        cells = json.loads(text)["cells"]
    except (ValueError, KeyError, TypeError):
        return None
    good = set()
    for index, cell in enumerate(cells, start=1):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        if source.lstrip().startswith("%%"):
            continue
        lines = ["" if line.lstrip()[:1] in ("%", "!") else line for line in source.splitlines()]
        try:
            ast.parse("\n".join(lines))
            good.add(index)
        except (SyntaxError, ValueError):
            pass
    return frozenset(good)


def fix_report(root: Path, by_repo: dict[str, list[str]], config: Path, before: Measured) -> dict:
    report = {
        "changed": [],
        "broken": [],
        "not_idempotent": [],
        "errors": [],
        "before": Counter(f["rule"] for f in before.findings),
        "after": Counter(),
        "fixable_left": [],
    }
    with tempfile.TemporaryDirectory(prefix="realworld-fix-") as tmp:
        for repo, paths in by_repo.items():
            source, copy = snapshot_dir(root, repo), snapshot_dir(Path(tmp), repo)
            paths = [p for p in paths if (source / p).is_file()]
            if not paths:
                continue
            for p in paths:
                (copy / p).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source / p, copy / p)
            fix_args = ["fix", "--unsafe-fixes"]
            for _code, _out, err in run_sparkpar(fix_args, copy, paths, config):
                report["errors"] += [
                    f"{repo}: {line}" for line in err.splitlines() if line.startswith("sparkpar: error")
                ]
            once = {p: (copy / p).read_bytes() for p in paths}
            for p in paths:
                if once[p] == (source / p).read_bytes():
                    continue
                report["changed"].append(f"{repo} {p}")
                was, now = parseable(source / p), parseable(copy / p)
                if was and (now is None or not was <= now):
                    report["broken"].append(f"{repo} {p}")
            for _code, _out, err in run_sparkpar(fix_args, copy, paths, config):
                report["errors"] += [
                    f"{repo}: second run: {line}" for line in err.splitlines() if line.startswith("sparkpar: error")
                ]
            report["not_idempotent"] += [f"{repo} {p}" for p in paths if (copy / p).read_bytes() != once[p]]
            after = lint(Path(tmp), {repo: paths}, config)
            report["errors"] += after.errors
            for finding in after.findings:
                report["after"][finding["rule"]] += 1
                if finding.get("fix"):
                    report["fixable_left"].append(finding)
    return report


def print_fix_report(report: dict) -> None:
    print("\n--- sparkpar fix --unsafe-fixes on a copy ---")
    print(f"files changed: {len(report['changed'])}")
    for title, key in (
        ("files that no longer parse", "broken"),
        ("fixes that are not idempotent (a second run changed the file)", "not_idempotent"),
    ):
        print(f"{title}: {len(report[key])}")
        for item in report[key]:
            print(f"  {item}")
    rules = sorted(set(report["before"]) | set(report["after"]))
    print("findings by rule, before -> after fixing:")
    for rule in rules:
        print(f"  {rule}: {report['before'][rule]} -> {report['after'][rule]}")
    from sparkpar_lint.rules import all_rules

    offering = {rule.id for rule in all_rules() if rule.fix_safety}
    before = sum(n for rule, n in report["before"].items() if rule in offering)
    after = sum(n for rule, n in report["after"].items() if rule in offering)
    if before:
        print(
            f"findings of rules that offer a fix: {before} -> {after}, "
            f"fixed {before - after} ({(before - after) / before:.0%})"
        )
    print(f"findings left that carry a fix: {len(report['fixable_left'])}")
    for finding in report["fixable_left"]:
        print(f"  {where(finding)}  {finding['rule']} ({finding['fix']})")
    if report["errors"]:
        print(f"errors from sparkpar fix ({len(report['errors'])})")
        for line in report["errors"]:
            print(f"  {line}")


# --- main ----------------------------------------------------------------------------------------


def load_list(path: Path) -> list[dict]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        sys.exit(f"realworld: error: {path}: {error}")
    if not isinstance(data, list):
        sys.exit(f"realworld: error: {path}: expected a JSON list")
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("snapshots_dir", type=Path, metavar="SNAPSHOT_DIR")
    parser.add_argument("--cases", type=Path, default=HERE / "realworld" / "cases.json")
    parser.add_argument("--snapshots", type=Path, default=HERE / "realworld" / "snapshots.json")
    parser.add_argument("--fix", action="store_true", help="also measure sparkpar fix on a copy")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--split",
        choices=("dev", "test", "all"),
        default="dev",
        help="cases the per-rule table and the listings cover (default dev: test cases are never read)",
    )
    parser.add_argument("--batch", help="only the cases of this batch of snapshots.json (e.g. fresh-1)")
    args = parser.parse_args(argv)
    if not args.snapshots_dir.is_dir():
        parser.error(f"{args.snapshots_dir}: not a directory")
    cases = load_list(args.cases)
    snapshots = load_list(args.snapshots)
    commits = {s["repo"]: s["commit"] for s in snapshots}
    batches = {s["repo"]: s.get("batch", "corpus") for s in snapshots}
    unknown = sorted({c["repo"] for c in cases} - set(commits))
    by_repo = files_by_repo(cases)
    chosen = [
        c for c in cases if args.split in ("all", split(c["repo"])) and args.batch in (None, batches.get(c["repo"]))
    ]
    with tempfile.TemporaryDirectory(prefix="realworld-config-") as tmp:
        config = Path(tmp) / "sparkpar.toml"  # empty: defaults, whatever the snapshots carry
        config.write_text("", encoding="utf-8")
        measured = lint(args.snapshots_dir, by_repo, config)
        overview = summary(cases, measured.findings, batches)
        shown = {c["repo"] for c in chosen}
        measured_chosen = Measured(
            findings=[f for f in measured.findings if f["repo"] in shown],
            errors=measured.errors,
            missing=[r for r in measured.missing if r in shown],
        )
        result = score(chosen, measured_chosen.findings)
        fixed = fix_report(args.snapshots_dir, by_repo, config, measured) if args.fix else None
    if args.json:
        out = {
            **result,
            "split": args.split,
            "batch": args.batch,
            "summary": overview,
            "cases": len(chosen),
            "repos": len(shown),
            "errors": measured.errors,
            "missing_snapshots": measured.missing,
            "repos_without_commit": unknown,
        }
        if fixed is not None:
            out["fix"] = fixed
        print(json.dumps(out, indent=2, default=dict))
        return 0
    print(f"split: {args.split}" + (f"  batch: {args.batch}" if args.batch else ""))
    print_report(chosen, measured_chosen, result)
    print_summary(overview)
    if unknown:
        print(f"\nrepos with cases but not in the snapshot list: {', '.join(unknown)}")
    if fixed is not None:
        print_fix_report(fixed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
