"""The download cache on disk: where it is, and how a file in it is judged.

What: :func:`resolve_cache_dir`; the trust-on-first-use record ``<cache>/<dataset>/SHA256SUMS.tofu``
(:class:`Tofu`) for files whose checksum the registry does not pin (``sha256: null``); the
verdict on a file's bytes against the expected sha256 and size (:func:`check_file`,
:func:`compare`); and :func:`move_aside`, which renames a bad copy to ``.corrupt``,
``.corrupt.1``, ... .

Why: a cached file is used only when its sha256 matches, so that everybody trains and scores on
the same bytes; a bad copy is kept (never overwritten) for inspection. A folder that already
holds the files, read-only ones included, is a valid cache: nothing here writes to it unless a
file is bad or a first-use checksum must be recorded.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from nmtlib.atomic import atomic_write
from nmtlib.data.corpora import FileEntry
from nmtlib.errors import NmtlibError
from nmtlib.files import sha256_file

__all__ = [
    "ENV_CACHE",
    "TOFU_NAME",
    "resolve_cache_dir",
    "Tofu",
    "Check",
    "check_file",
    "compare",
    "move_aside",
    "expected_sha256",
]

log = logging.getLogger(__name__)

ENV_CACHE = "NMTLIB_CACHE"
TOFU_NAME = "SHA256SUMS.tofu"


def resolve_cache_dir(cache_dir: Path | str | None = None) -> Path:
    """``cache_dir``, else ``$NMTLIB_CACHE``, else ``~/.cache/nmtlib``."""
    if cache_dir is not None and str(cache_dir) != "":
        return Path(cache_dir).expanduser()
    env = os.environ.get(ENV_CACHE)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "nmtlib"


class Tofu:
    """``<cache>/<dataset>/SHA256SUMS.tofu``: ``sha256sum``-format lines for unpinned files."""

    def __init__(self, cache: Path, dataset: str) -> None:
        self.path = cache / dataset / TOFU_NAME

    def load(self) -> dict[str, str]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as err:
            raise NmtlibError(f"{self.path}: cannot read ({err.strerror})") from err
        record: dict[str, str] = {}
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip() or line.startswith("#"):
                continue
            m = re.fullmatch(r"([0-9a-f]{64}) [ *](.+)", line)
            if not m:
                raise NmtlibError(f"{self.path}:{lineno}: expected '<sha256>  <path>'")
            record[m.group(2)] = m.group(1)
        return record

    def record(self, key: str, sha256: str) -> None:
        try:
            entries = self.load()
            entries[key] = sha256
            body = "".join(f"{h}  {k}\n" for k, h in sorted(entries.items()))
            with atomic_write(self.path) as fh:
                fh.write(
                    "# sha256 of files the registry does not pin yet, recorded on first use\n"
                    + body
                )
            log.warning(
                "trust on first use: recorded sha256 %s for %s in %s", sha256, key, self.path
            )
        except OSError as err:  # a read-only cache still works, it just cannot remember
            log.warning("cannot record the sha256 of %s in %s: %s", key, self.path, err)


@dataclass
class Check:
    ok: bool
    sha256: str
    size: int
    problem: str = ""


def check_file(path: Path, entry: FileEntry, expected: str | None, source: str) -> Check:
    """Hash ``path`` and compare it with the expected sha256 (and the registry's size)."""
    size = path.stat().st_size
    got = sha256_file(path)
    return compare(got, size, entry.size, expected, source)


def compare(
    got: str, size: int, expected_size: int | None, expected: str | None, source: str
) -> Check:
    """The verdict on bytes whose sha256 is ``got`` and length ``size``."""
    if expected is not None and got != expected:
        return Check(
            False, got, size, f"sha256 mismatch: expected {expected} ({source}), got {got}"
        )
    if expected_size is not None and size != expected_size:
        return Check(
            False,
            got,
            size,
            f"size mismatch: expected {expected_size} bytes (registry), got {size}",
        )
    return Check(True, got, size)


def _aside_names(path: Path) -> Iterator[Path]:
    """``<name>.corrupt``, then ``<name>.corrupt.1``, ``<name>.corrupt.2``, ..."""
    yield path.with_name(path.name + ".corrupt")
    n = 1
    while True:
        yield path.with_name(f"{path.name}.corrupt.{n}")
        n += 1


def move_aside(path: Path) -> Path:
    """Rename a bad file (or folder) to the first free ``.corrupt`` name; earlier ones are kept.

    A file is claimed with ``os.link`` (which never replaces), so two processes that move bad
    copies aside at once cannot overwrite each other's; a folder, or a file system without hard
    links, is renamed to a name that does not exist yet."""
    try:
        for aside in _aside_names(path):
            if os.path.lexists(aside):
                continue
            if path.is_file() and not path.is_symlink():
                try:
                    os.link(path, aside)
                except FileExistsError:  # taken meanwhile: the next name
                    continue
                except OSError:  # no hard links here
                    pass
                else:
                    os.unlink(path)
                    return aside
            os.rename(path, aside)
            return aside
    except OSError as err:
        raise NmtlibError(f"{path}: is corrupt and cannot be moved aside ({err})") from err
    raise AssertionError("unreachable")  # _aside_names never ends


def expected_sha256(entry: FileEntry, tofu: dict[str, str]) -> tuple[str | None, str]:
    """The sha256 ``entry`` must have and where it comes from: the registry, else the first-use
    record ``tofu`` (as :meth:`Tofu.load` returns it), else none yet."""
    if entry.sha256 is not None:
        return entry.sha256, "registry"
    if entry.tofu_key in tofu:
        return tofu[entry.tofu_key], f"recorded on first use in {TOFU_NAME}"
    return None, ""
