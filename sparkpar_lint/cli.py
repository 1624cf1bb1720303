"""The `sparkpar` command line (placeholder until the CLI lands)."""

import click


@click.group()
def main() -> None:
    """Find, fix and prove unsafe parallelism in PySpark jobs."""
