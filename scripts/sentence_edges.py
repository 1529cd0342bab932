"""How often translations get the words at the start and at the end of the sentence right.

Reversing the source (Sutskever et al. 2014; Luong et al. 2015, Table 1) puts the first source
words next to the first target words the decoder writes, and the last ones far from the last.
Where the two languages order a sentence alike, that helps the start and costs little at the
end; where they do not (Japanese puts the verb last), the start may gain and the end lose. This
counts, for each translation, the share of test sentences whose hypothesis has the reference's
word at position k from the start (k = 1, 2, 3) and from the end (k = 1, 2, 3, not counting a
final punctuation mark of the reference; the hypothesis's last token is skipped where it is that
same mark). A position counts only in sentences whose reference is long enough for it; exact
matches at a position are coarse (a word added early shifts the rest), which is why both ends
are anchored separately.

With two or more translations, the difference of each to the first, with a 95% interval from the
findings' paired bootstrap resamples of the sentences (:func:`nmtlib.report.significance.resample_indices`:
sacreBLEU's 1,000 draws, seed 12345): the same sentences are drawn for both.

    python scripts/sentence_edges.py results/small-jaen base:beam5 reverse:beam5
    python scripts/sentence_edges.py results/small-jaen base:beam5 reverse:beam5 --seeds 1 2 3
"""

from __future__ import annotations

import argparse
import unicodedata
from pathlib import Path

import numpy as np

from nmtlib.files import read_lines
from nmtlib.layout import RAW_TEXT, TEST, Layout, seed_run
from nmtlib.report.significance import resample_indices

#: positions counted from each end
DEPTH = 3


def _is_punctuation(token: str) -> bool:
    return bool(token) and all(unicodedata.category(c).startswith("P") for c in token)


def _body(tokens: list[str]) -> list[str]:
    """The tokens without a final punctuation mark."""
    return tokens[:-1] if tokens and _is_punctuation(tokens[-1]) else tokens


def edge_matches(hyp: str, ref: str, depth: int = DEPTH) -> list[float]:
    """Per position (start 1..depth, then end 1..depth): 1.0 where the hypothesis has the
    reference's word there, 0.0 where not, NaN where the reference is too short for it."""
    h, r = _body(hyp.split()), _body(ref.split())
    out = []
    for k in range(depth):
        out.append(float(len(h) > k and h[k] == r[k]) if len(r) > k else float("nan"))
    for k in range(1, depth + 1):
        out.append(float(len(h) >= k and h[-k] == r[-k]) if len(r) >= k else float("nan"))
    return out


def matrix(hyps: list[str], refs: list[str], depth: int = DEPTH) -> np.ndarray:
    """(sentences, 2 * depth) matches of :func:`edge_matches`."""
    return np.array([edge_matches(h, r, depth) for h, r in zip(hyps, refs, strict=True)])


def rates(m: np.ndarray) -> np.ndarray:
    """The share of matches per position, over the sentences that have it (0–1)."""
    return np.nanmean(m, axis=0)


def paired_interval(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(2, positions): the 2.5% and 97.5% points of rates(a) − rates(b) over paired resamples of
    the sentences (rows)."""
    idx = resample_indices(a.shape[0])
    diffs = np.nanmean(a[idx], axis=1) - np.nanmean(b[idx], axis=1)
    return np.nanpercentile(diffs, [2.5, 97.5], axis=0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("results", type=Path, help="results/<experiment> with data/test.tgt and translations/")
    p.add_argument("runs", nargs="+", help="VARIANT:SETTING, e.g. reverse:beam5; the first is the baseline")
    p.add_argument("--seeds", type=int, nargs="+", default=[1],
                   help="seeds whose translations are taken together (sentences stacked, resampled in pairs)")
    args = p.parse_args()
    layout = Layout(args.results)
    refs = read_lines(layout.data(TEST, "tgt"))
    found = {}
    for spec in args.runs:
        variant, setting = spec.split(":")
        found[spec] = np.concatenate([
            matrix(read_lines(layout.translation(variant, seed_run(s), setting, RAW_TEXT)), refs)
            for s in args.seeds])
    heads = [f"start {k}" for k in range(1, DEPTH + 1)] + [f"end {k}" for k in range(1, DEPTH + 1)]
    seeds = ", ".join(map(str, args.seeds))
    print(f"Words at the sentence's edges matched, % of {len(refs)} test sentences (seeds {seeds})\n")
    print("| translation | " + " | ".join(heads) + " |")
    print("|---" * (len(heads) + 1) + "|")
    base_spec, base = next(iter(found.items()))
    for spec, m in found.items():
        print(f"| {spec} | " + " | ".join(f"{100 * x:.1f}" for x in rates(m)) + " |")
    for spec, m in list(found.items())[1:]:
        diff, (low, high) = rates(m) - rates(base), paired_interval(m, base)
        print(f"| {spec} − {base_spec} | "
              + " | ".join(f"{100 * d:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]" for d, lo, hi in zip(diff, low, high))
              + " |")


if __name__ == "__main__":
    main()
