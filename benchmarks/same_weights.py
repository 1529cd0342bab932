#!/usr/bin/env python
"""Does a change of code leave training's arithmetic as it was? Train at two commits, compare bit for bit.

A reference run trains dozens of models over days with one recipe; a change to the training code
while it runs (a refactor, a new device path, a file reader) must not change one weight of the
models still to come. This checks it the only sure way: it trains one variant of an experiment
for ``--steps`` updates at commit ``--old`` and at ``--new`` (each in a temporary ``git worktree``
of this repository, each with its own ``nmtlib``, the same Python), on the same prepared text and
vocabularies, one thread, and compares the two ``model.pt`` tensor by tensor with
``torch.equal``. It prints one line per commit (dev perplexity, step) and the verdict: the same
weights, or which tensors differ and by how much.

    OMP_NUM_THREADS=1 python benchmarks/same_weights.py --old 8c7392b --new HEAD \\
        --config config/experiments/multi30k-deen.yaml --results results/multi30k-deen \\
        --variant shu-flexible --steps 300

``--results`` is a results folder whose ``data/`` and ``vocab/`` the workflow has written (the
variant's text as it trains on it); the variant's options and recipe come from ``--config`` as the
workflow would pass them (``nmtlib.workflow_config.variant_spec`` at ``--new``), with
``train.max_steps`` set to ``--steps``. Equal weights after a few hundred updates of the same
batches (same order, same dropout masks, same rounding) are what an unchanged recipe gives; the
first update that computes differently leaves its mark on every later one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--old", required=True, help="the commit before the change")
    p.add_argument("--new", default="HEAD", help="the commit after it (default: HEAD)")
    p.add_argument("--config", type=Path, required=True, help="the experiment's config file")
    p.add_argument("--results", type=Path, required=True, help="its results folder (prepared data/ and vocab/)")
    p.add_argument("--variant", required=True, help="the variant to train")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--steps", type=int, default=300, help="updates at each commit (default: %(default)s)")
    p.add_argument("--repo", type=Path, default=ROOT, help="the git repository of the commits (default: this one)")
    p.add_argument("--keep", type=Path, default=None, help="keep both model folders here (default: a temporary folder)")
    return p.parse_args(argv)


def train_command(tree: Path, spec: dict, seed: int, results: Path, preprocess: str, out: Path) -> list[str]:
    data, vocab = results / "data", results / "vocab"
    return [sys.executable, "-m", "nmtlib", "train", "--variant-json", json.dumps(spec), "--seed", str(seed),
            "--threads", "1", "--no-progress",
            "--train-src", str(data / "train.src"), "--train-tgt", str(data / "train.tgt"),
            "--dev-src", str(data / "dev.src"), "--dev-tgt", str(data / "dev.tgt"),
            "--src-vocab", str(vocab / "src.txt"), "--tgt-vocab", str(vocab / "tgt.txt"),
            "--preprocess-json", preprocess, "--out", str(out)]


def main(argv: list[str] | None = None) -> int:
    import torch

    from nmtlib import checkpoint
    from nmtlib.workflow_config import load_experiment, preprocess_record, variant_spec

    args = parse_args(argv)
    config, _ = load_experiment(args.config)  # checked and with its defaults, as the workflow reads it
    spec = json.loads(variant_spec(config, args.variant))
    spec.setdefault("train_defaults", {})["max_steps"] = args.steps
    preprocess = preprocess_record(config["data"])
    results = args.results.resolve()
    with tempfile.TemporaryDirectory(prefix="same-weights-") as tmp:
        keep = args.keep.resolve() if args.keep else Path(tmp)
        models = {}
        for label, rev in (("old", args.old), ("new", args.new)):
            commit = subprocess.run(["git", "-C", str(args.repo), "rev-parse", "--short=12", rev], check=True,
                                    capture_output=True, text=True).stdout.strip()
            tree = Path(tmp) / f"tree-{label}"
            subprocess.run(["git", "-C", str(args.repo), "worktree", "add", "--detach", "-q", str(tree), commit],
                           check=True)
            try:
                out = keep / f"{label}-{commit}"
                env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
                run = subprocess.run(train_command(tree, spec, args.seed, results, preprocess, out), cwd=tree, env=env,
                                     capture_output=True, text=True)
                if run.returncode != 0:
                    print(f"{label} ({commit}): training failed:\n{run.stderr[-2000:]}", file=sys.stderr)
                    return 2
            finally:
                subprocess.run(["git", "-C", str(args.repo), "worktree", "remove", "--force", str(tree)], check=True)
            models[label] = checkpoint.load(out / "model.pt")
            print(f"{label} {commit}: step {models[label]['step']}, dev ppl {models[label]['dev_ppl']:.6f}")
        old, new = models["old"]["model"], models["new"]["model"]
        if old.keys() != new.keys():
            print(f"different parameters: {sorted(set(old) ^ set(new))}")
            return 1
        differ = {k: (old[k].float() - new[k].float()).abs().max().item() for k in old if not torch.equal(old[k], new[k])}
        if differ:
            print(f"DIFFERENT weights: {len(differ)} of {len(old)} tensors, e.g. "
                  + ", ".join(f"{k} (max |Δ| {v:.3g})" for k, v in list(differ.items())[:5]))
            return 1
        print(f"same weights: all {len(old)} tensors equal bit for bit after {args.steps} updates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
