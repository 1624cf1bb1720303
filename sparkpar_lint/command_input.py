"""The one file a command works on (`graph`, `plan`, `profile`): read, decoded and parsed as `lint`
does it, worked on within the per-file time and memory budget, and a failure is one escaped line
naming the file with exit status 2."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypeVar

import click

from sparkpar_lint.config import Config, ConfigError, find_config, load_config
from sparkpar_lint.isolation import DEFAULT_FILE_TIMEOUT, Failure, call_isolated
from sparkpar_lint.model import ExitStatus, Span

if TYPE_CHECKING:
    import libcst as cst

T = TypeVar("T")
R = TypeVar("R")


class InputError(Exception):
    """The file cannot be read, decoded or parsed; the message names it and says why, in one line."""


file_timeout_option = click.option(
    "--file-timeout",
    type=click.FloatRange(min=0),
    default=DEFAULT_FILE_TIMEOUT,
    show_default=True,
    help="Seconds one file may take before it is reported as an error and skipped (0: no limit).",
)

follow_links_option = click.option(
    "--follow-links",
    is_flag=True,
    help="Walk into directory symlinks that lead outside the directories given (skipped by default).",
)


def load_command_config(
    config_path: Path | None, rule_ids: list[str], exclude: tuple[str, ...] = (), follow_links: bool = False
) -> Config:
    """The settings a run over many files uses (`lint`, `fix`): the file given, else the nearest
    one, with `--exclude` globs added and `--follow-links`; a bad file is one line and exit 2."""
    try:
        if config_path is not None and not config_path.exists():
            raise ConfigError(f"{config_path}: config file not found")
        config = load_config(config_path or find_config(Path.cwd()), rule_ids)
    except ConfigError as error:
        fail(str(error))
    config = dataclasses.replace(config, exclude=(*config.exclude, *exclude)) if exclude else config
    return dataclasses.replace(config, follow_links=True) if follow_links else config


def within_budget(function: Callable[[T], R], item: T, path: str, timeout: float | None, consequence: str) -> R:
    """`function(item)` in a worker process (isolation.py): a crash, a run past `timeout` seconds
    or past the memory budget is an InputError naming `path`; the function's own errors come back."""
    try:
        result: R = call_isolated(function, item, timeout or None, consequence=consequence)
        return result
    except Failure as failure:
        raise InputError(f"{path}: {failure}") from None


def read_source(path: str) -> str:
    """The file's text: a regular file within the size limit, decoded as Python reads it (PEP 263)."""
    return _decoded(path, _read_bytes(path))


def _decoded(path: str, data: bytes) -> str:
    from sparkpar_lint.decoding import decode

    try:
        return decode(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as error:
        raise InputError(f"{path}: cannot decode: {_one_line(str(error))}") from None


def read_cells_source(path: str) -> tuple[str, Callable[[Span], tuple[int | None, Span]] | None]:
    """`read_source`, except that a notebook or SQL file is its cells as one virtual module, with
    the function that maps a span of that text back to the file's own coordinates (cell, span)."""
    from sparkpar_lint.sources import is_notebook
    from sparkpar_lint.sources.notebook import NotebookError, read_notebook

    data = _read_bytes(path)
    if not is_notebook(path, data):
        return _decoded(path, data), None
    try:
        virtual = read_notebook(path, data).virtual
    except NotebookError as error:
        raise InputError(str(error)) from None
    return virtual.text, virtual.locate


def _read_bytes(path: str) -> bytes:
    from sparkpar_lint.discovery import NotASourceFile, describe_read_error, read_source_bytes

    try:
        return read_source_bytes(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (OSError, NotASourceFile) as error:
        raise InputError(describe_read_error(path, error)) from None


def parse_source(path: str, source: str) -> cst.Module:
    """The module, behind the nesting check and on the deep stack, as `lint` parses it; a file that
    does not parse is an InputError placed and worded as lint's SPX901 finding."""
    import libcst as cst

    from sparkpar_lint.parsing import TooDeeplyNested, parse_module, with_deep_stack
    from sparkpar_lint.rules.spx901_unparsable_file import too_deep_finding, unparsable_finding

    try:
        return with_deep_stack(parse_module, source)
    except TooDeeplyNested as error:
        finding = too_deep_finding(path, error)
    except cst.ParserSyntaxError as error:
        finding = unparsable_finding(path, source, error)
    raise InputError(f"{path}:{finding.span.line}:{finding.span.column + 1}: {_one_line(finding.message)}")


def fail(message: str) -> NoReturn:
    """One line on stderr, escaped (a file name or code may hold control characters), exit 2."""
    from sparkpar_lint.output.escape import visible

    click.echo(f"sparkpar: error: {visible(message)}", err=True)
    sys.exit(ExitStatus.ERROR)


def _one_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text
