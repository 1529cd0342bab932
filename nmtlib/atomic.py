"""Files that appear whole or not at all.

Every output of the workflow goes through :func:`atomic_write`: a kill, an exception or a full
disk at any moment leaves either the previous file or none, never a truncated one that a rerun
would take as finished (Snakemake trusts a file that exists).

A writer killed with SIGKILL cannot remove its hidden temporary file. The next write of the same
path does: :func:`remove_stale_temporaries` deletes the ``.<name>.<pid>.<hex>.tmp`` siblings
whose writer is dead (its pid no longer runs here and nobody holds the file's lock; every
writer holds an exclusive ``flock`` on its temporary file while it writes).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import secrets
import sys
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, Any, cast

from nmtlib.files import is_stdin

__all__ = ["atomic_write", "write_lines", "write_json", "remove_stale_temporaries", "temporary_name"]


def temporary_name(path: Path) -> Path:
    """The hidden sibling a writer of ``path`` fills first: ``.<name>.<pid>.<hex>.tmp``."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it runs, as another user
        return True
    return True


def _lock(fd: int, *, wait: bool) -> bool:
    """An exclusive ``flock`` on ``fd``; False when another holder has it (or locks do not
    exist here: then the caller must treat the file as in use)."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        return not wait
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except OSError:
        return False
    return True


def remove_stale_temporaries(path: Path | str) -> list[Path]:
    """Delete the temporary files that dead writers of ``path`` left (a SIGKILL, a node that
    died): the siblings ``.<name>.<pid>.<hex>.tmp`` of this very name whose pid does not run on
    this machine and whose lock nobody holds. A live writer's file, this process's own files and
    the temporaries of other names are never touched. Returns what was removed."""
    path = Path(path)
    pattern = re.compile(rf"\.{re.escape(path.name)}\.(\d+)\.[0-9a-f]+\.tmp")
    removed: list[Path] = []
    try:
        candidates = [p for p in path.parent.iterdir() if pattern.fullmatch(p.name)]
    except OSError:  # no folder yet, or not readable: nothing to clean
        return removed
    for tmp in candidates:
        pid = int(pattern.fullmatch(tmp.name).group(1))  # type: ignore[union-attr]
        if pid == os.getpid() or _pid_alive(pid):
            continue
        try:
            fd = os.open(tmp, os.O_RDWR | os.O_NOFOLLOW)
        except OSError:  # gone meanwhile, a link, or not ours to open
            continue
        try:
            # a writer on another machine (a shared file system) holds its lock while it writes
            if _lock(fd, wait=False) and os.path.samestat(os.fstat(fd), os.lstat(tmp)):
                os.unlink(tmp)
                removed.append(tmp)
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed


@contextmanager
def atomic_write(path: Path | str, *, binary: bool = False) -> Iterator[IO[Any]]:
    """Open ``path`` for writing so that it appears only once the block completes.

    The data go to a hidden temp file in the same folder (so ``os.replace`` is an atomic rename
    on the same file system), fsynced, then renamed over ``path``; on error the temp file is
    removed and an existing ``path`` is left untouched. Temporary files of ``path`` that killed
    writers left are removed first (:func:`remove_stale_temporaries`). A ``.gz`` name is written
    gzip-compressed (with a fixed mtime, so the bytes are reproducible). ``-`` is standard output.
    """
    if is_stdin(path):  # one name for both standard streams, as in every command-line tool
        stream = sys.stdout.buffer if binary else sys.stdout
        yield stream
        stream.flush()
        return
    path = Path(path)
    if path.parent and not path.parent.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    tmp = temporary_name(path)
    # os.open with 0o666 lets the umask decide the final mode, like a plain open() would
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    _lock(fd, wait=True)  # held until the file is closed: tells a later cleaner that we live
    raw = os.fdopen(fd, "wb")
    try:
        with ExitStack() as stack:
            stack.enter_context(raw)
            sink: IO[bytes] = raw
            if path.name.endswith(".gz"):
                gz = stack.enter_context(
                    gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0)
                )
                sink = cast(IO[bytes], gz)
            if binary:
                yield sink
            else:
                text = io.TextIOWrapper(sink, encoding="utf-8", newline="\n")
                try:
                    yield text
                finally:
                    text.flush()
                    text.detach()
            if sink is not raw:
                sink.close()
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_lines(path: Path | str, lines: Iterable[str]) -> None:
    """``lines`` as a UTF-8 text file, one per line, each ending in ``\n``."""
    with atomic_write(path) as f:
        f.writelines(line + "\n" for line in lines)


def write_json(path: Path | str, obj: Any) -> None:
    """``obj`` as indented JSON with sorted keys and a final newline."""
    with atomic_write(path) as f:
        f.write(json.dumps(obj, indent=2, sort_keys=True) + "\n")
