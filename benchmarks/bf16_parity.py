#!/usr/bin/env python
"""bf16 against float32 training, model for model: the parity table of issue #44.

Reads two runs of one experiment that differ only in ``train.bf16`` (the bf16 experiment and its
float32 twin, ``config/experiments/overrides/{bf16,fp32,bf16-parity}.yaml``) and prints, per
variant, each seed's test BLEU (tokenized, before unknown-word replacement: the workflow's
``scores/<variant>/seed<k>/test.<setting>.json``), chrF (sacreBLEU's, on the same files), best dev
perplexity and training speed, both precisions' means, and the verdict:

    parity  when |mean BLEU bf16 − mean BLEU float32| ≤ max(0.5, the seeds' spread),

the spread being the larger of the two precisions' standard deviations over seeds (issue #44's
rule: "the mean BLEU difference within the seed spread, or ≤ 0.5 BLEU"). A second table gives dev
perplexity after each epoch, per seed. Models not finished yet are listed as missing.

    python benchmarks/bf16_parity.py --bf16 results/multi30k-deen --fp32 results/multi30k-deen-fp32 \\
        --variants global-general-feed,local-p-general-feed,rnnsearch,shu-flexible --seeds 1,2
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path

PRECISIONS = ("fp32", "bf16")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bf16", type=Path, required=True, help="results folder of the bf16 run")
    p.add_argument("--fp32", type=Path, required=True, help="results folder of its float32 twin")
    p.add_argument("--variants", required=True, help="comma-separated variant names")
    p.add_argument("--seeds", default="1,2", help="comma-separated seeds")
    p.add_argument("--setting", default="beam5", help="decoding setting of the translations (beam<K>)")
    p.add_argument("--json", type=Path, help="also write every number here")
    return p.parse_args(argv)


def train_log(path: Path) -> list[dict[str, float]]:
    if not path.exists():
        return []
    with path.open(encoding="utf-8", newline="") as f:
        return [{k: float(v) for k, v in row.items() if v != ""} for row in csv.DictReader(f)]


def chrf(hyp: Path, ref: Path) -> float | None:
    from sacrebleu.metrics import CHRF

    if not hyp.exists():
        return None
    hyps = hyp.read_text(encoding="utf-8").splitlines()
    refs = ref.read_text(encoding="utf-8").splitlines()
    return CHRF().corpus_score(hyps, [refs]).score


def run_numbers(results: Path, variant: str, seed: int, setting: str) -> dict[str, object]:
    """One model's numbers; BLEU and chrF are None until its translation is scored."""
    from nmtlib.layout import RAW_TEXT, Layout

    layout, run = Layout(results), f"seed{seed}"
    log = train_log(layout.train_log(variant, run))
    score_path = layout.scores(variant, run, setting)
    bleu = json.loads(score_path.read_text(encoding="utf-8"))["bleu"]["bleu"] if score_path.exists() else None
    hyp = layout.translation(variant, run, setting, RAW_TEXT)
    finished = layout.model(variant, run).exists()
    return {
        "finished": finished,
        "bleu": bleu,
        "chrf": chrf(hyp, layout.data("test", "tgt")) if bleu is not None else None,
        "best_dev_ppl": min((r["dev_ppl"] for r in log), default=None),
        "dev_ppl": [r["dev_ppl"] for r in log],
        "tokens_per_s": statistics.median(r["target_tokens_per_s"] for r in log) if log else None,
    }


def spread(values: list[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else 0.0


def verdict(fp32: list[float], bf16: list[float]) -> tuple[str, float | None, float | None]:
    """(verdict, mean difference bf16 − fp32, the spread it is held against)."""
    if not fp32 or not bf16:
        return "not yet: models missing", None, None
    diff = statistics.mean(bf16) - statistics.mean(fp32)
    limit = max(0.5, spread(fp32), spread(bf16))
    if len(fp32) < 2 or len(bf16) < 2:
        return ("parity so far (one seed)" if abs(diff) <= limit else "no parity so far (one seed)"), diff, limit
    return ("parity" if abs(diff) <= limit else "no parity"), diff, limit


def state(n: dict[str, object]) -> str:
    """Where a model without a BLEU score is: waiting, training or being decoded."""
    return "decoding" if n["finished"] else "training" if n["dev_ppl"] or n["best_dev_ppl"] else "waiting"


def fmt(value: float | None, digits: int = 2) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    seeds = [int(s) for s in args.seeds.split(",") if s]
    roots = {"fp32": args.fp32, "bf16": args.bf16}
    numbers = {(v, p, s): run_numbers(roots[p], v, s, args.setting) for v in variants for p in PRECISIONS for s in seeds}

    print(f"bf16: {args.bf16}; float32: {args.fp32}; test BLEU tokenized, before unknown-word replacement, "
          f"{args.setting}\n")
    seed_cols = " | ".join(f"{p} seed {s}" for p in PRECISIONS for s in seeds)
    print(f"| variant | {seed_cols} | fp32 mean | bf16 mean | bf16 − fp32 | spread (limit) | verdict |")
    print("|---|" + "---|" * (len(PRECISIONS) * len(seeds) + 5))
    summary = {}
    for v in variants:
        bleus = {p: [numbers[v, p, s]["bleu"] for s in seeds if numbers[v, p, s]["bleu"] is not None] for p in PRECISIONS}
        word, diff, limit = verdict(bleus["fp32"], bleus["bf16"])
        cells = " | ".join(fmt(numbers[v, p, s]["bleu"]) or state(numbers[v, p, s]) for p in PRECISIONS for s in seeds)
        means = [fmt(statistics.mean(bleus[p])) if bleus[p] else "" for p in PRECISIONS]
        print(f"| {v} | {cells} | {means[0]} | {means[1]} | {fmt(diff)} | {fmt(limit)} | {word} |")
        summary[v] = {"verdict": word, "difference": diff, "limit": limit}

    print("\n| variant | precision | seed | chrF | best dev ppl | median tgt tok/s | dev ppl by epoch |")
    print("|---|---|---|---|---|---|---|")
    for v in variants:
        for p in PRECISIONS:
            for s in seeds:
                n = numbers[v, p, s]
                curve = " ".join(f"{x:.2f}" for x in n["dev_ppl"])
                print(f"| {v} | {p} | {s} | {fmt(n['chrf'], 1)} | {fmt(n['best_dev_ppl'])} | "
                      f"{fmt(n['tokens_per_s'], 0)} | {curve} |")
    if args.json:
        args.json.write_text(json.dumps({"runs": {f"{v}/{p}/seed{s}": numbers[v, p, s] for v, p, s in numbers},
                                         "verdicts": summary}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
