"""How much unknown-word replacement could raise BLEU at best: every ``<unk>`` given its best word.

Luong et al. (2015, Table 1: +1.9 BLEU) replace each ``<unk>`` of the output by a dictionary
translation of the source word it attends to most, or by that word itself. What that can gain is
bounded by how many ``<unk>`` the output has and by whether a right word exists for each. Across
scripts (English source, Japanese target) a copied source word never matches the reference, so
only a dictionary could help; this asks what the best possible one would do. For each model given
it counts the ``<unk>`` tokens of its test output and scores three versions of it with tokenized
BLEU as the tables do (:func:`nmtlib.metrics.bleu.tokenized_bleu`, multi-bleu.perl's; the oracle's
search sums the findings' per-sentence statistics of the same BLEU, which split words as the
workflow's tokenizer leaves them, on single spaces):

- *as decoded*, ``<unk>`` left in;
- *replaced*, the workflow's own replacement (``test.<setting>.unk.txt``);
- *oracle*: each ``<unk>``, left to right, replaced by the word of its sentence's reference that
  raises the corpus BLEU most (kept as ``<unk>`` where none does): better than any dictionary
  could choose from the source alone, one word a ``<unk>``.

    python scripts/unk_oracle.py results/small-enja base shu-flexible
    python scripts/unk_oracle.py results/small-enja local-p-general-feed:seed2 --setting beam5
"""

from __future__ import annotations

import argparse
from pathlib import Path

from nmtlib.data.vocab import UNK
from nmtlib.files import read_lines
from nmtlib.layout import RAW_TEXT, REPLACED_TEXT, TEST, Layout
from nmtlib.metrics.bleu import perl_split, tokenized_bleu
from nmtlib.report.metrics import METRICS
from nmtlib.report.significance import Statistic

#: the findings' own BLEU of the text as decoded: its per-sentence statistics, summed and scored
BLEU_STATISTIC = Statistic.of_text(METRICS["bleu_before_unk_replace"])


def oracle(hyps: list[str], refs: list[str]) -> tuple[list[str], float]:
    """The output with each ``<unk>`` replaced by the reference word that raises corpus BLEU most
    (greedy, left to right; the first such word on ties; left as ``<unk>`` where no word raises it),
    and its BLEU. A candidate changes one sentence, so the corpus totals change by that sentence's
    statistics alone."""
    stat = BLEU_STATISTIC
    words = [perl_split(h) for h in hyps]
    rows = stat.sentences(hyps, refs)
    totals = rows.sum(axis=0)
    best = stat.score(totals)
    for i, (w, ref) in enumerate(zip(words, refs)):
        for j in [k for k, x in enumerate(w) if x == UNK]:
            for candidate in dict.fromkeys(perl_split(ref)):
                row = stat.sentences([" ".join([*w[:j], candidate, *w[j + 1:]])], [ref])[0]
                score = stat.score(totals - rows[i] + row)
                if score > best:
                    best, w[j] = score, candidate
                    totals, rows[i] = totals - rows[i] + row, row
    return [" ".join(w) for w in words], best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path, help="an experiment's results folder (results/<exp>)")
    ap.add_argument("models", nargs="+", help="VARIANT or VARIANT:RUN (run: seed1 unless given)")
    ap.add_argument("--setting", default="beam5", help="the decoding setting (default: beam5)")
    args = ap.parse_args(argv)
    layout = Layout(args.results)
    refs = read_lines(layout.data(TEST, "tgt"))
    print("| model | `<unk>` in the output | output words | BLEU as decoded | replaced | oracle |")
    print("|---|---|---|---|---|---|")
    for spec in args.models:
        variant, _, run = spec.partition(":")
        raw = layout.translation(variant, run or "seed1", args.setting, RAW_TEXT)
        if not raw.exists():
            raise SystemExit(f"{raw}: no translation of {spec} at {args.setting}")
        hyps = read_lines(raw)
        replaced = layout.translation(variant, run or "seed1", args.setting, REPLACED_TEXT)
        after = f"{tokenized_bleu(read_lines(replaced), refs).score:.2f}" if replaced.exists() else "—"
        unks = sum(perl_split(h).count(UNK) for h in hyps)
        words = sum(len(perl_split(h)) for h in hyps)
        print(f"| {spec} | {unks} | {words} | {tokenized_bleu(hyps, refs).score:.2f} | {after} | "
              f"{oracle(hyps, refs)[1]:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
