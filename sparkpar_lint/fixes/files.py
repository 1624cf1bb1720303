"""Reading and writing the files `sparkpar fix` rewrites, without ever losing an edit.

The text is decoded as Python would (PEP 263) and written back in the same encoding, to the file's
real path: a `*.py` symlink inside the checked tree has its target fixed and stays a link; one
leading out of the tree is not followed. A file with one link whose owner can be kept is replaced
atomically (a temporary file in the same directory renamed over it, with the original's mode and
owner); a hard-linked file, or one whose owner this user cannot give away, is rewritten in place so
every link sees the fix. Read-only files are refused. Termination signals wait until a write is
complete, so no temporary file or half-written file is left behind by SIGTERM, SIGINT or SIGHUP.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import tempfile
from collections.abc import Iterable, Iterator

_DEFERRED = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}


class NotFixed(Exception):
    """The file is left as it is; the message completes "<path>: ..."."""


class OutsideTree(NotFixed):
    """A symlink leading out of every directory given: skipped on purpose, so a warning."""


def checked_roots(paths: Iterable[str]) -> list[str]:
    """The real directories `fix` may write in: each directory given, or the one holding a file."""
    return [os.path.realpath(p if os.path.isdir(p) else os.path.dirname(os.path.abspath(p))) for p in paths]


def real_target(path: str, roots: Iterable[str]) -> str:
    """The real path `fix` writes for `path`; OutsideTree when a symlink leads out of every root."""
    real = os.path.realpath(path)
    for real_root in roots:
        if real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep):
            return real
    raise OutsideTree(f"symlink to {real}, outside the checked tree; not fixed")


def write_in_place(path: str, text: str, encoding: str, expected: bytes | None = None) -> None:
    """Write `text` to the file at (real) `path`, keeping its inode links, owner and mode.

    `expected`, when given, is the content the fix was computed from: a file changed meanwhile
    is left alone rather than overwritten with a fix of its old text."""
    data = text.encode(encoding)
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise NotFixed("not a regular file; not fixed")
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise NotFixed("read-only file; not fixed (make it writable to let sparkpar fix it)")
    with _signals_deferred():
        if expected is not None and _read(path) != expected:
            raise NotFixed("changed while it was being fixed; not fixed")
        if st.st_nlink == 1 and _can_keep_owner(st):
            _replace(path, data, st)
        else:
            _overwrite(path, data)


def _can_keep_owner(st: os.stat_result) -> bool:
    return (st.st_uid, st.st_gid) == (os.geteuid(), os.getegid()) or os.geteuid() == 0


def _replace(path: str, data: bytes, st: os.stat_result) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".sparkpar-", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
            os.chown(temporary, st.st_uid, st.st_gid)
        # After chown, which clears the setuid and setgid bits.
        os.chmod(temporary, stat.S_IMODE(st.st_mode))
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def _overwrite(path: str, data: bytes) -> None:
    # Same inode: every hard link sees the fix and owner and mode are untouched. Not atomic
    # against SIGKILL or power loss, which is why single-link files take the rename path.
    with open(path, "r+b") as stream:
        stream.write(data)
        stream.truncate()
        stream.flush()
        os.fsync(stream.fileno())


def _read(path: str) -> bytes:
    with open(path, "rb") as stream:
        return stream.read()


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGTERM/SIGINT/SIGHUP until the block ends; they are then delivered as usual."""
    try:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, _DEFERRED)
    except (AttributeError, ValueError, OSError):  # no pthread_sigmask on this platform
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
