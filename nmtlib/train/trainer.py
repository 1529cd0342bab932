"""The training loop.

What it guarantees:

- **exact resume** — ``checkpoints/last.pt`` holds the weights, the optimiser state, the RNG
  states and the position inside the epoch; batches depend only on (seed, epoch). A run killed
  at any point (SIGKILL included) and started again reaches the same final weights as an
  uninterrupted run on the same device (bit-identical on CPU);
- **preemption** — SIGTERM (Slurm's preemption or ``scancel --signal=TERM``) writes a checkpoint
  at the end of the current step and exits with code 143, so a requeued job continues; Ctrl-C
  (SIGINT) does the same and exits with 130;
- **divergence** — a NaN/inf loss stops the run with :class:`TrainingError` before the weights
  it produced are evaluated or saved: on the CPU before the update, on a GPU one step later
  (reading each loss at once would stall the GPU, :mod:`nmtlib.train.step`); the last good
  checkpoint is untouched;
- **best-by-dev** — dev perplexity after every epoch (and every ``eval_every`` steps) is logged
  to ``train_log.csv``; the weights with the lowest dev perplexity (``checkpoints/best.pt``)
  become ``model.pt``;
- **one copy** — a finished model folder holds its weights once: ``best.pt`` is renamed to
  ``model.pt`` and the resume state (``last.pt``) removed, unless ``train.keep_checkpoints``
  keeps ``checkpoints/`` (``model.pt`` is then a hard link of ``best.pt``);
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
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch
from torch import nn
from tqdm import tqdm

from nmtlib import checkpoint
from nmtlib.atomic import atomic_write, temporary_name
from nmtlib.checkpoint import file_record, select_device
from nmtlib.config import VariantConfig
from nmtlib.data.batching import ParallelData, collate, length_sorted_batches, sequential_batches
from nmtlib.data.vocab import Vocabulary
from nmtlib.files import sha256_file
from nmtlib.memory import keep_freed_memory
from nmtlib.metrics.perplexity import perplexity
from nmtlib.models.builder import build_model, count_parameters, init_uniform
from nmtlib.models.seq2seq import Seq2Seq
from nmtlib.precision import require_bf16
from nmtlib.origin import code_state, processor
from nmtlib.train.graphs import CudaGraphLoss
from nmtlib.train.loss import autocast_factory, batch_loss
from nmtlib.train.schedule import build_optimizer, learning_rate, plateaued, set_lr
from nmtlib.train.step import LossReader, reproducible_kernels, update

LOG_FIELDS = ["epoch", "step", "lr", "train_ppl", "dev_ppl", "target_tokens_per_s", "elapsed_s"]


class TrainingError(RuntimeError):
    """Training cannot go on (divergence, out of memory); the message says what to change."""


@contextlib.contextmanager
def hold_folder(out_dir: Path) -> Iterator[None]:
    """An exclusive ``flock`` on the model folder itself for the block: a second run on the same
    folder is refused at once, before it touches a file (it would move the first's live
    ``last.pt`` aside and mix the two runs' files). The kernel drops the lock when the holder
    exits, however it ends (SIGKILL included), so a killed run never leaves a stale lock.

    :raises TrainingError: another process holds the folder."""
    import fcntl

    out_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(out_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise TrainingError(f"{out_dir}: another training run is writing this model folder; wait for it to "
                                f"end, or give this run another --out") from None
        yield
    finally:
        os.close(fd)  # releases the lock


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


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


def config_fingerprint(variant: VariantConfig, seed: int, init_from: Path | None,
                       vocab_sha256: tuple[str, str] | None = None) -> str:
    """Hash of everything that makes a checkpoint reusable; a mismatch means start afresh.

    ``vocab_sha256``: the (source, target) vocabularies' content hashes: weights trained with other
    vocabularies mean other words. Their paths and timestamps are left out, so a vocabulary
    regenerated byte for byte keeps the checkpoint. Without it, the fingerprint of checkpoints
    written before vocabularies were hashed."""
    fields: dict[str, Any] = {"variant": variant.training_dict(), "seed": seed, "init_from": str(init_from)}
    if vocab_sha256 is not None:
        fields["vocab_sha256"] = list(vocab_sha256)
    blob = json.dumps(fields, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


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
    """Turns SIGTERM and SIGINT (Ctrl-C) into a flag checked between steps: the step in progress
    ends, the resume state is written, the run exits with 128 + the signal's number. A second
    Ctrl-C stops at once (``KeyboardInterrupt``), losing what the first would have saved."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self) -> None:
        self.requested: signal.Signals | None = None

    @contextlib.contextmanager
    def installed(self) -> Iterator[_Preemption]:
        try:
            previous = {sig: signal.signal(sig, self._handle) for sig in self.SIGNALS}
        except ValueError:  # not the main thread: leave signals alone
            yield self
            return
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _handle(self, signum, frame) -> None:
        if self.requested is None:
            self.requested = signal.Signals(signum)
        if signum == signal.SIGINT:
            signal.signal(signal.SIGINT, signal.default_int_handler)


class Trainer:
    def __init__(
        self,
        variant: VariantConfig,
        paths: TrainPaths,
        seed: int = 1,
        init_from: Path | None = None,
        progress: bool = True,
        loss_lag: int | None = None,
        preprocess: dict[str, Any] | None = None,
    ) -> None:
        """``loss_lag``: steps by which each step's loss is read late (default: 1 on a GPU, 0 on the
        CPU; :class:`nmtlib.train.step.LossReader`). ``preprocess``: how the training text was
        tokenized (:func:`nmtlib.checkpoint.check_preprocess`), kept in model.pt so that
        ``nmtlib translate`` can take raw text."""
        self.preprocess = preprocess
        self.variant = variant
        self.cfg = variant.train
        self.paths = paths
        self.seed = seed
        self.init_from = init_from
        self.progress = progress
        self.loss_lag = loss_lag
        try:
            self.device = select_device(self.cfg.device)
        except ValueError as err:
            raise TrainingError(f"train.device: {err}") from None
        if self.cfg.bf16:  # before anything is read or written: emulated bf16 is refused
            try:
                require_bf16(self.device, "train.bf16")
            except ValueError as err:
                raise TrainingError(str(err)) from None
        self.src_vocab = Vocabulary.load(paths.src_vocab)
        self.tgt_vocab = Vocabulary.load(paths.tgt_vocab)
        self.train_data = ParallelData.load(paths.train_src, paths.train_tgt, self.src_vocab, self.tgt_vocab)
        self.dev_data = ParallelData.load(paths.dev_src, paths.dev_tgt, self.src_vocab, self.tgt_vocab)
        self._drop_long_pairs()
        for name, data, paths_ in (("training", self.train_data, (paths.train_src, paths.train_tgt)),
                                   ("dev", self.dev_data, (paths.dev_src, paths.dev_tgt))):
            if len(data) == 0:
                raise TrainingError(f"the {name} data is empty: {paths_[0]} / {paths_[1]} hold no sentence pairs")
        # recorded in model.pt and last.pt: what the weights were trained with, checked by every loader
        self.vocabularies = {"source": file_record(paths.src_vocab), "target": file_record(paths.tgt_vocab)}
        self.training_data = {"source": file_record(paths.train_src), "target": file_record(paths.train_tgt)}
        vocab_sha256 = (self.vocabularies["source"]["sha256"], self.vocabularies["target"]["sha256"])
        self.fingerprint = config_fingerprint(variant, seed, init_from, vocab_sha256)
        self._legacy_fingerprint = config_fingerprint(variant, seed, init_from)
        # a fine-tuning stage must use its parent's vocabularies: refuse others before anything is written
        self._parent = None if init_from is None else checkpoint.load_model_record(init_from)
        if self._parent is not None:
            checkpoint.check_vocabularies(self._parent, init_from, paths.src_vocab, paths.tgt_vocab)
        # deterministic kernels where PyTorch has them (recorded in env.json)
        reproducible_kernels()
        if self.device.type == "cuda":
            torch.backends.cudnn.benchmark = False
        else:  # freed host blocks are reused, not faulted in afresh every step (same results)
            keep_freed_memory()

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
            parent = self._parent or checkpoint.load_model_record(self.init_from)
            self._parent = None  # its weights go into the model: no second copy in memory
            try:
                model.load_state_dict(parent["model"])
            except RuntimeError as err:  # torch lists every tensor that does not fit, one per line
                raise checkpoint.CheckpointError(
                    f"{self.init_from}: its weights do not fit variant {self.variant.name!r} "
                    f"({str(err).strip().splitlines()[0]})") from None
        return model.to(self.device)

    def _resume_state(self) -> dict[str, Any] | None:
        if not self.paths.last.exists():
            return None
        try:
            state = checkpoint.load(self.paths.last)
        except ValueError as err:  # checkpoint.CheckpointError: empty, truncated, a pickle payload
            corrupt = self.paths.last.with_suffix(".corrupt.pt")
            os.replace(self.paths.last, corrupt)
            reason = str(err).splitlines()[0].removeprefix(f"{self.paths.last}: ")
            print(f"[train] {self.paths.last} cannot be read ({reason}); moved to {corrupt}, "
                  f"starting afresh", file=sys.stderr)
            return None
        if not isinstance(state, dict):
            state = {}  # a bare tensor: no fingerprint, so stale below
        legacy = "vocabularies" not in state and state.get("fingerprint") == self._legacy_fingerprint
        if state.get("fingerprint") != self.fingerprint and not legacy:
            stale = self.paths.last.with_suffix(".stale.pt")
            os.replace(self.paths.last, stale)
            print(f"[train] {self.paths.last} belongs to another configuration{self._vocab_change(state)}; "
                  f"moved to {stale}, starting afresh", file=sys.stderr)
            return None
        if legacy:
            # written before vocabularies were hashed: same configuration, vocabularies unknown
            print(f"[train] warning: {self.paths.last} records no vocabulary sha256 (written before nmtlib kept "
                  f"them); resuming it with {self.paths.src_vocab} and {self.paths.tgt_vocab} unchecked",
                  file=sys.stderr)
        return state

    def _vocab_change(self, state: dict[str, Any]) -> str:
        """Which vocabulary changed since ``state`` was written, if one did (for the stale message)."""
        recorded = state.get("vocabularies") or {}
        changed = [side for side in ("source", "target")
                   if side in recorded and recorded[side]["sha256"] != self.vocabularies[side]["sha256"]]
        return f" (other {' and '.join(changed)} vocabulary content)" if changed else ""

    # The loop state (epoch, batch_index, step, best, log, epoch sums) travels between _run, _loop,
    # _save and _evaluate as loose arguments, each the key of the same name in last.pt. One state
    # object would read better; it waits until the checkpoint's keys next change, so that the code
    # every exact resume goes through (tests/test_engine.py, tests/test_precision.py) changes once.
    def _save(self, model, optimizer, epoch: int, batch_index: int, step: int, best: float, log: list,
              epoch_sums: tuple[float, int, float] | None = (0.0, 0, 0.0)) -> None:
        """``epoch_sums``: the current epoch's training NLL, target tokens and seconds so far, so that
        a resumed epoch's log row covers the whole epoch, not the batches after the resume (None:
        unknown, the epoch was resumed from a checkpoint that did not carry them)."""
        state = {
            "fingerprint": self.fingerprint,
            "vocabularies": self.vocabularies,
            "training_data": self.training_data,
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "epoch": epoch,
            "batch_index": batch_index,
            "step": step,
            "best_dev_ppl": best,
            "log": log,
            "epoch_sums": None if epoch_sums is None else list(epoch_sums),
            "rng_torch": torch.get_rng_state(),
            "rng_cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
            "rng_python": list(_python_rng_state()),
            "elapsed_s": self._elapsed(),
            "starts": self._starts,  # where and from which code each part of the training ran (env.json)
        }
        checkpoint.save_atomic(state, self.paths.last)

    def _elapsed(self) -> float:
        return self._elapsed_before + (time.perf_counter() - self._t0)

    # -- main loop -------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        """Train (or resume) to the end; the model folder is this run's alone until it returns
        (:func:`hold_folder`)."""
        # the signals are caught from the start, not from the first step: one that came while the
        # resume state loads or the record is written would otherwise kill the run outright (no exit
        # 143 for Slurm's requeue, and the steps since the last checkpoint are trained again)
        preemption = _Preemption()
        with hold_folder(self.paths.out_dir), preemption.installed():
            return self._run(preemption)

    def _run(self, preemption: _Preemption) -> dict[str, Any]:
        cfg = self.cfg
        model = self._fresh_model()
        optimizer = build_optimizer(cfg, model.parameters())
        epoch, batch_index, step, best, log = 1, 0, 0, math.inf, []
        self._elapsed_before, self._t0 = 0.0, time.perf_counter()
        self._epoch_sums: tuple[float, int, float] | None = (0.0, 0, 0.0)
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
            if "epoch_sums" in state:
                self._epoch_sums = None if state["epoch_sums"] is None else tuple(state["epoch_sums"])
            elif batch_index > 0:
                self._epoch_sums = None  # a checkpoint from before the sums were kept: this epoch's are lost
            print(f"[train] resuming from {self.paths.last}: epoch {epoch}, batch {batch_index}, step {step}",
                  file=sys.stderr)
        self._write_log(log)
        # a resume state from before the starts were kept knows none of the earlier ones
        self._starts = list(state.get("starts") or []) if state is not None else []
        self._write_env(model, step)
        model.train()
        done = self._loop(model, optimizer, epoch, batch_index, step, best, log, preemption)
        if not done:
            raise SystemExit(128 + preemption.requested)
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
            # under max_steps the epoch ends where the steps do: the bar's total (and time left) says so
            last_batch = (min(len(batches), batch_index + max(0, cfg.max_steps - step)) if cfg.max_steps
                          else len(batches))
            bar = tqdm(total=last_batch, initial=batch_index, desc=f"{self.variant.name} epoch {epoch}",
                       unit="batch", disable=not self.progress, file=sys.stderr, dynamic_ncols=True,
                       mininterval=0.1 if sys.stderr.isatty() else 30)  # log files get a line per 30 s
            # sums of the epoch so far: a resumed epoch goes on from the checkpoint's (None: unknown)
            sums, self._epoch_sums = self._epoch_sums, (0.0, 0, 0.0)
            whole_epoch = sums is not None
            nll_sum, tok_sum, seconds_before = sums or (0.0, 0, 0.0)
            t_start = time.perf_counter()

            def epoch_seconds() -> float:
                return seconds_before + time.perf_counter() - t_start

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
                save_now = step % cfg.checkpoint_every == 0 or preemption.requested is not None
                end_now = batch_index >= len(batches) or bool(cfg.max_steps and step >= cfg.max_steps)
                # every step's loss is read (and checked) before its weights are evaluated or saved
                for done in losses.pop(0 if evaluate_now or save_now or end_now else None):
                    if losses.lag:
                        self._check_loss(done.loss, epoch, done.step, lr, late=True)
                    nll_sum += done.nll
                    tok_sum += done.tokens
                speed = tok_sum / max(1e-9, epoch_seconds())
                bar.update(1)
                bar.set_postfix(ppl=f"{math.exp(min(50, nll_sum / max(1, tok_sum))):.2f}", tok_s=f"{speed:.0f}")
                if evaluate_now:
                    best = self._evaluate(model, log, epoch, step, lr, nll_sum, tok_sum, speed, best, whole_epoch)
                if save_now:
                    self._save(model, optimizer, epoch, batch_index, step, best, log,
                               (nll_sum, tok_sum, epoch_seconds()) if whole_epoch else None)
                if save_now and preemption.requested is not None:
                    bar.close()
                    print(f"[train] {preemption.requested.name}: checkpoint written at step {step}; exiting "
                          f"(the same command resumes from it)", file=sys.stderr)
                    return False
                if cfg.max_steps and step >= cfg.max_steps:
                    break
            bar.close()
            speed = tok_sum / max(1e-9, epoch_seconds())
            finished_epoch = batch_index >= len(batches)
            if finished_epoch:
                epoch, batch_index = epoch + 1, 0
            best = self._evaluate(model, log, epoch - finished_epoch, step, lr, nll_sum, tok_sum, speed, best,
                                  whole_epoch)
            # a new epoch starts from zero; one stopped by max_steps keeps its sums for a later, longer run
            carried = (0.0, 0, 0.0) if finished_epoch else (nll_sum, tok_sum, epoch_seconds()) if whole_epoch else None
            self._save(model, optimizer, epoch, batch_index, step, best, log, carried)
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

    def _evaluate(self, model, log, epoch, step, lr, nll_sum, tok_sum, speed, best, whole_epoch: bool = True) -> float:
        """Log dev perplexity; ``whole_epoch`` False (resumed from a checkpoint that did not carry the
        epoch's sums) leaves train_ppl empty rather than report part of the epoch as all of it."""
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
            "train_ppl": (round(perplexity(nll_sum, tok_sum), 4)
                          if whole_epoch and tok_sum and math.isfinite(nll_sum) else ""),
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
            "vocabularies": self.vocabularies,  # checked by checkpoint.check_vocabularies wherever it is loaded
            "training_data": self.training_data,  # a record of what it saw
            # what decoding needs besides the weights: translate takes a model file alone
            "vocabulary_words": {"source": self.src_vocab.itos, "target": self.tgt_vocab.itos},
            "preprocess": self.preprocess,
        }

    def _finish(self, model: Seq2Seq) -> dict[str, Any]:
        """``model.pt`` from ``checkpoints/best.pt``, the folder's one copy of the weights: the file
        itself, or with ``train.keep_checkpoints`` a second name of it (a hard link), beside the
        resume state; without that option the resume state is removed."""
        final = self.paths.out_dir / "model.pt"
        if not self.paths.best.exists():
            checkpoint.save_atomic(self._model_record(model, float("nan"), 0), final)
        elif self.cfg.keep_checkpoints:
            _link_or_copy(self.paths.best, final)
        elif final.exists() and os.path.samefile(self.paths.best, final):  # kept by an earlier run: rename()
            self.paths.best.unlink()                                        # would leave both names
        else:
            os.replace(self.paths.best, final)
        if not self.cfg.keep_checkpoints:
            self.paths.last.unlink(missing_ok=True)
            with contextlib.suppress(OSError):  # a checkpoint set aside (last.stale.pt) stays, and its folder
                self.paths.last.parent.rmdir()
        record = checkpoint.load(final)
        return {"model": str(final), "dev_ppl": record["dev_ppl"], "step": record["step"],
                "parameters": count_parameters(model)}

    def _write_log(self, log: list[dict[str, Any]]) -> None:
        with atomic_write(self.paths.out_dir / "train_log.csv") as f:
            writer = csv.DictWriter(f, fieldnames=LOG_FIELDS, lineterminator="\r\n")
            writer.writeheader()
            writer.writerows(log)

    def _write_env(self, model: nn.Module, step: int) -> None:
        """What makes this run reproducible: code, config, packages, device, seeds, data hashes.

        The top-level code and machine keys describe the latest start. ``starts`` lists every start
        of this model's training, a resume on another machine or commit included: the step it
        started at, when, where (processor, the instruction set PyTorch's CPU kernels use, threads,
        device) and at which commit, with the training-code files that differed from it. The list
        travels in the resume state (``last.pt``), so that each resume adds to the one it goes on from."""
        import platform

        here = {
            **code_state(),
            "processor": processor(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "threads": torch.get_num_threads(),
            "device": str(self.device),
            "cuda_device": torch.cuda.get_device_name(0) if self.device.type == "cuda" else None,
        }
        self._starts.append({"step": step, "at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), **here})
        env = {
            **here,
            "variant": self.variant.to_dict(),
            "seed": self.seed,
            "init_from": None if self.init_from is None else str(self.init_from),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
            "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),  # bit-exact cuBLAS needs it
            "cudnn_benchmark": torch.backends.cudnn.benchmark,
            "parameters": count_parameters(model),
            "data_sha256": {  # the training files and vocabularies were hashed once, in __init__
                **{r["path"]: r["sha256"] for r in self.training_data.values()},
                **{str(p): sha256_file(p) for p in (self.paths.dev_src, self.paths.dev_tgt)},
                **{r["path"]: r["sha256"] for r in self.vocabularies.values()},
            },
            "starts": self._starts,
        }
        with atomic_write(self.paths.out_dir / "env.json") as f:
            f.write(json.dumps(env, indent=2) + "\n")


def _link_or_copy(source: Path, target: Path) -> None:
    """``target`` as a second name of ``source`` (one copy on disk), replaced atomically; a copy
    where the file system has no hard links. A later atomic rewrite of ``source`` gives it a new
    file and leaves ``target`` as it was."""
    temporary = temporary_name(target)
    try:
        os.link(source, temporary)
    except OSError:
        checkpoint.save_atomic(checkpoint.load(source), target)
        return
    os.replace(temporary, target)


def _python_rng_state() -> tuple:
    version, internal, gauss = random.getstate()
    return version, list(internal), gauss


def _set_python_rng_state(state) -> None:
    version, internal, gauss = state
    random.setstate((version, tuple(internal), gauss))
