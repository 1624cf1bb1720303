"""The --select/--ignore options that `lint` and `fix` share: parsed and checked one way."""

from __future__ import annotations

from collections.abc import Sequence

import click

from sparkpar_lint.config import check_prefixes


def comma_list(_ctx, _param, value: str | None) -> tuple[str, ...] | None:
    """Click callback: "spx1, SPX402" -> ("SPX1", "SPX402")."""
    if value is None:
        return None
    return tuple(part.strip().upper() for part in value.split(",") if part.strip())


def check_selection(select, ignore, rule_ids: Sequence[str]) -> None:
    """A usage error (exit 2) naming the option and the unknown rule id or prefix."""
    for option, values in (("--select", select), ("--ignore", ignore)):
        bad = check_prefixes(values or (), rule_ids, allow_all=option == "--select")
        if bad is not None:
            raise click.BadParameter(f"unknown rule id or prefix {bad!r}", param_hint=option)
