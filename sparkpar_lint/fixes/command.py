"""`sparkpar fix`: apply the fixes attached to findings, safely by default."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

import click

from sparkpar_lint.command_input import fail, file_timeout_option, follow_links_option
from sparkpar_lint.edits.model import Fix
from sparkpar_lint.fixes.diff_text import guard_workflow_commands, unified_diff
from sparkpar_lint.fixes.proofs import echo_proofs, load, verdicts_option
from sparkpar_lint.model import ExitStatus
from sparkpar_lint.output.escape import visible
from sparkpar_lint.selection import check_selection, comma_list


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
    paths,
    unsafe_fixes,
    show_diff,
    check,
    select,
    ignore,
    summary_path,
    exclude,
    show_unfixed,
    changed_since,
    config_path,
    follow_links,
    file_timeout,
    verdicts_path,
):
    """Rewrite PATHS so their results no longer depend on partitioning."""
    from sparkpar_lint.cli import _load_config, _rule_classes, _with_cli_excludes
    from sparkpar_lint.discovery import NotASourceFile, describe_read_error, discover, read_source_bytes
    from sparkpar_lint.fixes.files import NotFixed, checked_roots, encoding_of, real_target, write_in_place
    from sparkpar_lint.fixes.summary import render_summary
    from sparkpar_lint.fixes.unfixed import unfixed_lines
    from sparkpar_lint.output.concise import location
    from sparkpar_lint.runner import analysis_settings, effective_rules, rules_for_file
    from sparkpar_lint.sources import is_notebook

    rules = {rule.id: rule for rule in _rule_classes()}
    config = _with_cli_excludes(_load_config(config_path, list(rules)), exclude, follow_links)
    check_selection(select, ignore, list(rules))
    rule_ids = effective_rules(config, rules, select, ignore or ())
    settings = analysis_settings(config, None)
    known = load(verdicts_path or config.verdicts)
    if summary_path is not None and not summary_path.parent.is_dir():
        # Checked before any file is rewritten, so a typo does not cost the summary of a real run.
        fail(f"{summary_path}: cannot write the summary: no directory {summary_path.parent}")
    found = discover(paths, config.exclude, config.root, config.include, config.follow_links)
    if changed_since is not None:
        from sparkpar_lint.changed import ChangedSinceError, affected, changed_files

        try:
            found.files = affected(found.files, changed_files(changed_since))
        except ChangedSinceError as error:
            fail(str(error))
    roots = checked_roots(paths)
    errors = list(found.errors)
    warnings = list(found.warnings)
    outcomes = []
    pending = []
    for path in found.files:
        try:
            data = read_source_bytes(path)
            notebook = is_notebook(path, data)
            encoding = "utf-8" if notebook else encoding_of(data)
            source = data.decode(encoding)
        except (OSError, NotASourceFile) as error:
            errors.append(describe_read_error(path, error))
            continue
        except (SyntaxError, UnicodeDecodeError, LookupError) as error:
            errors.append(f"{path}: cannot read: {error}")
            continue
        if "spark" not in source.lower() and not notebook:
            continue
        job_rules = rules_for_file(path, config, rule_ids)
        pending.append(_FixJob(path, data, encoding, source, notebook, job_rules, unsafe_fixes, settings))
    for job, outcome in _fix_all(pending, file_timeout):
        path, data, encoding = job.path, job.data, job.encoding
        if isinstance(outcome, str):
            errors.append(outcome)
            continue
        outcomes.append(outcome)
        if outcome.unparsable is not None:  # lint reports it as SPX901; here it is said once
            warnings.append(f"{location(outcome.unparsable)}: {outcome.unparsable.message}; the file was not fixed")
        if show_unfixed:
            for line in unfixed_lines(outcome, rules, unsafe_fixes):
                click.echo(visible(line))
        if not outcome.changed:
            continue
        if show_diff:
            diff, escaped = unified_diff(outcome.original, outcome.fixed, path)
            click.echo(guard_workflow_commands(diff), nl=False)
            if escaped:
                warnings.append(
                    f"{path}: the diff shows control characters of the code as visible symbols, so it will not apply as a patch"
                )
        elif not check:
            try:
                write_in_place(real_target(path, roots), outcome.fixed, encoding, expected=data)
            except NotFixed as problem:
                # A link out of the tree is skipped on purpose; anything else lost an edit.
                (warnings if "outside the checked tree" in str(problem) else errors).append(f"{path}: {problem}")
                outcome.fixed = outcome.original
            except OSError as error:
                errors.append(f"{path}: cannot write: {error.strerror or error}")
                outcome.fixed = outcome.original
    changed = [o for o in outcomes if o.changed]
    for message in warnings:
        click.echo(f"sparkpar: warning: {visible(message)}", err=True)
    for message in errors:
        click.echo(f"sparkpar: error: {visible(message)}", err=True)
    fixes = sum(len(o.applied) for o in changed)
    verb = "Would fix" if (check or show_diff) else "Fixed"
    click.echo(
        f"{verb} {fixes} finding{'s' if fixes != 1 else ''} in {len(changed)} file{'s' if len(changed) != 1 else ''}.",
        err=True,
    )
    echo_proofs(known, outcomes, config.root)
    if summary_path is not None:
        try:
            summary_path.write_text(render_summary(outcomes, rules), encoding="utf-8")
        except OSError as error:
            errors.append(f"{summary_path}: cannot write the summary: {error.strerror or error}")
            click.echo(f"sparkpar: error: {visible(errors[-1])}", err=True)
    if errors:
        sys.exit(ExitStatus.ERROR)
    sys.exit(ExitStatus.FINDINGS if check and changed else ExitStatus.CLEAN)


@dataclasses.dataclass(frozen=True)
class _FixJob:
    path: str
    data: bytes
    encoding: str
    source: str
    notebook: bool
    rule_ids: frozenset
    unsafe: bool
    settings: object  # settings.AnalysisSettings: what the configuration tells the rules


def _fix_all(jobs: list[_FixJob], timeout: float | None):
    """(job, outcome or one error line) per job, in the order given. Each file is fixed in a worker
    process (isolation.py), so a file that crashes or stalls the parser, or runs past its time or
    memory budget, costs that file; files are written here, by the parent, never by a worker."""
    from sparkpar_lint.isolation import Failure, map_isolated

    workers = min(os.cpu_count() or 1, max(1, len(jobs) // 4))
    done = {}
    for job, outcome in map_isolated(_fix_one, jobs, workers, timeout or None, consequence="the file was not fixed"):
        done[job.path] = f"{job.path}: {outcome}" if isinstance(outcome, Failure) else outcome
    return [(job, done[job.path]) for job in jobs]


def _fix_one(job: _FixJob):
    """In the worker: the file's FixOutcome (its fixes reduced to what the report needs, as the
    CST nodes they rewrite stay here), or one error line."""
    from sparkpar_lint.fixes.engine import fix_source
    from sparkpar_lint.fixes.notebook import fix_notebook
    from sparkpar_lint.parsing import with_deep_stack
    from sparkpar_lint.sources.notebook import NotebookError

    try:
        if job.notebook:
            outcome = with_deep_stack(
                fix_notebook, job.path, job.source, job.rule_ids, unsafe=job.unsafe, settings=job.settings
            )
        else:
            outcome = with_deep_stack(
                fix_source, job.path, job.source, job.rule_ids, unsafe=job.unsafe, settings=job.settings
            )
    except NotebookError as error:
        return str(error)
    except Exception as error:  # one file's internal error must not stop the others
        return f"{job.path}: internal error: {type(error).__name__}: {error}"
    for findings in (outcome.applied, outcome.remaining):
        findings[:] = [_portable(f) for f in findings]
    return outcome


def _portable(finding):
    if isinstance(finding.fix, Fix):
        return dataclasses.replace(finding, fix=dataclasses.replace(finding.fix, replacements=(), imports=()))
    return finding
