"""What the team's own tests said about each finding: `pytest --sparkpar-confirm` writes a verdicts
file, `sparkpar lint --verdicts` (or the `verdicts` setting, which the editor reads too) puts each
verdict on its finding. Entries are keyed by the finding's fingerprint (sparkpar_lint.fingerprints),
so they survive edits above the line. Paths in them are relative to the project root: pytest's
rootdir on one side, the directory of the `[tool.sparkpar]` settings (else the working directory)
on the other; in a repository with one pyproject.toml these are the same.

A verdict never hides a finding: a confirmed one says which test and seed showed it and takes the
highest confidence (SARIF precision `very-high`), one not reproduced says how it was tried and
drops a confidence level, one unreached says that no test executes it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sparkpar_lint.fingerprints import finding_fingerprints
from sparkpar_lint.model import Finding, Links
from sparkpar_lint.sources.notebook import cell_key

VERSION = 1
CONFIRMED = "confirmed"  # a test that reached only this finding failed with the job's rows changed
IMPLICATED = "implicated"  # such a test failed, but it reached other findings too
NOT_REPRODUCED = "not-reproduced"  # tests reached it; every targeted run gave the same answer
UNREACHED = "unreached"  # no test executes its line
KINDS = (CONFIRMED, IMPLICATED, NOT_REPRODUCED, UNREACHED)
DEFAULT_PATH = Path(".sparkpar") / "verdicts.json"


class VerdictsError(Exception):
    """The verdicts file cannot be used; the message names it and says why."""


@dataclass(frozen=True)
class Verdict:
    verdict: str
    tests: tuple[str, ...] = ()
    runs: int = 0
    seed: int | None = None
    perturbations: tuple[str, ...] = ()
    replay: str | None = None

    def describe(self) -> str:
        """The clause a finding's message ends with."""
        tests = ", ".join(f"`{test}`" for test in self.tests[:3]) + (" and others" if len(self.tests) > 3 else "")
        if self.verdict == CONFIRMED:
            return f"confirmed by test {tests} with seed {self.seed} (replay: {self.replay})"
        if self.verdict == IMPLICATED:
            return f"test {tests} failed under perturbation with seed {self.seed}, but it reaches other findings too"
        if self.verdict == NOT_REPRODUCED:
            tried = ", ".join(self.perturbations) or "perturbed runs"
            return f"not reproduced: {self.runs} targeted runs ({tried}) of {tests} gave the answer as written"
        return "no test executes this line (pytest --sparkpar-confirm)"


def relative(path: str, root: Path) -> str:
    """`path` as the verdicts file keys it: relative to `root` when under it, with / separators."""
    try:
        inside = os.path.relpath(os.path.abspath(path), root.resolve())
    except ValueError:  # another drive
        return path
    return path if inside.startswith("..") else Path(inside).as_posix()


def keys(findings: Sequence[Finding], sources: Mapping[str, str], root: Path) -> list[str]:
    """Each finding's verdict key: its fingerprint with the path made `relative` to `root`."""
    moved = [replace(finding, path=relative(finding.path, root)) for finding in findings]
    texts = {
        cell_key(new.path, new.cell): sources[old_key]
        for old, new in zip(findings, moved)
        if (old_key := cell_key(old.path, old.cell)) in sources
    }
    prints = finding_fingerprints(moved, texts)
    return [prints[id(finding)] for finding in moved]


def load(path: Path) -> dict[str, Verdict]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except OSError as error:
        raise VerdictsError(f"{path}: cannot read the verdicts file: {error.strerror or error}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise VerdictsError(f"{path}: not a verdicts file (invalid JSON: {error})") from None
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("verdicts"), dict):
        raise VerdictsError(f'{path}: not a verdicts file (expected {{"version": {VERSION}, "verdicts": {{...}}}})')
    return {key: _verdict(path, key, entry) for key, entry in data["verdicts"].items()}


def _verdict(path: Path, key: str, entry: Any) -> Verdict:
    def bad(what: str) -> VerdictsError:
        return VerdictsError(f"{path}: verdict {key!r}: {what}")

    if not isinstance(entry, dict) or entry.get("verdict") not in KINDS:
        raise bad(f"`verdict` must be one of {', '.join(KINDS)}")
    tests, perturbations = entry.get("tests", []), entry.get("perturbations", [])
    if not (isinstance(tests, list) and all(isinstance(t, str) for t in tests)):
        raise bad("`tests` must be a list of test ids")
    if not (isinstance(perturbations, list) and all(isinstance(p, str) for p in perturbations)):
        raise bad("`perturbations` must be a list of strings")
    runs, seed, replay = entry.get("runs", 0), entry.get("seed"), entry.get("replay")
    if type(runs) is not int or runs < 0 or (seed is not None and type(seed) is not int):
        raise bad("`runs` and `seed` must be whole numbers")
    if replay is not None and not isinstance(replay, str):
        raise bad("`replay` must be a command line")
    return Verdict(entry["verdict"], tuple(tests), runs, seed, tuple(perturbations), replay)


def apply(
    findings: Sequence[Finding], sources: Mapping[str, str], verdicts: Mapping[str, Verdict], root: Path
) -> list[Finding]:
    """`findings` with each verdict's clause on its message and its kind in `verdict`."""
    if not verdicts:
        return list(findings)
    out = []
    for finding, key in zip(findings, keys(findings, sources, root)):
        verdict = verdicts.get(key)
        if verdict is not None:
            message = f"{finding.message} [{verdict.describe()}]"
            finding = replace(finding, message=message, verdict=verdict.verdict, links=_links(finding.links, verdict))
        out.append(finding)
    return out


def _links(links: Links, verdict: Verdict) -> Links:
    """A confirmed finding has every link shown by a test; one the targeted runs did not reproduce
    loses one established link (its confidence drops a level); the others keep theirs."""
    if verdict.verdict == CONFIRMED:
        return Links()
    if verdict.verdict != NOT_REPRODUCED:
        return links
    why = f"the {verdict.runs} targeted runs missed what made it differ"
    if links.outcomes:
        return replace(links, outcomes=False, assumed=(*links.assumed, why))
    return replace(links, observed=False, assumed=(*links.assumed, why))


def dump(path: Path, verdicts: Mapping[str, dict[str, Any]]) -> None:
    """Write the file whole, atomically: a reader never sees half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps({"version": VERSION, "verdicts": verdicts}, indent=2, sort_keys=True) + "\n", "utf-8")
    os.replace(partial, path)
