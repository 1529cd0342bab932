"""Files that appear whole or not at all.

Every output of the workflow goes through :func:`atomic_write`: a kill, an exception or a full
disk at any moment leaves either the previous file or none, never a truncated one that a rerun
would take as finished (Snakemake trusts a file that exists).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import secrets
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, Any, cast

__all__ = ["atomic_write", "write_lines", "write_json"]


@contextmanager
def atomic_write(path: Path | str, *, binary: bool = False) -> Iterator[IO[Any]]:
    """Open ``path`` for writing so that it appears only once the block completes.

    The data go to a hidden temp file in the same folder (so ``os.replace`` is an atomic rename
    on the same file system), fsynced, then renamed over ``path``; on error the temp file is
    removed and an existing ``path`` is left untouched. A ``.gz`` name is written gzip-compressed
    (with a fixed mtime, so the bytes are reproducible).
    """
    path = Path(path)
    if path.parent and not path.parent.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    # os.open with 0o666 lets the umask decide the final mode, like a plain open() would
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
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
