"""Collect an experiment's result files into tidy pandas tables.

The workflow writes one JSON per result under ``results/<experiment>/scores/`` (see
``nmtlib evaluate``); this module reads them by the same path convention, using the experiment
spec the workflow passes (variants, seeds, ensembles, decoding settings).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd


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

    @classmethod
    def from_json(cls, text: str) -> ExperimentSpec:
        raw = json.loads(text)
        raw["results"] = Path(raw["results"])
        return cls(**raw)

    def runs(self, name: str) -> list[str]:
        return ["ensemble"] if name in self.ensembles else [f"seed{s}" for s in self.seeds]

    def scores(self, name: str, run: str, what: str) -> Path:
        return self.results / "scores" / name / run / f"test.{what}.json"


def _read(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def parse_tau(setting: str) -> float | None:
    return float(setting.split(".tau", 1)[1]) if ".tau" in setting else None


def translation_rows(spec: ExperimentSpec) -> pd.DataFrame:
    """One row per (variant or ensemble, run, decoding setting) with every translation metric."""
    rows = []
    for name in [*spec.variants, *spec.ensembles]:
        for run in spec.runs(name):
            for setting in spec.settings[name]:
                s = _read(spec.scores(name, run, setting))
                if s is None:
                    continue
                rows.append({
                    "variant": name, "run": run, "setting": setting, "tau": parse_tau(setting),
                    "bleu": s["bleu"]["bleu"], "bleu_unk": s["bleu_unk"]["bleu"],
                    "bleu_no_unk": (s.get("bleu_no_unk") or {}).get("bleu"),
                    "sacrebleu": s["sacrebleu"]["bleu"], "sacrebleu_signature": s["sacrebleu"]["signature"],
                    "ribes": s["ribes"], "avg_window": s["avg_window"],
                    "time_ms": s["time_ms_per_sentence"], "unk_tokens": s["unk_tokens"],
                })
    return pd.DataFrame(rows)


def model_rows(spec: ExperimentSpec) -> pd.DataFrame:
    """One row per (variant, seed): test perplexity, dev perplexity, AER."""
    rows = []
    for name in spec.variants:
        for run in spec.runs(name):
            ppl = _read(spec.scores(name, run, "ppl")) or {}
            aer = _read(spec.scores(name, run, "aer")) or {}
            rows.append({"variant": name, "run": run, "ppl": ppl.get("ppl"), "dev_ppl": ppl.get("dev_ppl"),
                         "aer": aer.get("aer"), "aer_precision": aer.get("precision"),
                         "aer_recall": aer.get("recall")})
    return pd.DataFrame(rows)


def summary_table(spec: ExperimentSpec) -> pd.DataFrame:
    """One row per trained variant (mean over seeds, at τ = ∞) and per ensemble."""
    tr = translation_rows(spec)
    models = model_rows(spec)
    rows = []
    for name in [*spec.variants, *spec.ensembles]:
        t = tr[(tr.variant == name) & tr.tau.isna()] if not tr.empty else tr
        if name in spec.variants:
            m = spec.variants[name]["model"]
            attention = "rnnsearch" if m["arch"] == "rnnsearch" and m["attention"] == "global" else m["attention"]
            info = {"attention": attention, "score": "" if m["attention"] == "none" else m["score"],
                    "input_feed": bool(m["input_feed"]), "arch": m["arch"]}
            mm = models[models.variant == name]
        else:
            members = spec.ensembles[name]
            info = {"attention": "ensemble", "score": "", "input_feed": "", "arch": "+".join(members)}
            mm = models[models.variant.isin(members)].iloc[0:0]
        rows.append({
            "variant": name, **info,
            "seeds": len(t),
            "ppl": _mean(mm, "ppl"), "bleu": _mean(t, "bleu"), "bleu_unk": _mean(t, "bleu_unk"),
            "sacrebleu": _mean(t, "sacrebleu"), "ribes": _mean(t, "ribes"), "aer": _mean(mm, "aer"),
            "avg_window": _mean(t, "avg_window"), "time_ms": _mean(t, "time_ms"),
        })
    return pd.DataFrame(rows)


def _mean(df: pd.DataFrame, column: str) -> float | None:
    if df.empty or column not in df or df[column].isna().all():
        return None
    return round(float(df[column].astype(float).mean()), 4)


def learning_curves(spec: ExperimentSpec) -> pd.DataFrame:
    frames = []
    for name in spec.variants:
        for run in spec.runs(name):
            path = spec.results / "models" / name / run / "train_log.csv"
            if path.exists() and path.stat().st_size:
                df = pd.read_csv(path)
                df.insert(0, "run", run)
                df.insert(0, "variant", name)
                frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def length_buckets(spec: ExperimentSpec) -> pd.DataFrame:
    rows = []
    for name in [*spec.variants, *spec.ensembles]:
        for run in spec.runs(name):
            s = _read(spec.scores(name, run, spec.settings[name][0]))
            if s is None:
                continue
            for b in s["bleu_by_length"]:
                rows.append({"variant": name, "run": run, **b})
    return pd.DataFrame(rows)
