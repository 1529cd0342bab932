"""Mixed precision: where bf16 autocast runs, and the computations kept in float32 under it.

``train.bf16`` trains under ``torch.autocast(dtype=torch.bfloat16)``: matrix products run in bf16,
weights, optimiser state and the loss stay float32. On CUDA that is the fast path of every recent
GPU. On a CPU it pays only where the processor multiplies bf16 natively (AVX512-BF16 or AMX on
x86, the BF16 extension on Arm): there one thread ran the products of a 2×256 training step 3–9×
faster than in float32 (benchmarks/RESULTS.md, C8); elsewhere PyTorch emulates bf16 and it is
slower than float32, so :func:`require_bf16` refuses it.

bf16 keeps 8 significant bits: a source position of 30 is known to ±0.06. That is fine for a
word's vector and wrong for arithmetic *on positions*: local-p's predicted position p_t and its
Gaussian (Luong et al. 2015 Eq. 10–11), Flexible Attention's strength g(t) and position penalty
(Shu & Nakayama 2017 Eq. 5–8) and the location score's softmax over L_max positions (Luong Eq. 9).
Those run in float32 under autocast, through :func:`float32`.
"""

from __future__ import annotations

import contextlib
import functools
import platform
from collections.abc import Callable
from typing import Any, TypeVar

import torch
from torch import Tensor

F = TypeVar("F", bound=Callable[..., Any])


def native_bf16(device: torch.device) -> bool:
    """Whether ``device`` multiplies bf16 natively: every CUDA device autocast accepts; on a CPU,
    AVX512-BF16 or AMX-BF16 (x86) or Arm's BF16 extension, as PyTorch's cpuinfo reads them."""
    if device.type == "cuda":
        return True
    if device.type != "cpu":
        return False
    if platform.machine().lower() in ("aarch64", "arm64"):
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())  # Arm: cpuinfo's BF16 flag
    capabilities = getattr(torch.cpu, "get_capabilities", None)  # torch ≥ 2.8
    if capabilities is not None:
        flags = capabilities()
        return bool(flags.get("avx512_bf16") or flags.get("amx_bf16"))
    # torch 2.4–2.7 (x86): the private checks behind the same flags
    return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())


def require_bf16(device: torch.device, key: str) -> None:
    """Refuse bf16 where it would be emulated; ``key`` names the option that asked for it.

    :raises ValueError: one line naming ``key``, the device and what to do instead."""
    if native_bf16(device):
        return
    what = "this CPU has no native bf16 (AVX512-BF16, AMX or Arm BF16)" if device.type == "cpu" else \
        f"device {device.type!r} has no bf16 autocast here"
    raise ValueError(f"{key}: {what}; emulated bf16 is slower than float32, so set {key}: false")


def autocast(bf16: bool, device: torch.device, cache: bool = True) -> Callable[[], contextlib.AbstractContextManager]:
    """A factory of fresh contexts: bf16 autocast on ``device`` when ``bf16``, else no-ops.
    ``cache``: autocast's cache of cast weights (CUDA graphs cannot capture it)."""
    if not bf16:
        return contextlib.nullcontext
    return lambda: torch.autocast(device.type, dtype=torch.bfloat16, cache_enabled=cache)


def _up(value: Any) -> Any:
    if isinstance(value, Tensor) and value.is_floating_point() and value.dtype != torch.float32:
        return value.float()
    return value


def float32(fn: F) -> F:
    """Run ``fn`` with autocast off and its floating-point tensor arguments in float32, so that
    everything it computes (its modules' products included) is float32 whatever the caller runs
    in. Outside autocast, on float32 inputs, it changes nothing."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not (torch.is_autocast_enabled("cpu") or torch.is_autocast_enabled("cuda")):
            return fn(*args, **kwargs)
        with torch.autocast("cpu", enabled=False), torch.autocast("cuda", enabled=False):
            return fn(*[_up(a) for a in args], **{k: _up(v) for k, v in kwargs.items()})

    return wrapper  # type: ignore[return-value]
