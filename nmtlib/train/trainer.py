"""The training loop.

What it guarantees:

- **exact resume** — ``checkpoints/last.pt`` holds the weights, the optimiser state, the RNG
  states and the position inside the epoch; batches depend only on (seed, epoch). A run killed
  at any point (SIGKILL included) and started again reaches the same final weights as an
  uninterrupted run on the same device (bit-identical on CPU);
- **preemption** — SIGTERM (Slurm's preemption or ``scancel --signal=TERM``) writes a checkpoint
  at the end of the current step and exits with code 143, so a requeued job continues;
- **divergence** — a NaN/inf loss stops the run with :class:`TrainingError` before the weights
  it produced are evaluated or saved: on the CPU before the update, on a GPU one step later
  (reading each loss at once would stall the GPU, :mod:`nmtlib.train.step`); the last good
  checkpoint is untouched;
- **best-by-dev** — dev perplexity after every epoch (and every ``eval_every`` steps) is logged
  to ``train_log.csv``; the weights with the lowest dev perplexity become ``model.pt``;
- **early stopping** — with ``patience`` > 0, training ends once that many evaluations in a row
  improved dev perplexity by less than ``min_improvement`` (:func:`nmtlib.train.schedule.plateaued`);
  the decision is read from the log, so a resumed or rerun job stops at the same point.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import math
import os
import random
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from tqdm import tqdm

from nmtlib.config import VariantConfig
from nmtlib.data.batching import ParallelData, collate, length_sorted_batches, sequential_batches
from nmtlib.data.vocab import Vocabulary
from nmtlib.metrics.perplexity import perplexity
from nmtlib.models.builder import build_model, count_parameters, init_uniform
from nmtlib.models.seq2seq import Seq2Seq
from nmtlib.train import checkpoint
from nmtlib.train.graphs import CudaGraphLoss
from nmtlib.train.loss import autocast_factory, batch_loss
from nmtlib.train.schedule import build_optimizer, learning_rate, plateaued, set_lr
from nmtlib.train.step import LossReader, reproducible_kernels, update

LOG_FIELDS = ["epoch", "step", "lr", "train_ppl", "dev_ppl", "target_tokens_per_s", "elapsed_s"]
PREEMPTED_EXIT_CODE = 143


class TrainingError(RuntimeError):
    """Training cannot go on (divergence, out of memory); the message says what to change."""


@dataclass
class TrainPaths:
    train_src: Path
    train_tgt: Path
    dev_src: Path
    dev_tgt: Path
    src_vocab: Path
    tgt_vocab: Path
    out_dir: Path  #: model folder: model.pt, train_log.csv, env.json, checkpoints/

    @property
    def last(self) -> Path:
        return self.out_dir / "checkpoints" / "last.pt"

    @property
    def best(self) -> Path:
        return self.out_dir / "checkpoints" / "best.pt"


def select_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise TrainingError("train.device is 'cuda' but no CUDA device is visible; use 'auto' or 'cpu'")
    return torch.device(name)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


def config_fingerprint(variant: VariantConfig, seed: int, init_from: Path | None) -> str:
    """Hash of everything that makes a checkpoint reusable; a mismatch means start afresh."""
    trained = {k: v for k, v in variant.training_dict().items() if k != "decode"}  # decoding never changes weights
    blob = json.dumps({"variant": trained, "seed": seed, "init_from": str(init_from)}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@torch.no_grad()
def evaluate_nll(model: Seq2Seq, data: ParallelData, batch_size: int, device: torch.device) -> tuple[float, int]:
    """Summed NLL and target token count (``<eos>`` included) of a data set."""
    was_training = model.training
    model.eval()
    total, tokens = 0.0, 0
    for idx in sequential_batches(len(data), batch_size):
        batch = collate(data, idx).to(device)
        _, nll = batch_loss(model, batch)
        total += float(nll)
        tokens += batch.target_tokens
    model.train(was_training)
    return total, tokens


class _Preemption:
    """Turns SIGTERM into a flag checked between steps."""

    def __init__(self) -> None:
        self.requested = False

    @contextlib.contextmanager
    def installed(self) -> Iterator[_Preemption]:
        try:
            previous = signal.signal(signal.SIGTERM, self._handle)
        except ValueError:  # not the main thread: leave signals alone
            yield self
            return
        try:
            yield self
        finally:
            signal.signal(signal.SIGTERM, previous)

    def _handle(self, signum, frame) -> None:
        self.requested = True


class Trainer:
    def __init__(
        self,
        variant: VariantConfig,
        paths: TrainPaths,
        seed: int = 1,
        init_from: Path | None = None,
        progress: bool = True,
        loss_lag: int | None = None,
    ) -> None:
        """``loss_lag``: steps by which each step's loss is read late (default: 1 on a GPU, 0 on the
        CPU; :class:`nmtlib.train.step.LossReader`)."""
        self.variant = variant
        self.cfg = variant.train
        self.paths = paths
        self.seed = seed
        self.init_from = init_from
        self.progress = progress
        self.loss_lag = loss_lag
        self.device = select_device(self.cfg.device)
        self.src_vocab = Vocabulary.load(paths.src_vocab)
        self.tgt_vocab = Vocabulary.load(paths.tgt_vocab)
        self.train_data = ParallelData.load(paths.train_src, paths.train_tgt, self.src_vocab, self.tgt_vocab)
        self.dev_data = ParallelData.load(paths.dev_src, paths.dev_tgt, self.src_vocab, self.tgt_vocab)
        self._drop_long_pairs()
        for name, data, paths_ in (("training", self.train_data, (paths.train_src, paths.train_tgt)),
                                   ("dev", self.dev_data, (paths.dev_src, paths.dev_tgt))):
            if len(data) == 0:
                raise TrainingError(f"the {name} data is empty: {paths_[0]} / {paths_[1]} hold no sentence pairs")
        self.fingerprint = config_fingerprint(variant, seed, init_from)
        # deterministic kernels where PyTorch has them (recorded in env.json)
        reproducible_kernels()
        if self.device.type == "cuda":
            torch.backends.cudnn.benchmark = False

    def _drop_long_pairs(self) -> None:
        """train.max_len: training pairs longer than this on either side are not trained on
        (data preparation usually dropped them already, with data.max_len)."""
        limit, data = self.cfg.max_len, self.train_data
        keep = [i for i in range(len(data)) if len(data.src[i]) <= limit and len(data.tgt[i]) <= limit]
        if len(keep) < len(data):
            print(f"[train] dropped {len(data) - len(keep)} of {len(data)} training pairs longer than "
                  f"train.max_len={limit}", file=sys.stderr)
            self.train_data = ParallelData([data.src[i] for i in keep], [data.tgt[i] for i in keep])

    # -- state ---------------------------------------------------------------------------------
    def _fresh_model(self) -> Seq2Seq:
        seed_everything(self.seed)
        model = build_model(self.variant.model, len(self.src_vocab), len(self.tgt_vocab))
        init_uniform(model, self.cfg.init_range)
        if self.init_from is not None:
            # a fine-tuning stage (Shu & Nakayama §4: β objective) starts from a trained model
            state = checkpoint.load(self.init_from)
            model.load_state_dict(state["model"])
        return model.to(self.device)

    def _resume_state(self) -> dict[str, Any] | None:
        if not self.paths.last.exists():
            return None
        try:
            state = checkpoint.load(self.paths.last)
        except (RuntimeError, EOFError, ValueError) as err:
            corrupt = self.paths.last.with_suffix(".corrupt.pt")
            os.replace(self.paths.last, corrupt)
            print(f"[train] {self.paths.last} cannot be read ({str(err).splitlines()[0]}); moved to {corrupt}, "
                  f"starting afresh", file=sys.stderr)
            return None
        if state.get("fingerprint") != self.fingerprint:
            stale = self.paths.last.with_suffix(".stale.pt")
            os.replace(self.paths.last, stale)
            print(f"[train] {self.paths.last} belongs to another configuration; moved to {stale}, "
                  f"starting afresh", file=sys.stderr)
            return None
        return state

    def _save(self, model, optimizer, epoch: int, batch_index: int, step: int, best: float, log: list) -> None:
        state = {
            "fingerprint": self.fingerprint,
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "epoch": epoch,
            "batch_index": batch_index,
            "step": step,
            "best_dev_ppl": best,
            "log": log,
            "rng_torch": torch.get_rng_state(),
            "rng_cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
            "rng_python": list(_python_rng_state()),
            "elapsed_s": self._elapsed(),
        }
        checkpoint.save_atomic(state, self.paths.last)

    def _elapsed(self) -> float:
        return self._elapsed_before + (time.perf_counter() - self._t0)

    # -- main loop -------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        cfg = self.cfg
        model = self._fresh_model()
        optimizer = build_optimizer(cfg, model.parameters())
        epoch, batch_index, step, best, log = 1, 0, 0, math.inf, []
        self._elapsed_before, self._t0 = 0.0, time.perf_counter()
        state = self._resume_state()
        if state is not None:
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            epoch, batch_index, step = state["epoch"], state["batch_index"], state["step"]
            best, log = state["best_dev_ppl"], list(state["log"])
            torch.set_rng_state(state["rng_torch"])
            if state["rng_cuda"] and torch.cuda.is_available():
                torch.cuda.set_rng_state_all(state["rng_cuda"])
            _set_python_rng_state(state["rng_python"])
            self._elapsed_before = state["elapsed_s"]
            print(f"[train] resuming from {self.paths.last}: epoch {epoch}, batch {batch_index}, step {step}",
                  file=sys.stderr)
        self._write_log(log)
        self._write_env(model)
        model.train()
        preemption = _Preemption()
        with preemption.installed():
            done = self._loop(model, optimizer, epoch, batch_index, step, best, log, preemption)
        if not done:
            raise SystemExit(PREEMPTED_EXIT_CODE)
        return self._finish(model)

    def _loop(self, model, optimizer, epoch, batch_index, step, best, log, preemption) -> bool:
        cfg = self.cfg
        graphs = cfg.cuda_graphs and self.device.type == "cuda"
        make_autocast = autocast_factory(cfg.bf16, self.device, graphs)
        autocast = make_autocast()
        loss_fn = CudaGraphLoss(model, cfg.batch_size, autocast=make_autocast) if graphs else batch_loss
        losses = LossReader(self.device, self.loss_lag)  # on a GPU, read one step late: no host sync per step
        while epoch <= cfg.epochs:
            if self._stopped_early(log):
                break
            lr = learning_rate(cfg, epoch)
            set_lr(optimizer, lr)
            batches = length_sorted_batches(self.train_data, cfg.batch_size, self.seed, epoch)
            bar = tqdm(total=len(batches), initial=batch_index, desc=f"{self.variant.name} epoch {epoch}",
                       unit="batch", disable=not self.progress, file=sys.stderr, dynamic_ncols=True,
                       mininterval=0.1 if sys.stderr.isatty() else 30)  # log files get a line per 30 s
            nll_sum, tok_sum, t_start = 0.0, 0, time.perf_counter()
            while batch_index < len(batches):
                if cfg.max_steps and step >= cfg.max_steps:
                    break  # also on a rerun of a finished run: no extra step
                batch = collate(self.train_data, batches[batch_index]).to(self.device)
                try:
                    check = None if losses.lag else (lambda value: self._check_loss(value, epoch, step + 1, lr))
                    loss, nll = update(model, optimizer, batch, loss_fn, cfg.clip, cfg.loss_norm, cfg.beta,
                                       autocast, check)
                except torch.cuda.OutOfMemoryError:
                    raise TrainingError(
                        f"out of GPU memory on a batch of {len(batch.indices)} sentences "
                        f"({batch.target_tokens} target tokens); lower train.batch_size (now {cfg.batch_size})"
                    ) from None
                step += 1
                batch_index += 1
                losses.push(step, loss, nll, batch.target_tokens)
                evaluate_now = bool(cfg.eval_every) and step % cfg.eval_every == 0
                save_now = step % cfg.checkpoint_every == 0 or preemption.requested
                end_now = batch_index >= len(batches) or bool(cfg.max_steps and step >= cfg.max_steps)
                # every step's loss is read (and checked) before its weights are evaluated or saved
                for done in losses.pop(0 if evaluate_now or save_now or end_now else None):
                    if losses.lag:
                        self._check_loss(done.loss, epoch, done.step, lr, late=True)
                    nll_sum += done.nll
                    tok_sum += done.tokens
                speed = tok_sum / max(1e-9, time.perf_counter() - t_start)
                bar.update(1)
                bar.set_postfix(ppl=f"{math.exp(min(50, nll_sum / max(1, tok_sum))):.2f}", tok_s=f"{speed:.0f}")
                if evaluate_now:
                    best = self._evaluate(model, log, epoch, step, lr, nll_sum, tok_sum, speed, best)
                if save_now:
                    self._save(model, optimizer, epoch, batch_index, step, best, log)
                if save_now and preemption.requested:
                    bar.close()
                    print(f"[train] SIGTERM: checkpoint written at step {step}; exiting for requeue",
                          file=sys.stderr)
                    return False
                if cfg.max_steps and step >= cfg.max_steps:
                    break
            bar.close()
            speed = tok_sum / max(1e-9, time.perf_counter() - t_start)
            finished_epoch = batch_index >= len(batches)
            if finished_epoch:
                epoch, batch_index = epoch + 1, 0
            best = self._evaluate(model, log, epoch - finished_epoch, step, lr, nll_sum, tok_sum, speed, best)
            self._save(model, optimizer, epoch, batch_index, step, best, log)
            if cfg.max_steps and step >= cfg.max_steps:
                break
        return True

    def _stopped_early(self, log: list[dict[str, Any]]) -> bool:
        cfg = self.cfg
        if not plateaued([row["dev_ppl"] for row in log], cfg.patience, cfg.min_improvement):
            return False
        print(f"[train] early stop after epoch {log[-1]['epoch']} (step {log[-1]['step']}): the last "
              f"{cfg.patience} dev evaluation(s) lowered the best dev perplexity by less than "
              f"{cfg.min_improvement:.0%}", file=sys.stderr)
        return True

    def _check_loss(self, value: float, epoch: int, step: int, lr: float, late: bool = False) -> None:
        """Stop on a non-finite training loss; ``late``: read after the update (a GPU's LossReader)."""
        if not math.isfinite(value):
            when = "before that step's weights were saved" if late else "before the update"
            raise TrainingError(
                f"loss became {value} at epoch {epoch}, step {step} (lr {lr:g}); the run stopped {when}, "
                f"and {self.paths.last} holds the last good state. Lower train.lr or train.clip and start again"
            )

    def _evaluate(self, model, log, epoch, step, lr, nll_sum, tok_sum, speed, best) -> float:
        try:
            dev_nll, dev_tokens = evaluate_nll(model, self.dev_data, self.cfg.batch_size, self.device)
        except torch.cuda.OutOfMemoryError:
            raise TrainingError(
                f"out of GPU memory evaluating dev perplexity with batches of {self.cfg.batch_size} sentences; "
                f"lower train.batch_size"
            ) from None
        if not math.isfinite(dev_nll):
            raise TrainingError(
                f"dev loss became {dev_nll} at epoch {epoch}, step {step}: the model diverged; "
                f"{self.paths.last} holds the last good state. Lower train.lr or train.clip and start again"
            )
        dev_ppl = perplexity(dev_nll, dev_tokens)
        log.append({
            "epoch": epoch, "step": step, "lr": learning_rate(self.cfg, max(1, epoch)),
            "train_ppl": round(perplexity(nll_sum, tok_sum), 4) if tok_sum and math.isfinite(nll_sum) else "",
            "dev_ppl": round(dev_ppl, 4), "target_tokens_per_s": round(speed, 1),
            "elapsed_s": round(self._elapsed(), 1),
        })
        self._write_log(log)
        if dev_ppl < best:
            best = dev_ppl
            checkpoint.save_atomic(self._model_record(model, dev_ppl, step), self.paths.best)
        return best

    def _model_record(self, model: nn.Module, dev_ppl: float, step: int) -> dict[str, Any]:
        return {
            "model": {k: v.detach().cpu() for k, v in model.state_dict().items()},
            "variant": self.variant.to_dict(),
            "src_vocab_size": len(self.src_vocab),
            "tgt_vocab_size": len(self.tgt_vocab),
            "dev_ppl": dev_ppl,
            "step": step,
            "seed": self.seed,
        }

    def _finish(self, model: Seq2Seq) -> dict[str, Any]:
        final = self.paths.out_dir / "model.pt"
        if self.paths.best.exists():
            checkpoint.save_atomic(checkpoint.load(self.paths.best), final)
        else:
            checkpoint.save_atomic(self._model_record(model, float("nan"), 0), final)
        record = checkpoint.load(final)
        return {"model": str(final), "dev_ppl": record["dev_ppl"], "step": record["step"],
                "parameters": count_parameters(model)}

    def _write_log(self, log: list[dict[str, Any]]) -> None:
        path = self.paths.out_dir / "train_log.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".csv.tmp")
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=LOG_FIELDS)
            writer.writeheader()
            writer.writerows(log)
        os.replace(tmp, path)

    def _write_env(self, model: nn.Module) -> None:
        """What makes this run reproducible: code, config, packages, device, seeds, data hashes."""
        import platform

        env = {
            "git_commit": _git_commit(),
            "variant": self.variant.to_dict(),
            "seed": self.seed,
            "init_from": None if self.init_from is None else str(self.init_from),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "device": str(self.device),
            "cuda_device": torch.cuda.get_device_name(0) if self.device.type == "cuda" else None,
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
            "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),  # bit-exact cuBLAS needs it
            "cudnn_benchmark": torch.backends.cudnn.benchmark,
            "parameters": count_parameters(model),
            "data_sha256": {str(p): sha256_file(p) for p in (
                self.paths.train_src, self.paths.train_tgt, self.paths.dev_src, self.paths.dev_tgt,
                self.paths.src_vocab, self.paths.tgt_vocab)},
        }
        tmp = self.paths.out_dir / "env.json.tmp"
        tmp.write_text(json.dumps(env, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, self.paths.out_dir / "env.json")


def _python_rng_state() -> tuple:
    version, internal, gauss = random.getstate()
    return version, list(internal), gauss


def _set_python_rng_state(state) -> None:
    version, internal, gauss = state
    random.setstate((version, tuple(internal), gauss))


def _git_commit() -> str | None:
    import subprocess

    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=Path(__file__).resolve().parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
