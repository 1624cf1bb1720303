"""Which test proves a fix: with a verdicts file (`sparkpar fix --verdicts PATH` or the `verdicts`
setting), `sparkpar fix` ends with one line per fixed finding the team's tests had something to
say about (pytest --sparkpar-confirm). A confirmed one names the test that failed on it and the
command that re-runs it with the seed that showed it: passing now, it proves the fix. An
implicated one names the same command, which shows whether this fix was the one that test needed.
One no test executes says so: nothing proves that fix yet. One not reproduced gets no line: its
tests passed before the fix and prove nothing either way.

Findings are matched by fingerprint against the file as it was before fixing (outcome.original);
a finding fixed in a later pass sits at lines an earlier fix moved and may match nothing.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

import click

from sparkpar_lint import verdicts
from sparkpar_lint.command_input import fail
from sparkpar_lint.fixes.engine import FixOutcome
from sparkpar_lint.output.concise import location
from sparkpar_lint.output.escape import visible

verdicts_option = click.option(
    "--verdicts",
    "verdicts_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Verdicts file from `pytest --sparkpar-confirm`: name the test that proves each fix.",
)


def load(path: Path | None) -> dict[str, verdicts.Verdict]:
    """The verdicts of `path` (none without one); a bad file is one message and exit 2, before
    anything is rewritten."""
    if path is None:
        return {}
    try:
        return verdicts.load(path)
    except verdicts.VerdictsError as error:
        fail(str(error))


def echo_proofs(known: dict[str, verdicts.Verdict], outcomes: Sequence[FixOutcome], root: Path) -> None:
    for line in proof_lines(known, outcomes, root):
        click.echo(visible(line), err=True)


def proof_lines(known: dict[str, verdicts.Verdict], outcomes: Sequence[FixOutcome], root: Path) -> list[str]:
    lines = []
    for outcome in outcomes:
        if not (known and outcome.changed and outcome.applied):
            continue
        keys = verdicts.keys(outcome.applied, {outcome.path: outcome.original}, root)
        for finding, key in zip(outcome.applied, keys):
            verdict = known.get(key)
            said = _said(verdict) if verdict is not None else None
            if said is not None:
                lines.append(f"{location(finding)}: {finding.rule_id} {said}")
    return lines


def _said(verdict: verdicts.Verdict) -> str | None:
    if verdict.verdict == verdicts.UNREACHED:
        return "no test executes this line: nothing proves its fix yet"
    if verdict.verdict not in (verdicts.CONFIRMED, verdicts.IMPLICATED) or verdict.replay is None:
        return None
    command = _confirm_command(verdict.replay)
    if verdict.verdict == verdicts.CONFIRMED:
        return f"was confirmed by a test: re-run `{command}` to prove the fix"
    return f"was implicated by a failing test that reaches other findings too: re-run `{command}` to see whether this fix was the one it needed"


def _confirm_command(replay: str) -> str:
    """The replay command (the test, its seed, runs and master) as a directed audit: it checks the
    test again under the same perturbations and rewrites nothing but the verdicts."""
    try:
        args = shlex.split(replay)
    except ValueError:  # a hand-edited file: show what it holds
        return replay
    return shlex.join("--sparkpar-confirm" if arg == "--sparkpar-determinism" else arg for arg in args)
