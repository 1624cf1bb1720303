"""`--min-confidence`: which findings a run shows, and the note that counts the ones it hides."""

from __future__ import annotations

from collections.abc import Sequence

import click

from sparkpar_lint.model import MIN_CONFIDENCE_ENVIRONMENT, Confidence, Finding


def _parse(ctx: click.Context, param: click.Parameter, value: str | None) -> Confidence | None:
    if value is None:
        return None
    try:
        return Confidence.parse(value)
    except ValueError as error:
        if ctx.get_parameter_source(param.name or "") is click.core.ParameterSource.ENVIRONMENT:
            raise click.BadParameter(f"{error} (from ${MIN_CONFIDENCE_ENVIRONMENT})") from None
        raise click.BadParameter(str(error)) from None


min_confidence_option = click.option(
    "--min-confidence",
    envvar=MIN_CONFIDENCE_ENVIRONMENT,
    callback=_parse,
    metavar="[high|medium|low]",
    help=f"Show findings of at least this confidence (default: ${MIN_CONFIDENCE_ENVIRONMENT}, else [tool.sparkpar] "
    "min-confidence, else high).",
)


def split_by_confidence(findings: Sequence[Finding], threshold: Confidence) -> tuple[list[Finding], int]:
    """The findings at or above `threshold`, and how many fell below it."""
    shown = [f for f in findings if f.confidence.rank >= threshold.rank]
    return shown, len(findings) - len(shown)


def hidden_note(hidden: int, threshold: Confidence) -> str:
    return (
        f"{hidden} finding{'s' * (hidden != 1)} below {threshold.value} confidence not shown; "
        f"`--min-confidence low` shows {'them' if hidden != 1 else 'it'}"
    )
