"""`sparkpar fix`: apply the fixes attached to findings, safely by default.

Files are found, read, decoded and isolated the way `lint` does it (runner.py), so every input
lint takes is taken here with the same messages and exit codes; only the writing is fix's own."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Collection, Iterable, Iterator, Sequence
from pathlib import Path

import click

from sparkpar_lint.changed import ChangedSinceError
from sparkpar_lint.command_input import fail, file_timeout_option, follow_links_option, load_command_config
from sparkpar_lint.config import Config
from sparkpar_lint.decoding import DecodeError, decode_file
from sparkpar_lint.edits.model import Fix
from sparkpar_lint.fixes.diff_text import guard_workflow_commands, unified_diff
from sparkpar_lint.fixes.engine import FixOutcome, fix_source
from sparkpar_lint.fixes.files import NotFixed, OutsideTree, checked_roots, real_target, write_in_place
from sparkpar_lint.fixes.notebook import fix_notebook_file
from sparkpar_lint.fixes.proofs import echo_proofs, load, verdicts_option
from sparkpar_lint.fixes.summary import render_summary
from sparkpar_lint.fixes.unfixed import unfixed_lines
from sparkpar_lint.isolation import Failure, map_isolated
from sparkpar_lint.model import ExitStatus, Finding
from sparkpar_lint.output.concise import location
from sparkpar_lint.output.escape import visible
from sparkpar_lint.parsing import with_deep_stack
from sparkpar_lint.rules import all_rules
from sparkpar_lint.rules.base import Rule
from sparkpar_lint.runner import (
    Unreadable,
    analysis_settings,
    effective_rules,
    find_files,
    read_input,
    rules_for_file,
    worth_analysing,
)
from sparkpar_lint.selection import check_selection, comma_list
from sparkpar_lint.settings import AnalysisSettings
from sparkpar_lint.sources import is_notebook
from sparkpar_lint.sources.notebook import NotebookError


@dataclasses.dataclass(frozen=True)
class _Mode:
    """What the run does with a fixed file: write it, show its diff, or only say it would change."""

    unsafe: bool
    show_diff: bool
    check: bool
    show_unfixed: bool


@dataclasses.dataclass
class _Report:
    """Lines for stderr, in lint's words, and the outcome of every file fixed."""

    errors: list[str]
    warnings: list[str]
    outcomes: list[FixOutcome] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class _FixJob:
    path: str
    data: bytes
    notebook: bool
    encoding: str  # the file's, to write it back in
    rule_ids: frozenset[str]
    unsafe: bool
    settings: AnalysisSettings


@dataclasses.dataclass(frozen=True)
class _Failed:
    """A file the worker could not fix; the message names it, in one line."""

    message: str


@click.command("fix")
@click.argument("paths", nargs=-1, required=True)
@click.option("--unsafe-fixes", is_flag=True, help="Also apply fixes that make a choice (a key, a delay).")
@click.option("--diff", "show_diff", is_flag=True, help="Print a unified diff; write nothing.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if any file would change.")
@click.option("--select", callback=comma_list, help="Comma list of rule ids or prefixes to fix.")
@click.option("--ignore", callback=comma_list, help="Comma list of rule ids or prefixes not to fix.")
@click.option(
    "--summary",
    "summary_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write a Markdown summary for a pull-request body.",
)
@click.option("--exclude", multiple=True, help="Glob of paths to skip (repeatable), as for `lint`.")
@click.option("--show-unfixed", is_flag=True, help="Print one line per finding left unfixed, saying why.")
@click.option(
    "--changed-since",
    metavar="REF",
    help="Fix only files changed since git REF's merge base, and the files depending on them, as for `lint`.",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Settings file (default: nearest pyproject.toml with [tool.sparkpar]).",
)
@follow_links_option
@file_timeout_option
@verdicts_option
def fix(
    paths: tuple[str, ...],
    unsafe_fixes: bool,
    show_diff: bool,
    check: bool,
    select: list[str] | None,
    ignore: list[str] | None,
    summary_path: Path | None,
    exclude: tuple[str, ...],
    show_unfixed: bool,
    changed_since: str | None,
    config_path: Path | None,
    follow_links: bool,
    file_timeout: float | None,
    verdicts_path: Path | None,
) -> None:
    """Rewrite PATHS so their results no longer depend on partitioning."""
    try:
        _fix(
            paths,
            _Mode(unsafe_fixes, show_diff, check, show_unfixed),
            select,
            ignore,
            summary_path,
            exclude,
            changed_since,
            config_path,
            follow_links,
            file_timeout,
            verdicts_path,
        )
    except (click.ClickException, click.exceptions.Exit, click.Abort):
        raise
    except Exception as error:  # a bug of ours: one line naming it, never a traceback, as in lint
        fail(f"internal error: {type(error).__name__}: {error}")


def _fix(
    paths: tuple[str, ...],
    mode: _Mode,
    select: list[str] | None,
    ignore: list[str] | None,
    summary_path: Path | None,
    exclude: tuple[str, ...],
    changed_since: str | None,
    config_path: Path | None,
    follow_links: bool,
    file_timeout: float | None,
    verdicts_path: Path | None,
) -> None:
    rules = {rule.id: rule for rule in all_rules()}
    config = load_command_config(config_path, list(rules), exclude, follow_links)
    check_selection(select, ignore, list(rules))
    rule_ids = effective_rules(config, rules, select, ignore or ())
    known = load(verdicts_path or config.verdicts)
    if summary_path is not None and not summary_path.parent.is_dir():
        # Checked before any file is rewritten, so a typo does not cost the summary of a real run.
        fail(f"{summary_path}: cannot write the summary: no directory {summary_path.parent}")
    try:
        found = find_files(paths, config, changed_since)
    except ChangedSinceError as error:
        fail(str(error))
    report = _Report(list(found.errors), list(found.warnings))
    settings = analysis_settings(config, None)
    jobs = list(_jobs(found.files, config, rule_ids, mode, settings, report))
    roots = checked_roots(paths)
    for job, outcome in _fix_all(jobs, file_timeout):
        if isinstance(outcome, _Failed):
            report.errors.append(outcome.message)
        else:
            _take(job, outcome, mode, rules, roots, report)
    _finish(report, mode)
    echo_proofs(known, report.outcomes, config.root)
    if summary_path is not None:
        _write_summary(summary_path, report, rules)
    if report.errors:
        sys.exit(ExitStatus.ERROR)
    changed = any(o.changed for o in report.outcomes)
    sys.exit(ExitStatus.FINDINGS if mode.check and changed else ExitStatus.CLEAN)


def _jobs(
    files: Iterable[str],
    config: Config,
    rule_ids: Collection[str],
    mode: _Mode,
    settings: AnalysisSettings,
    report: _Report,
) -> Iterator[_FixJob]:
    """A job per file lint would analyse; files lint cannot read or decode are errors, as in lint."""
    for path in files:
        try:
            data = read_input(path)
            if not worth_analysing(path, data):
                continue
            notebook = is_notebook(path, data)
            # A notebook's cells are read from its bytes in the worker, as lint reads them.
            encoding = "utf-8" if notebook else decode_file(path, data)[1]
        except (Unreadable, DecodeError) as error:
            report.errors.append(str(error))
            continue
        file_rules = frozenset(rules_for_file(path, config, rule_ids))
        yield _FixJob(path, data, notebook, encoding, file_rules, mode.unsafe, settings)


def _take(
    job: _FixJob, outcome: FixOutcome, mode: _Mode, rules: dict[str, type[Rule]], roots: list[str], report: _Report
) -> None:
    """Report one file's outcome and show or write its fixed text."""
    report.outcomes.append(outcome)
    if outcome.unparsable is not None:  # lint reports it as SPX901; here it is said once
        report.warnings.append(f"{location(outcome.unparsable)}: {outcome.unparsable.message}; the file was not fixed")
    if mode.show_unfixed:
        for line in unfixed_lines(outcome, rules, mode.unsafe):
            click.echo(visible(line))
    if not outcome.changed:
        return
    if mode.show_diff:
        diff, escaped = unified_diff(outcome.original, outcome.fixed, job.path)
        click.echo(guard_workflow_commands(diff), nl=False)
        if escaped:
            report.warnings.append(
                f"{job.path}: the diff shows control characters of the code as visible symbols, so it will not apply as a patch"
            )
    elif not mode.check:
        _write(job, outcome, roots, report)


def _write(job: _FixJob, outcome: FixOutcome, roots: list[str], report: _Report) -> None:
    """Write the fixed text over the file; a file left as it was counts as not fixed."""
    try:
        write_in_place(real_target(job.path, roots), outcome.fixed, job.encoding, expected=job.data)
        return
    except OutsideTree as skipped:  # a link out of the tree is skipped on purpose
        report.warnings.append(f"{job.path}: {skipped}")
    except NotFixed as problem:  # anything else lost an edit
        report.errors.append(f"{job.path}: {problem}")
    except OSError as error:
        report.errors.append(f"{job.path}: cannot write: {error.strerror or error}")
    outcome.fixed = outcome.original


def _finish(report: _Report, mode: _Mode) -> None:
    """Warnings, errors and the count on stderr."""
    changed = [o for o in report.outcomes if o.changed]
    for message in report.warnings:
        click.echo(f"sparkpar: warning: {visible(message)}", err=True)
    for message in report.errors:
        click.echo(f"sparkpar: error: {visible(message)}", err=True)
    fixes = sum(len(o.applied) for o in changed)
    verb = "Would fix" if (mode.check or mode.show_diff) else "Fixed"
    click.echo(
        f"{verb} {fixes} finding{'s' if fixes != 1 else ''} in {len(changed)} file{'s' if len(changed) != 1 else ''}.",
        err=True,
    )


def _write_summary(summary_path: Path, report: _Report, rules: dict[str, type[Rule]]) -> None:
    try:
        summary_path.write_text(render_summary(report.outcomes, rules), encoding="utf-8")
    except OSError as error:
        report.errors.append(f"{summary_path}: cannot write the summary: {error.strerror or error}")
        click.echo(f"sparkpar: error: {visible(report.errors[-1])}", err=True)


def _fix_all(jobs: Sequence[_FixJob], timeout: float | None) -> list[tuple[_FixJob, FixOutcome | _Failed]]:
    """(job, outcome) per job, in the order given. Each file is fixed in a worker process
    (isolation.py), as lint analyses it, so a file that crashes or stalls the parser, or runs past
    its time or memory budget, costs that file; files are written here, by the parent, never by a
    worker."""
    workers = min(os.cpu_count() or 1, max(1, len(jobs) // 4))
    done: dict[str, FixOutcome | _Failed] = {}
    for job, outcome in map_isolated(_fix_one, jobs, workers, timeout or None, consequence="the file was not fixed"):
        done[job.path] = _Failed(f"{job.path}: {outcome}") if isinstance(outcome, Failure) else outcome
    return [(job, done[job.path]) for job in jobs]


def _fix_one(job: _FixJob) -> FixOutcome | _Failed:
    """In the worker: the file's FixOutcome (its fixes reduced to what the report needs, as the
    CST nodes they rewrite stay here), or why it could not be fixed."""
    try:
        outcome = with_deep_stack(_fixed, job)
    except (NotebookError, DecodeError) as error:
        return _Failed(str(error))
    except RecursionError:
        return _Failed(f"{job.path}: internal error: nesting too deep to analyse")
    except Exception as error:  # one file's internal error must not stop the others
        return _Failed(f"{job.path}: internal error: {type(error).__name__}: {error}")
    for findings in (outcome.applied, outcome.remaining):
        findings[:] = [_portable(f) for f in findings]
    return outcome


def _fixed(job: _FixJob) -> FixOutcome:
    if job.notebook:
        return fix_notebook_file(job.path, job.data, job.rule_ids, job.unsafe, job.settings)
    source, _ = decode_file(job.path, job.data)
    return fix_source(job.path, source, job.rule_ids, unsafe=job.unsafe, settings=job.settings)


def _portable(finding: Finding) -> Finding:
    if isinstance(finding.fix, Fix):
        return dataclasses.replace(finding, fix=dataclasses.replace(finding.fix, replacements=(), imports=()))
    return finding
