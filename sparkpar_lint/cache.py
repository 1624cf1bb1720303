"""Content-hash cache of per-file findings in `.sparkpar_cache/`.

A key covers everything a file's findings depend on: its bytes and path, the sparkpar version, the
rule and graph code and operator catalogue, and the rules selected for that file. Severity
overrides are applied after the cache, so changing them never invalidates it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Collection, Sequence
from functools import lru_cache
from importlib import metadata, resources
from pathlib import Path

from sparkpar_lint.discovery import NotASourceFile, read_source_bytes
from sparkpar_lint.model import Finding, Severity

CACHE_DIR_NAME = ".sparkpar_cache"
_FORMAT = "3"
# An entry is a few KB; anything far larger is not one of ours.
_MAX_ENTRY_BYTES = 64 * 1024 * 1024


class Cache:
    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self._ready = False

    def key(self, path: str, data: bytes, rule_ids: Collection[str], dependencies: str = "") -> str:
        """`dependencies`: what else the findings depend on (settings, imported project modules)."""
        digest = hashlib.sha256(data)
        digest.update(b"\0" + dependencies.encode("utf-8", "surrogateescape"))
        digest.update(b"\0" + path.encode("utf-8", "surrogateescape"))
        digest.update(b"\0" + ",".join(sorted(rule_ids)).encode())
        digest.update(b"\0" + analysis_fingerprint().encode())
        return digest.hexdigest()

    def get(self, key: str) -> tuple[list[Finding], list[Finding]] | None:
        """(reported, suppressed) findings, or None on a miss; a damaged entry (not the shape put
        writes, a FIFO or device put in its place) is a miss, and the next put repairs it."""
        try:
            entry = json.loads(read_source_bytes(str(self._entry(key)), _MAX_ENTRY_BYTES))
            lists = [entry["findings"], entry["suppressed"]]
            if not all(isinstance(found, list) and all(well_formed(d) for d in found) for found in lists):
                return None
            return ([Finding.from_dict(d) for d in lists[0]], [Finding.from_dict(d) for d in lists[1]])
        except (OSError, NotASourceFile, RecursionError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def put(self, key: str, findings: list[Finding], suppressed: Sequence[Finding] = ()) -> None:
        tmp = None
        try:
            self._prepare()
            # Write then rename, so parallel runs never read half an entry.
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".entry-", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(
                    {"findings": [f.to_dict() for f in findings], "suppressed": [f.to_dict() for f in suppressed]},
                    handle,
                )
            os.replace(tmp, self._entry(key))
            tmp = None
        except OSError:
            pass  # a read-only checkout or a full disk still lints, just without a cache
        finally:
            if tmp is not None:  # a failed write leaves nothing behind
                with contextlib.suppress(OSError):
                    os.unlink(tmp)

    def _entry(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def _prepare(self) -> None:
        if self._ready:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        # Like ruff's cache: invisible to git and to backup tools.
        gitignore = self.directory / ".gitignore"
        if not gitignore.exists():
            gitignore.write_text("# Automatically created by sparkpar.\n*\n")
            (self.directory / "CACHEDIR.TAG").write_text(
                "Signature: 8a477f597d28d172789f06886806bc55\n# sparkpar cache directory\n"
            )
        self._ready = True


_SEVERITIES = {severity.value for severity in Severity}


def well_formed(entry: object) -> bool:
    """A finding as `Finding.to_dict` writes it, down to the types and ranges: a line written as a
    string, or as 0, would only fail later, when findings are sorted or printed."""
    if not isinstance(entry, dict) or not _has_span(entry):
        return False
    texts = all(isinstance(entry.get(key), str) for key in ("rule", "message", "severity", "path"))
    related = entry.get("related")
    return (
        texts
        and entry["severity"] in _SEVERITIES
        and entry.get("fix") in ("safe", "unsafe", None)
        and _optional_int(entry.get("cell"))
        and isinstance(related, list)
        and all(
            isinstance(r, dict)
            and _has_span(r)
            and isinstance(r.get("message"), str)
            and _optional_int(r.get("cell"))
            and isinstance(r.get("path"), (str, type(None)))
            for r in related
        )
    )


def _has_span(entry: dict) -> bool:
    if not all(_is_int(entry.get(key)) for key in ("line", "column", "end_line", "end_column")):
        return False
    return 1 <= entry["line"] <= entry["end_line"] and entry["column"] >= 0 and entry["end_column"] >= 0


def _optional_int(value: object) -> bool:
    return value is None or _is_int(value)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@lru_cache(maxsize=1)
def analysis_fingerprint() -> str:
    """A hash of the sparkpar version and every file that decides what findings come out."""
    digest = hashlib.sha256(_FORMAT.encode())
    try:
        digest.update(metadata.version("sparkpar").encode())
    except metadata.PackageNotFoundError:
        pass
    package = Path(__file__).parent
    sources = [package / "analysis.py", package / "suppressions.py"]
    sources += [package / "settings.py", package / "confidence.py", package / "model.py"]
    for subpackage in ("rules", "graph", "sources", "sql", "project"):
        sources += sorted((package / subpackage).rglob("*.py"))
    for path in sources:
        digest.update(str(path.relative_to(package)).encode() + b"\0")
        digest.update(path.read_bytes())
    for data in ("exports.toml", "passthrough.toml"):  # name resolution and frames followed through calls
        entry = resources.files("sparkpar_lint.ruledata") / data
        if entry.is_file():
            digest.update(data.encode() + b"\0" + entry.read_bytes())
    catalogue = resources.files("sparkpar_lint.ruledata") / "catalogue"
    if catalogue.is_dir():
        for entry in sorted(catalogue.iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".toml"):
                digest.update(entry.name.encode() + b"\0" + entry.read_bytes())
    return digest.hexdigest()
