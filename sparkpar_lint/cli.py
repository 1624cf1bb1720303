"""The `sparkpar` command line: lint, rules, explain, graph, plus plan and fix when installed."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sparkpar_lint.cache import CACHE_DIR_NAME
from sparkpar_lint.command_input import fail as _fail
from sparkpar_lint.command_input import file_timeout_option, follow_links_option, load_command_config
from sparkpar_lint.confidence_filter import hidden_note, min_confidence_option, split_by_confidence
from sparkpar_lint.model import Confidence, ExitStatus
from sparkpar_lint.output import FORMATS, renderer
from sparkpar_lint.output.escape import visible
from sparkpar_lint.selection import check_selection, comma_list

if TYPE_CHECKING:
    from rich.progress import Progress

    from sparkpar_lint.rules.base import Rule

# Commands other modules own; each is added only when its module is present.
_OPTIONAL_COMMANDS = (
    ("sparkpar_lint.plan.command", "plan"),
    ("sparkpar_lint.fixes.command", "fix"),
    ("sparkpar_lint.plan.profile_command", "profile"),
    ("sparkpar_lint.server.command", "server"),
)


def _rule_classes() -> list[type[Rule]]:
    from sparkpar_lint.rules import all_rules

    return all_rules()


def _interactive() -> bool:
    """A person at a terminal, not a CI log: colours and progress bars are welcome."""
    return sys.stdout.isatty() and _interactive_session()


def _interactive_session() -> bool:
    return not os.environ.get("CI") and "NO_COLOR" not in os.environ


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="sparkpar", prog_name="sparkpar")
def main() -> None:
    """Find, fix and prove unsafe parallelism in PySpark jobs."""
    from sparkpar_lint import streams

    streams.prepare()


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="rich",
    show_default=True,
    help="Output format; json, sarif and github are for programs.",
)
@click.option("--select", callback=comma_list, help="Comma list of rule ids or prefixes (SPX1).")
@click.option("--ignore", callback=comma_list, help="Comma list of rule ids or prefixes to skip.")
@click.option("--exclude", multiple=True, help="Glob of paths to skip (repeatable).")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Settings file (default: nearest pyproject.toml with [tool.sparkpar]).",
)
@click.option("--no-cache", is_flag=True, help=f"Do not read or write {CACHE_DIR_NAME}/.")
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help=f"Cache directory (default: {CACHE_DIR_NAME}/ beside the config, else here).",
)
@click.option("--jobs", "-j", type=click.IntRange(min=1), help="Worker processes (default: cores).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings are reported.")
@click.option(
    "--changed-since",
    metavar="REF",
    help="Check only files changed since git REF's merge base, and the files depending on them.",
)
@click.option(
    "--include-suppressed",
    is_flag=True,
    help="SARIF: also list findings a comment silenced, marked as suppressed (code scanning shows them as open).",
)
@min_confidence_option
@follow_links_option
@file_timeout_option
@click.option(
    "--verdicts",
    "verdicts_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Verdicts file from `pytest --sparkpar-confirm`: say on each finding what the tests showed.",
)
def lint(paths: tuple[str, ...], **options: Any) -> None:
    """Check PATHS (files or directories, recursively) for unsafe parallelism."""
    try:
        _lint(paths, **options)
    except (click.ClickException, click.exceptions.Exit, click.Abort):
        raise
    except Exception as error:  # a bug of ours: one line naming it, never a traceback
        _fail(f"internal error: {type(error).__name__}: {error}")


def _lint(
    paths: tuple[str, ...],
    fmt: str,
    select: list[str] | None,
    ignore: list[str] | None,
    exclude: tuple[str, ...],
    config_path: Path | None,
    no_cache: bool,
    cache_dir: Path | None,
    jobs: int | None,
    exit_zero: bool,
    changed_since: str | None,
    include_suppressed: bool,
    min_confidence: Confidence | None,
    follow_links: bool,
    file_timeout: float | None,
    verdicts_path: Path | None,
) -> None:
    from sparkpar_lint.changed import ChangedSinceError
    from sparkpar_lint.runner import analysis_settings, effective_rules, run
    from sparkpar_lint.verdicts import VerdictsError, apply, load

    rule_ids = [rule.id for rule in _rule_classes()]
    config = load_command_config(config_path, rule_ids, exclude, follow_links)
    check_selection(select, ignore, rule_ids)
    if cache_dir is None and not no_cache:
        cache_dir = (config.source.parent if config.source else Path.cwd()) / CACHE_DIR_NAME
    # The bar is drawn on stderr, so it is wanted where stderr is a terminal, whatever stdout is
    # (`sparkpar lint . > report.txt` on a long run); machine formats are read by programs.
    progress = fmt in ("rich", "concise") and sys.stderr.isatty() and _interactive_session()
    try:
        with _progress_bar(progress) as on_progress:
            outcome = run(
                paths,
                config,
                effective_rules(config, rule_ids, select, ignore or ()),
                cache_dir=None if no_cache else cache_dir,
                jobs=jobs,
                on_progress=on_progress,
                file_timeout=file_timeout or None,
                changed_since=changed_since,
            )
    except ChangedSinceError as error:
        _fail(str(error))
    for message in outcome.warnings:
        click.echo(f"sparkpar: warning: {visible(message)}", err=True)
    for message in outcome.all_errors:
        click.echo(f"sparkpar: error: {visible(message)}", err=True)
    findings = outcome.findings
    verdicts_file = verdicts_path or config.verdicts
    if verdicts_file is not None:
        try:
            findings = apply(findings, outcome.sources, load(verdicts_file), config.root)
        except VerdictsError as error:
            _fail(str(error))
    threshold = min_confidence or config.min_confidence
    shown, hidden = split_by_confidence(findings, threshold)
    if hidden and fmt != "rich":
        click.echo(f"sparkpar: note: {hidden_note(hidden, threshold)}", err=True)
    render = renderer(fmt)
    color = fmt == "rich" and _interactive()
    text = render(
        shown,
        sources=outcome.sources,
        suppressed=outcome.suppressed if include_suppressed else (),
        # A file that could not be read or analysed was not checked: "All checks passed" would lie.
        files_checked=outcome.files_checked - sum(1 for result in outcome.results if result.error),
        color=color,
        settings=analysis_settings(config, None if no_cache else cache_dir),
        hidden=hidden,
        min_confidence=threshold,
    )
    click.echo(text, nl=False, color=color)
    status = outcome.exit_status
    if status is ExitStatus.FINDINGS and not shown:
        status = ExitStatus.CLEAN
    if exit_zero and status is ExitStatus.FINDINGS:
        status = ExitStatus.CLEAN
    sys.exit(status)


@main.command()
@click.option("--format", "fmt", type=click.Choice(["rich", "json"]), default="rich", show_default=True)
def rules(fmt: str) -> None:
    """List every rule: id, name, severity and whether `sparkpar fix` can fix it."""
    rows = [
        {"id": r.id, "name": r.name, "severity": r.severity.value, "fix": r.fix_safety, "summary": r.summary}
        for r in _rule_classes()
    ]
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("Rule", "Name", "Severity", "Fixable", "Summary", box=None, pad_edge=False)
    for row in rows:
        table.add_row(row["id"], row["name"], row["severity"], row["fix"] or "no", row["summary"])
    console = Console(no_color=not _interactive(), width=None if _interactive() else 200)
    with console.capture() as captured:
        console.print(table)
    # Cells are padded to the widest row; trailing blanks only get in the way of grep and diff.
    click.echo("\n".join(line.rstrip() for line in captured.get().splitlines()))


@main.command()
@click.argument("rule_id")
def explain(rule_id: str) -> None:
    """Show the documentation of rule RULE_ID (e.g. SPX101)."""
    from sparkpar_lint.ruledocs import MissingDoc, load_doc

    rule_id = rule_id.strip().upper()
    known = {r.id: r for r in _rule_classes()}
    if rule_id not in known:
        _fail(f"unknown rule {rule_id!r}; `sparkpar rules` lists them all")
    try:
        text = load_doc(rule_id)
    except MissingDoc:
        rule = known[rule_id]
        text = f"# {rule.id} {rule.name}\n\n{rule.summary}\n\n(No documentation page yet.)\n"
    if _interactive():
        from rich.console import Console
        from rich.markdown import Markdown

        Console().print(Markdown(text))
    else:
        click.echo(text, nl=not text.endswith("\n"))


@main.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--format", "fmt", type=click.Choice(["rich", "mermaid", "dot", "json"]), default="rich", show_default=True
)
@file_timeout_option
def graph(file: Path, fmt: str, file_timeout: float | None) -> None:
    """Show the stage graph sparkpar builds for FILE."""
    from sparkpar_lint.command_input import InputError, within_budget

    try:
        text = within_budget(_graph_text, (str(file), fmt), str(file), file_timeout, "no graph was drawn")
    except InputError as error:
        _fail(str(error))
    except Exception as error:  # a bug of ours: one line naming the file, never a traceback
        _fail(f"{file}: internal error: {type(error).__name__}: {error}")
    click.echo(text, nl=False)


def _graph_text(item: tuple[str, str]) -> str:
    """In the worker: read, parse and render one file."""
    from sparkpar_lint.command_input import read_cells_source
    from sparkpar_lint.graph.render import render_graph

    path, fmt = item
    # A notebook's graph is that of its Python text (magics masked, %sql cells as spark.sql),
    # shown in the notebook's own coordinates.
    source, locate = read_cells_source(path)
    return render_graph(path, source, fmt, locate)


class _progress_bar:
    """A rich progress bar on stderr for interactive runs; a no-op callback otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._progress: Progress | None = None

    def __enter__(self) -> Callable[[int, int], None] | None:
        if not self.enabled:
            return None
        from rich.console import Console
        from rich.progress import Progress

        progress = self._progress = Progress(console=Console(stderr=True), transient=True)
        progress.start()
        task = progress.add_task("Linting", total=None)
        return lambda done, total: progress.update(task, completed=done, total=total)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()


def _add_optional_commands() -> None:
    for module_name, command_name in _OPTIONAL_COMMANDS:
        try:
            present = importlib.util.find_spec(module_name) is not None
        except ModuleNotFoundError:
            present = False
        if not present:
            continue
        try:
            main.add_command(getattr(importlib.import_module(module_name), command_name))
        except Exception as error:  # a broken optional command must not take `lint` down with it
            main.add_command(_broken_command(command_name, module_name, error))


def _broken_command(name: str, module_name: str, error: Exception) -> click.Command:
    def callback(**_kwargs: object) -> None:
        _fail(f"`sparkpar {name}` failed to load from {module_name}: {type(error).__name__}: {error}")

    return click.Command(
        name,
        callback=callback,
        context_settings={"ignore_unknown_options": True},
        params=[click.Argument(["args"], nargs=-1)],
    )


_add_optional_commands()
