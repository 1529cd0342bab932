"""Reading files: the line-oriented text every step works on, and the checksums that pin data,
cache files and vocabularies (writing: :mod:`nmtlib.atomic`).

**The one reader of text, enforced here** (issue #41): every text input of every command (corpus,
tokenized split, vocabulary, dictionary, hypothesis, reference, gold and predicted alignments,
``translate``'s ``--src`` and standard input) is decoded by :func:`decode_lines`, whole
(:func:`read_lines`) or line by line (:func:`iter_lines`, plain or gzip), so that each is read
the same whichever command reads it:

- a UTF-8 byte order mark at the start of the input is dropped;
- lines end at ``\n`` only (not at U+2028 or form feed); a ``\r`` before it (CRLF) is dropped,
  and a final line without ``\n`` is kept whole;
- bytes that are not UTF-8 are an :class:`~nmtlib.errors.InputError` naming the file and line;
- a NUL byte is an error naming the file and line (a binary file, or UTF-16, given as text);
- the other control characters that are not whitespace to ``str.split`` (U+0001–U+0008,
  U+000E–U+001B, U+007F–U+0084, U+0086–U+009F, and a ``\r`` inside a line) become a space, as
  Moses' tokenizer removes them, so that no token carries one; tab, vertical tab, form feed,
  U+001C–U+001F and U+0085 are whitespace already and are kept.

A path ``-`` is standard input (``nmtlib score bleu --hyp -``): read once, whole, and kept, so
that reading it again (its lines, then its sha256) sees the same bytes."""

from __future__ import annotations

import codecs
import functools
import gzip
import hashlib
import re
import sys
from collections.abc import Iterable, Iterator
from os import PathLike
from pathlib import Path

from nmtlib.errors import InputError

__all__ = ["STDIN", "is_stdin", "read_lines", "iter_lines", "decode_lines", "file_digests", "sha256_file"]

#: bytes read at a time when a file is streamed (hashing, copying, downloading)
CHUNK = 1 << 20
#: the path that names standard input (and standard output, where a command writes)
STDIN = "-"
#: the first bytes of a gzip stream: such a file is read decompressed, whatever its name
GZIP_MAGIC = b"\x1f\x8b"
#: control characters that str.split() does not take for whitespace (the module's docstring)
_CONTROL = re.compile("[\x01-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\r]")


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
    """``data`` as lines, by the rules of the module's docstring: the one decoder of every text
    input. ``name`` and ``first_line`` (the number of the first line of ``data`` in its input: 1
    is the start, where a byte order mark is dropped) are for the errors.

    :raises InputError: not UTF-8, or a NUL byte, naming the file and line."""
    if first_line == 1 and data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = first_line + data.count(b"\n", 0, err.start)
        column = err.start - (data.rfind(b"\n", 0, err.start) + 1)
        raise InputError(f"{name}:{line}: invalid UTF-8 at byte {column} of the line ({err.reason})") from None
    if (nul := text.find("\0")) >= 0:
        raise InputError(f"{name}:{first_line + text.count(chr(10), 0, nul)}: a NUL byte: not a text file (UTF-16, "
                         f"or binary?)")
    lines = text.replace("\r\n", "\n").split("\n")
    if lines[-1] == "":  # the newline that ends the last line does not start another one
        lines.pop()
    elif lines[-1].endswith("\r"):  # a last line without its \n, ended CRLF-style
        lines[-1] = lines[-1][:-1]
    if _CONTROL.search(text):
        lines = [_CONTROL.sub(" ", line) for line in lines]
    return lines


def read_lines(path: str | PathLike[str]) -> list[str]:
    """A text file (``-``: standard input) as one string per line, without line ends, read whole
    by :func:`decode_lines`. Lines end at ``\\n`` only, like Perl's ``<FH>`` and Python's file
    iteration in the reference scorers.

    :raises InputError: the file is missing, unreadable, not UTF-8 or binary (with the line)."""
    return decode_lines(read_bytes(path), "<stdin>" if is_stdin(path) else path)


def iter_lines(path: str | PathLike[str]) -> Iterator[str]:
    """:func:`read_lines` one line at a time, for corpora too large to hold; a gzip file (known
    by its first bytes, not its name) is read decompressed.

    :raises InputError: as :func:`read_lines`, or a truncated or corrupt gzip stream."""
    if is_stdin(path):
        yield from read_lines(path)
        return
    from nmtlib.atomic import note_input  # the rule for outputs (nmtlib.atomic): no output is an input

    note_input(path)
    try:
        with open(path, "rb") as fh:
            gzipped = fh.read(2) == GZIP_MAGIC
        raw = gzip.open(path, "rb") if gzipped else open(path, "rb")
    except OSError as err:
        raise InputError(f"cannot read {path}: {err.strerror or err}") from None
    with raw:
        try:
            for number, data in enumerate(raw, start=1):
                yield from decode_lines(data, path, number)
        except (OSError, EOFError) as err:  # truncated or corrupt gzip stream
            raise InputError(f"{path}: cannot read ({err})") from None


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
