"""Atomic checkpoint files, loaded with ``weights_only=True``.

A checkpoint is written to a temporary file in the same folder, flushed to disk and renamed
over the old one, so a kill or a full disk at any moment leaves the previous checkpoint intact.
Loading never unpickles arbitrary objects: checkpoints hold tensors, numbers, strings, lists
and dicts only.
"""

from __future__ import annotations

import errno
import os
import pickle
import shutil
from pathlib import Path
from typing import Any

import torch

from nmtlib.atomic import atomic_write


def save_atomic(obj: dict[str, Any], path: str | Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with atomic_write(path, binary=True) as f:  # removes its temp file on any error
            torch.save(obj, f)
    except (OSError, RuntimeError) as err:
        # a full disk surfaces as OSError or as torch's RuntimeError from its zip writer
        code = err.errno if isinstance(err, OSError) and err.errno else errno.EIO
        if code == errno.EIO and shutil.disk_usage(path.parent).free < (1 << 20):
            code = errno.ENOSPC  # torch's zip writer reports a full disk as "unexpected pos"
        reason = os.strerror(code) if code in (errno.ENOSPC, errno.EDQUOT) else str(err)
        previous = "the previous checkpoint is intact" if path.exists() else "no earlier checkpoint existed"
        raise OSError(code, f"cannot write checkpoint {path}: {reason}; {previous}") from None


def load(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Load tensors and plain data only; anything else (a pickled object) is refused."""
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as err:
        lines = [line.strip() for line in str(err).splitlines() if line.strip()]
        # torch's message is several paragraphs (and suggests weights_only=False): keep the culprit
        first = next((line for line in lines if "GLOBAL" in line), lines[0] if lines else type(err).__name__)
        raise ValueError(f"{path}: refusing to load: the file holds more than tensors and plain data "
                         f"(weights_only=True): {first}") from None
