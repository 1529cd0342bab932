"""Getting one file of the registry into the cache: HTTP download, lock, checks, rename.

What: :func:`obtain` downloads an entry to ``<file>.part`` (HTTP ``Range`` resumes an interrupted
transfer; server errors, dropped connections and unreachable hosts are retried with exponential
back-off), checks the md5/sha1 a third party publishes, converts it (WMT SGML), verifies the
sha256 and size, and only then renames it to its final name. :func:`file_lock` makes parallel
jobs that share the cache download a file once. Errors that end a download name the URL and the
exact path where the file can be put by hand (:func:`manual_error` for licence-restricted data).

Why our own downloader: the standard library (urllib) is enough for resuming and retrying, the
cluster's nodes have no extra tools, and every failure must say what to do next; a download
that does not verify is moved aside with a ``.corrupt`` suffix and never used.
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import os
import re
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from nmtlib.atomic import remove_stale_temporaries, temporary_name
from nmtlib.data.archives import sgm_to_text
from nmtlib.data.cache import ENV_CACHE, check_file, move_aside
from nmtlib.data.corpora import Dataset, FileEntry
from nmtlib.errors import NmtlibError
from nmtlib.files import CHUNK, file_digests

__all__ = ["file_lock", "manual_error", "obtain"]

log = logging.getLogger(__name__)


def _user_agent() -> str:
    from nmtlib import __version__

    return f"nmtlib/{__version__} (Python urllib)"


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
                while chunk := response.read(CHUNK):
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


@contextlib.contextmanager
def file_lock(target: Path) -> Iterator[None]:
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


def _hand_hint(entry: FileEntry, target: Path, expected: str | None) -> str:
    what = (
        "the plain text extracted from that SGML file" if entry.convert == "wmt-sgm" else "the file"
    )
    pin = f" (sha256 {expected})" if expected else ""
    # the other way out for an offline machine with the data on disk (a shared folder, a copied cache)
    return (f"download it elsewhere and place {what} by hand at {target}{pin}, or point the cache at a folder "
            "that holds it ($NMTLIB_CACHE, nmtlib download --cache, the workflow's --config cache_dir=), "
            "then rerun")


def manual_error(
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


def obtain(
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
        raise manual_error(ds, [(entry, target, expected)], cache)
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
