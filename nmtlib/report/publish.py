"""A reference-results page (``docs/results/<experiment>.md``) from an experiment's outputs.

Peers publish reference numbers beside their code (Joey NMT's benchmarks page, tensorflow/nmt's
README tables); this page is ours for one experiment, written as a paper's results section and
built only from what the run wrote:

- the findings as a narrow table (claim | paper | ours | 95% interval | seeds | verdict), beside other
  experiments' where asked (the same claims in another direction or corpus), the untested
  claims folded by reason, the summary and the papers' tables narrowed to the paper's numbers and
  ours (means ± standard deviations over seeds, counts as integers); every column of each is in
  the CSV copied beside the page (``<stem>/<table>.csv``);
- every test translation, before and after unknown-word replacement, of every variant, seed, τ
  and ensemble (under ``<stem>/`` as under the results folder: :meth:`nmtlib.layout.Layout.translation`),
  the tokenized test reference and source they are scored against, a one-line sacreBLEU
  command that re-scores the best single model's row and prints its BLEU and chrF with their
  signatures, and a few test sentences with every model's output (:mod:`nmtlib.report.samples`);
- per model the learning curve and the trainer's clock (its training log), the provenance (its
  record: every start's commit, machine and time, parameters; :func:`nmtlib.provenance.starts`), the CPU time of the training job (Snakemake's benchmark
  file, :meth:`nmtlib.layout.Logs.benchmark`) and whether it resumed (its job log); the figures,
  shrunk to at most :data:`MAX_WIDTH` pixels, each with its caption (:data:`nmtlib.report.paper.FIGURES`).

Every publish rewrites the index beside the folder (``docs/results.md``,
:func:`nmtlib.report.index.results_index`).

What the files cannot say — the command that ran and the machine — the caller gives. One list of
commits: those the models were trained at and the one the tables and this page were written at;
where the models span several, whether the training code (:func:`nmtlib.origin.training_code`)
is the same at all of them, as git tells it. How many seeds each variant's numbers are the mean of
comes from the summary (its ``runs``), so that no introduction has to count them.
The page names no path outside the repository (:class:`PathOutsideRepository` otherwise).
"""

from __future__ import annotations

import csv
import json
import os
import re
import shlex
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from sacrebleu.metrics.bleu import BLEU

from nmtlib.atomic import atomic_write
from nmtlib.errors import NmtlibError
from nmtlib.files import read_lines
from nmtlib.layout import RAW_TEXT, TRAINING_RULE, Layout, Logs
from nmtlib.origin import TRAINER, training_code
from nmtlib.provenance import machine, starts
from nmtlib.report.collect import (BF16_NOTE, PRECISIONS, precision, read_progress, scored_so_far,
                                   stopped_by_max_steps)
from nmtlib.report.findings import CRITERIA, verdict_summary
from nmtlib.report.index import (PAGE_BLEU, beside_section, finding_cells, published_table, read_findings,
                                 results_index)
from nmtlib.report.metrics import METRICS, RunFiles, chrf_statistics, metrics_in
from nmtlib.report.paper import FIGURES, TABLES
from nmtlib.report.samples import samples_section
from nmtlib.report.seeds import pooled_spread, seed_spread
from nmtlib.report.significance import NO_VERDICT, UNTESTED
from nmtlib.report.tables import MISSING, rendered_cells
from nmtlib.words import counted

#: width in pixels of the copied figures
MAX_WIDTH = 900
#: tables of the page after the findings and the summary, in order
PAPER_TABLES = tuple(TABLES)
#: the summary's columns the page shows (the rest are in summary.csv), each with its ``_sd`` where there is one
SUMMARY_SHOWN = ("variant", "runs", "test_ppl", "bleu_before_unk_replace", "length_ratio", "bleu_after_unk_replace",
                 "chrf_before_unk_replace", "ribes_after_unk_replace", "sacrebleu_after_unk_replace", "avg_window")
#: paper-table columns left to the CSV: provenance, notes and the row's key (the label is shown)
PAPER_HIDDEN = {"row", "section", "note", "paper_source", "experiment", "ours_data", "ours_from", "ours_delta_vs",
                "ours_device"}
#: the sacreBLEU options that score tokenized text as multi-bleu.perl does (BLEU) and chrF beside it
RESCORE_OPTIONS = "-m bleu chrf -tok none -s none -w 2 -f text"
#: the published copy of the test reference and source, beside the translations
REFERENCE, SOURCE = "reference.txt", "source.txt"
#: the findings' RIBES column, on the pages of a pair with Japanese on one side (WAT's second metric)
RIBES_COLUMN = "RIBES, ours [95%]"
#: languages whose pages show :data:`RIBES_COLUMN`
RIBES_LANGUAGES = ("ja",)
#: what each tokenizer (:data:`nmtlib.data.tokenize.TOKENIZERS`, a test keeps the two in step) makes of
#: a text, as the page says which tokens its scores count; ``{lang}``: the language
TOKENIZATION = {
    "none": "as the corpus gives them (already tokenized; only whitespace normalized)",
    "space": "as the corpus gives them (already tokenized; only whitespace normalized)",
    "moses": "Moses-tokenized (tokenizer.perl -l {lang}, through sacremoses)",
    "moses-aggressive": "Moses-tokenized with -a, hyphens split as @-@ (tokenizer.perl -l {lang} -a, through "
                        "sacremoses)",
    "ja": "segmented by MeCab with the UniDic-lite dictionary (fugashi)",
}


class PathOutsideRepository(NmtlibError):
    """The page would name a path outside the repository (a command's ``../shared/data``)."""


def rescore_bleu() -> BLEU:
    """The BLEU that ``sacrebleu … RESCORE_OPTIONS`` prints: multi-bleu.perl's formula, with
    sacreBLEU's own word splitting (at Unicode spaces too, where the tables' BLEU splits at ASCII
    ones only: :class:`nmtlib.metrics.bleu.MultiBleuPerl`)."""
    return BLEU(tokenize="none", smooth_method="none", force=True)


@dataclass
class ModelRun:
    variant: str
    run: str
    epochs: int
    best_epoch: int | None
    best_dev_ppl: float | None
    bleu: float | None  #: test BLEU (:data:`PAGE_BLEU`) at the variant's first decoding setting (τ = ∞)
    last_gain_pct: float | None  #: how much the last evaluation lowered the best dev perplexity before it
    train_s: float | None  #: the trainer's clock: wall seconds over every attempt (a resumed run adds its part)
    cpu_s: float | None  #: CPU seconds of the job's last attempt (Snakemake's benchmark), unaffected by other jobs
    resumed: bool | None  #: the last attempt resumed from a checkpoint (its job log says so); None: no log
    precision: str  #: what its record says it trained in (:func:`nmtlib.report.collect.precision`); "" unknown
    parameters: int | None
    starts: list[dict]  #: every start of its training, from its record (:func:`nmtlib.provenance.starts`)

    @property
    def commits(self) -> list[str | None]:
        """The commits its training ran at, each once, in the order of its starts."""
        return list(dict.fromkeys(s.get("git_commit") for s in self.starts))

    @property
    def machines(self) -> list[str]:
        """Where its training ran (:func:`nmtlib.provenance.machine`), each once, in the order of its starts."""
        return list(dict.fromkeys(machine(s) for s in self.starts))

    @property
    def changed_code(self) -> list[str]:
        """Training-code files that differed from the commit at one of its starts (uncommitted changes)."""
        return sorted({f for s in self.starts for f in (s.get("changed_training_code") or [])})


def model_runs(results: Path, logs: Path | None, settings: dict[str, str] | None = None) -> list[ModelRun]:
    """One entry per trained model of the results folder ``results`` (a model folder with a
    training log and the finished model, or the record of one carried without it:
    :meth:`~nmtlib.layout.Layout.trained`), with what ``logs``, its logs folder, says of its job, and
    its test BLEU at ``settings[variant]`` (the summary's decoding setting of each variant). With
    ``settings``, only the summary's variants: a model still training, or one of a variant the
    tables leave out (``only_variants``), is not among the page's models."""
    layout, job_logs = Layout(results), Logs(logs) if logs else None
    runs = []
    for log, (variant, run) in layout.found(layout.train_log("*", "*")):
        if not layout.trained(variant, run) or (settings is not None and variant not in settings):
            continue
        with open(log, encoding="utf-8") as f:
            rows = [r for r in csv.DictReader(f) if r.get("dev_ppl")]
        ppls = [float(r["dev_ppl"]) for r in rows]
        best = min(range(len(ppls)), key=ppls.__getitem__) if ppls else None
        gain = None
        if len(ppls) > 1:
            before = min(ppls[:-1])
            gain = round(100 * (before - ppls[-1]) / before, 2)
        record = layout.record(variant, run)
        env = json.loads(record.read_text(encoding="utf-8")) if record.exists() else {}
        cpu_s = _benchmark_cpu_seconds(job_logs, variant, run) if job_logs else None
        train_s = float(rows[-1]["elapsed_s"]) if rows and rows[-1].get("elapsed_s") else None
        job_log = job_logs.job(TRAINING_RULE, f"{variant}.{run}") if job_logs else None
        resumed = ("[train] resuming from" in job_log.read_text(encoding="utf-8", errors="replace")
                   if job_log is not None and job_log.exists() else None)
        setting = (settings or {}).get(variant)
        bleu = METRICS[PAGE_BLEU].read(RunFiles(layout, variant, run, setting)) if setting else None
        runs.append(ModelRun(variant, run, int(rows[-1]["epoch"]) if rows else 0,
                             int(rows[best]["epoch"]) if best is not None else None,
                             ppls[best] if best is not None else None, bleu, gain, train_s, cpu_s, resumed,
                             precision(env["variant"]) if "variant" in env else "", env.get("parameters"),
                             starts(env)))
    return runs


def _benchmark_cpu_seconds(logs: Logs[Path], variant: str, run: str) -> float | None:
    """CPU seconds of the training job's last attempt (Snakemake's ``benchmark:`` file), if any."""
    path = logs.benchmark(TRAINING_RULE, f"{variant}.{run}")
    if not path.exists():
        return None
    with open(path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    cpu = rows[-1].get("cpu_time") if rows else None
    return float(cpu) if cpu not in (None, "", "NA") else None


def shrink_png(src: Path, dest: Path, width: int = MAX_WIDTH) -> None:
    """Copy a PNG, scaled down to ``width`` pixels if wider (docs stay small)."""
    from PIL import Image

    with Image.open(src) as im:
        if im.width > width:
            im = im.resize((width, round(im.height * width / im.width)), Image.LANCZOS)
        with atomic_write(dest, binary=True) as f:
            im.save(f, format="PNG", optimize=True)


def _markdown(df: pd.DataFrame) -> str:
    """A table as Markdown cells (:func:`nmtlib.report.tables.rendered_cells`: digits by column, counts
    as integers, mean ± sd, missing as an em dash)."""
    return rendered_cells(df).to_markdown(index=False, disable_numparse=True)


def _ribes_cell(r: pd.Series) -> str:
    """A comparison's RIBES difference and its 95% interval (RIBES is 0–1), or a dash."""
    if pd.isna(r.get("ribes_diff")):
        return MISSING
    interval = "" if pd.isna(r.get("ribes_ci_low")) else f" [{r['ribes_ci_low']:+.4f}, {r['ribes_ci_high']:+.4f}]"
    return f"{r['ribes_diff']:+.4f}{interval}"


def findings_section(findings: pd.DataFrame, summary: pd.DataFrame, ribes: bool = False) -> list[str]:
    """The findings: their verdicts counted, how far a model moves from seed to seed (from the
    ``summary``), the narrow table of the tested claims (with ``ribes``, each comparison's RIBES
    beside it), the untested ones one line per reason, and the criteria."""
    tested = findings[findings["verdict"] != UNTESTED]
    rows = [{"claim": r["claim"], **finding_cells(r), **({RIBES_COLUMN: _ribes_cell(r)} if ribes else {})}
            for _, r in tested.iterrows()]
    lines = [f"Of the papers' claims, {verdict_summary(findings)} by this experiment's variants. *paper* and "
             "*ours* are the difference A − B of the two rows each claim compares (the paper's on its data; the "
             "window claims in percent); *seeds* counts the models each side is the mean of (an ensemble is "
             "one), and the interval takes in their spread (the criteria below)"
             + (f"; *{RIBES_COLUMN}* is the same comparison's on RIBES (0–1), with its 95% interval: Japanese "
                "is one side of this pair, and RIBES, which sees word order, is its second metric" if ribes else "")
             + "; the rows compared, both sides' numbers, the p-values, the chrF and RIBES "
             "comparisons and the notes are in [findings.csv]({stem}/findings.csv)."
             + (f" {spread}" if (spread := seed_spread(pooled_spread(summary))) else ""), ""]
    if rows:
        lines += [pd.DataFrame(rows).to_markdown(index=False, disable_numparse=True), ""]
    idle = [(r["claim"], r["idle_runs"]) for _, r in tested.iterrows()
            if isinstance(r.get("idle_runs"), str) and r["idle_runs"]]
    if idle:  # nmtlib.report.idle
        lines += ["Claims that rest on a run whose attention learned nothing (its dev perplexity no lower than that "
                  "of a model without attention; it stays in its side's mean and interval, as every seed does):", "",
                  *[f"- {claim}: {runs}." for claim, runs in idle], ""]
    untested = findings[findings["verdict"] == UNTESTED]
    for reason, group in untested.groupby(untested["reason"].fillna(""), sort=False):
        lines.append(f"- Not tested, {reason}: {'; '.join(group['claim'])}.")
    return [*lines, "", CRITERIA, ""]


def paper_table_section(name: str, df: pd.DataFrame) -> list[str]:
    """A paper table narrowed to its label and the paper's numbers beside ours (the registered
    metrics the table also carries, the provenance and the notes stay in its CSV)."""
    extra = {f"ours_{m.name}" for m in metrics_in(name)}
    shown = df[[c for c in df.columns if c not in PAPER_HIDDEN and c not in extra]]
    t = TABLES[name]
    return [f"### {t.citation}: {t.title}", "", f"Paper: {t.reference}; {t.setting}. Every column: "
            f"[{name}.csv]({{stem}}/{name}.csv).", "", _markdown(shown), ""]


def preprocess_record(results: Path) -> dict | None:
    """The preprocess record (languages, tokenizers, case) the first trained model of the results
    folder ``results`` keeps (its weights, or the record of weights left behind by ``nmtlib carry``);
    None where no model has one (older models, or none trained yet)."""
    from nmtlib.carry import preprocess_of

    layout = Layout(results)
    for _, (variant, run) in layout.found(layout.train_log("*", "*")):
        record = preprocess_of(layout, variant, run)
        if record:
            return record
    return None


def tokenization(record: dict | None) -> str | None:
    """How the target side was tokenized, the tokens its BLEU, RIBES and translations count, in words
    (:data:`TOKENIZATION`), from a :func:`preprocess_record`; None without one."""
    if not record:
        return None
    text = TOKENIZATION[record["tgt_tokenizer"]].format(lang=record["tgt_lang"])
    return (f"target text ({record['tgt_lang']}) {text}" + (", lowercased" if record["lowercase"] else "")
            + "; BLEU, RIBES and the published translations count these tokens")


def repository_root(path: Path) -> Path:
    """The git work tree holding ``path`` (which need not exist yet), else its nearest existing folder."""
    folder = next(p for p in (path.absolute(), *path.absolute().parents) if p.is_dir())
    run = subprocess.run(["git", "-C", str(folder), "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    return Path(run.stdout.strip()) if run.returncode == 0 else folder.resolve()


def commit_time(root: Path, commit: str) -> int | None:
    """The commit's committer time (Unix seconds) in the repository at ``root``, None where git does not know it."""
    run = subprocess.run(["git", "-C", str(root), "show", "-s", "--format=%ct", f"{commit}^{{commit}}", "--"],
                         capture_output=True, text=True)
    return int(run.stdout.strip()) if run.returncode == 0 and run.stdout.strip().isdigit() else None


def training_code_row(root: Path, commits: list[str]) -> str | None:
    """Whether the models' commits (oldest first, each known to git at ``root``) hold the same
    training code (:func:`nmtlib.origin.training_code`): git's files that differ between each two
    consecutive ones, or that none does; None for fewer than two commits, or where git cannot say."""
    if len(commits) < 2:
        return None
    files = training_code()
    changes = []
    for a, b in zip(commits, commits[1:]):
        run = subprocess.run(["git", "-C", str(root), "diff", "--name-only", a, b, "--", *files],
                             capture_output=True, text=True)
        if run.returncode != 0:
            return None
        if changed := run.stdout.split():
            changes.append(f"{_commit(a)} → {_commit(b)}: {', '.join(changed)}")
    what = f"the {len(files)} files of `{TRAINER}` and of every nmtlib module it imports"
    if not changes:
        return f"the same at these {len(commits)} commits: {what} (git diff between each two consecutive ones is empty)"
    return f"{what} differ between consecutive commits: {'; '.join(changes)}"


def head_commit(root: Path) -> str | None:
    run = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    return run.stdout.strip() or None if run.returncode == 0 else None


def copy_translations(results: Path, dest: Path) -> list[Path]:
    """Every test translation of the results folder ``results`` (as decoded and after unknown-word
    replacement), the tokenized test reference (:data:`REFERENCE`) and source (:data:`SOURCE`)
    into the folder ``dest``, laid out as in ``results``'s translations folder; ``dest`` is emptied
    first (a translation of a variant no longer in the experiment would linger)."""
    layout = Layout(results)
    if dest.exists():
        shutil.rmtree(dest)
    copied = []
    for src, _ in layout.found(layout.translation("*", "*", "*", RAW_TEXT)):  # .unk.txt included
        target = dest / src.relative_to(layout.translations_dir())
        copy_file(src, target)
        copied.append(target)
    for side, name in (("tgt", REFERENCE), ("src", SOURCE)):
        if layout.data("test", side).exists():
            copy_file(layout.data("test", side), dest / name)
    return copied


def copy_file(src: Path, dest: Path) -> None:
    """``src`` copied to ``dest``, whole or not at all (:func:`nmtlib.atomic.atomic_write`)."""
    with open(src, "rb") as f, atomic_write(dest, binary=True) as out:
        shutil.copyfileobj(f, out)


def _best_run(results: Path, summary: pd.DataFrame) -> tuple[str, str, str, float] | None:
    """(variant, run, setting, tokenized BLEU) of the best single model's best-scoring run at τ = ∞."""
    single = summary[~summary["attention"].astype(str).eq("ensemble") & summary["bleu_before_unk_replace"].notna()]
    if single.empty:
        return None
    row = single.loc[single["bleu_before_unk_replace"].astype(float).idxmax()]
    layout = Layout(results)
    scored = []
    for path, (run,) in layout.found(layout.scores(str(row["variant"]), "*", str(row["setting"]))):
        bleu = METRICS[PAGE_BLEU].read(RunFiles(layout, str(row["variant"]), run, str(row["setting"])))
        if bleu is not None:
            scored.append((bleu, run))
    if not scored:
        return None
    bleu, run = max(scored, key=lambda x: (x[0], [-ord(c) for c in x[1]]))
    return str(row["variant"]), run, str(row["setting"]), float(bleu)


def rescore_section(results: Path, published: Layout[Path], root: Path, summary: pd.DataFrame) -> list[str]:
    """Where the translations are (copied into the page's folder ``published`` by
    :func:`copy_translations`), and the sacreBLEU command that re-scores the best model's row."""
    translations = published.translations_dir()
    rel = Path(os.path.relpath(translations, root))
    one = Path(published.translation("<variant>", "<run>", "<setting>", RAW_TEXT)).relative_to(translations)
    lines = ["## Translations", "",
             f"Every test translation is in `{rel}/`: `{one}` as decoded and "
             "`.unk.txt` after unknown-word replacement, for every variant, seed (`seed<k>`), ensemble (`ensemble`) "
             "and decoding setting (`beam<K>`, `beam<K>.tau<τ>`), tokenized as the tables score them (*tokens* above); "
             f"`{REFERENCE}` and `{SOURCE}` are the tokenized test reference and source.", ""]
    best = _best_run(results, summary)
    if best is None:
        return [*lines, "No translation is scored yet.", ""]
    variant, run, setting, bleu = best
    hyp = published.translation(variant, run, setting, RAW_TEXT)
    if not hyp.exists():
        return [*lines, f"The best model's translation ({variant}, {run}) is not there to re-score.", ""]
    hyps, refs = read_lines(hyp), read_lines(translations / REFERENCE)
    bleu_metric, chrf_metric = rescore_bleu(), chrf_statistics()
    sacre, chrf = bleu_metric.corpus_score(hyps, [refs]).score, chrf_metric.corpus_score(hyps, [refs]).score
    # the same formula as multi-bleu.perl; only words split at Unicode spaces (U+3000, U+00A0) can differ
    differs = (f" (sacreBLEU splits words at Unicode spaces as well, multi-bleu.perl only at ASCII ones: it "
               f"prints {sacre:.2f} here)" if f"{sacre:.2f}" != f"{bleu:.2f}" else "")
    command = (f"sacrebleu {shlex.quote(str(rel / REFERENCE))} -i "
               f"{shlex.quote(os.path.relpath(hyp, root))} {RESCORE_OPTIONS}")
    return [*lines,
            f"To re-score the best single model's row ({variant}, {run}, {setting}, before unknown-word "
            "replacement) from the repository's root:", "", "```sh", command, "```", "",
            f"prints its BLEU, **{bleu:.2f}**{differs} (tokenized, as multi-bleu.perl: sacreBLEU without its own "
            f"tokenizer and without smoothing), and its chrF, **{chrf:.2f}**, with their signatures "
            f"`{bleu_metric.get_signature()}` and `{chrf_metric.get_signature()}`. Replace the file to re-score "
            "another row, or pass these files to any other scorer (COMET needs the raw source and reference "
            "of the corpus as well).", ""]


def _outside_paths(text: str, root: Path) -> list[str]:
    """Absolute paths and ``..`` paths in ``text`` that lead outside ``root``."""
    found = []
    for word in re.findall(r"(?:(?<=[\s=`'\"(])|^)(/[^\s`'\")|]+|(?:\.\./)+[^\s`'\")|]*)", text, re.M):
        resolved = (root / word).resolve() if not word.startswith("/") else Path(word)
        if not resolved.is_relative_to(root.resolve()):
            found.append(word)
    return found


class RunStillGoing(NmtlibError):
    """The report found runs of the experiment not scored yet, and the page was not asked to be partial."""


def results_page(results: Path, out: Path, command: str, hardware: str, logs: Path | None = None,
                 title: str | None = None, intro: str = "", beside: tuple[Path, ...] = (),
                 partial: bool = False) -> Path:
    """Write ``out`` (Markdown) and, under ``out``'s folder in ``<stem>/``, its figures, its tables
    as CSV and every test translation (see the module docstring); with ``beside``, other
    experiments' results folders, their findings beside this one's (:func:`nmtlib.report.index.beside_section`).

    A page is of a whole run: where the report found runs not scored yet (its
    :meth:`~nmtlib.layout.Layout.progress` record), it raises :class:`RunStillGoing`, unless
    ``partial``, which publishes the run as it stands and says so in the page's table."""
    experiment, layout = results.name, Layout(results)
    if not layout.table("summary").exists() or not layout.table("findings").exists():
        raise FileNotFoundError(f"{layout.table('summary')} does not exist: run the experiment's report first")
    if not layout.progress().exists():
        raise FileNotFoundError(f"{layout.progress()} does not exist (an older nmtlib report): run the experiment's "
                                "report again (snakemake reruns make_report)")
    done, reported = read_progress(layout.progress())
    so_far = scored_so_far(done)
    if so_far and not partial:
        raise RunStillGoing(f"{results} is a run still going: {so_far} scored when its report was made "
                            f"({reported} UTC); publish it when the run ends, or pass --partial to publish it as it "
                            "stands (the page says so)")
    root = repository_root(out)
    for text in (command, intro):
        outside = _outside_paths(text, root)
        if outside:
            raise PathOutsideRepository(f"the page would name paths outside the repository {root}: "
                                        f"{', '.join(outside)}; give the command and the introduction without them")
    folder = out.parent / out.stem
    summary = pd.read_csv(layout.table("summary"))
    findings = pd.read_csv(layout.table("findings"))
    if not {"ci_low", "ci_high", "p_value", "reason"} <= set(findings.columns):
        raise FileNotFoundError(f"{layout.table('findings')} has no 95% intervals (an older nmtlib report): run the "
                                "experiment's report again (snakemake reruns make_report)")
    runs = model_runs(results, logs, dict(zip(summary["variant"].astype(str), summary["setting"].astype(str))))
    lines = [f"# {title or f'Reference results: {experiment}'}", ""]
    if intro:
        lines += [intro.strip(), ""]
    trained_at = Counter(c for r in runs for c in r.commits)  # a model resumed at another commit counts at each
    # oldest first, as the run went; commits git does not know (or none recorded) after them, as found
    known = {c: commit_time(root, c) for c in trained_at if c}
    order = sorted(trained_at, key=lambda c: (known.get(c) is None, known.get(c) or 0))
    commits = [f"{_commit(c)} (training of {counted(trained_at[c], 'model')})" for c in order]
    code = training_code_row(root, [c for c in order if c and known.get(c) is not None])
    head = head_commit(root)
    commits.append(f"`{head}` (tables, findings and this page)" if head else "tables: commit not recorded")
    reference = layout.data("test", "tgt")
    test_size = len(read_lines(reference)) if reference.exists() else None
    record = preprocess_record(results)
    tokens = tokenization(record)
    lines += [
        "| | |", "|---|---|",
        *([f"| state | a run still going: {so_far} scored when the report was made ({reported} UTC) |"]
          if so_far else []),
        f"| command | `{command}` |",
        f"| commits | {'; '.join(commits)} |",
        *([f"| training code | {code} |"] if code else []),
        f"| hardware | {hardware} |",
        f"| processors | {_machines(runs)} |",
        *([f"| when | {when} |"] if (when := _when(runs)) else []),
        *([f"| uncommitted training code | {_changed_code(runs)} |"] if any(r.changed_code for r in runs) else []),
        f"| models | {len(runs)} trained, {sum(r.train_s or 0 for r in runs) / 3600:.2f} h of training in all |",
        *([f"| seeds | {seeds} |"] if (seeds := _seeds(summary)) else []),
        *([f"| precision | {_precisions(runs)} |"] if any(r.precision for r in runs) else []),
        *([f"| test set | {test_size} sentences |"] if test_size is not None else []),
        *([f"| tokens | {tokens} |"] if tokens else []),
        "",
    ]
    smoke = sorted({steps for _, (variant, run) in layout.found(layout.model_dir("*", "*"))
                    if (steps := stopped_by_max_steps(layout, variant, run))})
    if smoke:
        lines += [f"**{NO_VERDICT.capitalize()}**: models stopped after train.max_steps = "
                  f"{', '.join(map(str, smoke))} updates; no difference here says anything about the papers' claims.",
                  ""]
    ribes = bool(record) and bool({record.get("src_lang"), record.get("tgt_lang")} & set(RIBES_LANGUAGES))
    lines += ["## Findings", "", *findings_section(findings, summary, ribes)]
    if beside:
        others = {}
        for other in beside:  # not ``folder``: that is this page's own, where its files go below
            others[other.name] = read_findings(other)
        lines += beside_section({experiment: findings, **others})
    shown = [c for col in SUMMARY_SHOWN for c in (col, f"{col}_sd") if c in summary.columns]
    lines += ["## Summary", "", "One row per variant and ensemble, decoded at τ = ∞; means over seeds ± their "
              "standard deviation. Every column (dev perplexity, RIBES before replacement, AER, decoding time, "
              "sacreBLEU's signature) "
              f"and what each is: [summary.csv]({{stem}}/summary.csv) and the experiment's "
              f"`{Layout(Path()).table('summary', 'md')}`.", "",
              _markdown(summary[shown]), "", "## The papers' tables", ""]
    unmapped = []
    for name in PAPER_TABLES:
        path = layout.table(name)
        df = pd.read_csv(path) if path.exists() and path.stat().st_size else None
        if df is None or df.empty:
            unmapped.append(TABLES[name].citation)
        else:
            lines += paper_table_section(name, df)
            copy_file(path, published_table(folder, name))
    if unmapped:
        lines += [f"Not regenerated by this experiment (no variant maps a row with a result): {'; '.join(unmapped)}.",
                  ""]
    published = Layout(folder)  # the translations laid out as in the results folder
    copy_translations(results, published.translations_dir())
    lines += rescore_section(results, published, root, summary)
    translations = published.translations_dir()
    if (translations / SOURCE).exists() and (translations / REFERENCE).exists():
        lines += samples_section(published, summary, translations / SOURCE, translations / REFERENCE)
    lines += _models_section(runs)
    lines += ["## Figures", ""]
    for name, figure in FIGURES.items():
        src = layout.figure(name)
        if src.exists():
            shrink_png(src, folder / f"{name}.png")
            lines += [f"![{figure.title}]({out.stem}/{name}.png)", "", figure.caption_markdown().strip(), ""]
    for name in ("summary", "findings"):
        copy_file(layout.table(name), published_table(folder, name))
    page = "\n".join(lines).rstrip().replace("{stem}", out.stem) + "\n"
    with atomic_write(out) as f:
        f.write(page)
    results_index(out.parent)
    return out


def _seeds(summary: pd.DataFrame) -> str | None:
    """How many seeds each variant's numbers are the mean of (the summary's ``runs``: its test
    translations scored at τ = ∞), most first, variants in config order:
    ``3 seeds: base, reverse (2 variants); 1 seed: rnnsearch``; None where the summary has no variant
    (or is not one that says which rows are ensembles)."""
    if not {"variant", "attention", "runs"} <= set(summary.columns):
        return None
    variants = summary[summary["attention"] != "ensemble"]
    if variants.empty:
        return None
    by: dict[int, list[str]] = {}
    for name, runs in zip(variants["variant"].astype(str), variants["runs"]):
        by.setdefault(int(runs), []).append(name)
    return "; ".join(f"{counted(n, 'seed') if n else 'none scored yet'}: {', '.join(names)}"
                     + (f" ({len(names)} variants)" if len(names) > 1 else "")
                     for n, names in sorted(by.items(), reverse=True))


def _precisions(runs: list[ModelRun]) -> str:
    """What the models trained in, as their records say: bf16 is a deviation from the papers' float32."""
    counts = Counter(r.precision or "not recorded" for r in runs)
    return "; ".join(f"{BF16_NOTE if p == PRECISIONS[True] else p}: {counted(n, 'model')}"
                     for p, n in counts.items())


def _machines(runs: list[ModelRun]) -> str:
    """Where the models trained, as their records say: models per processor (or GPU), a model
    resumed elsewhere counted at each, and how many trained on more than one."""
    counts = Counter(m for r in runs for m in r.machines)
    text = "; ".join(f"{m or 'not recorded'}: {counted(n, 'model')}" for m, n in counts.most_common())
    moved = sum(len(r.machines) > 1 for r in runs)
    return text + (f" ({counted(moved, 'model')} resumed on another machine)" if moved else "")


def _when(runs: list[ModelRun]) -> str | None:
    """When the models trained, as their records say (each start's ``at``, UTC): the first and the
    last start of a training, how many starts and resumes; None where no record says."""
    dated = [r for r in runs if any(isinstance(s.get("at"), str) for s in r.starts)]
    if not dated:
        return None
    times = sorted(s["at"] for r in dated for s in r.starts if isinstance(s.get("at"), str))
    first, last = (t.replace("T", " ")[:16] for t in (times[0], times[-1]))
    starts_n = sum(len(r.starts) for r in dated)
    text = (f"{first} to {last} UTC: the first and the last start of a model's training "
            f"({counted(starts_n, 'start')} of {counted(len(dated), 'model')}, "
            f"{counted(starts_n - len(dated), 'resume')})")
    if len(dated) < len(runs):
        text += f"; {counted(len(runs) - len(dated), 'model')} without a record of when"
    return text


def _changed_code(runs: list[ModelRun]) -> str:
    """The models whose training started with training code that differed from the recorded commit."""
    changed = [r for r in runs if r.changed_code]
    files = sorted({f for r in changed for f in r.changed_code})
    return (f"{counted(len(changed), 'model')} started with uncommitted changes to "
            f"{', '.join(f'`{f}`' for f in files)}: their commit does not name the code that trained them "
            f"({', '.join(f'{r.variant} {r.run}' for r in changed)})")


def _where(r: ModelRun) -> str:
    """The models table's cell: one machine, or each with the step its part of the training started at."""
    if len(r.machines) <= 1:
        return r.machines[0] if r.machines else ""
    return "; ".join(f"{machine(s) or 'not recorded'} from step {s.get('step', 0):,}" for s in r.starts)


def _commit(commit: str | None) -> str:
    return f"`{commit[:12]}`" if commit else "not recorded"


def _models_section(runs: list[ModelRun]) -> list[str]:
    lines = [
        "## Models trained",
        "",
        "Training time is the trainer's clock (`elapsed_s` of `train_log.csv`): wall time over every attempt, a "
        "resumed run adding its part. CPU time is the processor time of the job's last attempt (Snakemake's "
        "benchmark file; unlike wall time, not lengthened by other jobs on the machine), so it is partial where "
        "*resumed* says yes. *Test BLEU* is the model's own, as the tables score it (tokenized, before "
        "unknown-word replacement, τ = ∞). *Last gain* is how much the last dev evaluation lowered the best dev perplexity before it "
        "(early stopping ends training when it is below `train.min_improvement`).",
        "",
        "| variant | run | epochs | best epoch | best dev ppl | test BLEU | last gain | training time | CPU time | "
        "resumed | trained on | precision | parameters | commit |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        gain = "" if r.last_gain_pct is None else f"{r.last_gain_pct:.1f}%"
        time_ = "" if r.train_s is None else f"{r.train_s / 60:.1f} min"
        cpu = "" if r.cpu_s is None else f"{r.cpu_s / 60:.1f} min"
        params = "" if r.parameters is None else f"{r.parameters / 1e6:.2f}M"
        ppl = "" if r.best_dev_ppl is None else f"{r.best_dev_ppl:.2f}"
        resumed = "" if r.resumed is None else ("yes" if r.resumed else "no")
        bleu = "" if r.bleu is None else f"{r.bleu:.2f}"
        lines.append(f"| {r.variant} | {r.run} | {r.epochs} | {r.best_epoch or ''} | {ppl} | {bleu} | {gain} | {time_} | "
                     f"{cpu} | {resumed} | {_where(r)} | {r.precision} | {params} | {', '.join(map(_commit, r.commits))} |")
    return [*lines, ""]
