"""BLEU of translations split by how far the gold alignment jumps (the README's demo analysis).

For each test sentence, the largest jump is the largest distance in source positions between
the source words (first Sure link) aligned to two consecutive aligned target words. Sentences
are split at the median of that jump, and each translation is scored on both halves with
tokenized BLEU. Shows whether a narrow attention window (Flexible Attention's τ) loses more on
sentences that need long jumps.

    python scripts/bleu_by_jump.py results/demo shu-global:beam5 flexible:beam5 flexible:beam5.tau1.2
"""

from __future__ import annotations

import argparse
from pathlib import Path

from nmtlib.files import read_lines
from nmtlib.metrics.bleu import tokenized_bleu


def largest_jump(line: str) -> int:
    """Largest source-position jump between consecutive aligned target words (Sure links ``i-j``)."""
    by_target: dict[int, list[int]] = {}
    for link in line.split():
        if "-" in link:
            i, j = (int(x) for x in link.split("-"))
            by_target.setdefault(j, []).append(i)
    positions = [min(by_target[j]) for j in sorted(by_target)]
    return max((abs(b - a) for a, b in zip(positions, positions[1:])), default=0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("results", type=Path, help="results/<experiment> with corpus/test.align and translations/")
    p.add_argument("runs", nargs="+", help="VARIANT:SETTING, e.g. flexible:beam5.tau1.2 (seed 1)")
    args = p.parse_args()
    refs = read_lines(args.results / "data" / "test.tgt")
    jumps = [largest_jump(line) for line in read_lines(args.results / "corpus" / "test.align")]
    median = sorted(jumps)[len(jumps) // 2]
    small = [i for i, j in enumerate(jumps) if j <= median]
    large = [i for i, j in enumerate(jumps) if j > median]
    print(f"| translation | all ({len(refs)}) | largest jump ≤ {median} ({len(small)}) | > {median} ({len(large)}) |")
    print("|---|---|---|---|")
    for spec in args.runs:
        variant, setting = spec.split(":")
        hyps = read_lines(args.results / "translations" / variant / "seed1" / f"test.{setting}.txt")
        bleu = [tokenized_bleu([hyps[i] for i in idx], [refs[i] for i in idx]).to_dict()["bleu"]
                for idx in (range(len(refs)), small, large)]
        print(f"| {variant} {setting} | " + " | ".join(f"{b:.2f}" for b in bleu) + " |")


if __name__ == "__main__":
    main()
