#!/usr/bin/env python
"""Beam-search decoding speed (sentences/s at beam 12 and beam 1), and Flexible Attention vs its
global baseline (Shu & Nakayama 2017, Table 3): wall time per sentence and score evaluations
per decoder step at τ = ∞ and τ = 1.2.

Models are *briefly trained* on the embedded synthetic corpus (``nmtlib corpus synthetic``)
with nmtlib's real ``Trainer`` (``--train-steps`` updates, Adam 3e-3, per-token loss, batch 64),
so their outputs have realistic lengths; decoding goes through nmtlib's real path
(``decode_data``: sentences sorted by source length, batched, ``beam_search`` over
``Ensemble([model], τ)``). Trained models are cached under
``benchmarks/out/decode_models/``. With ``--force-length L`` every hypothesis takes exactly L
decoder steps instead (a wrapper masks ``<eos>``), so models with different output lengths can
be compared at equal work.

    python benchmarks/decode_speed.py                       # small 2x256 models, 200 test sentences
    python benchmarks/decode_speed.py --force-length 20 --beams 12 --batch-sizes 1
    python benchmarks/decode_speed.py --device cuda --batch-sizes 1,64

"score evals/step" is Shu & Nakayama's window size: score evaluations summed over every live
hypothesis at every step / the number of (hypothesis, step) pairs (``Hypothesis.average_window``);
for global attention it is the source length.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
from pathlib import Path

import bench_common as bc


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--archs", default="luong-global-general-feed,shu-baseline,shu-flexible",
                   help="comma-separated, from: " + ", ".join(bc.ARCHS))
    p.add_argument("--scale", choices=sorted(bc.SCALES), default="small",
                   help="model shape (vocabularies are the synthetic corpus's)")
    p.add_argument("--train-steps", type=int, default=300, help="training updates before decoding")
    p.add_argument("--beams", default="12,1")
    p.add_argument("--batch-sizes", default="1,64", help="sentences per decoding batch, comma-separated")
    p.add_argument("--taus", default="inf,1.2", help="thresholds for flexible attention (inf = τ = ∞)")
    p.add_argument("--flat-min-skipped", default=None,
                   help="comma-separated values of FlexibleAttention.flat_min_skipped to time at finite τ "
                        "(0: windows always laid flat, inf: always the covering span; default: the library's)")
    p.add_argument("--sentences", type=int, default=200, help="first N sentences of the synthetic test set")
    p.add_argument("--force-length", type=int, default=None,
                   help="force every hypothesis to this many decoder steps (default: the model's own lengths)")
    p.add_argument("--max-len-ratio", type=float, default=2.0)
    p.add_argument("--results", type=Path, default=None,
                   help="decode models a workflow already trained instead: RESULTS/models/V/seed1/model.pt for "
                        "every V in --archs, with RESULTS/vocab/{src,tgt}.txt and RESULTS/data/test.{src,tgt}")
    p.add_argument("--baseline", default="shu-baseline",
                   help="the global baseline of the flexible rows (an entry of --archs; a flexible model means its own τ = ∞)")
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--corpus-size", type=int, default=20000, help="synthetic training sentences")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--cuda-graphs", action="store_true", help="replay beam-search steps as CUDA graphs (decode.cuda_graphs)")
    p.add_argument("--in-flight", type=int, default=1, metavar="N",
                   help="decode N batches at once, their steps interleaved (decode.in_flight; CUDA only)")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads on CPU (default 1)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                   help="wall time (default), or process CPU time when the machine is busy with other jobs")
    p.add_argument("--repeat", type=int, default=1,
                   help="decode every setting this many times, in rounds (one decode of each setting per round), "
                        "and report the median time (a noisy machine)")
    p.add_argument("--json", type=Path, help="also write the results here")
    return p.parse_args(argv)


def synthetic_corpus(size: int) -> tuple[Path, dict]:
    """``nmtlib corpus synthetic`` into benchmarks/out/synthetic-N (once), and vocabularies."""
    folder = bc.OUT / f"synthetic-{size}"
    if not (folder / "vocab.tgt").exists():
        cmd = [sys.executable, "-m", "nmtlib", "corpus", "synthetic", "--out", str(folder), "--seed", "1",
               "--train", str(size), "--dev", "500", "--test", "500"]
        subprocess.run(cmd, check=True, capture_output=True)
        from nmtlib.files import read_lines
        from nmtlib.data.vocab import Vocabulary

        for side in ("src", "tgt"):
            Vocabulary.build(read_lines(folder / f"train.{side}"), None).save(folder / f"vocab.{side}")
    return folder, {}


def trained_model(arch: str, args, corpus: Path, device):
    """nmtlib's Trainer, ``--train-steps`` updates; cached by (arch, scale, steps, dropout, seed)."""
    import torch

    from nmtlib.checkpoint import load_model
    from nmtlib.train.trainer import Trainer, TrainPaths

    scale = bc.SCALES[args.scale]
    out_dir = bc.OUT / "decode_models" / f"{arch}-{args.scale}-{args.train_steps}steps-d{args.dropout}-s{args.seed}"
    if not (out_dir / "model.pt").exists():
        variant = bc.variant_for(arch, scale, args.dropout, {
            "optimizer": "adam", "lr": 0.003, "loss_norm": "tokens", "batch_size": 64, "epochs": 100,
            "max_steps": args.train_steps, "checkpoint_every": 10**9, "eval_every": 0,
            "device": device.type})
        paths = TrainPaths(corpus / "train.src", corpus / "train.tgt", corpus / "dev.src", corpus / "dev.tgt",
                           corpus / "vocab.src", corpus / "vocab.tgt", out_dir)
        t0 = bc.timer()
        Trainer(variant, paths, seed=args.seed, progress=False).run()
        print(f"  trained {arch}: {args.train_steps} steps in {bc.timer() - t0:.0f} s", file=sys.stderr, flush=True)
    model, record = load_model(out_dir / "model.pt", device)
    torch.use_deterministic_algorithms(False)  # Trainer switched it on; decoding as translate does
    return model, record


def mean_gate(model, data, device) -> tuple[float, float]:
    """Mean and median of g(t) over the real target positions of ``data``, teacher forced."""
    import torch

    from nmtlib.data.batching import collate, sequential_batches
    from nmtlib.data.vocab import PAD_ID

    gates = []
    with torch.no_grad():
        for idx in sequential_batches(len(data), 64):
            b = collate(data, idx).to(device)
            out = model(b.src, b.src_lengths, b.tgt_in)
            gates.append(out.gates[b.tgt_out != PAD_ID].float().cpu())
    g = torch.cat(gates)
    return float(g.mean()), float(g.median())


def main(argv=None) -> int:
    args = parse_args(argv)
    if not getattr(args, "worker", None):
        bc.set_clock(args.clock)
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("--device cuda: no CUDA device is visible", file=sys.stderr)
        return 2
    if args.device == "cpu":
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    archs = [a.strip() for a in args.archs.split(",") if a.strip()]
    unknown = [] if args.results else [a for a in archs if a not in bc.ARCHS]
    if unknown:
        print(f"unknown architecture(s) {unknown}; choose from {list(bc.ARCHS)}", file=sys.stderr)
        return 2
    beams = [int(b) for b in args.beams.split(",")]
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    taus = [None if t.strip() in ("inf", "none") else float(t) for t in args.taus.split(",")]
    layouts = [None] if args.flat_min_skipped is None else [float(x) for x in args.flat_min_skipped.split(",")]

    info = bc.machine_info(args.threads if args.device == "cpu" else None, args.device)
    bc.print_header(info)
    from nmtlib.data.batching import ParallelData
    from nmtlib.data.vocab import Vocabulary
    from nmtlib.decode.translate import DecodeOptions, decode_data, load_model

    if args.results:
        corpus = args.results
        src_vocab, tgt_vocab = Vocabulary.load(corpus / "vocab" / "src.txt"), Vocabulary.load(corpus / "vocab" / "tgt.txt")
        test = ParallelData.load(corpus / "data" / "test.src", corpus / "data" / "test.tgt", src_vocab, tgt_vocab)
    else:
        corpus, _ = synthetic_corpus(args.corpus_size)
        src_vocab, tgt_vocab = Vocabulary.load(corpus / "vocab.src"), Vocabulary.load(corpus / "vocab.tgt")
        test = ParallelData.load(corpus / "test.src", corpus / "test.tgt", src_vocab, tgt_vocab)
    test = ParallelData(test.src[: args.sentences], test.tgt[: args.sentences])
    mean_src = sum(len(s) for s in test.src) / len(test)
    mean_ref = sum(len(t) for t in test.tgt) / len(test)
    lengths_note = (f"every hypothesis forced to {args.force_length} decoder steps" if args.force_length
                    else f"natural output lengths of models trained {args.train_steps} steps" if not args.results
                    else "natural output lengths")
    where = f"{args.results}/data/test.src, models {args.results}/models/*/seed1" if args.results else \
        "the synthetic test set (seed 1)"
    print(f"data: first {len(test)} sentences of {where}, mean source length "
          f"{mean_src:.1f}, mean reference length {mean_ref:.1f}; {lengths_note}")

    # every (model, τ, beam, batch) setting; with --repeat the settings are timed in rounds, one
    # decode of each per round, so a drift of the machine's speed hits every setting alike
    settings = []
    for arch in archs:
        if args.results:
            model, record = load_model(args.results / "models" / arch / "seed1" / "model.pt", device)
        else:
            model, record = trained_model(arch, args, corpus, device)
        flexible = record["variant"]["model"]["attention"] == "flexible"
        gate = mean_gate(model, test, device) if flexible else None
        if gate is not None:
            print(f"  {arch}: Flexible Attention strength g(t) on the test references (teacher forced): "
                  f"mean {gate[0]:.3g}, median {gate[1]:.3g}", file=sys.stderr, flush=True)
        for tau, layout in [(t, f) for t in (taus if flexible else [None]) for f in (layouts if t is not None else [None])]:
            for beam in beams:
                for bs in batch_sizes:
                    decoded = [bc.ForcedLength(model, args.force_length)] if args.force_length else [model]
                    ratio = max(args.max_len_ratio, float(args.force_length or 0))
                    settings.append({"arch": arch, "record": record, "flexible": flexible, "gate": gate,
                                     "tau": tau, "layout": layout, "beam": beam, "bs": bs, "model": model, "decoded": decoded,
                                     "opts": DecodeOptions(beam=beam, batch_size=bs, max_len_ratio=ratio, tau=tau,
                                                           cuda_graphs=args.cuda_graphs, in_flight=args.in_flight),
                                     "times": []})
    def use_layout(st) -> None:
        att = st["model"].decoder.attention
        if st["layout"] is not None:
            att.flat_min_skipped = st["layout"]
        elif att is not None and "flat_min_skipped" in vars(att):
            del att.flat_min_skipped  # back to the class default

    for st in settings:  # warm-up (one-time allocations, oneDNN primitives), untimed
        use_layout(st)
        decode_data(st["decoded"], ParallelData(test.src[: min(st["bs"], 8)], None), st["opts"], device)
    for _ in range(args.repeat):
        for st in settings:
            st.setdefault("load", bc.loadavg())  # before its first timed decode
            use_layout(st)
            bc.sync(device)
            t0 = bc.timer()
            st["hyps"], _ = decode_data(st["decoded"], ParallelData(test.src, None), st["opts"], device)
            bc.sync(device)
            st["times"].append(bc.timer() - t0)
    
    rows, results, global_evals = [], [], {}
    for st in settings:
        arch, record, gate, tau, beam, bs, hyps = (st[k] for k in ("arch", "record", "gate", "tau", "beam", "bs", "hyps"))
        elapsed = statistics.median(st["times"])
        out_len = sum(len(h.tokens) for h in hyps) / len(hyps)
        computed = sum(h.scores_computed for h in hyps)
        hyp_steps = sum(h.hypothesis_steps for h in hyps)
        evals = computed / hyp_steps if hyp_steps else float("nan")
        key = (beam, bs)
        if arch == args.baseline and tau is None:
            global_evals[key] = (evals, elapsed)
        r = {"arch": arch, "tau": "inf" if tau is None else tau, "flat_min_skipped": st["layout"], "beam": beam, "batch": bs,
             "sentences_per_s": len(hyps) / elapsed, "ms_per_sentence": 1000 * elapsed / len(hyps),
             "ms_per_sentence_runs": [1000 * t / len(hyps) for t in st["times"]],
             "mean_output_tokens": out_len, "score_evals_per_step": evals,
             "ms_per_sentence_per_step": 1000 * elapsed / len(hyps) / (out_len + 1),
             "load_before": st["load"], "dev_ppl": record.get("dev_ppl"),
             "gate_mean": gate[0] if gate else None, "gate_median": gate[1] if gate else None}
        results.append(r)
        tau_label = "" if not st["flexible"] else ("∞" if tau is None else f"{tau:g}")
        if st["layout"] is not None:
            tau_label += f" (flat ≥ {st['layout']:g})"
        rows.append([arch, tau_label, beam, bs, r["sentences_per_s"], r["ms_per_sentence"],
                     r["ms_per_sentence_per_step"], out_len, evals, st["load"]])
        layout_note = "" if st["layout"] is None else f" flat>={st['layout']:g}"
        print(f"  {arch} tau={r['tau']}{layout_note} beam {beam} batch {bs}: {r['sentences_per_s']:.1f} sent/s, "
              f"{evals:.2f} evals/step, out len {out_len:.1f}"
              + (f", ms/sent per round {[round(x, 2) for x in r['ms_per_sentence_runs']]}" if args.repeat > 1 else ""),
              file=sys.stderr, flush=True)
    print()
    print(bc.markdown_table(["architecture", "τ", "beam", "batch", "sent/s", "ms/sent", "ms/sent/step",
                             "mean out len", "score evals/step", "load avg before"], rows))

    flex = [r for r in results if r["gate_mean"] is not None]
    if flex and global_evals:
        print(f"\nFlexible Attention vs its global baseline ({args.baseline}), same beam and batch:")
        frows = []
        for r in flex:
            g = global_evals.get((r["beam"], r["batch"]))
            if g is None:
                continue
            g_evals, g_elapsed = g
            g_ms = 1000 * g_elapsed / len(test)
            layout = "" if r["flat_min_skipped"] is None else f" (flat ≥ {r['flat_min_skipped']:g})"
            frows.append([r["arch"], f"τ={r['tau']}{layout}", r["beam"], r["batch"], r["score_evals_per_step"], g_evals,
                          f"{100 * (1 - r['score_evals_per_step'] / g_evals):.1f}%", r["ms_per_sentence"], g_ms,
                          f"{100 * (1 - r['ms_per_sentence'] / g_ms):.1f}%"])
        print(bc.markdown_table(["model", "flexible", "beam", "batch", "evals/step", "global evals/step", "fewer evals",
                                 "ms/sent", "global ms/sent", "less time"], frows))
    print(f"\nload average at end: {bc.loadavg()}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"info": info, "command": bc.command_line(), "results": results},
                                        indent=2, default=lambda x: None if isinstance(x, float) and math.isnan(x) else x))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
