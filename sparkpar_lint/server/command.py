"""The `sparkpar server` command; pygls is imported only when it runs (it is the `lsp` extra)."""

from __future__ import annotations

import sys

import click

from sparkpar_lint.model import ExitStatus

_EXTRA = ("pygls", "lsprotocol")


@click.command("server")
@click.option("--stdio", is_flag=True, help="Talk over standard input/output (the default and only transport).")
def server(stdio: bool) -> None:
    """Run the sparkpar language server over stdio (diagnostics, fixes as code actions, rule docs on hover)."""
    try:
        from sparkpar_lint.server.lsp import serve
    except ImportError as error:
        missing = (error.name or "").split(".")[0]
        if missing not in _EXTRA:
            raise
        click.echo(f"sparkpar: error: sparkpar server needs {missing}: pip install 'sparkpar[lsp]'", err=True)
        sys.exit(ExitStatus.ERROR)
    serve()
