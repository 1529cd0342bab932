"""Archives and converted files in the cache: unpacking and the WMT SGML conversion.

What: :func:`safe_extract` unpacks a tar or zip archive; :func:`unpack` unpacks a verified
archive of the registry into its ``extract_to`` folder and records the sha256 of the archive and
of every member in a marker file (:func:`read_marker`), which is what a member is later checked
against; :func:`sgm_to_text` turns WMT "fake SGML" into the plain text the registry pins.

Why our own checks: ``tarfile``'s ``"data"`` filter is missing from older Pythons and zip has no
such filter, so member names, links and device files are checked here before anything is
written; a crafted archive must not write outside the folder. An unpacking goes to a temporary
folder renamed into place, so a half-unpacked folder is never taken as complete.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import stat
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from nmtlib.atomic import temporary_name
from nmtlib.data.cache import move_aside
from nmtlib.data.corpora import FileEntry
from nmtlib.errors import NmtlibError
from nmtlib.files import sha256_file

__all__ = ["MARKER", "sgm_to_text", "safe_extract", "read_marker", "unpacked_members", "unpack"]

log = logging.getLogger(__name__)

MARKER = ".nmtlib-extracted"
_SEG = re.compile(r"<seg\b[^>]*>(.*)</seg>")


def sgm_to_text(src: Path | str, dst: Path | str) -> int:
    """WMT "fake SGML" -> plain text: the text of every ``<seg ...>TEXT</seg>`` line, verbatim.

    No entity decoding and no whitespace clean-up: the WMT files hold raw ``&`` and the
    occasional double space, and the registry's checksums are of this verbatim text. (sacreBLEU's
    own extraction also collapses whitespace, so its copies differ in a few lines.)
    Returns the number of segments.
    """
    n = 0
    with (
        open(src, encoding="utf-8", newline="\n") as fin,
        open(dst, "w", encoding="utf-8", newline="\n") as fout,
    ):
        for line in fin:
            m = _SEG.search(line)
            if m:
                fout.write(m.group(1) + "\n")
                n += 1
    return n


def _check_member_name(name: str, archive: Path) -> None:
    p = PurePosixPath(name.replace("\\", "/"))
    if p.is_absolute() or re.match(r"^[A-Za-z]:", name) or ".." in p.parts:
        raise NmtlibError(
            f"{archive}: unsafe archive member {name!r} (absolute path or '..'); "
            "refusing to extract"
        )


def _inside(base: PurePosixPath, target: str) -> bool:
    parts: list[str] = []
    for piece in (base / target).parts:
        if piece == "..":
            if not parts:
                return False
            parts.pop()
        elif piece not in (".", ""):
            parts.append(piece)
    return True


def safe_extract(archive: Path | str, dest: Path | str) -> None:
    """Unpack a tar or zip archive into ``dest``, refusing absolute names, ``..`` components,
    links that point outside ``dest`` and device files (a crafted archive must not write
    anywhere else). Tar archives additionally go through ``tarfile``'s ``"data"`` filter where
    this Python has it."""
    archive, dest = Path(archive), Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                _check_member_name(info.filename, archive)
                if stat.S_ISLNK(info.external_attr >> 16):
                    raise NmtlibError(
                        f"{archive}: unsafe archive member {info.filename!r} (a link); "
                        "refusing to extract"
                    )
            zf.extractall(dest)
        return
    try:
        tf = tarfile.open(archive)
    except tarfile.TarError as err:
        raise NmtlibError(f"{archive}: not a tar or zip archive ({err})") from err
    with tf:
        members = tf.getmembers()
        for m in members:
            _check_member_name(m.name, archive)
            if m.issym() or m.islnk():
                base = PurePosixPath(m.name).parent if m.issym() else PurePosixPath()
                if PurePosixPath(m.linkname).is_absolute() or not _inside(base, m.linkname):
                    raise NmtlibError(
                        f"{archive}: unsafe archive member {m.name!r} (link to {m.linkname!r} "
                        "outside the archive); refusing to extract"
                    )
            elif not (m.isfile() or m.isdir()):
                raise NmtlibError(
                    f"{archive}: unsafe archive member {m.name!r} (device or fifo); "
                    "refusing to extract"
                )
        try:
            if hasattr(tarfile, "data_filter"):
                tf.extractall(dest, members=members, filter="data")
            else:  # Python without PEP 706: the checks above are the guard
                tf.extractall(dest, members=members)
        except tarfile.TarError as err:
            raise NmtlibError(f"{archive}: refusing to extract ({err})") from err


def read_marker(dest: Path) -> tuple[str, dict[str, str]] | None:
    """``(archive sha256, member -> sha256)`` from an unpacking's marker file, or None.

    The marker's first line is the sha256 of the archive it was unpacked from; each further line
    is ``<sha256>  <member>``, the member's digest taken when it was unpacked (markers written by
    an older nmtlib hold the first line only)."""
    try:
        lines = (dest / MARKER).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    if not lines:
        return None
    members: dict[str, str] = {}
    for line in lines[1:]:
        m = re.fullmatch(r"([0-9a-f]{64})  (.+)", line)
        if m:
            members[m.group(2)] = m.group(1)
    return lines[0].strip(), members


def unpacked_members(entry: FileEntry, cache: Path, archive_sha: str) -> dict[str, Path] | None:
    """The member paths if ``extract_to`` holds a complete unpacking of this very archive, with
    the digest of every member recorded (what :func:`nmtlib.data.download.copy_verified` checks
    them against)."""
    assert entry.extract_to is not None
    dest = cache / entry.extract_to
    marker = read_marker(dest)
    if marker is None or marker[0] != archive_sha or not set(entry.members) <= set(marker[1]):
        return None
    paths = {m: dest / m for m in entry.members}
    return paths if all(p.is_file() for p in paths.values()) else None


def unpack(entry: FileEntry, archive: Path, cache: Path, archive_sha: str) -> dict[str, Path]:
    """Unpack the verified ``archive`` (sha256 ``archive_sha``) into ``extract_to``, unless that
    is done already; returns member name -> path. A stale or incomplete folder is moved aside."""
    found = unpacked_members(entry, cache, archive_sha)
    if found is not None:
        return found
    assert entry.extract_to is not None
    dest = cache / entry.extract_to
    marker = read_marker(dest)
    if marker is not None and marker[0] == archive_sha and not set(entry.members) <= set(marker[1]):
        # this very archive, unpacked by an older nmtlib that recorded no member digests
        log.warning("%s: unpacking it again to record the sha256 of its members", dest)
        shutil.rmtree(dest)
    elif dest.exists():
        log.warning("%s: incomplete or stale unpacking; moved to %s", dest, move_aside(dest))
    tmp = temporary_name(dest)
    try:
        safe_extract(archive, tmp)
        missing = [m for m in entry.members if not (tmp / m).is_file()]
        if missing:
            raise NmtlibError(f"{archive}: expected member(s) missing: {', '.join(missing)}")
        digests = "".join(f"{sha256_file(tmp / m)}  {m}\n" for m in entry.members)
        (tmp / MARKER).write_text(archive_sha + "\n" + digests, encoding="utf-8")
        os.replace(tmp, dest)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return {m: dest / m for m in entry.members}
