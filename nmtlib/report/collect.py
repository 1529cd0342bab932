"""Collect an experiment's result files into tidy pandas tables.

The workflow writes one JSON of scores per result (see ``nmtlib evaluate``), per-sentence
decoding details beside each translation (``.jsonl``), attention matrices of forced decoding and
a training log per model; this module reads them where :class:`nmtlib.layout.Layout` puts them,
using the experiment spec the workflow passes (variants, seeds, ensembles, decoding settings).
Missing files are skipped, not errors: a report of a partial experiment shows what exists.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from nmtlib.atomic import atomic_write
from nmtlib.config import parse_setting
from nmtlib.errors import NmtlibError
from nmtlib.layout import DETAILS, ENSEMBLE_RUN, Layout, seed_run
from nmtlib.provenance import differences, read_record, recorded_files
from nmtlib.registry import ATTENTION_NAMES, is_gated
from nmtlib.report.metrics import METRICS, MODEL, TRANSLATION, RunFiles, metrics_in
from nmtlib.words import counted


@dataclass
class ExperimentSpec:
    experiment: str
    results: Path
    seeds: list[int]
    variants: dict[str, dict[str, Any]]  #: name → resolved VariantConfig as a dict
    ensembles: dict[str, list[str]]
    settings: dict[str, list[str]]  #: name → decoding settings (beamK, beamK.tauX)
    report: dict[str, Any]
    data: dict[str, Any]
    aer: bool
    #: variant → its seeds, where a variant has its own (config ``variants.<name>.seeds``)
    variant_seeds: dict[str, list[int]] = field(default_factory=dict)

    @classmethod
    def from_json(cls, text: str) -> ExperimentSpec:
        raw = json.loads(text)
        raw["results"] = Path(raw["results"])
        return cls(**raw)

    def runs(self, name: str) -> list[str]:
        return [ENSEMBLE_RUN] if name in self.ensembles else [seed_run(s) for s in self.seeds_of(name)]

    def seeds_of(self, name: str) -> list[int]:
        """The seeds variant ``name`` was trained with."""
        return self.variant_seeds.get(name) or self.seeds

    def several_seeds(self) -> list[str]:
        """The variants trained with several seeds: the ones whose spread the findings take in."""
        return [n for n in self.variants if len(self.seeds_of(n)) > 1]

    @property
    def layout(self) -> Layout[Path]:
        """Where the experiment's files are."""
        return Layout(self.results)

    def scores(self, name: str, run: str, what: str) -> Path:
        return self.layout.scores(name, run, what)


def _read(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def translation_path(spec: ExperimentSpec, name: str, run: str, setting: str) -> Path:
    return spec.layout.translation(name, run, setting, DETAILS)


def translation_details(spec: ExperimentSpec, name: str, run: str, setting: str) -> list[dict[str, Any]] | None:
    """Per-sentence details of one translation (``nmtlib translate``'s ``.jsonl``), or None if absent."""
    path = translation_path(spec, name, run, setting)
    if not path.exists():
        return None
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def recorded_device(spec: ExperimentSpec, name: str, run: str, setting: str, scores: dict[str, Any]) -> str | None:
    """The device a translation ran on, where a result file records it (``device`` key), else None."""
    if scores.get("device"):
        return str(scores["device"])
    path = translation_path(spec, name, run, setting)
    if path.exists():
        with open(path, encoding="utf-8") as f:
            first = f.readline()
        if first.strip():
            device = json.loads(first).get("device")
            if device:
                return str(device)
    return None


def test_sentences(spec: ExperimentSpec, side: str = "src") -> list[list[str]] | None:
    """Tokenized test sentences of the experiment (the prepared test split), or None if absent."""
    path = spec.layout.data("test", side)
    if not path.exists():
        return None
    return [line.split() for line in path.read_text(encoding="utf-8").splitlines()]


def data_description(spec: ExperimentSpec) -> str:
    """Which data our numbers are on, for table headers: corpus, direction, test set size."""
    corpus = spec.data.get("corpus") or "?"
    src, tgt = spec.data.get("src") or "src", spec.data.get("tgt") or "tgt"
    sents = test_sentences(spec)
    size = f", test set of {len(sents)} sentences" if sents is not None else ""
    return f"{corpus} {src}→{tgt}{size}"


def seeds_description(spec: ExperimentSpec) -> str:
    """The seeds the models were trained with, for table headers: ``seeds [1, 2]``, or, where
    variants have their own (``variants.<name>.seeds``), the experiment's and each exception,
    ``seeds [1]; [1, 2, 3] for a, b``."""
    own: dict[tuple[int, ...], list[str]] = {}
    for name in spec.variants:
        seeds = tuple(spec.seeds_of(name))
        if list(seeds) != list(spec.seeds):
            own.setdefault(seeds, []).append(name)
    exceptions = "".join(f"; {list(seeds)} for {', '.join(names)}" for seeds, names in own.items())
    return f"seeds {list(spec.seeds)}{exceptions}"


#: what ``train.bf16`` trains in (:mod:`nmtlib.precision`); the papers train in float32
PRECISIONS = {False: "float32", True: "bf16"}
#: what bf16 training means here, for captions and pages
BF16_NOTE = ("bf16 autocast: matrix products in bf16; weights, optimiser state, loss and the computations on "
             "source positions in float32; the papers train in float32")


def precision(variant: dict[str, Any]) -> str:
    """The precision a variant trains in: ``bf16`` (autocast; weights, optimiser state and loss in
    float32) or ``float32``, the papers' own."""
    return PRECISIONS[bool(variant["train"].get("bf16"))]


def precision_description(spec: ExperimentSpec) -> str:
    """How the models were trained, for table headers: the precision of most variants, then the
    others by name; bf16 is said as a deviation from the papers' float32
    (``trained in bf16 autocast (the papers: float32); in float32: a, b``)."""
    by: dict[str, list[str]] = {}
    for name, v in spec.variants.items():
        by.setdefault(precision(v), []).append(name)
    said = {PRECISIONS[True]: "bf16 autocast (the papers: float32)", PRECISIONS[False]: "float32"}
    if not by:
        return f"trained in {said[PRECISIONS[False]]}"
    main, *others = sorted(by, key=lambda p: -len(by[p]))
    return f"trained in {said[main]}" + "".join(f"; in {said[p]}: {', '.join(by[p])}" for p in others)


#: (scored, planned) of an experiment's models and of its ensembles (:meth:`Ours.progress`)
Done = tuple[tuple[int, int], tuple[int, int]]


def scored_so_far(done: Done) -> str:
    """``5 of 20 models and 0 of 1 ensemble`` (:meth:`Ours.progress`); empty where every one is scored."""
    (models, planned), (ensembles, ensembles_planned) = done
    if models == planned and ensembles == ensembles_planned:
        return ""
    both = f" and {ensembles} of {counted(ensembles_planned, 'ensemble')}" if ensembles_planned else ""
    return f"{models} of {counted(planned, 'model')}{both}"


def progress_description(done: Done) -> str:
    """For a report written before its run ends (``nmtlib report --config``): ``done``
    (:meth:`Ours.progress`) as ``; scored so far: 5 of 20 models and 0 of 1 ensemble``; empty where
    every one is scored."""
    so_far = scored_so_far(done)
    return f"; scored so far: {so_far}" if so_far else ""


def write_progress(path: Path, done: Done, reported: str) -> None:
    """The report's :meth:`Ours.progress` and when it was made (``reported``, UTC), for ``nmtlib publish``
    (:func:`read_progress`)."""
    (models, planned), (ensembles, ensembles_planned) = done
    record = {"models": {"scored": models, "planned": planned},
              "ensembles": {"scored": ensembles, "planned": ensembles_planned}, "reported": reported}
    with atomic_write(path) as f:
        f.write(json.dumps(record, indent=1) + "\n")


def read_progress(path: Path) -> tuple[Done, str]:
    """What :func:`write_progress` wrote: (:data:`Done`, when the report was made).

    :raises NmtlibError: the file is not such a record, naming it and what is wrong."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        parts = tuple((int(record[k]["scored"]), int(record[k]["planned"])) for k in ("models", "ensembles"))
        reported = str(record["reported"])
    except (ValueError, KeyError, TypeError) as err:
        raise NmtlibError(f"{path}: not the report's record of the runs it found scored ({err!r}): run the "
                          "experiment's report again") from None
    return (parts[0], parts[1]), reported


def training_left(spec: ExperimentSpec) -> tuple[int, float | None, float | None]:
    """For a run still going: (models still to train, about how many seconds of training they need
    one at a time, the mean seconds an epoch took the models trained so far). Each untrained model
    needs its variant's epochs at that mean (the time logged in each trained model's
    ``train_log.csv``, ``elapsed_s``, resumes included), less what a model in progress has logged.
    Decoding and scoring are left out: seconds a model against its minutes of training. The
    seconds are None where no trained model logged its time."""
    per_epoch: list[float] = []
    left: list[tuple[int, float]] = []
    for name in spec.variants:
        epochs = int(spec.variants[name].get("train", {}).get("epochs") or 0)
        for run in spec.runs(name):
            log = _train_log(spec, name, run)
            timed = log is not None and not log.empty and "elapsed_s" in log and not pd.isna(log["elapsed_s"].iloc[-1])
            spent = float(log["elapsed_s"].iloc[-1]) if timed else 0.0
            if spec.layout.trained(name, run):
                if timed and int(log["epoch"].iloc[-1]) > 0:
                    per_epoch.append(spent / int(log["epoch"].iloc[-1]))
            else:
                left.append((epochs, spent))
    if not per_epoch:
        return len(left), None, None
    mean = sum(per_epoch) / len(per_epoch)
    return len(left), sum(max(epochs * mean - spent, 0.0) for epochs, spent in left), mean


def runs_description(spec: ExperimentSpec, done: Done) -> str:
    """The seeds and the precision, for table headers (:func:`seeds_description`,
    :func:`precision_description`), and how many models are scored where not all are (``done``,
    :meth:`Ours.progress` of the reading the table is made from: :func:`progress_description`)."""
    return f"{seeds_description(spec)}, {precision_description(spec)}{progress_description(done)}"


def attention_label(variant: dict[str, Any]) -> str:
    """``attention`` column value: RNNsearch's additive attention on s_{i−1} is labelled apart from Luong's."""
    m = variant["model"]
    return "rnnsearch" if m["arch"] == "rnnsearch" and m["attention"] == "global" else m["attention"]


def attention_order() -> list[str]:
    """The ``attention`` labels in the order results show them: the mechanisms as declared
    (:data:`nmtlib.registry.MECHANISMS`), RNNsearch right after the global attention it is."""
    order = list(ATTENTION_NAMES)
    order.insert(order.index("global") + 1, "rnnsearch")
    return order


def gated(variant: dict[str, Any]) -> bool:
    """Whether a variant's mechanism is gated (:attr:`nmtlib.registry.Mechanism.gated`: Shu &
    Nakayama's Flexible Attention), the one that decodes with thresholds τ and fine-tunes with β."""
    return is_gated(variant["model"]["attention"])


def parse_tau(setting: str) -> float | None:
    return parse_setting(setting)[1]


def translation_rows(spec: ExperimentSpec) -> pd.DataFrame:
    """One row per (variant or ensemble, run, decoding setting) with every translation metric of
    :data:`nmtlib.report.metrics.METRICS` under its name, the sacreBLEU signature and the device."""
    rows = []
    for name in [*spec.variants, *spec.ensembles]:
        for run in spec.runs(name):
            for setting in spec.settings[name]:
                files = RunFiles(spec.layout, name, run, setting)
                s = files.json()
                if s is None:
                    continue
                rows.append({
                    "variant": name, "run": run, "setting": setting, "tau": parse_tau(setting),
                    **{m.name: m.read(files) for m in METRICS.values() if m.level == TRANSLATION},
                    "sacrebleu_signature": (s.get("sacrebleu") or {}).get("signature"),
                    "sentences": s.get("sentences"), "unk_tokens": s.get("unk_tokens"),
                    "device": recorded_device(spec, name, run, setting, s),
                })
    return pd.DataFrame(rows)


def model_rows(spec: ExperimentSpec) -> pd.DataFrame:
    """One row per (variant, seed) scored so far with every model metric of
    :data:`nmtlib.report.metrics.METRICS` (perplexities, AER by either convention) under its name. A
    seed with none of them (not trained yet) has no row: in a run still going, a variant's mean and
    its seeds' spread are of the same seeds."""
    rows = []
    for name in spec.variants:
        for run in spec.runs(name):
            files = RunFiles(spec.layout, name, run)
            values = {m.name: m.read(files) for m in METRICS.values() if m.level == MODEL}
            if any(v is not None for v in values.values()):
                rows.append({"variant": name, "run": run, **values})
    return pd.DataFrame(rows)


#: suffix of a column holding the standard deviation over seeds of the column it extends
SD = "_sd"


def summary_columns(spec: ExperimentSpec) -> dict[str, str]:
    """The summary's metric columns and what each is: the :data:`METRICS` declared for it and,
    where the experiment has several seeds, each one's standard deviation over them (``<name>_sd``)."""
    out: dict[str, str] = {}
    for m in metrics_in("summary"):
        out[m.name] = m.help
        if spec.several_seeds():
            out[m.name + SD] = f"standard deviation over seeds of {m.name} (empty with one run)"
    return out


def summary_table(spec: ExperimentSpec, ours: Ours | None = None) -> pd.DataFrame:
    """One row per trained variant and per ensemble, in config order.

    Rule: every number is the mean over the variant's seeds, decoded at τ = ∞ (the variant's
    first setting, ``beamK``); τ sweeps of Flexible Attention are in ``shu_table1``. Ensembles
    have no perplexity or AER (those are per model). ``runs`` counts the score files averaged.
    Every metric column names its data (dev or test; the rest are test) and its variant (before or
    after unknown-word replacement, which AER convention): :func:`summary_columns`.
    """
    from nmtlib.report.paper import resolve_paper_row

    ours = ours or Ours(spec)
    rows = []
    for name in [*spec.variants, *spec.ensembles]:
        if name in spec.variants:
            v = spec.variants[name]
            m = v["model"]
            info = {"attention": attention_label(v), "score": "" if m["attention"] == "none" else m["score"],
                    "input_feed": bool(m["input_feed"]), "arch": m["arch"], "precision": precision(v)}
            mapped = resolve_paper_row(name, v.get("paper_row") or {})
            description = v.get("description", "")
        else:
            members = spec.ensembles[name]
            info = {"attention": "ensemble", "score": "", "input_feed": "", "arch": "+".join(members),
                    "precision": "+".join(dict.fromkeys(precision(spec.variants[m]) for m in members))}
            mapped = {tab: ["ensemble"] for tab, names in ensemble_assignments(spec).items() if name in names}
            description = f"ensemble of every seed of {', '.join(members)}"
        values = {c: ours.sd(name, c.removesuffix(SD)) if c not in METRICS else ours.value(name, c)
                  for c in summary_columns(spec)}
        rows.append({
            "variant": name, **info, "setting": spec.settings[name][0], "runs": ours.runs(name), **values,
            "paper_rows": "; ".join(f"{tab}: {', '.join(keys)}" for tab, keys in mapped.items()),
            "description": description,
        })
    return pd.DataFrame(rows)


def ensemble_assignments(spec: ExperimentSpec) -> dict[str, list[str]]:
    """Table → ensembles regenerating its ``ensemble`` row (:func:`nmtlib.report.paper.ensemble_tables`)."""
    from nmtlib.report.paper import ensemble_tables

    return ensemble_tables(spec.ensembles, spec.report)


class Ours:
    """Our numbers per (variant or ensemble, decoding setting), averaged over runs (seeds)."""

    def __init__(self, spec: ExperimentSpec):
        self.spec = spec
        self.tr = translation_rows(spec)
        self.models = model_rows(spec)

    def translation(self, name: str, setting: str) -> pd.DataFrame:
        if self.tr.empty:
            return self.tr
        return self.tr[(self.tr.variant == name) & (self.tr.setting == setting)]

    def rows(self, name: str, metric: str, setting: str | None = None) -> pd.DataFrame:
        """The per-run rows ``metric`` of ``name`` is read from: per seed for a model metric, per run
        of the decoding ``setting`` (None: τ = ∞) for a translation metric."""
        if METRICS[metric].level == MODEL:
            return self.models if self.models.empty else self.models[self.models.variant == name]
        return self.translation(name, setting or self.spec.settings[name][0])

    def value(self, name: str | None, metric: str, setting: str | None = None) -> float | None:
        """Mean over the runs of a registered metric (:data:`nmtlib.report.metrics.METRICS`)."""
        if name is None:
            return None
        return _mean(self.rows(name, metric, setting), metric)

    def sd(self, name: str | None, metric: str, setting: str | None = None) -> float | None:
        """Standard deviation over the runs (None with fewer than two, or where one lacks the value)."""
        if name is None:
            return None
        df = self.rows(name, metric, setting)
        if len(df) < 2 or metric not in df or df[metric].isna().any():
            return None
        return round(float(df[metric].astype(float).std()), 4)

    def per_run(self, name: str, metric: str, setting: str | None = None) -> dict[str, float]:
        """``{run: value}`` of a registered metric, over the runs that have it."""
        df = self.rows(name, metric, setting)
        if df.empty or metric not in df:
            return {}
        return {str(r): float(v) for r, v in zip(df["run"], df[metric]) if v is not None and not pd.isna(v)}

    def runs(self, name: str, setting: str | None = None) -> int:
        """How many runs of ``name`` have a scored translation with ``setting`` (None: τ = ∞)."""
        return len(self.translation(name, setting or self.spec.settings[name][0]))

    def progress(self) -> Done:
        """(scored, planned) of the models (each variant's seeds) and of the ensembles: how many have
        their test translation scored at τ = ∞ in this reading of the run, the one its numbers come from."""
        def scored(names: list[str]) -> tuple[int, int]:
            return sum(self.runs(n) for n in names), sum(len(self.spec.runs(n)) for n in names)

        return scored(list(self.spec.variants)), scored(list(self.spec.ensembles))

    def devices(self, name: str, setting: str) -> str | None:
        t = self.translation(name, setting)
        if t.empty:
            return None
        found = sorted({str(d) for d in t["device"] if isinstance(d, str) and d})
        return ", ".join(found) if found else None

    def taus(self, name: str) -> list[float | None]:
        """Decoding thresholds of a variant: None (τ = ∞) first, then the τ settings in order."""
        return [parse_tau(s) for s in self.spec.settings.get(name, [])]

    def setting(self, name: str, tau: float | None) -> str | None:
        for s in self.spec.settings.get(name, []):
            t = parse_tau(s)
            if (t is None and tau is None) or (t is not None and tau is not None and abs(t - tau) < 1e-9):
                return s
        return None


def _mean(df: pd.DataFrame, column: str) -> float | None:
    if df.empty or column not in df or df[column].isna().all():
        return None
    return round(float(df[column].astype(float).mean()), 4)


def _train_log(spec: ExperimentSpec, name: str, run: str) -> pd.DataFrame | None:
    path = spec.layout.train_log(name, run)
    return pd.read_csv(path) if path.exists() and path.stat().st_size else None


def model_step(spec: ExperimentSpec, name: str, run: str) -> int | None:
    """The update count at which a model's ``model.pt`` was saved, in its own stage's count.

    The test perplexity's scores record it (``step``); else the training log's evaluation of lowest
    dev perplexity (the first, on ties), which is the one ``model.pt`` keeps.
    """
    recorded = (_read(spec.scores(name, run, "ppl")) or {}).get("step")
    if recorded is not None:
        return int(recorded)
    log = _train_log(spec, name, run)
    if log is None or log.empty or "dev_ppl" not in log or log["dev_ppl"].isna().all():
        return None
    return int(log.loc[log["dev_ppl"].astype(float).idxmin(), "step"])


def stage_start(spec: ExperimentSpec, name: str, run: str) -> int | None:
    """Updates a variant's training stage starts from: 0, or for a fine-tuning stage
    (``finetune_from``) the updates of its parent's model it starts from (the parent's ``model.pt``,
    its own start included, so chains of stages add up). None when the parent's step is unknown."""
    parent = spec.variants.get(name, {}).get("finetune_from")
    if not parent:
        return 0
    before, step = stage_start(spec, parent, run), model_step(spec, parent, run)
    return None if before is None or step is None else before + step


def learning_curves(spec: ExperimentSpec) -> pd.DataFrame:
    """Every model's ``train_log.csv``, one row per dev evaluation, with ``variant``, ``run``,
    ``finetune_from`` (the parent stage, or empty) and ``updates``: the step counted from the start
    of the whole training, so that a fine-tuning stage continues its parent's curve (``step`` is
    the stage's own count; ``updates`` is empty when the parent's step is unknown)."""
    frames = []
    for name in spec.variants:
        for run in spec.runs(name):
            df = _train_log(spec, name, run)
            if df is not None:
                start = stage_start(spec, name, run)
                df.insert(0, "run", run)
                df.insert(0, "variant", name)
                df["finetune_from"] = spec.variants[name].get("finetune_from") or ""
                df["updates"] = df["step"] + start if start is not None else None
                frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def length_buckets(spec: ExperimentSpec) -> pd.DataFrame:
    """BLEU per source-length bucket of every variant and ensemble at τ = ∞, per run."""
    rows = []
    for name in [*spec.variants, *spec.ensembles]:
        for run in spec.runs(name):
            s = _read(spec.scores(name, run, spec.settings[name][0]))
            if s is None:
                continue
            for b in s["bleu_by_length"]:
                rows.append({"variant": name, "run": run, **b})
    return pd.DataFrame(rows)


def window_points(spec: ExperimentSpec, ours: Ours | None = None) -> pd.DataFrame:
    """Shu Fig. 3: per variant and decoding setting, mean window and BLEU over the runs.

    ``bleu_before_unk_replace`` is tokenized BLEU of the raw output, before any unknown-word
    replacement: Shu & Nakayama replace nothing. The window is
    :func:`nmtlib.metrics.window.mean_window`. ``ours``: the reading of the run the report is made from.
    """
    columns = ["variant", "attention", "arch", "gated", "setting", "tau", "avg_window", "bleu_before_unk_replace", "runs"]
    tr = (ours or Ours(spec)).tr
    if tr.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for name in spec.variants:
        for setting in spec.settings[name]:
            t = tr[(tr.variant == name) & (tr.setting == setting)]
            if t.empty:
                continue
            rows.append({"variant": name, "attention": attention_label(spec.variants[name]),
                         "arch": spec.variants[name]["model"]["arch"],
                         "gated": gated(spec.variants[name]), "setting": setting, "tau": parse_tau(setting),
                         "avg_window": _mean(t, "avg_window"),
                         "bleu_before_unk_replace": _mean(t, "bleu_before_unk_replace"), "runs": len(t)})
    return pd.DataFrame(rows, columns=columns)


def mean_source_length(spec: ExperimentSpec) -> float | None:
    src = test_sentences(spec)
    return sum(map(len, src)) / len(src) if src else None


#: Shu & Nakayama select τ = 1.2 on dev (word level); the figures show the τ nearest to it
SHU_TAU = 1.2


def vision_spans(spec: ExperimentSpec, count: int = 4) -> dict[str, Any]:
    """Shu Fig. 4 inputs: ``window_per_step`` of the longest test sentences, first seed.

    Series: one global-attention variant at τ = ∞ (its window is the source length, whichever
    variant it is: the one of the Flexible variants' architecture where there is one, Shu's own
    baseline, else the first that has translations) and every variant of a gated mechanism
    (:func:`gated`: Flexible Attention) at the decoded τ nearest to 1.2 (Shu's choice). Returns
    ``{"sentences": [(id, src words)], "series": [{"label", "attention", "gated", "spans": {id: [window
    per step]}}], "missing": why-or-None}``.
    """
    flexible = [n for n, v in spec.variants.items() if gated(v)]
    if not flexible:
        return {"sentences": [], "series": [], "missing": "no Flexible Attention variant in this experiment"}
    src = test_sentences(spec)
    if not src:
        return {"sentences": [], "series": [], "missing": f"no test source ({Layout(Path()).data('test', 'src')})"}
    ids = sorted(range(len(src)), key=lambda i: (-len(src[i]), i))[:count]

    def one(name: str, tau: float | None) -> dict[str, Any] | None:
        """``name``'s series at ``tau``, or None where its first seed has no per-step windows."""
        setting = next(s for s in spec.settings[name] if parse_tau(s) == tau)
        details = translation_details(spec, name, spec.runs(name)[0], setting)
        if not details or "window_per_step" not in details[0]:
            return None
        by_id = {d["id"]: d["window_per_step"] for d in details}
        label = f"{name} ({attention_label(spec.variants[name])}, τ={'∞' if tau is None else f'{tau:g}'})"
        return {"label": label, "attention": attention_label(spec.variants[name]),
                "gated": gated(spec.variants[name]), "spans": {i: by_id.get(i, []) for i in ids}}

    arch = spec.variants[flexible[0]]["model"]["arch"]
    globals_ = sorted((n for n, v in spec.variants.items() if attention_label(v) == "global"),
                      key=lambda n: spec.variants[n]["model"]["arch"] != arch)
    first_global = next((s for n in globals_ if (s := one(n, None)) is not None), None)
    series = [] if first_global is None else [first_global]
    for n in flexible:
        taus = [parse_tau(s) for s in spec.settings[n] if parse_tau(s) is not None]
        found = one(n, min(taus, key=lambda t: abs(t - SHU_TAU)) if taus else None)
        if found is not None:
            series.append(found)
    if not any(s["gated"] for s in series):
        details = Layout(Path()).translation("<variant>", "<run>", "*", DETAILS)
        return {"sentences": [], "series": [], "missing": "no per-step windows of a Flexible Attention translation "
                                                          f"({details}: window_per_step)"}
    return {"sentences": [(i, src[i]) for i in ids], "series": series, "missing": None}


def attention_selection(spec: ExperimentSpec) -> list[str]:
    """One attentional variant per attention type for the heatmaps, in :func:`attention_order`;
    the first variant of each type in config order, a fine-tuned variant of a gated mechanism
    (Flexible Attention with β, ``finetune_from``) before its parent."""
    order = attention_order()
    chosen: dict[str, str] = {}
    for name, v in spec.variants.items():
        label = attention_label(v)
        if label not in order:
            continue
        if label not in chosen or (gated(v) and v.get("finetune_from") == chosen[label]):
            chosen[label] = name
    return [chosen[k] for k in order if k in chosen]


def check_models(spec: ExperimentSpec) -> None:
    """Refuse to tabulate a model as a variant unless its record says the variant trained it: its
    options, seed and data (:mod:`nmtlib.provenance`). A folder without a record never started
    training; one still training has its record already, and is held to it the same way.

    :raises NmtlibError: one line naming the folder, what differs and how to retrain it."""
    digests: dict[str, str] = {}  # each experiment file hashed once
    for name, variant in spec.variants.items():
        for seed in spec.seeds_of(name):
            folder = spec.layout.model_dir(name, seed_run(seed))
            try:
                record = read_record(folder)
            except ValueError as err:
                raise NmtlibError(str(err)) from None
            if record is None:
                continue
            found = differences(record, variant, seed, recorded_files(record, spec.results), digests)
            if found:
                raise NmtlibError(f"{folder}: not a model of variant {name} ({'; '.join(found)}); the tables would "
                                  f"report it as one: remove {folder} and run snakemake again to retrain it")


def stopped_by_max_steps(layout: Layout[Path], name: str, run: str) -> int:
    """The ``train.max_steps`` a model's training was stopped by, or 0: its record (``env.json``)
    keeps the resolved config it trained with, and its training log ends at that step."""
    env = _read(layout.record(name, run)) or {}
    steps = int(((env.get("variant") or {}).get("train") or {}).get("max_steps") or 0)
    log = layout.train_log(name, run)
    if not steps or not log.exists() or not log.stat().st_size:
        return 0
    logged = pd.read_csv(log)
    return steps if not logged.empty and int(logged["step"].max()) >= steps else 0


def _max_steps(spec: ExperimentSpec, name: str) -> int:
    """The ``train.max_steps`` a variant's models were stopped by (0: none), by its config or its models."""
    configured = int((spec.variants[name].get("train") or {}).get("max_steps") or 0)
    return configured or max((stopped_by_max_steps(spec.layout, name, run) for run in spec.runs(name)), default=0)


def smoke_models(spec: ExperimentSpec) -> dict[str, int]:
    """The variants whose models were stopped by ``train.max_steps`` (a smoke run), with that step count:
    they can support no verdict."""
    stopped = {name: _max_steps(spec, name) for name in spec.variants}
    return {name: steps for name, steps in stopped.items() if steps}


def smoke_run(spec: ExperimentSpec) -> str | None:
    """Why the experiment's tables support no verdict, in one clause, or None: its models (all or
    some) were stopped by ``train.max_steps``."""
    stopped = smoke_models(spec)
    if not stopped:
        return None
    steps = sorted(set(stopped.values()))
    which = "every model" if len(stopped) == len(spec.variants) else f"the models of {', '.join(stopped)}"
    return (f"{which} stopped after train.max_steps = {', '.join(map(str, steps))} updates, so no difference "
            "here says anything about the papers' claims")
