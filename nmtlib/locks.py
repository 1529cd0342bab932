"""A folder held by one process for as long as it lives: an exclusive ``flock`` on the folder itself.

The workflow's driver holds its experiment's results folder (``onstart`` in
``workflow/rules/common.smk``), so that one Snakemake at a time runs an experiment. Snakemake's own
lock does not ensure that when the drivers of several experiments share a working directory, as
they may (their files never overlap): its file backend keeps every driver's locks in one folder,
``.snakemake/locks/``, and a driver that ends removes the whole folder (``shutil.rmtree`` in
``FilePersistence._delete_locks``, Snakemake 9.27; the db backend deletes the whole namespace's
rows), the locks of the drivers still running included. From then on nothing refuses a second
driver of a running experiment, and with ``--rerun-incomplete`` (the Slurm profile's setting) that
driver takes the first one's running jobs for incomplete and deletes their outputs.

The kernel drops the hold when the holder ends, however it ends (SIGKILL included), so nothing is
ever left to unlock. On NFS the client keeps a directory's ``flock`` to itself: the hold keeps out
the drivers of the same machine only.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

#: the folders this process holds, and the descriptor that holds each (kept open until exit)
_HELD: dict[Path, int] = {}


class FolderBusy(RuntimeError):
    """Another process holds the folder; :attr:`pid` is that process where the kernel says (else None)."""

    def __init__(self, folder: Path, pid: int | None):
        self.folder, self.pid = folder, pid
        super().__init__(f"{folder}: held by {'another process' if pid is None else f'process {pid}'}")


def hold(folder: Path | str) -> None:
    """Hold ``folder`` (made if missing) until this process exits; a folder this process already
    holds is held once.

    :raises FolderBusy: another process holds it."""
    folder = Path(folder).resolve()
    if folder in _HELD:
        return
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pid = holder(fd)
        os.close(fd)
        raise FolderBusy(folder, pid) from None
    _HELD[folder] = fd


def holder(fd: int) -> int | None:
    """The process holding a ``flock`` on the file open at ``fd``, as ``/proc/locks`` lists it (Linux;
    None elsewhere, or when the lock is gone or not a local ``flock``)."""
    st = os.fstat(fd)
    # /proc/locks: "1: FLOCK  ADVISORY  WRITE 9436 fe:00:2148565 0 EOF" (major:minor in hex, inode)
    file_id = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii") as table:
            for line in table:
                fields = line.split()
                if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == file_id:
                    return int(fields[4])
    except (OSError, ValueError):
        return None
    return None
