"""``nmtlib evaluate``: everything the tables need about one translation, model or alignment,
as one JSON file per result (the workflow's ``scores/`` folder), with the scorers of
``nmtlib score`` (which scores one metric on files, as its reference tool does).

- ``translation``: tokenized BLEU and RIBES before and after unk replacement (multi-bleu.perl,
  RIBES.py), BLEU on the sentences without unknown words (Bahdanau et al. Table 1), sacreBLEU
  with its signature, BLEU per source-length bucket (Luong Fig. 6), Shu & Nakayama's window
  (:func:`nmtlib.metrics.window.mean_window`) and decode time;
- ``perplexity``: perplexity of the references under a model (Luong Tables 1, 4);
- ``alignment``: AER of forced-decoding links against gold Sure/Possible links (Luong Table 6).

Any one input file may be ``-``, standard input; ``--out -`` prints the JSON result on standard
output instead of the one-line summary.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from nmtlib.atomic import claim_outputs, write_json
from nmtlib.cli import (add_forced_decoding_arguments, load_forced_decoding_inputs, load_vocabulary, one_stdin,
                        plain_text, positive_int)
from nmtlib.errors import NmtlibError
from nmtlib.files import is_stdin
from nmtlib.metrics import buckets

#: help of every ``--out``
OUT_HELP = "the JSON result, written here (-: standard output, instead of the summary line)"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="score a translation, a model's perplexity or alignments into JSON",
                       epilog=plain_text(__doc__.split("\n\n")[-1]))
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    stdin_note = "any one input file may be -, standard input"

    t = actions.add_parser("translation", help="BLEU (tokenized, sacreBLEU), RIBES, length buckets, window, time",
                           epilog=stdin_note)
    t.add_argument("--hyp", type=Path, required=True, metavar="PREFIX",
                   help="the translation: PREFIX.txt, PREFIX.unk.txt and PREFIX.jsonl, as nmtlib translate --out PREFIX "
                        "writes them")
    t.add_argument("--ref", type=Path, required=True, help="tokenized reference")
    t.add_argument("--src", type=Path, required=True, help="tokenized source (length buckets, unknown words)")
    t.add_argument("--raw-ref", type=Path, default=None, help="untokenized reference for sacreBLEU")
    t.add_argument("--src-vocab", type=Path, default=None,
                   help="source vocabulary: with --tgt-vocab, adds BLEU on the sentences with no unknown word (Bahdanau Table 1 No UNK)")
    t.add_argument("--tgt-vocab", type=Path, default=None, help="target vocabulary (see --src-vocab)")
    t.add_argument("--tgt-lang", default="xx", help="target language code, for detokenizing (default: xx)")
    t.add_argument("--tgt-tokenizer", default="none", help="tokenizer of the target side (to detokenize for sacreBLEU)")
    t.add_argument("--bucket-width", type=positive_int, default=buckets.WIDTH,
                   help=f"source-length buckets of BLEU by length, in words (default: {buckets.WIDTH})")
    t.add_argument("--min-bucket-sentences", type=positive_int, default=buckets.MIN_SENTENCES,
                   help="a length bucket of fewer sentences is merged into its smaller neighbour "
                        f"(default: {buckets.MIN_SENTENCES})")
    t.add_argument("--out", type=Path, required=True, help=OUT_HELP)
    t.set_defaults(func=run_translation)

    m = actions.add_parser("perplexity", help="perplexity of references under a model", epilog=stdin_note)
    add_forced_decoding_arguments(m)
    m.add_argument("--out", type=Path, required=True, help=OUT_HELP)
    m.set_defaults(func=run_perplexity)

    a = actions.add_parser("alignment", help="AER of 1-based links against gold Sure/Possible links",
                           epilog=stdin_note)
    a.add_argument("--gold", type=Path, required=True,
                   help="gold links, one sentence per line: 1-based i-j (Sure) and ipj (Possible)")
    a.add_argument("--links", type=Path, required=True, help="links by Luong's footnote 14 (the paper's protocol)")
    a.add_argument("--predicted-links", type=Path, default=None, help="links by predicted word (reported beside)")
    a.add_argument("--src", type=Path, required=True, help="tokenized source (sentence lengths)")
    a.add_argument("--tgt", type=Path, required=True, help="tokenized target (sentence lengths)")
    a.add_argument("--out", type=Path, required=True, help=OUT_HELP)
    a.set_defaults(func=run_alignment)


def _result(out: Path, result: dict[str, Any], summary: dict[str, Any]) -> int:
    """``result`` into ``out``, and ``summary`` on stdout (only the result for ``--out -``)."""
    write_json(out, result)
    if not is_stdin(out):
        print(json.dumps(summary))
    return 0


def run_translation(args: argparse.Namespace) -> int:
    from nmtlib.data.vocab import UNK
    from nmtlib.files import read_lines
    from nmtlib.metrics import check_parallel
    from nmtlib.metrics.bleu import detok_bleu, tokenized_bleu
    from nmtlib.metrics.ribes import SCORED_CASE_SENSITIVE, corpus_ribes
    from nmtlib.metrics.window import mean_window

    one_stdin(args)
    hyp_path, unk_path, details_path = (Path(f"{args.hyp}{ext}") for ext in (".txt", ".unk.txt", ".jsonl"))
    hyps, hyps_unk, refs, srcs = (read_lines(p) for p in (hyp_path, unk_path, args.ref, args.src))
    check_parallel(str(hyp_path), hyps, str(args.ref), refs)
    check_parallel(str(args.src), srcs, str(args.ref), refs)
    if not refs:
        raise NmtlibError(f"{args.ref} is empty (and so are {hyp_path} and {args.src}): no sentence to score")
    details = [json.loads(line) for line in read_lines(details_path)]

    result: dict[str, Any] = {
        "sentences": len(hyps),
        "bleu": tokenized_bleu(hyps, refs).to_dict(),
        "bleu_unk": tokenized_bleu(hyps_unk, refs).to_dict(),
        # RIBES of the raw output (Shu & Nakayama's protocol: no replacement) and after replacement
        "ribes": corpus_ribes(hyps, refs, case_sensitive=SCORED_CASE_SENSITIVE).to_dict()["ribes"],
        "ribes_unk": corpus_ribes(hyps_unk, refs, case_sensitive=SCORED_CASE_SENSITIVE).to_dict()["ribes"],
        "bleu_by_length": buckets.bleu_by_length(srcs, hyps_unk, refs, width=args.bucket_width,
                                                 min_sentences=args.min_bucket_sentences),
        "unk_tokens": sum(h.split().count(UNK) for h in hyps),
        # Shu & Nakayama's window: the mean over sentences of each sentence's window
        "avg_window": mean_window(details),
        "time_ms_per_sentence": _mean(d["time_ms"] for d in details),
        "hyp_len_mean": _mean(d["length"] for d in details),
    }
    if args.src_vocab and args.tgt_vocab:
        # Bahdanau et al. Table 1 "No UNK": sentences whose source and reference are in-vocabulary
        sv, tv = load_vocabulary(args.src_vocab), load_vocabulary(args.tgt_vocab)
        keep = [i for i in range(len(refs))
                if all(w in sv.stoi for w in srcs[i].split()) and all(w in tv.stoi for w in refs[i].split())]
        result["no_unk_sentences"] = len(keep)
        result["bleu_no_unk"] = (tokenized_bleu([hyps[i] for i in keep], [refs[i] for i in keep]).to_dict()
                                 if keep else None)
    raw_refs = read_lines(args.raw_ref) if args.raw_ref else refs
    if args.tgt_tokenizer in ("moses", "moses-aggressive"):
        from nmtlib.data.tokenize import get_tokenizer

        detok = get_tokenizer(args.tgt_tokenizer, args.tgt_lang)
        result["sacrebleu"] = detok_bleu([detok.detokenize(h) for h in hyps_unk], raw_refs, tokenize="13a")
    else:
        # already segmented text (synthetic, Japanese): sacreBLEU without its own tokenizer
        result["sacrebleu"] = detok_bleu(hyps_unk, refs, tokenize="none")
    return _result(args.out, result, {"bleu": result["bleu"]["bleu"], "bleu_unk": result["bleu_unk"]["bleu"],
                                      "ribes": result["ribes"], "sacrebleu": result["sacrebleu"]["signature"]})


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def run_perplexity(args: argparse.Namespace) -> int:
    """The references' perplexity under the model, from the summed NLL of batched forced decoding,
    and each sentence's NLL and token count (:data:`nmtlib.layout.PPL_SENTENCES`), for the
    findings' paired bootstrap. The sentences are scored one at a time through the same
    :func:`nmtlib.train.trainer.evaluate_nll` (it returns sums only); they add up to ``nll`` within
    float rounding."""
    from tqdm import tqdm

    from nmtlib.data.batching import ParallelData
    from nmtlib.layout import PPL_SENTENCES
    from nmtlib.metrics.perplexity import perplexity
    from nmtlib.train.trainer import evaluate_nll

    model, record, data, device = load_forced_decoding_inputs(args, prog="nmtlib evaluate perplexity")
    claim_outputs(args.out)  # refused now, not after the model has run
    nll, tokens = evaluate_nll(model, data, args.batch_size, device)
    try:
        ppl = perplexity(nll, tokens)
    except ValueError as err:  # no target token (empty test set), or a NaN log-likelihood
        raise NmtlibError(f"{args.model} on {args.src} / {args.tgt}: {err}") from None
    pairs = tqdm(list(zip(data.src, data.tgt or [])), desc="NLL per sentence", unit="sent",
                 disable=None)  # on a terminal only
    sentences = [list(evaluate_nll(model, ParallelData([src], [tgt]), 1, device)) for src, tgt in pairs]
    summary = {"ppl": ppl, "nll": nll, "tokens": tokens, "dev_ppl": record["dev_ppl"], "step": record["step"]}
    return _result(args.out, {**summary, PPL_SENTENCES: sentences}, summary)


def run_alignment(args: argparse.Namespace) -> int:
    from nmtlib.files import read_lines
    from nmtlib.metrics.aer import score_aer

    one_stdin(args)
    srcs, tgts = read_lines(args.src), read_lines(args.tgt)
    lengths = [(len(s.split()), len(t.split())) for s, t in zip(srcs, tgts)]
    gold = read_lines(args.gold)

    def score(path: Path) -> dict:
        return score_aer(gold, read_lines(path), hyp_zero_based=False, lengths=lengths,
                         gold_name=str(args.gold), hyp_name=str(path)).to_dict()

    result = score(args.links)
    result["convention"] = "footnote14"
    if args.predicted_links is not None:
        result["predicted"] = score(args.predicted_links)
    return _result(args.out, result, {k: result[k] for k in ("aer", "precision", "recall")})
