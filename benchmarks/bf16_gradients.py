#!/usr/bin/env python
"""How far bf16 autocast moves each parameter's gradient, and which computation moves it.

For a model a workflow trained (or the same model freshly initialised, as training starts), on
the first training batches of its experiment, the gradient of the summed NLL is computed

- in float32 (training without ``train.bf16``: the reference; on local-p's trained weights it is
  within 1e-5 of float64's),
- under bf16 autocast as ``train.bf16`` trains (position arithmetic in float32: :mod:`nmtlib.precision`),
- under bf16 autocast with one more computation kept in float32 (``--keep``: the attention's
  context Σ_s a(s) h̄_s, or its scores), by wrapping it in :func:`nmtlib.precision.float32` here,
  without changing the library.

and, per parameter group, the relative error ‖g − g₃₂‖ / ‖g₃₂‖ over the batches is
printed. Dropout is off (eval mode), so every precision sees the same function. The gradient
that reaches local-p's predicted position p_t (its W_p and v_p, Luong et al. 2015 Eq. 10) is a
sum over the window of terms of both signs; the table shows how much of it bf16 keeps.

    python benchmarks/bf16_gradients.py --results results/multi30k-deen-fp32 \\
        --variants local-p-general-feed,global-general-feed --batches 10
"""

from __future__ import annotations

import argparse
import contextlib
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

from nmtlib.checkpoint import load_model
from nmtlib.data.batching import ParallelData, collate, length_sorted_batches
from nmtlib.data.vocab import Vocabulary
from nmtlib.layout import Layout
from nmtlib.models import attention as attention_module
from nmtlib.models.builder import init_uniform
from nmtlib.precision import float32
from nmtlib.train.loss import batch_loss

#: parameter groups, by the first pattern their name matches
GROUPS = (
    ("local-p position (W_p, v_p)", r"\.(W_p|v_p)\."),
    ("attention score", r"attention\.score\."),
    ("embeddings", r"embedding"),
    ("encoder", r"^encoder\."),
    ("decoder recurrence", r"^decoder\.rnn"),
    ("attentional layer (W_c)", r"^decoder\.output\."),
    ("output projection", r"^decoder\.generator\."),
    ("other", r"."),
)

#: computations ``--keep`` can keep in float32 under autocast: where the library calls them
KEEPS: dict[str, tuple[object, str]] = {
    "context": (attention_module, "weighted_sum"),
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--results", type=Path, required=True, help="an experiment's results folder")
    p.add_argument("--variants", required=True, help="comma-separated variant names")
    p.add_argument("--run", default="seed1")
    p.add_argument("--batches", type=int, default=10, help="training batches (the first of epoch 1's order)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--init", action="store_true", help="a fresh initialisation (uniform ±0.1) instead of the weights")
    p.add_argument("--keep", default="context", help=f"comma-separated, of {sorted(KEEPS)} or 'score' ('' for none)")
    return p.parse_args(argv)


def group_of(name: str) -> str:
    return next(label for label, pattern in GROUPS if re.search(pattern, name))


@contextlib.contextmanager
def kept_float32(model: torch.nn.Module, keep: str) -> Iterator[None]:
    """Run ``keep`` in float32 under autocast for the duration."""
    if keep == "score":
        score = model.decoder.attention.score
        original = score.forward
        score.forward = float32(original)
        try:
            yield
        finally:
            score.forward = original
        return
    module, attr = KEEPS[keep]
    original = getattr(module, attr)
    setattr(module, attr, float32(original))
    try:
        yield
    finally:
        setattr(module, attr, original)


def gradients(model: torch.nn.Module, batches: list, context: Callable[[], contextlib.AbstractContextManager]) -> list[dict[str, torch.Tensor]]:
    out = []
    for batch in batches:
        model.zero_grad(set_to_none=True)
        with context():
            loss, _ = batch_loss(model, batch)
        loss.backward()
        out.append({n: p.grad.detach().double().clone() for n, p in model.named_parameters() if p.grad is not None})
    return out


def relative_errors(grads: list[dict[str, torch.Tensor]], ref: list[dict[str, torch.Tensor]]) -> dict[str, float]:
    """Per group, ‖g − g_ref‖ / ‖g_ref‖ over every batch and parameter of the group."""
    num: dict[str, float] = {}
    den: dict[str, float] = {}
    for g, r in zip(grads, ref):
        for name, value in r.items():
            label = group_of(name)
            num[label] = num.get(label, 0.0) + float(((g[name] - value) ** 2).sum())
            den[label] = den.get(label, 0.0) + float((value**2).sum())
    return {label: (num[label] / den[label]) ** 0.5 if den[label] else float("nan") for label in num}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(1)
    layout = Layout(args.results)
    sv, tv = Vocabulary.load(layout.vocab("src")), Vocabulary.load(layout.vocab("tgt"))
    data = ParallelData.load(layout.data("train", "src"), layout.data("train", "tgt"), sv, tv)
    order = length_sorted_batches(data, args.batch_size, seed=1, epoch=1)[: args.batches]
    batches = [collate(data, indices) for indices in order]
    keeps = [k for k in args.keep.split(",") if k]
    modes = ["bf16", *(f"bf16, {k} in float32" for k in keeps)]
    print(f"{args.results}, {args.run}, {'fresh initialisation' if args.init else 'trained weights'}, "
          f"{len(batches)} training batches of {args.batch_size}; relative error of the gradient against float32's\n")
    rows = []
    for variant in args.variants.split(","):
        model, _ = load_model(layout.model(variant, args.run), torch.device("cpu"))
        if args.init:
            torch.manual_seed(1)
            init_uniform(model, 0.1)
        model.eval()  # no dropout: every precision computes the same function
        ref = gradients(model, batches, contextlib.nullcontext)
        bf16 = lambda: torch.autocast("cpu", dtype=torch.bfloat16)  # noqa: E731
        errors = {"bf16": relative_errors(gradients(model, batches, bf16), ref)}
        for keep in keeps:
            with kept_float32(model, keep):
                errors[f"bf16, {keep} in float32"] = relative_errors(gradients(model, batches, bf16), ref)
        for label, _ in GROUPS:
            if label in errors["bf16"]:
                rows.append([variant, label, *(f"{errors[m][label]:.2e}" for m in modes)])
    print("| variant | parameters | " + " | ".join(modes) + " |")
    print("|---|---|" + "---|" * len(modes))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
