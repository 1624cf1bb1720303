"""`sparkpar fix`: apply the fixes attached to findings, safely by default."""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

import click

from sparkpar_lint.model import ExitStatus
from sparkpar_lint.selection import check_selection, comma_list


@click.command("fix")
@click.argument("paths", nargs=-1, required=True)
@click.option("--unsafe-fixes", is_flag=True, help="Also apply fixes that make a choice (a key, a delay).")
@click.option("--diff", "show_diff", is_flag=True, help="Print a unified diff; write nothing.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if any file would change.")
@click.option("--select", callback=comma_list, help="Comma list of rule ids or prefixes to fix.")
@click.option("--ignore", callback=comma_list, help="Comma list of rule ids or prefixes not to fix.")
@click.option("--summary", "summary_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write a Markdown summary for a pull-request body.")
@click.option("--exclude", multiple=True, help="Glob of paths to skip (repeatable), as for `lint`.")
@click.option("--show-unfixed", is_flag=True, help="Print one line per finding left unfixed, saying why.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Settings file (default: nearest pyproject.toml with [tool.sparkpar]).")
def fix(paths, unsafe_fixes, show_diff, check, select, ignore, summary_path, exclude, show_unfixed, config_path):
    """Rewrite PATHS so their results no longer depend on partitioning."""
    from sparkpar_lint.cli import _load_config, _rule_classes, _with_cli_excludes
    from sparkpar_lint.discovery import discover
    from sparkpar_lint.fixes.engine import fix_source
    from sparkpar_lint.fixes.files import encoding_of, write_atomically
    from sparkpar_lint.fixes.summary import render_summary
    from sparkpar_lint.fixes.unfixed import unfixed_lines
    from sparkpar_lint.runner import effective_rules, rules_for_file
    from sparkpar_lint.sources import is_notebook
    from sparkpar_lint.sources.notebook import NotebookError, fix_notebook

    rules = {rule.id: rule for rule in _rule_classes()}
    config = _with_cli_excludes(_load_config(config_path, list(rules)), exclude)
    check_selection(select, ignore, list(rules))
    rule_ids = effective_rules(config, rules, select, ignore or ())
    found = discover(paths, config.exclude, config.root)
    errors = list(found.errors)
    outcomes = []
    for path in found.files:
        try:
            data = Path(path).read_bytes()
            notebook = is_notebook(path, data)
            encoding = "utf-8" if notebook else encoding_of(data)
            source = data.decode(encoding)
        except (OSError, SyntaxError, UnicodeDecodeError, LookupError) as error:
            errors.append(f"{path}: cannot read: {error}")
            continue
        if "spark" not in source.lower() and not notebook:
            continue
        try:
            file_rules = rules_for_file(path, config, rule_ids)
            outcome = (fix_notebook if notebook else fix_source)(path, source, file_rules, unsafe=unsafe_fixes)
        except NotebookError as error:
            errors.append(str(error))
            continue
        except Exception as error:  # one file's internal error must not stop the others
            errors.append(f"{path}: internal error: {type(error).__name__}: {error}")
            continue
        outcomes.append(outcome)
        if show_unfixed:
            for line in unfixed_lines(outcome, rules, unsafe_fixes):
                click.echo(line)
        if not outcome.changed:
            continue
        if show_diff:
            click.echo(_diff(outcome), nl=False)
        elif not check:
            try:
                write_atomically(path, outcome.fixed, encoding)
            except OSError as error:
                errors.append(f"{path}: cannot write: {error}")
    changed = [o for o in outcomes if o.changed]
    for message in errors:
        click.echo(f"sparkpar: error: {message}", err=True)
    fixes = sum(len(o.applied) for o in changed)
    verb = "Would fix" if (check or show_diff) else "Fixed"
    click.echo(f"{verb} {fixes} finding{'s' if fixes != 1 else ''} in {len(changed)} file{'s' if len(changed) != 1 else ''}.", err=True)
    if summary_path is not None:
        summary_path.write_text(render_summary(outcomes, rules), encoding="utf-8")
    if errors:
        sys.exit(ExitStatus.ERROR)
    sys.exit(ExitStatus.FINDINGS if check and changed else ExitStatus.CLEAN)


def _diff(outcome) -> str:
    return "".join(
        difflib.unified_diff(
            outcome.original.splitlines(keepends=True),
            outcome.fixed.splitlines(keepends=True),
            fromfile=f"a/{outcome.path}",
            tofile=f"b/{outcome.path}",
        )
    )
