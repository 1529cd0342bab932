"""Shared pieces of the benchmark scripts (not part of the nmtlib package).

- the architectures of the paper matrix and the two scales (``paper``, ``small``);
- source/target sentence lengths drawn like WMT'14 En→De (Luong et al. 2015);
- synthetic batches that go through nmtlib's real batching (``length_sorted_batches``, ``collate``);
- one training step exactly as :class:`nmtlib.train.trainer.Trainer` takes it;
- peak memory (RSS from ``/proc`` and ``resource`` on CPU; ``torch.cuda.max_memory_allocated`` on GPU);
- the machine description (``lscpu``, load average, threads) and markdown tables.

Every benchmark process that measures memory measures only itself: the scripts run each
architecture in a fresh worker process (``--worker``), so one model's peak does not hide another's.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import math
import os
import platform
import random
import re
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parent.parent
#: scratch for caches, trained models and JSON results (git-ignored); tests point it elsewhere
OUT = Path(os.environ.get("NMTLIB_BENCH_OUT") or REPO / "benchmarks" / "out")
#: (source, target) length counts of WMT En-De news, shipped so that no run depends on shared/
LENGTHS_FILE = Path(__file__).resolve().parent / "data" / "wmt14_lengths.json"

# --- architectures -------------------------------------------------------------------------------

#: name → variant options (``nmtlib.config.resolve_variant`` applies the paper presets)
ARCHS: dict[str, dict[str, Any]] = {
    # Luong et al. 2015: global attention, general score, input feeding (the peer's model)
    "luong-global-general-feed": dict(arch="luong", attention="global", score="general", input_feed=True),
    # Luong: local-p attention (D = 10), general score, input feeding
    "luong-local-p-general-feed": dict(arch="luong", attention="local-p", score="general", input_feed=True),
    # Luong Table 1 "Base": stacked LSTM, no attention
    "luong-base": dict(arch="luong", attention="none", input_feed=False),
    # Bahdanau et al. 2015 RNNsearch: bi-GRU, additive attention on s_{t-1}, maxout output
    "rnnsearch": dict(arch="rnnsearch"),
    # Shu & Nakayama 2017 baseline: bi-LSTM, global concat attention on h_{t-1}, fc output
    "shu-baseline": dict(arch="shu"),
    # Shu & Nakayama 2017 Flexible Attention
    "shu-flexible": dict(arch="shu", attention="flexible"),
}

#: paper recipe (optimiser) of each architecture; RNNsearch's Adadelta is not in nmtlib: SGD
TRAIN_PRESET = {name: ("shu" if name.startswith("shu") else "luong") for name in ARCHS}


@dataclass(frozen=True)
class Scale:
    name: str
    embedding: int
    hidden: int
    layers: int  #: Luong stacks; RNNsearch and Shu keep their papers' single decoder layer
    batch: int
    src_vocab: int
    tgt_vocab: int
    maxout: int  #: RNNsearch maxout units l
    fc: int  #: Shu's fc layer before the softmax


SCALES: dict[str, Scale] = {
    # Luong §4.1: 4×1000 LSTM, 1000-d embeddings, 50K vocabularies, batch 128;
    # Bahdanau: 620-d embeddings (their preset), maxout 500; Shu: fc 600
    "paper": Scale("paper", 1000, 1000, 4, 128, 50_000, 50_000, 500, 600),
    # shared/docs/PEER-OPENNMT.md's OpenNMT-py config: 2×256, 256-d embeddings, batch 64, the
    # vocabularies of small_parallel_enja (all words + 4 specials); maxout/fc scaled by 256/1000
    "small": Scale("small", 256, 256, 2, 64, 6_640, 8_784, 128, 154),
    # smoke tests only: seconds per step on any machine
    "tiny": Scale("tiny", 32, 32, 1, 4, 200, 200, 16, 16),
}


def variant_for(arch: str, scale: Scale, dropout: float, train_overrides: dict[str, Any] | None = None):
    """The checked :class:`nmtlib.config.VariantConfig` of ``arch`` at ``scale``."""
    from nmtlib.config import resolve_variant

    opts = dict(ARCHS[arch])
    opts["hidden_size"] = scale.hidden
    opts["dropout"] = dropout
    if opts["arch"] == "luong":
        opts["embedding_size"] = scale.embedding
        opts["layers"] = scale.layers
    elif scale.name != "paper":  # the paper scale keeps the presets' 620-d / 1000-d embeddings
        opts["embedding_size"] = scale.embedding
    if opts["arch"] == "rnnsearch":
        opts["output_size"] = scale.maxout
    if opts["arch"] == "shu":
        opts["output_size"] = scale.fc
    train = {"preset": TRAIN_PRESET[arch], "batch_size": scale.batch, **(train_overrides or {})}
    return resolve_variant(arch, {**opts, "train": train})


# --- sentence lengths ----------------------------------------------------------------------------

WMT_FILES = [f"newstest{y}" for y in (2012, 2013, 2014, 2015)]


def shared_dir() -> Path:
    """``$NMTLIB_SHARED``, else the ``shared/`` folder beside the repository."""
    env = os.environ.get("NMTLIB_SHARED")
    return Path(env) if env else REPO.parent / "shared"


def wmt14_lengths(max_len: int = 50) -> tuple[list[tuple[int, int]], str]:
    """(source, target) token counts of WMT En→De news sentence pairs, Moses-tokenized with
    ``-a`` like Luong et al. (newstest2012–2015), pairs longer than ``max_len`` dropped (Luong
    §4.1). Read from ``benchmarks/data/wmt14_lengths.json`` (made by
    ``python benchmarks/bench_common.py --regenerate-lengths`` from shared/data/newstest).
    Returns the pairs and a one-line description of where they came from."""
    data = json.loads(LENGTHS_FILE.read_text())
    pairs = [(n, m) for n, m, k in data["counts"] for _ in range(k) if n <= max_len and m <= max_len]
    return pairs, data["source"].split(";")[0]


def regenerate_lengths(max_len: int = 50) -> None:
    """Rewrite ``LENGTHS_FILE`` from shared/data/newstest (nmtlib's ``moses-aggressive`` tokenizer)."""
    from collections import Counter

    from nmtlib.data.tokenize import get_tokenizer

    folder = shared_dir() / "data" / "newstest"
    tok = {l: get_tokenizer("moses-aggressive", l) for l in ("en", "de")}
    counts: Counter[tuple[int, int]] = Counter()
    for f in WMT_FILES:
        en = (folder / f"{f}.en").read_text(encoding="utf-8").splitlines()
        de = (folder / f"{f}.de").read_text(encoding="utf-8").splitlines()
        for a, b in zip(en, de):
            n, m = len(tok["en"].tokenize(a).split()), len(tok["de"].tokenize(b).split())
            if 0 < n <= max_len and 0 < m <= max_len:
                counts[(n, m)] += 1
    total = sum(counts.values())
    source = (f"lengths of {total} newstest2012-2015 En-De pairs (Moses -a tokens, both sides <= {max_len})"
              "; regenerate: python benchmarks/bench_common.py --regenerate-lengths")
    LENGTHS_FILE.parent.mkdir(parents=True, exist_ok=True)
    LENGTHS_FILE.write_text(json.dumps({"source": source, "pairs": total,
                                        "counts": [[n, m, k] for (n, m), k in sorted(counts.items())]},
                                       separators=(",", ":")) + "\n")


def enja_lengths() -> tuple[list[tuple[int, int]], str]:
    """(source, target) token counts of small_parallel_enja train (En→Ja)."""
    folder = shared_dir() / "data" / "small_parallel_enja"
    en = (folder / "train.en").read_text(encoding="utf-8").splitlines()
    ja = (folder / "train.ja").read_text(encoding="utf-8").splitlines()
    return [(len(a.split()), len(b.split())) for a, b in zip(en, ja)], "lengths of small_parallel_enja train"


def synthetic_batches(
    lengths: list[tuple[int, int]], batch_size: int, n_batches: int, src_vocab: int, tgt_vocab: int, seed: int = 1
):
    """``n_batches`` batches of synthetic token ids whose lengths are drawn from ``lengths``,
    grouped like training batches: nmtlib's ``length_sorted_batches`` (sorted by length, shuffled
    batch order) and ``collate``; ids uniform over the non-special vocabulary."""
    from nmtlib.data.batching import ParallelData, collate, length_sorted_batches

    rng = random.Random(seed)
    pool = max(64, n_batches) * batch_size  # enough sentences that batches look like an epoch's
    drawn = [lengths[rng.randrange(len(lengths))] for _ in range(pool)]
    src = [[rng.randrange(4, src_vocab) for _ in range(n)] for n, _ in drawn]
    tgt = [[rng.randrange(4, tgt_vocab) for _ in range(m - 1)] for _, m in drawn]  # + <eos> = m tokens
    data = ParallelData(src, tgt)
    order = length_sorted_batches(data, batch_size, seed, 1)
    return [collate(data, idx) for idx in order[:n_batches]]


# --- training step ------------------------------------------------------------------------------


def train_step(model, optimizer, batch, clip: float, loss_norm: str, beta: float = 0.0, autocast=None,
               loss_fn=None, losses=None):
    """One update exactly as ``Trainer._loop`` takes it (:func:`nmtlib.train.step.update`): on the CPU
    the loss is read and checked before the update; with ``losses``, a
    :class:`nmtlib.train.step.LossReader` of lag 1 (what the trainer uses on a GPU), it is read a
    step late instead. ``loss_fn``: ``batch_loss`` or a :class:`nmtlib.train.graphs.CudaGraphLoss`."""
    from nmtlib.train.loss import batch_loss
    from nmtlib.train.step import update

    lag = losses.lag if losses is not None else 0
    loss, nll = update(model, optimizer, batch, loss_fn or batch_loss, clip, loss_norm, beta, autocast,
                       check=None if lag else (lambda value: None))
    if losses is not None:
        losses.push(0, loss, nll, batch.target_tokens)
        losses.pop()
    return loss


# --- memory -------------------------------------------------------------------------------------


def rss_mb() -> float:
    """Current resident set size of this process (MB)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (MB), from ``getrusage``."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return peak_rss_mb()


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# --- machine and tables ----------------------------------------------------------------------------


def machine_info(threads: int | None = None, device: str = "cpu") -> dict[str, Any]:
    model = platform.processor() or "?"
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        m = re.search(r"^Model name:\s*(.+)$", out, re.M)
        if m:
            model = m.group(1).strip()
    info = {
        "date": _dt.date.today().isoformat(),
        "cpu": model,
        "cores": os.cpu_count(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "threads": threads if threads is not None else torch.get_num_threads(),
        "device": device,
        "clock": clock_name(),
    }
    if device == "cuda" and torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def command_line() -> str:
    rel = os.path.relpath(sys.argv[0], REPO)
    return " ".join(["python", rel, *sys.argv[1:]])


def print_header(info: dict[str, Any]) -> None:
    print(f"machine: {info['cpu']}, {info['cores']} cores; device {info['device']}"
          + (f" ({info['gpu']})" if info.get("gpu") else "")
          + f"; torch {info['torch']}; threads {info['threads']}; date {info['date']}")
    print(f"command: {command_line()}")
    print(f"load average at start (1/5/15 min): {loadavg()}")
    if clock_name() == "cpu":
        print("clock: process CPU time (speeds are per CPU-second, not per wall second)")


def markdown_table(headers: list[str], rows: list[list[Any]]) -> str:
    def fmt(x: Any) -> str:
        if isinstance(x, float):
            if math.isnan(x):
                return "n/a"
            return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}" if abs(x) < 1 else f"{x:.1f}"
        return str(x)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(fmt(x) for x in row) + " |" for row in rows]
    return "\n".join(lines)


def run_worker(script: Path, args: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``script --worker ARGS`` in a fresh Python process; its last stdout line is JSON."""
    proc = subprocess.run([sys.executable, str(script), "--worker", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise RuntimeError(f"worker {script.name} {' '.join(args)} failed with exit code {proc.returncode}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


#: ``NMTLIB_BENCH_CLOCK=cpu`` (``--clock cpu``) times with this process's CPU time instead of wall
#: time: on a machine busy with other jobs, single-threaded work is then measured in CPU-seconds,
#: which other processes inflate far less than wall time (the peer's log is switched the same way)
CLOCK_ENV = "NMTLIB_BENCH_CLOCK"


def clock_name() -> str:
    return "cpu" if os.environ.get(CLOCK_ENV) == "cpu" else "wall"


def set_clock(name: str) -> None:
    os.environ[CLOCK_ENV] = name


def timer() -> float:
    return time.process_time() if clock_name() == "cpu" else time.perf_counter()


def wait_for_all(folder: Path, n: int, timeout: float = 600.0) -> None:
    """A barrier across processes: mark this one ready in ``folder`` and wait until ``n`` are."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"ready.{os.getpid()}").touch()
    deadline = time.monotonic() + timeout
    while len(list(folder.glob("ready.*"))) < n:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{folder}: not all {n} workers were ready within {timeout:.0f} s")
        time.sleep(0.01)


def finish(json_path: Path | None, info: dict[str, Any], results: list[dict[str, Any]]) -> None:
    """A script's last lines: the load average at its end, and its results as JSON to ``json_path``
    (with the machine and the command) when given."""
    print(f"\nload average at end: {loadavg()}")
    if json_path:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps({"info": info, "command": command_line(), "results": results}, indent=2))


def thread_env(threads: int) -> dict[str, str]:
    """Environment pinning OpenMP/MKL threads (set before torch is imported in a child)."""
    return {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}


# --- decoding ------------------------------------------------------------------------------------


class ForcedLength:
    """A model whose every hypothesis takes exactly ``steps`` decoder steps: ``<eos>`` is masked
    before the last step and is the only choice at it (``steps − 1`` tokens + ``<eos>``). Wraps
    the real model's ``encode``/``step``/``graph_key``; the model itself is unchanged. Used to
    compare decoding speed at equal output lengths."""

    def __init__(self, model, steps: int) -> None:
        self.model, self.steps = model, steps

    def encode(self, src, src_lengths, tau=None):
        return self.model.encode(src, src_lengths, tau)

    def graph_key(self, t, tau=None):
        """A CUDA graph of step t is specific to whether <eos> is masked or forced there."""
        key = self.model.graph_key(t, tau)
        return None if key is None else (*key, t + 1 < self.steps)

    def step(self, y_prev, state, memory):
        from nmtlib.data.vocab import EOS_ID

        t = state.t
        lp, state, att = self.model.step(y_prev, state, memory)
        if t + 1 < self.steps:
            lp[:, EOS_ID] = float("-inf")
        else:
            eos = lp[:, EOS_ID].clone()
            lp.fill_(float("-inf"))
            lp[:, EOS_ID] = eos
        return lp, state, att


if __name__ == "__main__":
    if sys.argv[1:] == ["--regenerate-lengths"]:
        regenerate_lengths()
        print(f"wrote {LENGTHS_FILE}: {wmt14_lengths()[1]}")
    else:
        print("usage: python benchmarks/bench_common.py --regenerate-lengths", file=sys.stderr)
        raise SystemExit(2)
