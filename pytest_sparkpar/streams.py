"""Varied micro-batch splits for existing streaming tests, under --sparkpar-determinism.

A streaming test that reads a directory of files (`spark.readStream...json(path)`, `.parquet`,
`.csv`, `.text`, `.orc`, `.xml`, `.load(path)`) gets all of them in one micro-batch when it runs as
written (`trigger(availableNow=True)` or `processAllAvailable()` with no `maxFilesPerTrigger`). A
job that keeps state per batch (a dedup or a running total inside `foreachBatch`) passes that way
and breaks as soon as the same files arrive over several batches, as they do in production.

During a perturbed run, a file stream defined on the driver gets `maxFilesPerTrigger` = k, with k
drawn from 1 .. files-1 for the files in the path when the stream is defined (1 when there are
fewer than three, or none yet), so the files arrive over at least two micro-batches; a value the
test set itself is replaced, and the report says which streams were split and how. Only the file
sources can be split this way: Kafka (`maxOffsetsPerTrigger`), rate and table streams, Spark
Connect readers and `trigger(once=True)` (which ignores the option) keep their batches.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable
from dataclasses import dataclass, field

SPLIT_OPTION = "maxFilesPerTrigger"
PATH_METHODS = ("load", "json", "parquet", "csv", "text", "orc", "xml")


@dataclass
class Split:
    """One perturbed run's draw (`fraction` in [0, 1) picks k) and the streams it split."""

    fraction: float
    applied: list[str] = field(default_factory=list)

    def files_per_batch(self, files: int) -> int:
        return 1 + int(self.fraction * max(1, files - 1)) if files > 2 else 1


ACTIVE: Split | None = None
DEFINED = 0  # streams defined through the wrapped methods: a streaming test is a Spark test
_originals: dict[str, Callable] = {}


def data_files(path: str) -> int:
    """Files the file source would read under `path` (a directory or a glob on this machine):
    names starting with `_` or `.` are metadata to Spark (e.g. `_SUCCESS`, `.crc`)."""
    local = path[len("file:") :] if path.startswith("file:") else path
    if "://" in local:
        return 0
    count = 0
    for root in glob.glob(local) if glob.has_magic(local) else [local]:
        if os.path.isfile(root):
            count += 1
            continue
        for _directory, subdirectories, names in os.walk(root):
            subdirectories[:] = [d for d in subdirectories if not d.startswith(("_", "."))]
            count += sum(1 for name in names if not name.startswith(("_", ".")))
    return count


def _wrap(method: str):
    original = _originals[method]

    def reading(self, path=None, *args, **kwargs):
        global DEFINED
        DEFINED += 1
        split = ACTIVE
        if split is not None and isinstance(path, str):
            kwargs.pop(SPLIT_OPTION, None)  # load(path, maxFilesPerTrigger=...) would win over ours
            files = data_files(path)
            per_batch = split.files_per_batch(files)
            self._jreader = self._jreader.option(SPLIT_OPTION, str(per_batch))
            split.applied.append(f"{SPLIT_OPTION}={per_batch} on the file stream over {path} ({files} files)")
        return original(self, path, *args, **kwargs)

    reading.__name__ = reading.__qualname__ = method
    reading.__doc__ = getattr(original, "__doc__", None)
    return reading


def install() -> None:
    """Route the classic DataStreamReader's path methods through `reading` (idempotent)."""
    from pyspark.sql.streaming.readwriter import DataStreamReader

    for method in PATH_METHODS:
        if method not in _originals and hasattr(DataStreamReader, method):
            _originals[method] = getattr(DataStreamReader, method)
            setattr(DataStreamReader, method, _wrap(method))


def uninstall() -> None:
    global ACTIVE
    if _originals:
        from pyspark.sql.streaming.readwriter import DataStreamReader

        for method, original in _originals.items():
            setattr(DataStreamReader, method, original)
        _originals.clear()
    ACTIVE = None


class splitting:
    """While a perturbed run lasts, file streams defined on the driver are split per `fraction`."""

    def __init__(self, fraction: float):
        self.split = Split(fraction)

    def __enter__(self) -> Split:
        global ACTIVE
        ACTIVE = self.split
        return self.split

    def __exit__(self, *exc):
        global ACTIVE
        ACTIVE = None
        return False
