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
import os
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
    """A WriteError for standard output when `exc` is a failed write to it (no file named, a full-disk errno:
    `torchcts report > /full/file`), else None. Standard output then points at /dev/null, so the interpreter's
    last flush of what it still buffers cannot fail again with a traceback."""
    if exc.filename is not None or exc.errno not in FULL_DISK_ERRNOS:
        return None
    with contextlib.suppress(OSError, ValueError, AttributeError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    return WriteError(STANDARD_OUTPUT, reason(exc))


def write_atomic(path: Path | str, data: str | bytes, *, durable: bool = False) -> Path:
    """Write `data` (text as UTF-8) to `path` through a temporary file renamed over it, folders created;
    `durable`: flushed to the disk before the rename. WriteError names `path` when any step fails, and
    the file that was there (if any) is left as it was, with no temporary file beside it."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(temporary, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
            handle.flush()  # a full disk fails here or in close(): inside the try either way
            if durable:
                os.fsync(handle.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        raise WriteError(path, reason(exc)) from None
    finally:
        with contextlib.suppress(OSError):
            if os.path.lexists(temporary):
                os.unlink(temporary)
    return path


def append(fd: int, data: bytes, path: Path | str) -> None:
    """Append `data` (whole lines) to the file open for appending at `fd` (named `path` in errors).

    A write the disk takes only in part is cut back to where it began, unless another process appended
    after it (pytest-xdist workers share records.jsonl), so the file keeps only complete lines; then
    WriteError."""
    view = memoryview(data)
    written = 0
    try:
        while view:  # a regular file takes it whole; a short write is retried, then fails with the reason
            count = os.write(fd, view)
            written += count
            view = view[count:]
    except OSError as exc:
        _cut_back(fd, written)
        raise WriteError(path, reason(exc)) from None


def _cut_back(fd: int, written: int) -> None:
    """Remove the `written` bytes this process just appended, if they are still the file's end."""
    if not written:
        return
    with contextlib.suppress(OSError):
        end = os.lseek(fd, 0, os.SEEK_CUR)  # O_APPEND: the end of this process's last write
        if os.fstat(fd).st_size == end:
            os.ftruncate(fd, end - written)
