"""Host memory: keep freed blocks in the process instead of handing them back to the kernel.

Why: a CPU training step allocates tensors of several MB to a few tens of MB and frees them
within the step: the (tokens, V) logits, their log-softmax, its gradient, the gradient of the
NLL (about 27 MB each at 760 target tokens and an 8,784-word vocabulary); a beam-search step at
beam 12 × 30 sentences, its (360, V) log-probabilities and totals. PyTorch's CPU allocator takes
every one from ``malloc``. glibc serves blocks above its mmap threshold with a fresh ``mmap`` and
returns them with ``munmap`` on free, and trims the top of its heap once more than its trim
threshold lies free there. Each new block then starts as untouched pages that the kernel must
fault in and zero before the first write. glibc raises both thresholds as it sees large blocks
freed, but the sizes change from batch to batch and step to step, and tens of thousands of
pages were still faulted in per beam search (tests/test_memory.py). At 2×256 on one CPU thread
(benchmarks/RESULTS.md, C6) training ran about 10% and beam-12 decoding of 30-sentence batches
about 18% faster with the setting below.

:func:`keep_freed_memory` sets the mmap threshold to glibc's maximum (32 MiB on 64-bit systems)
and the trim threshold far above it, so blocks up to 32 MiB come from the heap and freed ones are
reused. Larger blocks (paper-scale logits) are still mapped and unmapped each time. Only where
memory comes from changes, not any value computed: results are bit-identical. The price is
resident memory: the heap keeps its high-water mark until the process ends, as a caching
allocator would.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform

#: glibc's ``mallopt`` parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: the largest mmap threshold glibc accepts on 64-bit systems (HEAP_MAX_SIZE / 2)
MMAP_THRESHOLD_MAX = 32 * 1024 * 1024
#: freed heap memory kept before glibc trims the heap's top (bytes)
TRIM_THRESHOLD = 1 << 30

_done = False


def keep_freed_memory() -> bool:
    """Set glibc's mmap threshold to 32 MiB and its trim threshold to 1 GiB for this process.

    Idempotent. Returns whether the settings are in effect: False where the C library is not
    glibc (macOS, musl) or refuses them; nothing is changed then."""
    global _done
    if _done:
        return True
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    # mallopt returns 1 on success; either setting also stops glibc's dynamic threshold
    _done = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _done
