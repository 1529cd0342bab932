"""The download cache's entry points: ``fetch``, ``verify`` and ``copy_verified``.

What: the registry (``corpora.yaml``, read by :mod:`nmtlib.data.corpora`) lists every file the
experiments read, with its sha256 and its place in the cache. ``fetch(dataset)`` returns the
local paths of a data set's files, downloading what is missing; ``verify(dataset)`` only checks;
``copy_verified`` is how a cache file is *read*: it copies one file (gunzipped when it is gzip)
and hashes the very bytes it reads, in the same pass, so a file changed after ``fetch`` verified
it never reaches the copy (nothing is written then).

Why: results are only comparable when everybody trains and scores on the same bytes. So a cached
file is used only when its sha256 matches; a bad one is reported (file, expected, got), moved
aside with a ``.corrupt`` suffix and fetched again (:mod:`nmtlib.data.cache`, which also keeps
the trust-on-first-use record of files the registry does not pin), and a download becomes
visible under its final name only after it verified (:mod:`nmtlib.data.fetching`: HTTP with
resume and retries, standard library only). Archives are unpacked with member checks and the
sha256 of every member recorded (:mod:`nmtlib.data.archives`).

The cache folder is the ``cache_dir`` argument, else ``$NMTLIB_CACHE``, else ``~/.cache/nmtlib``.
A folder that already holds the files (such as a read-only copy of the data) is a valid cache:
when every file verifies, nothing is written to it.
"""

from __future__ import annotations

import hashlib
import logging
import shlex
import zlib
from pathlib import Path
from typing import Any

from nmtlib.atomic import atomic_write
from nmtlib.data.archives import MARKER, read_marker, unpack, unpacked_members
from nmtlib.data.cache import (
    Tofu,
    check_file,
    compare,
    expected_sha256,
    move_aside,
    resolve_cache_dir,
)
from nmtlib.data.corpora import Dataset, FileEntry, Registry, RegistrySource, load_registry
from nmtlib.data.fetching import file_lock, manual_error, obtain
from nmtlib.errors import NmtlibError
from nmtlib.files import CHUNK

__all__ = ["fetch", "verify", "copy_verified"]

log = logging.getLogger(__name__)


# --- fetch / verify -------------------------------------------------------------------------


def _open(
    dataset: str, cache_dir: Path | str | None, registry: RegistrySource
) -> tuple[Registry, Dataset, Path, Tofu]:
    """What fetch, verify and copy_verified start from: the registry, the data set, the cache
    folder and its first-use record (not read yet: copy_verified first checks the file name)."""
    reg = load_registry(registry)
    ds = reg.dataset(dataset)
    cache = resolve_cache_dir(cache_dir)
    return reg, ds, cache, Tofu(cache, ds.name)


def _cached_sha256(target: Path, entry: FileEntry, expected: str | None, source: str) -> str | None:
    """The sha256 of the cache file ``target`` if it verifies; a bad one is moved aside (None)."""
    check = check_file(target, entry, expected, source)
    if check.ok:
        return check.sha256
    aside = move_aside(target)
    log.warning("%s: %s; moved to %s, fetching it again", target, check.problem, aside)
    return None


def _select(
    ds: Dataset, files: list[str] | None, *, present_optional_in: Path | None = None
) -> list[FileEntry]:
    if files is None:
        chosen = [
            e
            for e in ds.files.values()
            if not e.optional
            or (present_optional_in is not None and (present_optional_in / e.path).exists())
        ]
        return chosen
    unknown = [f for f in files if f not in ds.files]
    if unknown:
        raise NmtlibError(
            f"data set {ds.name!r} has no file(s) {', '.join(map(repr, unknown))}; "
            f"valid: {', '.join(ds.files)}"
        )
    return [ds.files[f] for f in dict.fromkeys(files)]


def fetch(
    dataset: str,
    cache_dir: Path | str | None = None,
    files: list[str] | None = None,
    *,
    registry: RegistrySource = None,
    retries: int = 4,
    backoff: float = 1.0,
    timeout: float = 60.0,
    progress: bool | None = None,
) -> dict[str, Path]:
    """Local, verified paths of a data set's files, downloading what is missing or corrupt.

    :param files: file names to fetch (default: every file not marked ``optional``).
    :param registry: a registry file path or mapping instead of the packaged ``corpora.yaml``.
    :param retries: extra attempts per download after the first; waits ``backoff * 2**k`` s.
    :returns: file name -> path; for archives also member name -> path of the unpacked member.
    :raises NmtlibError: unknown data set/file, checksum mismatch after download, unreachable
        host (naming the URL and the cache path to fill by hand), or a manual entry not yet placed.
    """
    _, ds, cache, tofu_store = _open(dataset, cache_dir, registry)
    tofu = tofu_store.load()
    out: dict[str, Path] = {}
    selected = _select(ds, files)
    # all hand-placed files that are missing, in one message (rather than one per run)
    missing_manual = [
        (e, cache / e.path, expected_sha256(e, tofu)[0])
        for e in selected
        if (e.manual or e.url is None) and not (cache / e.path).is_file()
    ]
    if missing_manual:
        raise manual_error(ds, missing_manual, cache)
    for entry in selected:
        target = cache / entry.path
        expected, source = expected_sha256(entry, tofu)
        sha: str | None = None
        if target.is_file():
            sha = _cached_sha256(target, entry, expected, source)
        elif target.exists():
            raise NmtlibError(f"{target}: exists but is not a regular file")
        if sha is None:
            with file_lock(target):
                if target.is_file():  # another process may have finished it meanwhile
                    sha = _cached_sha256(target, entry, expected, source)
                if sha is None:
                    sha = obtain(
                        ds,
                        entry,
                        cache,
                        target,
                        expected,
                        source,
                        retries=retries,
                        backoff=backoff,
                        timeout=timeout,
                        progress=progress,
                    )
        if expected is None:
            tofu_store.record(entry.tofu_key, sha)
            tofu[entry.tofu_key] = sha
        out[entry.name] = target
        if entry.extract_to is not None:
            out.update(unpack(entry, target, cache, sha))
    return out


def verify(
    dataset: str,
    cache_dir: Path | str | None = None,
    files: list[str] | None = None,
    *,
    registry: RegistrySource = None,
) -> dict[str, Path]:
    """Check a data set in the cache without downloading or moving anything.

    Every default file (and any optional one that is present) must exist and match its
    checksum; unpinned files are recorded on first use. All problems are reported in one
    error. Returns the same mapping as :func:`fetch`.
    """
    _, ds, cache, tofu_store = _open(dataset, cache_dir, registry)
    tofu = tofu_store.load()
    out: dict[str, Path] = {}
    problems: list[str] = []
    for entry in _select(ds, files, present_optional_in=cache):
        target = cache / entry.path
        expected, source = expected_sha256(entry, tofu)
        if not target.is_file():
            where = "obtain it by hand (manual entry)" if entry.manual else f"from {entry.url}"
            problems.append(f"{target}: missing ({where})")
            continue
        check = check_file(target, entry, expected, source)
        if not check.ok:
            problems.append(f"{target}: {check.problem}")
            continue
        if expected is None:
            tofu_store.record(entry.tofu_key, check.sha256)
        out[entry.name] = target
        if entry.extract_to is not None:
            members = unpacked_members(entry, cache, check.sha256)
            if members is None:
                problems.append(
                    f"{cache / entry.extract_to}: not unpacked from {target} yet (run fetch)"
                )
            else:
                out.update(members)
    if problems:
        raise NmtlibError(
            f"data set {ds.name!r} in {cache} does not verify: " + "; ".join(problems)
        )
    return out


# --- reading a cache file ---------------------------------------------------------------------


def _locate(ds: Dataset, file: str, origin: str) -> tuple[FileEntry, str | None]:
    """The registry entry of ``file`` (a path relative to ``<cache>/<dataset>/``, as
    ``data.splits`` names it) and, for a member of an unpacked archive, the member's name."""
    for entry in ds.files.values():
        if entry.tofu_key == file:
            return entry, None
        if entry.extract_to is not None:
            prefix = entry.extract_to[len(ds.name) + 1 :] + "/"
            if file.startswith(prefix) and file[len(prefix) :] in entry.members:
                return entry, file[len(prefix) :]
    known = [e.tofu_key for e in ds.files.values()] + [
        f"{e.extract_to[len(ds.name) + 1 :]}/{m}"
        for e in ds.files.values()
        if e.extract_to is not None
        for m in e.members
    ]
    raise NmtlibError(
        f"{file!r} is not a file of data set {ds.name!r} ({origin}), so it cannot be "
        f"checksum-verified; its files: {', '.join(known)}"
    )


def _copy_hashing(src: Path, out: Any) -> tuple[str, int, str | None]:
    """Copy ``src`` to the binary file ``out`` (decompressed when it starts with the gzip magic,
    like ``gzip -cdf``), hashing the bytes read from ``src`` on the way: one pass over the file.

    Returns ``(sha256, size, problem)``; ``problem`` says why the gzip stream could not be
    decompressed (the rest of the file is still read, so the digest is of the whole file)."""
    sha = hashlib.sha256()
    size = 0
    gz: bool | None = None
    d: Any = None
    problem: str | None = None
    with open(src, "rb") as fh:
        while chunk := fh.read(CHUNK):
            sha.update(chunk)
            size += len(chunk)
            if problem is not None:
                continue  # only the digest is still needed
            if gz is None:
                gz = chunk[:2] == b"\x1f\x8b"
                d = zlib.decompressobj(wbits=31) if gz else None
            if not gz:
                out.write(chunk)
                continue
            data = chunk
            try:
                while data:
                    if d.eof:  # a further gzip member (or garbage after the last)
                        d = zlib.decompressobj(wbits=31)
                    out.write(d.decompress(data))
                    data = d.unused_data if d.eof else b""
            except zlib.error as err:
                problem = f"not a valid gzip stream ({err})"
    if gz and problem is None and not d.eof:
        problem = "the gzip stream ends early (truncated)"
    return sha.hexdigest(), size, problem


def copy_verified(
    dataset: str,
    file: str,
    dest: Path | str,
    cache_dir: Path | str | None = None,
    *,
    registry: RegistrySource = None,
) -> str:
    """Copy one cache file of ``dataset`` to ``dest`` (gunzipped when it is gzip) if, and only
    if, the bytes read have the sha256 the registry pins.

    ``file`` is relative to ``<cache>/<dataset>/`` (a file of the registry, or a member of an
    unpacked archive). The digest is taken of the very bytes that are copied, in the same pass,
    so a file that changed after :func:`fetch` verified it is caught where it is read. Expected
    digests: the registry's, else the one recorded on first use (``SHA256SUMS.tofu``); for an
    archive member, the one recorded when the verified archive was unpacked. On a mismatch
    ``dest`` is not written (an earlier ``dest`` is left as it was) and the error names the
    file, both digests and what to do. Returns the sha256 of the cache file.
    """
    reg, ds, cache, tofu_store = _open(dataset, cache_dir, registry)
    dest = Path(dest)
    entry, member = _locate(ds, file, reg.origin)
    tofu = tofu_store.load()
    expected, source = expected_sha256(entry, tofu)
    expected_size = entry.size
    download = f"nmtlib download {shlex.quote(ds.name)} --cache {shlex.quote(str(cache))}"
    if member is None:
        src = cache / entry.path
        advice = f"delete it or rerun the download ({download} moves it aside and fetches it again)"
    else:
        assert entry.extract_to is not None
        unpacked = cache / entry.extract_to
        src = unpacked / member
        advice = (
            f"delete {unpacked} and rerun the download ({download} unpacks the verified "
            f"archive {cache / entry.path} again)"
        )
        marker = read_marker(unpacked)
        if marker is None or member not in marker[1] or (expected not in (None, marker[0])):
            raise NmtlibError(
                f"{src}: no sha256 recorded for it by an unpacking of the verified archive "
                f"{cache / entry.path} ({unpacked / MARKER} is missing, stale or from an older "
                f"nmtlib); {advice}, then rerun"
            )
        expected, source = marker[1][member], f"recorded in {unpacked / MARKER} when unpacked"
        expected_size = None
    if not src.is_file():
        raise NmtlibError(f"{src}: missing from the cache; run {download}, then rerun")
    with atomic_write(dest, binary=True) as out:
        try:
            got, size, problem = _copy_hashing(src, out)
        except OSError as err:
            raise NmtlibError(f"cannot copy {src} to {dest}: {err}") from err
        check = compare(got, size, expected_size, expected, source)
        if not check.ok:  # raised inside atomic_write: dest is not written
            raise NmtlibError(
                f"{src}: {check.problem}; the file changed after it was verified, and nothing "
                f"was copied to {dest}: {advice}, then rerun"
            )
        if problem is not None:
            raise NmtlibError(f"{src}: {problem}; nothing was copied to {dest}")
    if expected is None:  # unpinned and never recorded (e.g. a read-only cache): first use
        tofu_store.record(entry.tofu_key, got)
    return got
