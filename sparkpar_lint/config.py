"""`[tool.sparkpar]` in pyproject.toml: read it once, validate every key, fail with one clear message."""

from __future__ import annotations

import re
import reprlib
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sparkpar_lint.model import DEFAULT_MIN_CONFIDENCE, Confidence, Severity


class ConfigError(Exception):
    """A configuration problem; the message names the file, the key and what is wrong."""


@dataclass(frozen=True)
class Config:
    # Rule-id prefixes, ruff style: "SPX1" selects the order family, "ALL" everything.
    select: tuple[str, ...] = ("ALL",)
    ignore: tuple[str, ...] = ()
    per_file_ignores: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    exclude: tuple[str, ...] = ()
    # Globs of further files a directory walk checks (`*.sql`: Spark SQL scripts).
    include: tuple[str, ...] = ()
    # `--follow-links`: walk into directory symlinks that lead outside the tree being checked.
    follow_links: bool = False
    severity: Mapping[str, Severity] = field(default_factory=dict)
    # Columns that identify a row: "order_id" in any table, "events.event_id" in table `events`.
    unique_columns: tuple[str, ...] = ()
    # How late an event may arrive, for the SPX204 fix's `withWatermark` (a Spark interval).
    watermark_delay: str = "10 minutes"
    # The verdicts file `pytest --sparkpar-confirm` wrote (sparkpar_lint.verdicts), relative to `root`.
    verdicts: Path | None = None
    # Findings below this confidence are counted, not shown (docs/confidence.md).
    min_confidence: Confidence = DEFAULT_MIN_CONFIDENCE
    # The file the settings came from (None: defaults) and the directory its globs are relative to.
    source: Path | None = None
    root: Path = field(default_factory=Path.cwd)


# Every key here changes what a run reports. (`order-columns` and `extra-operators` were parsed once
# but read by nothing, so they were removed rather than left to mislead; see CHANGELOG.md.)
KNOWN_KEYS = {
    *("select", "ignore", "per-file-ignores", "exclude", "include", "severity", "unique-columns"),
    "watermark-delay",
    "verdicts",
    "min-confidence",
}
# `column` or `table.column`: names without spaces, at most one dot (a table qualifies its column).
_UNIQUE_COLUMN = re.compile(r"[^\s.]+(\.[^\s.]+)?\Z")
# A delay Spark's `withWatermark` reads: "10 minutes", "1 hour", "30 seconds".
_DELAY = re.compile(r"[1-9][0-9]* (second|minute|hour|day)s?\Z")


def find_config(start: Path) -> Path | None:
    """The nearest pyproject.toml upward from `start` that has a [tool.sparkpar] table (as ruff)."""
    for directory in (start.resolve(), *start.resolve().parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            tool = _read_toml(candidate).get("tool", {})
            if isinstance(tool, Mapping) and "sparkpar" in tool:
                return candidate
    return None


def load_config(path: Path | None, rule_ids: Iterable[str]) -> Config:
    """Settings from `path` (a pyproject.toml, or any TOML file holding the keys at top level)."""
    if path is None:
        return Config()
    data = _read_toml(path)
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        if not isinstance(tool, Mapping):
            raise ConfigError(f"{path}: tool: expected a table, got {_shown(tool)}")
        table = tool.get("sparkpar", {})
        if not isinstance(table, Mapping):
            # `sparkpar = 5` under [tool], or `[[tool.sparkpar]]` (an array of tables)
            raise ConfigError(f"{path}: [tool.sparkpar]: expected a table, got {_shown(table)}")
    else:
        table = data
    return parse_table(table, path, sorted(rule_ids))


def parse_table(table: Mapping, path: Path, rule_ids: list[str]) -> Config:
    def fail(key: str, problem: str) -> ConfigError:
        return ConfigError(f"{path}: [tool.sparkpar] {key}: {problem}")

    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:
        raise fail(unknown[0], f"unknown key (known keys: {', '.join(sorted(KNOWN_KEYS))})")
    select = _prefixes(table, "select", rule_ids, fail, allow_all=True) or ("ALL",)
    ignore = _prefixes(table, "ignore", rule_ids, fail)
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, Mapping):
        raise fail("per-file-ignores", "expected a table of glob = [rule ids]")
    per_file_ignores = {
        glob: _prefixes(per_file, glob, rule_ids, lambda k, p: fail(f"per-file-ignores.{k}", p)) for glob in per_file
    }
    exclude = _strings(table, "exclude", fail)
    include = _strings(table, "include", fail)
    severity = {}
    for rule_id, level in _table(table, "severity", fail).items():
        if rule_id not in rule_ids:
            raise fail(f"severity.{rule_id}", "unknown rule id")
        if level not in {s.value for s in Severity}:
            raise fail(f"severity.{rule_id}", f"expected error, warning or info, got {_shown(level)}")
        severity[rule_id] = Severity(level)
    unique_columns = _strings(table, "unique-columns", fail)
    for name in unique_columns:
        if not _UNIQUE_COLUMN.match(name):
            raise fail(
                "unique-columns",
                f"expected `column` or `table.column` (no spaces, at most one dot), got {_shown(name)}",
            )
    delay = table.get("watermark-delay", Config.watermark_delay)
    if not isinstance(delay, str) or not _DELAY.match(delay):
        raise fail("watermark-delay", f'expected a delay such as "10 minutes" or "1 hour", got {_shown(delay)}')
    verdicts = table.get("verdicts")
    if verdicts is not None and (not isinstance(verdicts, str) or not verdicts.strip()):
        raise fail("verdicts", f"expected the path of a verdicts file, got {_shown(verdicts)}")
    level = table.get("min-confidence", Config.min_confidence.value)
    try:
        min_confidence = Confidence.parse(level) if isinstance(level, str) else Confidence.parse(_shown(level))
    except ValueError as error:
        raise fail("min-confidence", str(error)) from None
    return Config(
        min_confidence=min_confidence,
        select=select,
        ignore=ignore,
        per_file_ignores=per_file_ignores,
        exclude=exclude,
        include=include,
        severity=severity,
        unique_columns=unique_columns,
        watermark_delay=delay,
        verdicts=path.parent / verdicts if verdicts else None,
        source=path,
        root=path.parent.resolve(),
    )


def check_prefixes(prefixes: Iterable[str], rule_ids: Iterable[str], *, allow_all: bool) -> str | None:
    """The first prefix that selects no rule, or None when all are good."""
    rule_ids = list(rule_ids)
    for prefix in prefixes:
        if allow_all and prefix == "ALL":
            continue
        if not any(rule_id.startswith(prefix) for rule_id in rule_ids):
            return prefix
    return None


def selected_rules(rule_ids: Iterable[str], select: Iterable[str], ignore: Iterable[str]) -> set[str]:
    select, ignore = tuple(select), tuple(ignore)
    return {
        rule_id
        for rule_id in rule_ids
        if any(p == "ALL" or rule_id.startswith(p) for p in select) and not any(rule_id.startswith(p) for p in ignore)
    }


def _read_toml(path: Path) -> dict:
    from sparkpar_lint.discovery import NotASourceFile, describe_read_error, read_source_bytes

    try:
        return tomllib.loads(read_source_bytes(str(path)).decode("utf-8"))
    except (OSError, NotASourceFile) as error:
        raise ConfigError(describe_read_error(str(path), error)) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    except RecursionError:  # tomllib recurses per nested table or array
        raise ConfigError(f"{path}: not valid TOML: nested too deeply") from None


def _prefixes(table, key, rule_ids, fail, *, allow_all=False) -> tuple[str, ...]:
    values = _strings(table, key, fail)
    bad = check_prefixes(values, rule_ids, allow_all=allow_all)
    if bad is not None:
        raise fail(key, f"unknown rule id or prefix {bad!r}")
    return values


def _strings(table, key, fail) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise fail(key, f"expected a list of strings, got {_shown(value)}")
    return tuple(value)


def _table(table, key, fail) -> Mapping:
    value = table.get(key, {})
    if not isinstance(value, Mapping):
        raise fail(key, f"expected a table, got {_shown(value)}")
    return value


def _shown(value) -> str:
    """A short repr: a config value can be arbitrarily long."""
    return reprlib.repr(value)
