"""Reading files: the line-oriented text every step works on, and the checksums that pin data,
cache files and vocabularies (writing: :mod:`nmtlib.atomic`).

A path ``-`` is standard input (``nmtlib score bleu --hyp -``): read once, whole, and kept, so
that reading it again (its lines, then its sha256) sees the same bytes."""

from __future__ import annotations

import functools
import hashlib
import sys
from collections.abc import Iterable
from os import PathLike
from pathlib import Path

from nmtlib.errors import InputError

__all__ = ["STDIN", "is_stdin", "read_lines", "decode_lines", "file_digests", "sha256_file"]

#: bytes read at a time when a file is streamed (hashing, copying, downloading)
CHUNK = 1 << 20
#: the path that names standard input (and standard output, where a command writes)
STDIN = "-"


def is_stdin(path: str | PathLike[str] | None) -> bool:
    """Whether ``path`` is ``-``, standard input or output."""
    return path is not None and str(path) == STDIN


@functools.cache
def stdin_bytes() -> bytes:
    """Everything on standard input, read on first use and kept."""
    return sys.stdin.buffer.read()


def read_bytes(path: str | PathLike[str]) -> bytes:
    """A file's bytes, or standard input's for ``-``.

    :raises InputError: the file is missing or unreadable."""
    if is_stdin(path):
        return stdin_bytes()
    from nmtlib.atomic import note_input  # the rule for outputs (nmtlib.atomic): no output is an input

    note_input(path)
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise InputError(f"cannot read {path}: {err.strerror or err}") from None


def decode_lines(data: bytes, name: str | PathLike[str], first_line: int = 1) -> list[str]:
    """UTF-8 ``data`` as :func:`read_lines` splits it; ``name`` and ``first_line`` (the number
    of the first line of ``data`` in its file) are for the error.

    :raises InputError: not UTF-8, naming the line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = first_line + data.count(b"\n", 0, err.start)
        raise InputError(f"{name}:{line}: not valid UTF-8 ({err.reason})") from None
    lines = text.split("\n")
    if lines[-1] == "":  # the newline that ends the last line does not start another one
        lines.pop()
    return lines


def read_lines(path: str | PathLike[str]) -> list[str]:
    """Read a UTF-8 text file as one string per line, without the ``\\n``.

    Lines are split on ``\\n`` only (not on the other separators ``str.splitlines`` knows, such
    as U+2028 or form feed), like Perl's ``<FH>`` and Python's file iteration in the reference
    scorers; a final line without ``\\n`` is kept whole. Carriage returns stay in the line: all
    scorers split words on whitespace, which swallows them. ``-`` reads standard input.

    :raises InputError: the file is missing, unreadable or not UTF-8 (with the line number).
    """
    return decode_lines(read_bytes(path), "<stdin>" if is_stdin(path) else path)


def file_digests(path: str | PathLike[str], algos: Iterable[str] = ("sha256",)) -> dict[str, str]:
    """Hex digests of a file's bytes, every algorithm in one pass (``{"md5": …, "sha1": …}``)."""
    hashers = {a: hashlib.new(a) for a in algos}
    if is_stdin(path):
        for h in hashers.values():
            h.update(stdin_bytes())
        return {a: h.hexdigest() for a, h in hashers.items()}
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            for h in hashers.values():
                h.update(chunk)
    return {a: h.hexdigest() for a, h in hashers.items()}


def sha256_file(path: str | PathLike[str]) -> str:
    return file_digests(path)["sha256"]
