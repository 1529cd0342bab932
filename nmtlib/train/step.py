"""One training update, the switches that make runs reproducible, and reading losses back late.

Why the losses are read late on a GPU: ``float(loss)`` waits until the GPU has finished everything
queued so far, so while the host prepares the next step (collation, packing, launches) the GPU
idles. On an H100 the Luong 4×1000 step spent 42 ms with its two reads and 36 ms without them
(benchmarks/RESULTS.md, G3). :class:`LossReader` copies each step's loss and NLL into pinned host
memory without waiting and reads them ``lag`` steps later, by which time they are there. On the
CPU nothing runs ahead, so the lag is 0 and the loss is checked before the update.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from nmtlib.data.batching import Batch


def reproducible_kernels() -> None:
    """Deterministic kernels where PyTorch has them, without the parts that cost speed and add nothing.

    - ``torch.use_deterministic_algorithms(True, warn_only=True)``: a warning, not an error, where
      an operation has no deterministic kernel;
    - ``torch.utils.deterministic.fill_uninitialized_memory = False``: in deterministic mode PyTorch
      otherwise fills every new uninitialised tensor with NaN, a debugging aid that makes a correct
      program no more reproducible and took 4.3 of 32.7 ms in an H100 step (RESULTS.md, G3).

    cuBLAS is bit-reproducible across runs only with ``CUBLAS_WORKSPACE_CONFIG=:4096:8`` in the
    environment (PyTorch's reproducibility notes). It is not set here: with it, an eager fp32 H100
    step took 22–48% longer (two calls, G3). Set it in the job's environment for bit-identical GPU
    runs; ``env.json`` records its value.
    """
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = False


def update(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    batch: Batch,
    loss_fn: Callable[..., tuple[Tensor, Tensor]],
    clip: float,
    loss_norm: str,
    beta: float = 0.0,
    autocast: contextlib.AbstractContextManager | None = None,
    check: Callable[[float], None] | None = None,
) -> tuple[Tensor, Tensor]:
    """One SGD/Adam update on ``batch``: objective, backward, gradient-norm clipping, step.

    Returns the normalised loss and the summed NLL as detached device tensors (no host sync).
    ``check``, if given, is called with the loss value *before* the update (a host sync).
    """
    with autocast or contextlib.nullcontext():
        objective, nll = loss_fn(model, batch, beta)
    loss = objective / (batch.target_tokens if loss_norm == "tokens" else len(batch.indices))
    if check is not None:
        check(float(loss.detach()))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return loss.detach(), nll.detach()


@dataclass
class StepLoss:
    step: int
    loss: float
    nll: float
    tokens: int


class LossReader:
    """Each step's (loss, NLL), read on the host ``lag`` steps after the step was queued.

    On CUDA the two values are copied into pinned memory without a sync and an event marks when
    they are there; reading waits for that event only, not for the steps queued since. On the CPU
    the values are read when pushed.
    """

    def __init__(self, device: torch.device, lag: int | None = None) -> None:
        self.cuda = device.type == "cuda"
        self.lag = (1 if self.cuda else 0) if lag is None else lag
        self._pending: deque[tuple[int, int, Tensor, torch.cuda.Event | None]] = deque()

    def push(self, step: int, loss: Tensor, nll: Tensor, tokens: int) -> None:
        values = torch.stack([loss.float(), nll.float()])
        event = None
        if self.cuda:
            host = torch.empty(2, dtype=torch.float32, pin_memory=True)
            host.copy_(values, non_blocking=True)
            event = torch.cuda.Event()
            event.record()
            values = host
        self._pending.append((step, tokens, values, event))

    def pop(self, keep: int | None = None) -> list[StepLoss]:
        """The values of all but the newest ``keep`` (default: ``lag``) pushed steps, oldest first."""
        keep = self.lag if keep is None else keep
        out = []
        while len(self._pending) > keep:
            step, tokens, values, event = self._pending.popleft()
            if event is not None:
                event.synchronize()
            loss, nll = values.tolist()
            out.append(StepLoss(step, loss, nll, tokens))
        return out

    def __len__(self) -> int:
        return len(self._pending)
