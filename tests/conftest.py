"""Shared fixtures: small versions of every architecture, and a tiny real corpus."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from nmtlib.registry import MECHANISMS

ROOT = Path(__file__).resolve().parent.parent


def load_script(path: Path, name: str | None = None) -> ModuleType:
    """A Python file outside the package (a script of scripts/, a helper of tests/) imported as a
    module, registered in ``sys.modules`` as ``name`` (default: its stem) so that what it defines
    (dataclasses, pickled objects) can find its module."""
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def snakemake_jobs(log: str, rule: str | None = None) -> list[tuple[str, dict[str, str]]]:
    """(rule, wildcards) of every job block in a Snakemake log or ``-n`` plan, in its order (the
    order the jobs started, in a run's log); only ``rule``'s where it is given."""
    jobs: list[tuple[str, dict[str, str]]] = []
    for line in log.splitlines():
        if m := re.match(r"^(?:local)?(?:rule|checkpoint) (\w+):$", line):
            jobs.append((m.group(1), {}))
        elif (m := re.match(r"^\s+wildcards: (.*)$", line)) and jobs:
            jobs[-1][1].update(kv.split("=", 1) for kv in m.group(1).split(", "))
    return [job for job in jobs if rule is None or job[0] == rule]


def trained_variants(log: str) -> list[str]:
    """The variant of each ``train_model`` job in a Snakemake log or plan, in its order."""
    return [wildcards["variant"] for _, wildcards in snakemake_jobs(log, "train_model")]


#: the jobs that score a trained model (reliability W7)
SCORING_RULES = frozenset({"translate", "score_translation", "test_perplexity", "export_attention", "score_alignment"})


def scored_after_the_next_training(log: str) -> tuple[str, list[str]]:
    """The first trained variant of a Snakemake run's log, and those of its scoring jobs (its seed's
    and run's: translate, score_translation, test_perplexity, export_attention, score_alignment)
    that started only after the second training had started. Raises if the log has fewer than two
    trainings, or no translation of the first model."""
    jobs = snakemake_jobs(log)
    trains = [i for i, (rule, _) in enumerate(jobs) if rule == "train_model"]
    assert len(trains) >= 2, log[-3000:]
    first = jobs[trains[0]][1]["variant"]
    scoring = [i for i, (rule, w) in enumerate(jobs) if rule in SCORING_RULES and w.get("variant") == first]
    assert any(jobs[i][0] == "translate" for i in scoring), log[-3000:]
    return first, [jobs[i][0] for i in scoring if i > trains[1]]


def cpuinfo_has_native_bf16() -> bool | None:
    """Read independently of torch: the kernel's CPU flags (x86: AVX512-BF16 or AMX-BF16; Arm: BF16).
    None where the kernel does not say (no ``/proc/cpuinfo``): the tests that need to know skip."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    flags = set()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            flags |= set(line.split(":", 1)[1].split())
    return bool(flags & {"avx512_bf16", "amx_bf16", "bf16"})


def _find_shared() -> Path:
    """The project's reference folder (papers, data, scorer fixtures), read in place and never
    copied: ``$NMTLIB_SHARED``; else ``shared/`` inside or beside this checkout; else beside the
    checkout this one was cloned from (``git clone . /tmp/fresh``, as CI does). When none exists,
    the tests that need it skip, naming it."""
    candidates = [os.environ.get("NMTLIB_SHARED"), ROOT / "shared", ROOT.parent / "shared"]
    origin = subprocess.run(["git", "-C", str(ROOT), "config", "--get", "remote.origin.url"],
                            capture_output=True, text=True).stdout.strip()
    if origin and Path(origin).is_dir():  # a clone of a local checkout
        candidates.append(Path(origin).resolve().parent / "shared")
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return ROOT.parent / "shared"


SHARED = _find_shared()


def shared_fixtures() -> Path:
    """``shared/fixtures`` (the reference scorers' outputs); the calling test skips, naming the
    folder, when it is absent."""
    if (SHARED / "fixtures").is_dir():
        return SHARED / "fixtures"
    pytest.skip(f"shared fixtures not found in {SHARED} (set NMTLIB_SHARED)")


def score_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m nmtlib score ARGS`` run from the checkout, as the workflow's rules call it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "nmtlib", "score", *args],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)


#: the scorer fixtures' (folder, tokenized reference, system) triples for BLEU and RIBES
SCORER_CASES = [
    (folder, ref, system)
    for folder, ref in (("bleu-ribes-de", "ref.tok.txt"), ("ribes-ja", "ref.txt"))
    for system in ("noisy", "reordered", "short")
]

SMALL = {"embedding_size": 24, "hidden_size": 24}
#: a variant that trains in seconds on ``tiny_corpus``: 6 updates, a checkpoint every 3
TINY_TRAIN_SPEC = {
    "name": "g",
    "options": {
        "embedding_size": 16, "hidden_size": 16, "layers": 1, "attention": "global", "score": "general",
        "train": {"optimizer": "adam", "lr": 0.01, "loss_norm": "tokens", "batch_size": 32, "epochs": 1,
                  "checkpoint_every": 3, "max_steps": 6},
    },
}



def keeping_checkpoints(spec: dict) -> dict:
    """``spec`` with ``train.keep_checkpoints``: for tests that read a finished run's resume state
    (``checkpoints/last.pt``), which training otherwise removes when it ends."""
    kept = json.loads(json.dumps(spec))
    kept["options"].setdefault("train", {})["keep_checkpoints"] = True
    return kept


#: every architecture of the three papers at toy size (name → variant options)
ALL_VARIANTS: dict[str, dict] = {
    "base": dict(SMALL, layers=2, attention="none", input_feed=False),
    "base-reverse-dropout": dict(SMALL, layers=2, attention="none", input_feed=False, reverse_source=True, dropout=0.2),
    "global-dot": dict(SMALL, layers=2, attention="global", score="dot", input_feed=False),
    "global-general-feed": dict(SMALL, layers=2, attention="global", score="general", input_feed=True),
    "global-concat-feed": dict(SMALL, layers=1, attention="global", score="concat", input_feed=True),
    "global-location-feed": dict(SMALL, layers=1, attention="global", score="location", input_feed=True, max_positions=60),
    "local-m-general-feed": dict(SMALL, layers=1, attention="local-m", score="general", window=3),
    "local-p-general-feed": dict(SMALL, layers=1, attention="local-p", score="general", window=3),
    "local-p-dot": dict(SMALL, layers=1, attention="local-p", score="dot", input_feed=False, window=3),
    "rnnsearch": dict(SMALL, arch="rnnsearch", output_size=16),
    "rnnencdec": dict(SMALL, arch="rnnsearch", attention="none", output="attentional"),
    "shu-global": dict(SMALL, arch="shu", output_size=16),
    "shu-flexible": dict(SMALL, arch="shu", attention="flexible", output_size=16),
}
# Every mechanism of the registry is in: one that no variant above names (a mechanism added by
# docs/extending.md's recipe) gets a toy variant of its own, so the tests that take ALL_VARIANTS
# build, run and decode it with no edit here.
ALL_VARIANTS.update({f"{m.name}-general-feed": dict(SMALL, layers=1, attention=m.name, score="general")
                     for m in MECHANISMS if m.name not in {v.get("attention") for v in ALL_VARIANTS.values()}})


@contextlib.contextmanager
def restored_torch_switches():
    """In-process training flips process-wide torch switches (``nmtlib.train.step.reproducible_kernels``,
    grad mode): put them back afterwards, so later tests in the process see the defaults."""
    import torch

    deterministic = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    fill = torch.utils.deterministic.fill_uninitialized_memory
    grad = torch.is_grad_enabled()
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
        torch.utils.deterministic.fill_uninitialized_memory = fill
        torch.set_grad_enabled(grad)


def tiny_train_paths(corpus: Path, out: Path):
    """The :class:`nmtlib.train.trainer.TrainPaths` of a training run on ``tiny_corpus`` into ``out``."""
    from nmtlib.train.trainer import TrainPaths

    c = corpus
    return TrainPaths(c / "train.src", c / "train.tgt", c / "dev.src", c / "dev.tgt", c / "vocab.src",
                      c / "vocab.tgt", out)


def tiny_train_cmd(corpus: Path, out: Path, spec: dict) -> list[str]:
    """``nmtlib train`` of variant ``spec`` (``{"name", "options"}``) on ``tiny_corpus`` into ``out``."""
    c = corpus
    return [sys.executable, "-m", "nmtlib", "train", "--variant-json", json.dumps(spec), "--threads", "1",
            "--train-src", str(c / "train.src"), "--train-tgt", str(c / "train.tgt"), "--dev-src", str(c / "dev.src"),
            "--dev-tgt", str(c / "dev.tgt"), "--src-vocab", str(c / "vocab.src"), "--tgt-vocab", str(c / "vocab.tgt"),
            "--out", str(out), "--no-progress"]


def train_tiny_model(corpus: Path, out: Path, spec: dict, *extra: str) -> Path:
    """Train ``spec`` on ``tiny_corpus`` as a real process (``extra``: more ``train`` arguments); its ``model.pt``."""
    run = subprocess.run([*tiny_train_cmd(corpus, out, spec), *extra], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return out / "model.pt"


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory) -> Path:
    """A small synthetic corpus with vocabularies, generated once per test session."""
    from nmtlib.files import read_lines
    from nmtlib.data.synthetic import write_corpus
    from nmtlib.data.vocab import Vocabulary

    out = tmp_path_factory.mktemp("corpus")
    write_corpus(out, seed=7, sizes={"train": 400, "dev": 40, "test": 40})
    for side in ("src", "tgt"):
        Vocabulary.build(read_lines(out / f"train.{side}"), None).save(out / f"vocab.{side}")
    return out


def pytest_configure(config):
    # One intra-op thread: tests run beside other jobs, and oversubscribed OpenMP threads spin
    # (training ran 5x slower with 2 threads on a loaded 2-core machine).
    import torch

    torch.set_num_threads(1)
    # The longest files start first (see pytest_collection_modifyitems): xdist's own reordering
    # of files by their number of tests would put the Slurm file, five tests, near the end.
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def _file_cost(items: list[pytest.Item]) -> tuple[int, int, int]:
    """How long a test file is expected to take, for ordering: its tests that start a Slurm
    cluster, then its end-to-end runs (``slow``), then its number of tests."""
    marked = lambda name: sum(item.get_closest_marker(name) is not None for item in items)  # noqa: E731
    return marked("slurm"), marked("slow"), len(items)


def pytest_collection_modifyitems(config, items):
    """Longest files first, each file's tests kept together and in order. Under ``-n auto --dist
    loadfile`` each worker takes the next file when it is done with its own, so a long file that
    comes last leaves the other workers idle until it ends: taking the longest first (largest
    processing time first) makes the suite end when its total work does. With the durations of
    one whole run, xdist's order (most tests first) came out 11% over that bound, this one 1%."""
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    ordered = sorted(files.values(), key=_file_cost, reverse=True)  # stable: ties keep their order
    items[:] = [item for group in ordered for item in group]
