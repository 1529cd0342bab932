"""Checksummed download cache for the data sets of the corpus registry.

What: the registry (``corpora.yaml``, read by :mod:`nmtlib.data.corpora`) lists every file the
experiments read, with its sha256 and its place in the cache. ``fetch(dataset)`` returns the
local paths of a data set's files, downloading what is missing; ``verify(dataset)`` only checks.

Why: results are only comparable when everybody trains and scores on the same bytes. So a cached
file is used only when its sha256 matches; a bad one is reported (file, expected, got), moved
aside with a ``.corrupt`` suffix (``.corrupt.1``, ``.corrupt.2``, ... when one is there already:
every bad copy is kept for inspection) and fetched again, and a download becomes visible under its
final name only after it verified (``.part`` file, then ``os.replace``). Files whose checksum is
not known yet (``sha256: null``) are "trusted on first use": the first checksum seen is written
to ``<cache>/<dataset>/SHA256SUMS.tofu`` and enforced from then on.

Downloads use only the standard library (urllib): HTTP Range resumes an interrupted ``.part``,
transient failures are retried with exponential back-off, and when the host cannot be reached
the error names the URL and the exact path where the file can be put by hand. Archives are
unpacked with the member checks of ``safe_extract`` (plus ``tarfile``'s ``"data"`` filter), and
the sha256 of every member is recorded beside them when they are unpacked.

``copy_verified`` is how a cache file is *read*: it copies one file (gunzipped when it is gzip)
and hashes the very bytes it reads, in the same pass, so a file changed after ``fetch`` verified
it never reaches the copy (nothing is written then).

The cache folder is the ``cache_dir`` argument, else ``$NMTLIB_CACHE``, else ``~/.cache/nmtlib``.
A folder that already holds the files (such as a read-only copy of the data) is a valid cache:
when every file verifies, nothing is written to it.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import logging
import os
import re
import shlex
import sys
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nmtlib.atomic import atomic_write, remove_stale_temporaries, temporary_name
from nmtlib.data.archives import MARKER, read_marker, sgm_to_text, unpack, unpacked_members
from nmtlib.data.cache import (
    ENV_CACHE,
    Tofu,
    check_file,
    compare,
    expected_sha256,
    move_aside,
    resolve_cache_dir,
)
from nmtlib.data.corpora import Dataset, FileEntry, RegistrySource, load_registry
from nmtlib.errors import NmtlibError
from nmtlib.files import file_digests

__all__ = [
    "fetch",
    "verify",
    "copy_verified",
]

log = logging.getLogger(__name__)

_CHUNK = 1 << 20


def _user_agent() -> str:
    from nmtlib import __version__

    return f"nmtlib/{__version__} (Python urllib)"


# --- HTTP -----------------------------------------------------------------------------------


class _Retryable(Exception):
    """A failure worth another attempt (server error, dropped connection, short body)."""


def _parse_content_range(value: str | None) -> tuple[int | None, int | None]:
    """``bytes START-END/TOTAL`` or ``bytes */TOTAL`` -> (START, TOTAL)."""
    if not value:
        return None, None
    m = re.fullmatch(r"\s*bytes\s+(?:(\d+)-\d+|\*)/(\d+|\*)\s*", value)
    if not m:
        return None, None
    start = int(m.group(1)) if m.group(1) is not None else None
    total = int(m.group(2)) if m.group(2) != "*" else None
    return start, total


def _download_once(
    url: str, part: Path, size: int | None, timeout: float, progress: bool | None
) -> None:
    """One attempt: continue ``part`` from its current length (HTTP Range) until complete."""
    have = part.stat().st_size if part.exists() else 0
    if size is not None and have > size:  # longer than the file can be: start over
        part.unlink()
        have = 0
    headers = {"User-Agent": _user_agent(), "Accept-Encoding": "identity"}
    if have:
        headers["Range"] = f"bytes={have}-"
    request = urllib.request.Request(url, headers=headers)
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as err:
        if err.code == 416 and have:  # nothing left to send: complete, or the part is bogus
            _, total = _parse_content_range(err.headers.get("Content-Range"))
            if total == have or (total is None and size == have):
                return
            part.unlink()
            raise _Retryable(f"server refused to resume at byte {have}; starting over") from err
        raise
    with response:
        start, total = _parse_content_range(response.headers.get("Content-Range"))
        if have and response.status == 206:
            if start != have:
                part.unlink()
                raise _Retryable(f"server resumed at byte {start}, not {have}; starting over")
            mode = "ab"
        else:  # 200: the server ignored the Range header and sends everything
            mode, have = "wb", 0
        length = response.headers.get("Content-Length")
        expected_total = (
            total
            if total is not None
            else (have + int(length) if length and length.isdigit() else size)
        )
        from tqdm import tqdm

        received = 0
        with (
            open(part, mode) as out,
            tqdm(
                total=expected_total,
                initial=have,
                unit="B",
                unit_scale=True,
                desc=part.name.removesuffix(".part"),
                file=sys.stderr,
                disable=None if progress is None else not progress,
                mininterval=1.0,
            ) as bar,
        ):
            try:
                while chunk := response.read(_CHUNK):
                    out.write(chunk)
                    received += len(chunk)
                    bar.update(len(chunk))
            except (http.client.IncompleteRead, ConnectionError, TimeoutError) as err:
                raise _Retryable(
                    f"connection lost after {have + received} bytes ({err!r})"
                ) from err
        if length and length.isdigit() and received < int(length):
            raise _Retryable(
                f"connection closed after {have + received} of {have + int(length)} bytes"
            )


def _download(
    url: str,
    part: Path,
    *,
    size: int | None,
    retries: int,
    backoff: float,
    timeout: float,
    progress: bool | None,
    hand_hint: str,
) -> None:
    """Download ``url`` into ``part``, resuming and retrying; errors say where to put it by hand."""
    part.parent.mkdir(parents=True, exist_ok=True)
    attempts = retries + 1
    last: BaseException | None = None
    for attempt in range(1, attempts + 1):
        try:
            _download_once(url, part, size, timeout, progress)
            return
        except urllib.error.HTTPError as err:
            last = err
            if 400 <= err.code < 500 and err.code not in (408, 425, 429):
                raise NmtlibError(
                    f"cannot download {url}: HTTP {err.code} {err.reason}; {hand_hint}"
                ) from err
        except (_Retryable, urllib.error.URLError, http.client.HTTPException, OSError) as err:
            last = err
        if attempt < attempts:
            delay = backoff * 2 ** (attempt - 1)
            log.warning(
                "download %s failed (%s); retry %d/%d in %.1f s",
                url,
                _reason(last),
                attempt,
                retries,
                delay,
            )
            time.sleep(delay)
    if isinstance(last, urllib.error.HTTPError):
        raise NmtlibError(
            f"cannot download {url}: HTTP {last.code} {last.reason} after {_n(attempts)}; "
            f"{hand_hint}"
        ) from last
    if isinstance(last, _Retryable):
        raise NmtlibError(
            f"cannot download {url}: {last} after {_n(attempts)} (the partial download "
            f"{part} is kept and resumed next time); {hand_hint}"
        ) from last
    if isinstance(last, (urllib.error.URLError, ConnectionError, TimeoutError)):
        raise NmtlibError(
            f"cannot download {url}: {_reason(last)} after {_n(attempts)} - offline, or the "
            f"host is unreachable; {hand_hint}"
        ) from last
    raise NmtlibError(f"cannot download {url} to {part}: {_reason(last)}; {hand_hint}") from last


def _n(attempts: int) -> str:
    return f"{attempts} attempt" + ("" if attempts == 1 else "s")


def _reason(err: BaseException | None) -> str:
    if isinstance(err, urllib.error.HTTPError):
        return f"HTTP {err.code} {err.reason}"
    if isinstance(err, urllib.error.URLError):
        return str(err.reason)
    return str(err)


# --- fetch / verify -------------------------------------------------------------------------


@contextlib.contextmanager
def _lock(target: Path) -> Iterator[None]:
    """One downloader per file across processes (parallel Snakemake jobs share the cache)."""
    lock_path = target.with_name(f".{target.name}.lock")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fh = open(lock_path, "a")  # closed by the "with fh" blocks below
    except OSError as err:
        raise NmtlibError(
            f"{target} must be fetched, but the cache folder {target.parent} is not writable "
            f"({err.strerror}); use a writable cache (--cache / ${ENV_CACHE}) or place the "
            "file there by hand"
        ) from err
    try:
        import fcntl
    except ImportError:  # not POSIX: no cross-process lock
        with fh:
            yield
        return
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


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


def _hand_hint(entry: FileEntry, target: Path, expected: str | None) -> str:
    what = (
        "the plain text extracted from that SGML file" if entry.convert == "wmt-sgm" else "the file"
    )
    pin = f" (sha256 {expected})" if expected else ""
    return f"download it elsewhere and place {what} by hand at {target}{pin}, then rerun"


def _manual_error(
    ds: Dataset, missing: list[tuple[FileEntry, Path, str | None]], cache: Path
) -> NmtlibError:
    how = ds.instructions.replace("<cache>", str(cache)) or "see docs/data.md."
    listed = ", ".join(
        f"{target}" + (f" (sha256 {expected})" if expected else "")
        for _, target, expected in missing
    )
    return NmtlibError(
        f"data set {ds.name!r} is licence-restricted and must be obtained by hand: {how} "
        f"Missing {len(missing)} file(s): {listed}."
    )


def _obtain(
    ds: Dataset,
    entry: FileEntry,
    cache: Path,
    target: Path,
    expected: str | None,
    source: str,
    *,
    retries: int,
    backoff: float,
    timeout: float,
    progress: bool | None,
) -> str:
    """Download (and convert) ``entry`` to ``target``; returns the verified sha256."""
    if entry.manual or entry.url is None:
        raise _manual_error(ds, [(entry, target, expected)], cache)
    part = target.with_name(target.name + ".part")
    hint = _hand_hint(entry, target, expected)
    log.info("downloading %s -> %s", entry.url, target)
    _download(
        entry.url,
        part,
        size=None if entry.convert else entry.size,
        retries=retries,
        backoff=backoff,
        timeout=timeout,
        progress=progress,
        hand_hint=hint,
    )
    # checksums published for the downloaded bytes themselves (md5/sha1 from other sources)
    extra = [a for a in ("md5", "sha1") if getattr(entry, a)]
    if extra:
        got = file_digests(part, extra)
        for algo in extra:
            if got[algo] != getattr(entry, algo):
                aside = move_aside(part)
                raise NmtlibError(
                    f"{entry.url}: {algo} mismatch: expected {getattr(entry, algo)}, "
                    f"got {got[algo]}; "
                    f"the download was moved to {aside} and not used"
                )
    candidate = part
    if entry.convert == "wmt-sgm":
        remove_stale_temporaries(target)  # conversions that a killed run left (we hold the lock)
        candidate = temporary_name(target)
        try:
            sgm_to_text(part, candidate)
        except (OSError, UnicodeDecodeError) as err:
            candidate.unlink(missing_ok=True)
            aside = move_aside(part)
            raise NmtlibError(
                f"{entry.url}: cannot convert from SGML ({err}); moved to {aside}"
            ) from err
    check = check_file(candidate, entry, expected, source)
    if not check.ok:
        aside = move_aside(candidate)
        part.unlink(missing_ok=True)  # (a no-op when the candidate was the part itself)
        raise NmtlibError(
            f"{target}: the download from {entry.url} does not verify: {check.problem}; "
            f"moved to {aside} and not used"
        )
    os.replace(candidate, target)
    if candidate is not part:
        part.unlink(missing_ok=True)
    return check.sha256


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
    reg = load_registry(registry)
    ds = reg.dataset(dataset)
    cache = resolve_cache_dir(cache_dir)
    tofu_store = Tofu(cache, ds.name)
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
        raise _manual_error(ds, missing_manual, cache)
    for entry in selected:
        target = cache / entry.path
        expected, source = expected_sha256(entry, tofu)
        sha: str | None = None
        if target.is_file():
            check = check_file(target, entry, expected, source)
            if check.ok:
                sha = check.sha256
            else:
                aside = move_aside(target)
                log.warning("%s: %s; moved to %s, fetching it again", target, check.problem, aside)
        elif target.exists():
            raise NmtlibError(f"{target}: exists but is not a regular file")
        if sha is None:
            with _lock(target):
                if target.is_file():  # another process may have finished it meanwhile
                    check = check_file(target, entry, expected, source)
                    sha = check.sha256 if check.ok else None
                    if not check.ok:
                        aside = move_aside(target)
                        log.warning(
                            "%s: %s; moved to %s, fetching it again", target, check.problem, aside
                        )
                if sha is None:
                    sha = _obtain(
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
    reg = load_registry(registry)
    ds = reg.dataset(dataset)
    cache = resolve_cache_dir(cache_dir)
    tofu_store = Tofu(cache, ds.name)
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
        while chunk := fh.read(_CHUNK):
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
    reg = load_registry(registry)
    ds = reg.dataset(dataset)
    cache = resolve_cache_dir(cache_dir)
    dest = Path(dest)
    entry, member = _locate(ds, file, reg.origin)
    tofu_store = Tofu(cache, ds.name)
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
