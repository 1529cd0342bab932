"""Reading files: the line-oriented text every step works on, and the checksums that pin data,
cache files and vocabularies (writing: :mod:`nmtlib.atomic`)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from os import PathLike
from pathlib import Path

from nmtlib.errors import InputError

__all__ = ["read_lines", "file_digests", "sha256_file"]

#: bytes read at a time when a file is streamed (hashing, copying, downloading)
CHUNK = 1 << 20


def read_lines(path: str | PathLike[str]) -> list[str]:
    """Read a UTF-8 text file as one string per line, without the ``\\n``.

    Lines are split on ``\\n`` only (not on the other separators ``str.splitlines`` knows, such
    as U+2028 or form feed), like Perl's ``<FH>`` and Python's file iteration in the reference
    scorers; a final line without ``\\n`` is kept whole. Carriage returns stay in the line: all
    scorers split words on whitespace, which swallows them.

    :raises InputError: the file is missing, unreadable or not UTF-8 (with the line number).
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise InputError(f"cannot read {path}: {err.strerror or err}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise InputError(f"{path}:{line}: not valid UTF-8 ({err.reason})") from None
    lines = text.split("\n")
    if lines[-1] == "":  # the newline that ends the last line does not start another one
        lines.pop()
    return lines


def file_digests(path: str | PathLike[str], algos: Iterable[str] = ("sha256",)) -> dict[str, str]:
    """Hex digests of a file's bytes, every algorithm in one pass (``{"md5": …, "sha1": …}``)."""
    hashers = {a: hashlib.new(a) for a in algos}
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            for h in hashers.values():
                h.update(chunk)
    return {a: h.hexdigest() for a, h in hashers.items()}


def sha256_file(path: str | PathLike[str]) -> str:
    return file_digests(path)["sha256"]
