"""Reading the line-oriented text files that every step works on (writing: :mod:`nmtlib.atomic`)."""

from __future__ import annotations

from os import PathLike
from pathlib import Path

from nmtlib.errors import InputError

__all__ = ["read_lines"]


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
