"""Files that appear whole or not at all, and the one rule every output of a command obeys.

Every output of the workflow goes through :func:`atomic_write`: a kill, an exception or a full
disk at any moment leaves either the previous file or none, never a truncated one that a rerun
would take as finished (Snakemake trusts a file that exists).

**The rule for outputs, enforced here and nowhere else** (issue #41): within a command
(:func:`one_command`, which ``nmtlib.cli.main`` opens around every sub-command),

- no output is a file the command reads: every reader reports its file to :func:`note_input`
  (:func:`nmtlib.files.read_bytes`, :func:`nmtlib.data.prepare.read_lines`,
  :meth:`nmtlib.data.vocab.Vocabulary.load`, :func:`nmtlib.checkpoint.load_model_record`,
  :func:`nmtlib.decode.unk.load_dictionary`), and files are compared by identity (device and
  inode, symbolic links followed, hard links included), whichever is opened first;
- a write that fails (a read-only or full file system, a missing permission) is an
  :class:`OutputError`, one line naming the file, and leaves the previous file or none;
  :func:`outputs_together` makes a command's several files appear together or not at all.

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

from nmtlib.errors import NmtlibError
from nmtlib.files import is_stdin

__all__ = ["atomic_write", "write_lines", "write_json", "remove_stale_temporaries", "temporary_name", "OutputError",
           "one_command", "note_input", "claim_outputs", "outputs_together"]


class OutputError(NmtlibError, OSError):
    """An output that cannot or must not be written, named in one line (an ``OSError`` too, so
    that callers which handle write errors keep handling it)."""


#: a file's identity: (device, inode), links followed
_Identity = tuple[int, int]


class _Command:
    """What one command has read and is writing (:func:`one_command`)."""

    def __init__(self) -> None:
        self.read: dict[_Identity, str] = {}
        self.writing: dict[_Identity, str] = {}


_command: _Command | None = None


def _identity(path: Path | str) -> _Identity | None:
    try:
        st = os.stat(path)  # follows symbolic links
    except (OSError, ValueError):  # absent (a new output), or a name the OS refuses
        return None
    return st.st_dev, st.st_ino


@contextmanager
def one_command() -> Iterator[None]:
    """The scope of one command: within it, an output that is one of its inputs is refused
    (:func:`note_input`, :func:`atomic_write`). Outside one (library callers), nothing is tracked."""
    global _command
    outer, _command = _command, _Command()
    try:
        yield
    finally:
        _command = outer


def _same_file(output: str, given_input: str) -> OutputError:
    return OutputError(f"{output}: refusing to write the file this command reads ({given_input}): the output would "
                       f"replace its own input; give another output path")


def note_input(path: Path | str) -> None:
    """Every reader of a command's input calls this before reading ``path``.

    :raises OutputError: ``path`` is a file the command is writing."""
    if _command is None or is_stdin(path) or (ident := _identity(path)) is None:
        return
    if ident in _command.writing:
        raise _same_file(_command.writing[ident], str(path))
    _command.read.setdefault(ident, str(path))


def _replaced(path: Path, claimed: _Identity | None) -> None:
    """``path`` is a new file now: the one it replaced, claimed by its (device, inode), is no
    output of the command any more, and the file system may give its inode to another file."""
    if _command is not None and claimed is not None and _command.writing.get(claimed) == str(path):
        del _command.writing[claimed]


def claim_outputs(*paths: Path | str) -> None:
    """Refuse any of ``paths`` that the command reads, and note the others as written.
    :func:`atomic_write` claims its file; a command claims its outputs early too, once it has read
    its inputs, so that a long computation is not run only to be refused.

    :raises OutputError: naming the output and the input it is."""
    if _command is None:
        return
    for path in paths:
        if is_stdin(path) or (ident := _identity(path)) is None:
            continue
        if ident in _command.read:
            raise _same_file(str(path), _command.read[ident])
        _command.writing[ident] = str(path)


def _write_error(path: Path, err: OSError) -> OutputError:
    return OutputError(f"cannot write {path}: {err.strerror or err}")


class _OutputFile(io.FileIO):
    """The temporary file of an output: a failed write names the output (:func:`_write_error`)."""

    target: Path

    def write(self, data: Any) -> int | None:  # type: ignore[override]
        try:
            return super().write(data)
        except OSError as err:
            raise _write_error(self.target, err) from None


#: the renames :func:`outputs_together` holds back: (temporary file, output, the claimed identity of
#: the file it replaces)
_held: list[tuple[Path, Path, _Identity | None]] | None = None


@contextmanager
def outputs_together() -> Iterator[None]:
    """Within the block, every :func:`atomic_write` keeps its finished file aside; they all take
    their names when the block completes, and none does if it fails: a command's outputs (a
    translation's .txt, .unk.txt and .jsonl) never mix one run's files with another's."""
    global _held
    if _held is not None:  # already inside one: the outer block commits
        yield
        return
    _held = []
    try:
        yield
        held = _held
    except BaseException:
        for tmp, _, _ in _held:
            tmp.unlink(missing_ok=True)
        raise
    finally:
        pending, _held = _held, None
    for tmp, path, claimed in held:
        try:
            os.replace(tmp, path)
        except OSError as err:
            for rest, _, _ in pending:
                rest.unlink(missing_ok=True)
            raise _write_error(path, err) from None
        _replaced(path, claimed)


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
    claim_outputs(path)
    claimed = _identity(path)
    try:
        if path.parent and not path.parent.is_dir():
            path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(path)
        tmp = temporary_name(path)
        # os.open with 0o666 lets the umask decide the final mode, like a plain open() would
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as err:
        raise _write_error(path, err) from None
    _lock(fd, wait=True)  # held until the file is closed: tells a later cleaner that we live
    output = _OutputFile(fd, "wb")
    output.target = path
    raw = io.BufferedWriter(output)
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
            try:
                os.fsync(raw.fileno())
            except OSError as err:
                raise _write_error(path, err) from None
        if _held is not None:
            _held.append((tmp, path, claimed))
            return
        try:
            os.replace(tmp, path)
        except OSError as err:
            raise _write_error(path, err) from None
        _replaced(path, claimed)
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
