"""Writing files so that a full or failing disk is one line and loses nothing already written.

Every file TorchCTS writes goes through here. `write_atomic` writes a file whole: into a temporary file
beside it, renamed over it, so a reader sees the old file or the new one, never half of one.
`append` grows a file by whole lines (records.jsonl): a write that fails part-way is cut back, so the
file keeps its complete lines. Both raise `WriteError`, naming the file and the operating system's
reason ("No space left on device", "File too large", "Read-only file system", "Disk quota exceeded");
the command line (`cli.main`) and the pytest plugin turn it into the one line
`FILE: cannot be written: REASON` and exit 2. Import-light (no torch).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
import sys
from pathlib import Path
from typing import Iterator


class WriteError(Exception):
    """A file TorchCTS writes cannot be written: `path` and `reason` (the OS's words); str() is the one line."""

    def __init__(self, path: Path | str, reason: str):
        self.path = Path(path)
        self.reason = " ".join(str(reason).split()) or "unknown error"
        super().__init__(f"{self.path}: cannot be written: {self.reason}")


def reason(exc: BaseException) -> str:
    """The operating system's words for a failed write ("No space left on device"), else the message."""
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


@contextlib.contextmanager
def writing(path: Path | str) -> Iterator[None]:
    """Turn an OSError raised inside the block into a WriteError naming `path` (a WriteError passes as it is)."""
    try:
        yield
    except OSError as exc:
        raise WriteError(path, reason(exc)) from None


FULL_DISK_ERRNOS = frozenset(getattr(errno, name) for name in ("ENOSPC", "EFBIG", "EDQUOT", "EIO", "EROFS")
                             if hasattr(errno, name))
STANDARD_OUTPUT = "standard output"


def output_failure(exc: OSError) -> WriteError | None:
    """A WriteError for standard output when `exc` is a failed write to it (no file named, a full-disk errno,
    and standard output itself cannot take more: `torchcts report > /full/file`), else None: a file's own
    failed write (a `close()` flushing it names no file either) is not blamed on standard output. Standard
    output then points at /dev/null, so the interpreter's last flush of what it still buffers cannot fail
    again with a traceback."""
    if exc.filename is not None or exc.errno not in FULL_DISK_ERRNOS or not _output_is_broken():
        return None
    with contextlib.suppress(OSError, ValueError, AttributeError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    return WriteError(STANDARD_OUTPUT, reason(exc))


def _output_is_broken() -> bool:
    """Whether standard output cannot be written: what it buffers does not flush, an empty write fails, or it
    is a file at the size limit (RLIMIT_FSIZE) or on a file system with no room left."""
    try:
        sys.stdout.flush()
    except OSError as exc:
        return exc.errno in FULL_DISK_ERRNOS
    except (ValueError, AttributeError):  # closed, or no stdout at all
        return False
    try:
        fd = sys.stdout.fileno()
        status = os.fstat(fd)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return False
    try:
        os.write(fd, b"")  # writes nothing; a device that takes nothing (/dev/full) refuses even that
    except OSError as exc:
        return exc.errno in FULL_DISK_ERRNOS
    if not stat.S_ISREG(status.st_mode):
        return False
    with contextlib.suppress(ImportError, OSError, ValueError):
        import resource

        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if limit != resource.RLIM_INFINITY and status.st_size >= limit:
            return True
    with contextlib.suppress(OSError, AttributeError):
        space = os.fstatvfs(fd)
        return space.f_bavail == 0 or space.f_flag & getattr(os, "ST_RDONLY", 1) != 0
    return False


def write_atomic(path: Path | str, data: str | bytes, *, durable: bool = False) -> Path:
    """Write `data` (text as UTF-8) to `path` through a temporary file renamed over it, folders created;
    `durable`: flushed to the disk before the rename. WriteError names `path` when any step fails, and
    the file that was there (if any) is left as it was, with no temporary file beside it. A file that was
    there keeps its mode; a symbolic link stays one (its target is written)."""
    write_together({Path(path): data}, durable=durable)
    return Path(path)


def write_together(files: dict[Path, str | bytes], *, durable: bool = False) -> list[Path]:
    """Write several files (`write_atomic` each) so that a failure leaves them all as they were: every one is
    written to its temporary first, then all are renamed (triage.md beside its own triage.json, never an old
    one). The paths, in order."""
    pending: list[tuple[Path, Path, Path]] = []  # (as named, the file written, its temporary)
    try:
        for path, data in files.items():
            path = Path(path)
            target = Path(os.path.realpath(path)) if os.path.islink(path) else path
            temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
            pending.append((path, target, temporary))
            _write_temporary(path, target, temporary, data, durable)
        for path, target, temporary in pending:
            with writing(path):
                os.replace(temporary, target)
    finally:
        for _, _, temporary in pending:
            with contextlib.suppress(OSError):
                if os.path.lexists(temporary):
                    os.unlink(temporary)
    return [path for path, _, _ in pending]


def _write_temporary(path: Path, target: Path, temporary: Path, data: str | bytes, durable: bool) -> None:
    """`data` into `temporary` beside `target`, with the mode `target` has (if it exists); WriteError names `path`."""
    with writing(path):
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(temporary, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
            handle.flush()  # a full disk fails here or in close(): inside the block either way
            if durable:
                os.fsync(handle.fileno())
        with contextlib.suppress(FileNotFoundError):
            os.chmod(temporary, stat.S_IMODE(os.stat(target).st_mode))


def append(fd: int, data: bytes, path: Path | str) -> None:
    """Append `data` (whole lines) to the file open for appending at `fd` (named `path` in errors).

    A write the disk takes only in part is cut back to where it began, so the file keeps only complete lines;
    then WriteError. The write and its cut-back hold an exclusive lock on the file (pytest-xdist workers append
    to the same records.jsonl), so no other process's line lands between them."""
    view = memoryview(data)
    written = 0
    with _locked(fd):
        try:
            while view:  # a regular file takes it whole; a short write is retried, then fails with the reason
                count = os.write(fd, view)
                written += count
                view = view[count:]
        except OSError as exc:
            _cut_back(fd, written)
            raise WriteError(path, reason(exc)) from None


@contextlib.contextmanager
def _locked(fd: int) -> Iterator[None]:
    """An exclusive advisory lock on the file at `fd` for the block (none where flock is missing or refused)."""
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX)
    except (ImportError, OSError):
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)


def _cut_back(fd: int, written: int) -> None:
    """Remove the `written` bytes this process just appended, if they are still the file's end."""
    if not written:
        return
    with contextlib.suppress(OSError):
        end = os.lseek(fd, 0, os.SEEK_CUR)  # O_APPEND: the end of this process's last write
        if os.fstat(fd).st_size == end:
            os.ftruncate(fd, end - written)
