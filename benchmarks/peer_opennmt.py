#!/usr/bin/env python
"""nmtlib vs OpenNMT-py 3.5.1, side by side in one run: training target tokens/s and beam-search
sentences/s of the same model on the same data, and the ratio ours/peer.

The model is Luong et al. 2015's RNN encoder–decoder with global attention, ``general`` score and
input feeding, in both toolkits with the same shapes (layers, sizes, vocabularies, batch) and
the same data, small_parallel_enja En→Ja (from the download cache; nothing is downloaded when
the cache holds it). The peer lives in its own virtualenv outside the repository (create it with
``bash benchmarks/peer/setup_opennmt.sh``; see shared/docs/PEER-OPENNMT.md) and is called
through that venv's python in a subprocess, with a generated config; its speeds are parsed from
its own log lines (``tok/s`` of ``onmt_train``; ``Average translation time`` of
``onmt_translate -report_time``).

    python benchmarks/peer_opennmt.py                                # small: 2×256, batch 64, 300 steps
    python benchmarks/peer_opennmt.py --train-steps 100 --report-every 25
    python benchmarks/peer_opennmt.py --scale paper --train-steps 4 --report-every 1 --no-decode
    python benchmarks/peer_opennmt.py --device cuda --scale paper --train-steps 300 --cuda-graphs

Training: both sides run ``--train-steps`` SGD updates (lr 1, clip 5, uniform ±0.1 init, loss
summed and divided by the sentences of the batch, dropout 0.2, length-bucketed batches of
``--batch-size`` sentences); speed = target tokens (``<eos>`` included, padding excluded) / wall
time over the steps after the first report window (OpenNMT-py: its ``tok/s`` of every later
window, combined; ours: the same steps, timed the same way).

Decoding: the first ``--decode-sentences`` sentences of test.en with both trained models, batched
by source length on both sides. Decode speed depends on output length, so every hypothesis is
forced to exactly ``--decode-length`` decoder steps on both sides: OpenNMT-py by
``-min_length L -max_length L``, ours by a wrapper that masks ``<eos>`` before step L and allows
only ``<eos>`` at step L (the model itself is unchanged).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import bench_common as bc

HERE = Path(__file__).resolve()
DEFAULT_PEER = Path.home() / ".cache" / "nmtlib-peer"
ARCH = "luong-global-general-feed"

# The peer runs under this launcher so that its peak RSS, and on a GPU its peak of PyTorch's
# allocator, are measured the same way as ours.
PEER_LAUNCHER = r"""
import atexit, resource, sys
def _peak():
    kb = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    sys.stderr.write("NMTLIB_PEAK_RSS_KB %d\n" % kb)
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        sys.stderr.write("NMTLIB_PEAK_GPU_MB %.1f\n" % (torch.cuda.max_memory_allocated() / 2**20))
atexit.register(_peak)
entry = sys.argv[1]
sys.argv = ["onmt_" + entry] + sys.argv[2:]
import importlib, os, time, types
if os.environ.get("NMTLIB_BENCH_CLOCK") == "cpu":  # --clock cpu: its tok/s and timings in CPU-seconds
    import onmt.translate.translator, onmt.utils.statistics
    onmt.utils.statistics.time = types.SimpleNamespace(time=time.process_time)
    onmt.translate.translator.time = time.process_time
importlib.import_module("onmt.bin." + entry).main()
"""


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", choices=sorted(bc.SCALES), default="small",
                   help="small: 2x256, batch 64, the data's vocabularies; paper: 4x1000, batch 128, "
                        "vocabularies padded to 50K")
    p.add_argument("--train-steps", type=int, default=300)
    p.add_argument("--report-every", type=int, default=50, help="peer report window; the first is not timed")
    p.add_argument("--train-repeat", type=int, default=1,
                   help="train N times, ours and the peer's alternating; report the medians")
    p.add_argument("--batch-size", type=int, default=None, help="override the scale's batch size")
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--beams", default="12,1")
    p.add_argument("--decode-batch-sizes", default="30,1")
    p.add_argument("--decode-sentences", type=int, default=200)
    p.add_argument("--decode-repeat", type=int, default=1,
                   help="decode each setting N times, ours and the peer's alternating; report the medians")
    p.add_argument("--decode-length", type=int, default=None,
                   help="forced decoder steps per hypothesis (default: mean reference length of those sentences)")
    p.add_argument("--no-decode", action="store_true")
    p.add_argument("--threads", type=int, default=1, help="CPU threads for both toolkits (default 1)")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="both toolkits on this device")
    p.add_argument("--bf16", action="store_true", help="ours: bf16 autocast (CUDA), as train.bf16")
    p.add_argument("--cuda-graphs", action="store_true", help="ours: graphed decoder loop in training (train.cuda_graphs) and graphed beam-search steps (decode.cuda_graphs), CUDA only")
    p.add_argument("--tf32", action="store_true",
                   help="decoding's float32 matrix products in TF32 on both sides: ours decode.tf32, the peer's through "
                        "PyTorch's TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 (CUDA only)")
    p.add_argument("--in-flight", type=in_flight_counts, default=[1], metavar="N[,N...]",
                   help="ours: decode N batches at once, their steps interleaved (decode.in_flight; CUDA only); "
                        "several counts decode ours at each, against one decode of the peer's (default 1)")
    p.add_argument("--peer-dtype", choices=["fp32", "fp16"], default="fp32",
                   help="the peer's model_dtype (fp16: its mixed precision; CUDA only)")
    p.add_argument("--peer", type=Path, default=Path(os.environ.get("PEER", DEFAULT_PEER)),
                   help="the peer's folder holding venv/ (default: $PEER, else ~/.cache/nmtlib-peer)")
    p.add_argument("--data-cache", type=Path, default=bc.shared_dir() / "data",
                   help="download cache holding small_parallel_enja (default: shared/data beside the repo)")
    p.add_argument("--work", type=Path, default=None, help="scratch folder (default benchmarks/out/peer/SCALE)")
    p.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                   help="wall time (default), or process CPU time when the machine is busy with other jobs")
    p.add_argument("--json", type=Path, help="also write the results here")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--worker", nargs="?", const="", default=None, help=argparse.SUPPRESS)
    p.add_argument("--spec", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def in_flight_counts(text: str) -> list[int]:
    """``--in-flight``: comma-separated batch counts, each at least 1."""
    try:
        counts = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"comma-separated counts of at least 1, got {text!r}")
    return counts


# --- shapes and data ---------------------------------------------------------------------------


def scale_of(args) -> bc.Scale:
    return bc.SCALES[args.scale]


def vocab_words(path: Path) -> list[tuple[str, int]]:
    """Word types of a tokenized file with counts, most frequent first (ties by word)."""
    from collections import Counter

    counts: Counter[str] = Counter()
    with open(path, encoding="utf-8") as f:
        for line in f:
            counts.update(line.split())
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def padded_words(words: list[str], total: int) -> list[str]:
    """``words`` padded with never-seen filler types to ``total`` entries (paper-scale 50K vocabularies
    from a corpus with fewer types: the shapes are what matters for speed)."""
    return words + [f"<fill{i:05d}>" for i in range(max(0, total - len(words)))]


def fetch_data(cache: Path) -> dict[str, str]:
    """``nmtlib download small_parallel_enja --cache CACHE``: the files' paths (JSON on the last line)."""
    cmd = [sys.executable, "-m", "nmtlib", "download", "small_parallel_enja", "--cache", str(cache)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"cannot get small_parallel_enja: {' '.join(cmd)} failed")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --- our side (worker processes) ----------------------------------------------------------------


def our_vocabs(spec: dict):
    from nmtlib.data.vocab import SPECIALS, Vocabulary

    src = [w for w, _ in vocab_words(Path(spec["train_src"]))]
    tgt = [w for w, _ in vocab_words(Path(spec["train_tgt"]))]
    # the peer's vocabularies: the words + 4 specials, padded to a multiple of 8 (its
    # vocab_size_multiple); paper scale: padded to vocab_total. Same shapes on both sides.
    total = lambda n: spec["vocab_total"] or -(-(n + len(SPECIALS)) // 8) * 8  # noqa: E731
    src = padded_words(src, total(len(src)) - len(SPECIALS))
    tgt = padded_words(tgt, total(len(tgt)) - len(SPECIALS))
    return Vocabulary([*SPECIALS, *src]), Vocabulary([*SPECIALS, *tgt])


def our_model(spec: dict, src_vocab, tgt_vocab):
    from nmtlib.models.builder import build_model, init_uniform

    scale = bc.SCALES[spec["scale"]]
    variant = bc.variant_for(ARCH, scale, spec["dropout"], {"batch_size": spec["batch"], "optimizer": "sgd",
                                                            "lr": 1.0, "clip": 5.0, "loss_norm": "sentences"})
    model = build_model(variant.model, len(src_vocab), len(tgt_vocab))
    init_uniform(model, 0.1)
    return variant, model


def worker_train(spec: dict) -> dict:
    import torch

    from nmtlib.data.batching import ParallelData, collate, length_sorted_batches
    from nmtlib.models.builder import count_parameters
    from nmtlib.train.loss import autocast_factory
    from nmtlib.train.schedule import build_optimizer

    torch.set_num_threads(spec["threads"])
    torch.manual_seed(spec["seed"])
    from nmtlib.train.step import LossReader, reproducible_kernels

    reproducible_kernels()  # as Trainer does
    if spec["device"] == "cpu":
        from nmtlib.memory import keep_freed_memory

        keep_freed_memory()  # as Trainer does on the CPU
    device = torch.device(spec["device"])
    losses = LossReader(device)  # the trainer's late loss reads (no host sync per step on a GPU)
    src_vocab, tgt_vocab = our_vocabs(spec)
    data = ParallelData.load(spec["train_src"], spec["train_tgt"], src_vocab, tgt_vocab)
    variant, model = our_model(spec, src_vocab, tgt_vocab)
    model.to(device).train()
    optimizer = build_optimizer(variant.train, model.parameters())
    graphs = spec["cuda_graphs"] and device.type == "cuda"
    make_autocast = autocast_factory(spec["bf16"], device, graphs)
    loss_fn = None
    if graphs:
        from nmtlib.train.graphs import CudaGraphLoss

        loss_fn = CudaGraphLoss(model, spec["batch"], autocast=make_autocast)
    autocast = make_autocast()
    bc.reset_peak(device)
    steps, window = spec["steps"], spec["report_every"]
    batches, epoch = [], 1
    while len(batches) < steps:
        batches += length_sorted_batches(data, spec["batch"], spec["seed"], epoch)
        epoch += 1
    tokens = timed_tokens = 0
    windows = []
    t_window = t_timed = bc.timer()
    for step in range(1, steps + 1):
        batch = collate(data, batches[step - 1]).to(device)
        bc.train_step(model, optimizer, batch, variant.train.clip, variant.train.loss_norm, autocast=autocast,
                      loss_fn=loss_fn, losses=losses)
        tokens += batch.target_tokens
        if step > window:
            timed_tokens += batch.target_tokens
        if step % window == 0:
            bc.sync(device)
            now = bc.timer()
            windows.append(tokens / (now - t_window))
            tokens, t_window = 0, now
            if step == window:
                t_timed = now
    bc.sync(device)
    elapsed = bc.timer() - t_timed
    torch.save(model.state_dict(), spec["model_out"])
    return {
        "graphs_recorded": len(loss_fn.graphs) if loss_fn else 0,
        "tgt_tokens_per_s": timed_tokens / elapsed if steps > window else float("nan"),
        "windows": windows,
        "parameters": count_parameters(model),
        "src_vocab": len(src_vocab),
        "tgt_vocab": len(tgt_vocab),
        "peak_rss_mb": bc.peak_rss_mb(),
        "peak_gpu_mb": bc.peak_memory_mb(device) if device.type == "cuda" else float("nan"),
        "timed_steps": max(0, steps - window),
        "tgt_tokens_per_step": timed_tokens / max(1, steps - window),
    }


def worker_decode(spec: dict) -> dict:
    import torch

    from nmtlib.data.batching import ParallelData
    from nmtlib.decode.translate import DecodeOptions, decode_data

    torch.set_num_threads(spec["threads"])
    device = torch.device(spec["device"])
    src_vocab, tgt_vocab = our_vocabs(spec)
    _, model = our_model(spec, src_vocab, tgt_vocab)
    model.load_state_dict(torch.load(spec["model_out"], weights_only=True))
    model.to(device).eval()
    data = ParallelData.load(spec["test_src"], None, src_vocab, tgt_vocab)
    L = spec["decode_length"]
    opts = DecodeOptions(beam=spec["beam"], batch_size=spec["decode_batch"], max_len_ratio=float(L),
                         cuda_graphs=spec["cuda_graphs"], tf32=spec["tf32"], in_flight=spec["in_flight"])
    if device.type == "cuda":  # untimed warm-up: CUDA context, cuBLAS handles, allocator
        decode_data([bc.ForcedLength(model, L)], ParallelData(data.src[: 2 * opts.batch_size], None), opts, device)
    bc.sync(device)  # the GPU peak counts the warm-up too, as the peer's counts its whole process
    t0 = bc.timer()
    hyps, _ = decode_data([bc.ForcedLength(model, L)], data, opts, device)
    bc.sync(device)
    elapsed = bc.timer() - t0
    lengths = sorted({len(h.tokens) for h in hyps})
    return {"sentences_per_s": len(hyps) / elapsed, "output_tokens": lengths, "decoder_steps": L,
            "peak_rss_mb": bc.peak_rss_mb(),
            "peak_gpu_mb": bc.peak_memory_mb(device) if device.type == "cuda" else float("nan")}


# --- the peer's side ----------------------------------------------------------------------------


def peer_python(peer: Path) -> Path | None:
    py = peer / "venv" / "bin" / "python"
    if not py.exists():
        return None
    ok = subprocess.run([str(py), "-c", "import onmt"], capture_output=True).returncode == 0
    return py if ok else None


def run_peer(py: Path, entry: str, args: list[str], threads: int, log: Path,
             extra_env: dict[str, str] | None = None) -> tuple[str, float]:
    """Run ``onmt_ENTRY ARGS`` under the launcher: its output, and its peak RSS in MB."""
    env = {**os.environ, **bc.thread_env(threads), "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1", **(extra_env or {})}
    cmd = [str(py), "-c", PEER_LAUNCHER, entry, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    text = proc.stdout + proc.stderr
    log.write_text(f"$ {shlex.join(['onmt_' + entry, *args])}\n{text}", encoding="utf-8")
    if proc.returncode != 0:
        sys.stderr.write(text[-4000:])
        raise SystemExit(f"OpenNMT-py onmt_{entry} failed (exit {proc.returncode}); log: {log}")
    m = re.search(r"NMTLIB_PEAK_RSS_KB (\d+)", text)
    return text, int(m.group(1)) / 1024 if m else float("nan")


def peer_peak_gpu_mb(text: str) -> float:
    """The peak of the peer's CUDA allocator (``torch.cuda.max_memory_allocated``) from the launcher's
    output; NaN when it never used CUDA."""
    m = re.search(r"NMTLIB_PEAK_GPU_MB ([\d.]+)", text)
    return float(m.group(1)) if m else float("nan")


def our_decode(dspec: dict, threads: int) -> dict:
    load = bc.loadavg()
    o = bc.run_worker(HERE, ["decode", "--spec", json.dumps(dspec)], bc.thread_env(threads))
    o["load_before"] = load
    return o


def peer_decode(py: Path, model_file: Path, test_src: Path, work: Path, beam: int, bs: int, length: int,
                args) -> dict:
    load = bc.loadavg()
    out_file = work / f"peer_out_b{beam}_bs{bs}.ja"
    text, peak = run_peer(py, "translate", [
        "-model", str(model_file), "-src", str(test_src), "-output", str(out_file), "-beam_size", str(beam),
        "-batch_size", str(bs), "-min_length", str(length), "-max_length", str(length),
        "-report_time", "-gpu", "0" if args.device == "cuda" else "-1"], args.threads, work / f"translate_b{beam}_bs{bs}.log",
        {"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1"} if args.tf32 else None)
    # sentences/s from its "Tokens per second" (predicted tokens / total time, full precision)
    # and the tokens it wrote; its "Average translation time (ms)" has one decimal only
    out_lines = out_file.read_text(encoding="utf-8").splitlines()
    m = re.search(r"Tokens per second: ([\d.]+)", text)
    mean_len = sum(len(line.split()) for line in out_lines) / max(1, len(out_lines))
    sps = float(m.group(1)) / mean_len if m and mean_len else float("nan")
    return {"sentences_per_s": sps, "output_tokens": sorted({len(line.split()) for line in out_lines}),
            "peak_rss_mb": peak, "peak_gpu_mb": peer_peak_gpu_mb(text), "load_before": load}


def median_run(runs: list[dict], key: str = "sentences_per_s") -> dict:
    """The run with the median ``key`` (the lower middle one for an even count), with every run's value
    under ``runs_KEY``."""
    ranked = sorted(runs, key=lambda r: r[key])
    return {**ranked[(len(ranked) - 1) // 2], f"runs_{key}": [r[key] for r in runs]}


PEER_CONFIG = """\
# generated by benchmarks/peer_opennmt.py: OpenNMT-py 3.5.1, Luong 2015 global attention RNN (En->Ja)
save_data: {work}/run/enja
src_vocab: {work}/run/enja.vocab.src
tgt_vocab: {work}/run/enja.vocab.tgt
overwrite: true
data:
  corpus_1:
    path_src: {train_src}
    path_tgt: {train_tgt}
  valid:
    path_src: {dev_src}
    path_tgt: {dev_tgt}
src_vocab_size: {vocab_size}
tgt_vocab_size: {vocab_size}
src_words_min_frequency: 1
tgt_words_min_frequency: 1
src_seq_length: 200
tgt_seq_length: 200

model_type: text
encoder_type: rnn
decoder_type: rnn
rnn_type: LSTM
layers: {layers}
hidden_size: {hidden}
word_vec_size: {embedding}
global_attention: general
global_attention_function: softmax
input_feed: 1
bridge: false
param_init: 0.1
dropout: {dropout}

optim: sgd
learning_rate: 1.0
max_grad_norm: 5
batch_type: sents
batch_size: {batch}
valid_batch_size: {batch}
accum_count: 1
train_steps: {steps}
valid_steps: 100000
save_checkpoint_steps: {steps}
save_model: {work}/run/model
report_every: {report_every}
seed: {seed}

world_size: 1
num_workers: 0
"""

STEP_RE = re.compile(r"Step\s+(\d+)/\s*\d+;.*?bsz:\s*([\d.]+)/\s*([\d.]+)/\s*([\d.]+);\s*([\d.]+)/\s*([\d.]+) tok/s")


def parse_peer_train(text: str, window: int) -> dict:
    reports = [(int(m.group(1)), float(m.group(3)), float(m.group(6))) for m in STEP_RE.finditer(text)]
    if not reports:
        raise SystemExit("no 'Step N/M; ... tok/s' line in the OpenNMT-py log")
    later = [(s, bsz, tps) for s, bsz, tps in reports if s > window]
    tokens = sum(bsz * window for _, bsz, _ in later)
    seconds = sum(bsz * window / tps for _, bsz, tps in later)
    out = {"windows": [tps for _, _, tps in reports], "tgt_tokens_per_s": tokens / seconds if seconds else float("nan"),
           "tgt_tokens_per_step": tokens / max(1, window * len(later)), "timed_steps": window * len(later)}
    for side in ("src", "tgt"):
        m = re.search(rf"\* {side} vocab size = (\d+)", text)
        out[f"{side}_vocab"] = int(m.group(1)) if m else None
    m = re.search(r"number of parameters:?\s*(\d+)", text)
    out["parameters"] = int(m.group(1)) if m else None
    return out


# --- driver --------------------------------------------------------------------------------------


def main(argv=None) -> int:
    args = parse_args(argv)
    if not getattr(args, "worker", None):
        bc.set_clock(args.clock)
    if args.worker is not None:
        spec = json.loads(args.spec)
        result = worker_train(spec) if args.worker == "train" else worker_decode(spec)
        print(json.dumps(result))
        return 0

    py = peer_python(args.peer)
    if py is None:
        print(f"OpenNMT-py is not installed in {args.peer}/venv (the peer's own virtualenv, never a dependency "
              f"of nmtlib). Create it with:\n\n    PEER={args.peer} bash benchmarks/peer/setup_opennmt.sh\n\n"
              f"(about a minute; see shared/docs/PEER-OPENNMT.md), or point --peer / $PEER at an existing one.",
              file=sys.stderr)
        return 3
    peer_version = subprocess.run([str(py), "-c", "import onmt, torch; print(onmt.__version__, torch.__version__)"],
                                  capture_output=True, text=True).stdout.split()

    scale = scale_of(args)
    batch = args.batch_size or scale.batch
    work = (args.work or bc.OUT / "peer" / args.scale).resolve()
    (work / "run").mkdir(parents=True, exist_ok=True)
    paths = fetch_data(args.data_cache)
    test_lines = Path(paths["test.en"]).read_text(encoding="utf-8").splitlines()[: args.decode_sentences]
    ref_lines = Path(paths["test.ja"]).read_text(encoding="utf-8").splitlines()[: args.decode_sentences]
    test_src = work / f"test{len(test_lines)}.en"
    test_src.write_text("".join(line + "\n" for line in test_lines), encoding="utf-8")
    decode_length = args.decode_length or max(2, round(sum(len(r.split()) for r in ref_lines) / max(1, len(ref_lines))))

    vocab_total = scale.tgt_vocab if args.scale == "paper" else 0  # 0: all words of the data
    spec = {"scale": args.scale, "batch": batch, "dropout": args.dropout, "threads": args.threads, "seed": args.seed,
            "steps": args.train_steps, "report_every": args.report_every, "vocab_total": vocab_total,
            "train_src": paths["train.en"], "train_tgt": paths["train.ja"], "test_src": str(test_src),
            "model_out": str(work / "ours_model.pt"), "decode_length": decode_length, "device": args.device,
            "bf16": args.bf16, "cuda_graphs": args.cuda_graphs, "tf32": args.tf32, "in_flight": args.in_flight}

    info = bc.machine_info(args.threads if args.device == "cpu" else None, args.device)
    info["peer"] = f"OpenNMT-py {peer_version[0]} (torch {peer_version[1]})" if len(peer_version) == 2 else "OpenNMT-py"
    bc.print_header(info)
    print(f"peer: {info['peer']} in {args.peer}/venv; data: small_parallel_enja En->Ja ({paths['train.en']})")
    print(f"model: {ARCH}, scale {args.scale} ({scale.layers}x{scale.hidden}, emb {scale.embedding}), batch {batch}, "
          f"dropout {args.dropout}, SGD lr 1 clip 5; {args.train_steps} steps, timed after step {args.report_every}")
    print(f"device {args.device}; ours: {'bf16 autocast' if args.bf16 else 'fp32'}"
          f"{', CUDA graphs' if args.cuda_graphs else ''}"
          f"{f', decode batches in flight: {args.in_flight}' if args.in_flight != [1] else ''}; peer: model_dtype {args.peer_dtype}"
          f"{'; decoding in TF32 on both sides' if args.tf32 else ''}")

    # vocabularies: the peer's from onmt_build_vocab (small) or written by us, padded (paper)
    config = work / "enja_luong.yaml"
    config.write_text(PEER_CONFIG.format(
        work=work, train_src=paths["train.en"], train_tgt=paths["train.ja"], dev_src=paths["dev.en"],
        dev_tgt=paths["dev.ja"], vocab_size=max(10000, vocab_total), layers=scale.layers, hidden=scale.hidden,
        embedding=scale.embedding, dropout=args.dropout, batch=batch, steps=args.train_steps,
        report_every=args.report_every, seed=args.seed) + peer_device_config(args), encoding="utf-8")
    if vocab_total:
        peer_specials = 4  # <unk> <blank> <s> </s>
        for side, key in (("src", "train.en"), ("tgt", "train.ja")):
            words = padded_words([w for w, _ in vocab_words(Path(paths[key]))], vocab_total - peer_specials)
            (work / "run" / f"enja.vocab.{side}").write_text("".join(f"{w}\t1\n" for w in words), encoding="utf-8")
    else:
        run_peer(py, "build_vocab", ["-config", str(config), "-n_sample", "-1"], args.threads, work / "build_vocab.log")

    results: dict = {"info": info, "command": bc.command_line(), "spec": spec}
    # -- training, ours then the peer's, alternating when repeated (the machine's speed drifts)
    ours_runs, peer_runs = [], []
    for _ in range(args.train_repeat):
        load = bc.loadavg()
        o = bc.run_worker(HERE, ["train", "--spec", json.dumps(spec)], bc.thread_env(args.threads))
        o["load_before"] = load
        print(f"  ours train: {o['tgt_tokens_per_s']:.0f} tgt tok/s (load {load})", file=sys.stderr, flush=True)
        load = bc.loadavg()
        text, peak = run_peer(py, "train", ["-config", str(config)], args.threads, work / "train.log")
        p = parse_peer_train(text, args.report_every)
        p["peak_rss_mb"], p["peak_gpu_mb"], p["load_before"] = peak, peer_peak_gpu_mb(text), load
        print(f"  peer train: {p['tgt_tokens_per_s']:.0f} tgt tok/s (load {load})", file=sys.stderr, flush=True)
        ours_runs.append(o)
        peer_runs.append(p)
    ours = median_run(ours_runs, "tgt_tokens_per_s")
    peer = median_run(peer_runs, "tgt_tokens_per_s")
    results["train"] = {"ours": ours, "peer": peer}

    rows = [["training tgt tokens/s", ours["tgt_tokens_per_s"], peer["tgt_tokens_per_s"],
             ratio(ours["tgt_tokens_per_s"], peer["tgt_tokens_per_s"]), f"{ours['load_before']} / {peer['load_before']}"],
            ["training peak RSS MB", ours["peak_rss_mb"], peer["peak_rss_mb"],
             ratio(ours["peak_rss_mb"], peer["peak_rss_mb"]), ""],
            *([["training peak GPU MB (allocator)", ours["peak_gpu_mb"], peer["peak_gpu_mb"],
                ratio(ours["peak_gpu_mb"], peer["peak_gpu_mb"]), ""]] if args.device == "cuda" else []),
            ["parameters", ours["parameters"], peer["parameters"] or "?", "", ""],
            ["vocab src / tgt", f"{ours['src_vocab']} / {ours['tgt_vocab']}", f"{peer['src_vocab']} / {peer['tgt_vocab']}",
             "", ""],
            ["tgt tokens per timed step", ours["tgt_tokens_per_step"], peer["tgt_tokens_per_step"], "", ""]]

    # -- decoding
    results["decode"] = []
    if not args.no_decode:
        model_file = work / "run" / f"model_step_{args.train_steps}.pt"
        for beam in [int(b) for b in args.beams.split(",")]:
            for bs in [int(b) for b in args.decode_batch_sizes.split(",")]:
                runs_o: dict[int, list[dict]] = {n: [] for n in args.in_flight}
                runs_p: list[dict] = []
                for _ in range(args.decode_repeat):  # alternating, so drifts in machine speed hit both
                    for n in args.in_flight:
                        runs_o[n].append(our_decode({**spec, "beam": beam, "decode_batch": bs, "in_flight": n},
                                                    args.threads))
                    runs_p.append(peer_decode(py, model_file, test_src, work, beam, bs, decode_length, args))
                p = median_run(runs_p)
                p_sps = p["sentences_per_s"]
                for n, runs in runs_o.items():  # the peer has no batches in flight: one decode of its beside each
                    o = median_run(runs)
                    setting = f"beam {beam}, batch {bs}" + (f", {n} in flight" if n > 1 else "")
                    results["decode"].append({"beam": beam, "batch": bs, "in_flight": n, "ours": o, "peer": p})
                    print(f"  {setting}: ours {o['sentences_per_s']:.1f} sent/s, peer {p_sps:.1f} sent/s",
                          file=sys.stderr, flush=True)
                    rows.append([f"decode sent/s, {setting}", o["sentences_per_s"], p_sps,
                                 ratio(o["sentences_per_s"], p_sps), f"{o['load_before']} / {p['load_before']}"])
                    if args.device == "cuda":
                        peaks = [max(r["peak_gpu_mb"] for r in rs) for rs in (runs, runs_p)]
                        rows.append([f"decode peak GPU MB, {setting}", *peaks, ratio(*peaks), ""])
        print(f"decoding: {len(test_lines)} sentences of test.en, every hypothesis forced to {decode_length} decoder "
              f"steps (ours: {decode_length - 1} tokens + <eos>; peer: {decode_length} tokens, max_length stop)")
    print()
    print(bc.markdown_table(["measurement", "nmtlib (ours)", "OpenNMT-py (peer)", "ours/peer", "load avg before (ours / peer)"],
                            rows))
    print(f"\npeer training windows (tok/s per {args.report_every} steps): {[round(x) for x in peer['windows']]}")
    print(f"our training windows  (tok/s per {args.report_every} steps): {[round(x) for x in ours['windows']]}")
    if args.train_repeat > 1:
        print(f"training runs, tgt tok/s (alternating, the median reported): ours "
              f"{[round(x) for x in ours['runs_tgt_tokens_per_s']]}, peer {[round(x) for x in peer['runs_tgt_tokens_per_s']]}")
    if args.decode_repeat > 1:
        for r in results["decode"]:
            print(f"decode runs, beam {r['beam']} batch {r['batch']}, {r['in_flight']} in flight, sent/s: ours "
                  f"{[round(x, 1) for x in r['ours']['runs_sentences_per_s']]}, peer "
                  f"{[round(x, 1) for x in r['peer']['runs_sentences_per_s']]}")
    print(f"load average at end: {bc.loadavg()}; logs and configs: {work}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
    return 0


def peer_device_config(args) -> str:
    """The peer's device lines: GPU 0 (``gpu_ranks``), and its precision."""
    if args.device == "cpu":
        if args.peer_dtype != "fp32":
            raise SystemExit("--peer-dtype fp16 needs --device cuda")
        return ""
    return f"gpu_ranks: [0]\nmodel_dtype: {args.peer_dtype}\n"


def ratio(a, b) -> str:
    try:
        return f"{a / b:.2f}x"
    except (TypeError, ZeroDivisionError):
        return "n/a"


if __name__ == "__main__":
    raise SystemExit(main())
