"""The `sparkpar server` command; pygls is imported only when it runs (it is the `lsp` extra)."""

from __future__ import annotations

import sys

import click

from sparkpar_lint.model import ExitStatus

_EXTRA = ("pygls", "lsprotocol")


@click.command("server")
@click.option("--stdio", is_flag=True, help="Talk over standard input/output (the default and only transport).")
@click.option(
    "--file-timeout",
    type=click.FloatRange(min=0),
    default=20.0,
    show_default=True,
    help="Seconds one analysis may take; a file that takes longer gets one diagnostic saying so (0: no limit).",
)
def server(stdio: bool, file_timeout: float) -> None:
    """Run the sparkpar language server over stdio (diagnostics, fixes as code actions, rule docs on hover)."""
    try:
        from sparkpar_lint.server.lsp import serve
    except ImportError as error:
        missing = (error.name or "").split(".")[0]
        if missing not in _EXTRA:
            raise
        click.echo(f"sparkpar: error: sparkpar server needs {missing}: pip install 'sparkpar[lsp]'", err=True)
        sys.exit(ExitStatus.ERROR)
    serve(file_timeout or None)
