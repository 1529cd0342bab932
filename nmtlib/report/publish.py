"""A reference-results page (``docs/results/<experiment>.md``) from an experiment's outputs.

Peers publish reference numbers beside their code (Joey NMT's benchmarks page, tensorflow/nmt's
README tables); this page is ours for one experiment, built only from what the run wrote: the
tables (``tables/*.md``), the figures (copied, shrunk to at most :data:`MAX_WIDTH` pixels), and
per model the learning curve and the trainer's clock (``train_log.csv``), the provenance
(``env.json``: commit, device, parameters), the CPU time of the training job (Snakemake's
``logs/<exp>/benchmark``) and whether it resumed (its job log). What the
files cannot say — the command that ran and the machine — the caller gives.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from pathlib import Path

from nmtlib.atomic import atomic_write
from nmtlib.report.paper import TABLES

#: figures of the page, in order (those the experiment has)
FIGURES = ("learning_curves", "bleu_by_length", "window_tradeoff")
#: width in pixels of the copied figures
MAX_WIDTH = 900
#: tables of the page after the findings and the summary, in order
PAPER_TABLES = tuple(TABLES)


@dataclass
class ModelRun:
    variant: str
    run: str
    epochs: int
    best_epoch: int | None
    best_dev_ppl: float | None
    last_gain_pct: float | None  #: how much the last evaluation lowered the best dev perplexity before it
    train_s: float | None  #: the trainer's clock: wall seconds over every attempt (a resumed run adds its part)
    cpu_s: float | None  #: CPU seconds of the job's last attempt (Snakemake's benchmark), unaffected by other jobs
    resumed: bool | None  #: the last attempt resumed from a checkpoint (its job log says so); None: no log
    device: str
    parameters: int | None
    commit: str | None


def model_runs(results: Path, logs: Path | None) -> list[ModelRun]:
    """One entry per trained model under ``results/models/<variant>/<run>/``."""
    runs = []
    for log in sorted((results / "models").glob("*/*/train_log.csv")):
        folder = log.parent
        with open(log, encoding="utf-8") as f:
            rows = [r for r in csv.DictReader(f) if r.get("dev_ppl")]
        ppls = [float(r["dev_ppl"]) for r in rows]
        best = min(range(len(ppls)), key=ppls.__getitem__) if ppls else None
        gain = None
        if len(ppls) > 1:
            before = min(ppls[:-1])
            gain = round(100 * (before - ppls[-1]) / before, 2)
        env = json.loads((folder / "env.json").read_text(encoding="utf-8")) if (folder / "env.json").exists() else {}
        device = env.get("cuda_device") or env.get("device") or ""
        cpu_s = _benchmark_cpu_seconds(logs, folder.parent.name, folder.name) if logs else None
        train_s = float(rows[-1]["elapsed_s"]) if rows and rows[-1].get("elapsed_s") else None
        job_log = logs / "train_model" / f"{folder.parent.name}.{folder.name}.log" if logs else None
        resumed = ("[train] resuming from" in job_log.read_text(encoding="utf-8", errors="replace")
                   if job_log is not None and job_log.exists() else None)
        runs.append(ModelRun(folder.parent.name, folder.name, int(rows[-1]["epoch"]) if rows else 0,
                             int(rows[best]["epoch"]) if best is not None else None,
                             ppls[best] if best is not None else None, gain, train_s, cpu_s, resumed, device,
                             env.get("parameters"), env.get("git_commit")))
    return runs


def _benchmark_cpu_seconds(logs: Path, variant: str, run: str) -> float | None:
    """CPU seconds of the training job's last attempt (Snakemake's ``benchmark:`` file), if any."""
    path = logs / "benchmark" / "train_model" / f"{variant}.{run}.tsv"
    if not path.exists():
        return None
    with open(path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    cpu = rows[-1].get("cpu_time") if rows else None
    return float(cpu) if cpu not in (None, "", "NA") else None


def _table_body(path: Path) -> str:
    """A table's Markdown with its title one level down (``###``)."""
    text = path.read_text(encoding="utf-8")
    return re.sub(r"^# ", "### ", text, count=1)


def _has_ours(path: Path) -> bool:
    """Whether a paper table has any number of ours (a column ``ours_*`` with a value)."""
    with open(path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return any(v not in ("", None) for r in rows for k, v in r.items() if k.startswith("ours_") and k != "ours_from"
               and k != "ours_data" and k != "ours_device")


def shrink_png(src: Path, dest: Path, width: int = MAX_WIDTH) -> None:
    """Copy a PNG, scaled down to ``width`` pixels if wider (docs stay small)."""
    from PIL import Image

    with Image.open(src) as im:
        if im.width > width:
            im = im.resize((width, round(im.height * width / im.width)), Image.LANCZOS)
        with atomic_write(dest, binary=True) as f:
            im.save(f, format="PNG", optimize=True)


def results_page(results: Path, out: Path, command: str, hardware: str, logs: Path | None = None,
                 title: str | None = None, intro: str = "") -> Path:
    """Write ``out`` (Markdown) and its figures into ``out``'s folder, under ``<stem>/``."""
    experiment = results.name
    tables = results / "tables"
    if not (tables / "summary.md").exists():
        raise FileNotFoundError(f"{tables / 'summary.md'} does not exist: run the experiment's report first")
    runs = model_runs(results, logs)
    commits = sorted({r.commit for r in runs if r.commit})
    lines = [f"# {title or f'Reference results: {experiment}'}", ""]
    if intro:
        lines += [intro.strip(), ""]
    lines += [
        "| | |", "|---|---|",
        f"| command | `{command}` |",
        f"| commit | {', '.join(f'`{c[:12]}`' for c in commits) or 'not recorded'} |",
        f"| hardware | {hardware} |",
        f"| models | {len(runs)} trained, {sum(r.train_s or 0 for r in runs) / 3600:.2f} h of training in all |",
        "",
        "## Models trained",
        "",
        "Training time is the trainer's clock (`elapsed_s` of `train_log.csv`): wall time over every attempt, a "
        "resumed run adding its part. CPU time is the processor time of the job's last attempt (Snakemake's "
        "benchmark file; unlike wall time, not lengthened by other jobs on the machine), so it is partial where "
        "*resumed* says yes. *Last gain* is how much the last dev evaluation lowered the best dev perplexity before it "
        "(early stopping ends training when it is below `train.min_improvement`).",
        "",
        "| variant | run | epochs | best epoch | best dev ppl | last gain | training time | CPU time | resumed | "
        "device | parameters |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        gain = "" if r.last_gain_pct is None else f"{r.last_gain_pct:.1f}%"
        time_ = "" if r.train_s is None else f"{r.train_s / 60:.1f} min"
        cpu = "" if r.cpu_s is None else f"{r.cpu_s / 60:.1f} min"
        params = "" if r.parameters is None else f"{r.parameters / 1e6:.2f}M"
        ppl = "" if r.best_dev_ppl is None else f"{r.best_dev_ppl:.2f}"
        resumed = "" if r.resumed is None else ("yes" if r.resumed else "no")
        lines.append(f"| {r.variant} | {r.run} | {r.epochs} | {r.best_epoch or ''} | {ppl} | {gain} | {time_} | {cpu} | "
                     f"{resumed} | {r.device} | {params} |")
    lines += ["", "## Findings", "", _table_body(tables / "findings.md"), "## Summary", "",
              _table_body(tables / "summary.md"), "## The papers' tables", ""]
    unmapped, empty = [], []
    for name in PAPER_TABLES:
        path = tables / f"{name}.md"
        if not path.exists():  # `nmtlib report` writes only the tables the experiment regenerates a row of
            unmapped.append(name)
        elif _has_ours(tables / f"{name}.csv"):
            lines += [_table_body(path)]
        else:
            empty.append(name)
    if unmapped:
        lines += [f"No variant of this experiment regenerates a row of: {', '.join(unmapped)}.", ""]
    if empty:
        lines += [f"No number of ours yet in: {', '.join(empty)} (their pages say why).", ""]
    lines += ["## Figures", ""]
    figures = results / "figures"
    for name in FIGURES:
        src = figures / f"{name}.png"
        if src.exists():
            dest = out.parent / out.stem / f"{name}.png"
            shrink_png(src, dest)
            lines += [f"![{name}]({out.stem}/{name}.png)", ""]
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(out) as f:
        f.write("\n".join(lines).rstrip() + "\n")
    return out
