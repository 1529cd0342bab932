#!/usr/bin/env python
"""The Python side of ``benchmarks/device_checks.sh`` (issue #45's checks on a lent GPU).

    python benchmarks/device_checks.py data CONFIG --cache DIR --workdir DIR [--head N]
    python benchmarks/device_checks.py summary WORK --out DIR --mode full|tiny

``data``: an experiment's data as its workflow makes it, without Snakemake (the lent machines have
none): the commands of the rules ``download_corpus`` and ``copy_split`` (workflow/rules/corpus.smk),
``prepare_split`` and ``build_vocab`` (workflow/rules/prepare.smk), with the config's own settings,
into ``WORKDIR/results/<experiment>/{corpus,data,vocab}``, where ``nmtlib train --config CONFIG``
looks for them. ``--head N`` keeps the first N lines of each raw split (the CPU test's tiny run).

``summary``: ``WORK/summary.json`` and ``summary.md`` from what the steps left in ``WORK``: each
step's exit code and wall time (``steps.tsv``), the CUDA tests' JUnit XML, the benchmarks' JSON and
the models' ``train_log.csv``, with the issue's targets beside the measurements. Standard library
only, so that it runs whatever the steps broke.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

#: what each step of device_checks.sh checks, in its order (the names are its log and JSON names)
STEPS = {
    "setup-bundle": "the bundle's wheels installed (device_common.sh install_bundle)",
    "setup-peer": "OpenNMT-py installed from the bundle (peer/setup_offline.sh)",
    "e-cuda-tests": "(e) the tests that skip without CUDA",
    "a-gpu-share": "(a) gpu_share.py: training jobs side by side on one GPU",
    "b-peer-decode": "(b) peer_opennmt.py: paper-scale float32 decoding, ours against OpenNMT-py",
    "c-train-speed": "(c) train_speed.py: paper-scale Luong 4x1000 training, bf16 + CUDA graphs",
    "d-data": "(d) multi30k-deen's data: corpus, prepare, vocab (the workflow's commands)",
    "d-train-fp32": "(d) multi30k-deen global-general-feed, 2 epochs, float32",
    "d-train-bf16": "(d) multi30k-deen global-general-feed, 2 epochs, bf16 (train.bf16)",
}
#: issue #45's targets
DECODE_RATIO = 3.0  #: beam-12 sentences/s against OpenNMT-py, paper scale, float32
SHARE_RATIO_AT_4 = 2.5  #: total tokens/s of 4 jobs on one GPU against 1 job
BF16_TOKENS_PER_S = 100_000  #: paper-scale Luong 4x1000 global+feed training, bf16


# --- data ----------------------------------------------------------------------------------------


def nmtlib(*args: str) -> list[str]:
    """An ``nmtlib`` command as the rules run it (``python -m nmtlib``, common.smk's NMTLIB)."""
    return [sys.executable, "-m", "nmtlib", *args]


def prepare_options(data: dict[str, Any], split: str) -> list[str]:
    """prepare.smk's ``prepare_options``: the filters apply to training pairs only, so that dev
    and test lines stay aligned with their references."""
    opts = ["--lowercase"] if data["lowercase"] else []
    opts.append("--escape" if data["escape"] else "--no-escape")
    if split == "train":
        opts += ["--max-len", str(data["max_len"]), "--drop-empty"]
        if data.get("max_ratio"):
            opts += ["--max-ratio", str(data["max_ratio"])]
    return opts


def keep_head(path: Path, lines: int) -> None:
    with path.open(encoding="utf-8") as f:
        head = [line for _, line in zip(range(lines), f)]
    path.write_text("".join(head), encoding="utf-8")


def run_logged(cmd: list[str]) -> None:
    print(f"$ {shlex.join(cmd)}", flush=True)
    subprocess.run(cmd, check=True)


def make_data(config_file: Path, cache: Path, head: int | None) -> None:
    """The experiment's corpus, tokenized splits and vocabularies, under ``results/<experiment>/``
    of the current folder, by the rules' commands."""
    from nmtlib.workflow_config import load_experiment, results_dir

    config, _ = load_experiment(config_file)  # checked, defaults filled in, as the workflow reads it
    data, r = config["data"], Path(results_dir(config))
    if data["corpus"] == "synthetic":
        raise SystemExit(f"{config_file}: a downloaded corpus is needed (data.corpus), not the synthetic one")
    # download_corpus names registry entries; a plain file of the data set (multi30k's) is its own entry
    files = list(dict.fromkeys(name for sides in data["splits"].values() for name in sides.values()))
    run_logged(nmtlib("download", data["corpus"], "--cache", str(cache), *[a for f in files for a in ("--file", f)]))
    for split, sides in data["splits"].items():
        for side, name in sides.items():
            raw = r / "corpus" / f"{split}.{side}"
            run_logged(nmtlib("corpus", "copy", data["corpus"], name, "--cache", str(cache), "--out", str(raw)))
            if head:
                keep_head(raw, head)
    tokenizer = data.get("tokenizer", {})
    for split in data["splits"]:
        run_logged(nmtlib(
            "prepare", "--src", str(r / "corpus" / f"{split}.src"), "--tgt", str(r / "corpus" / f"{split}.tgt"),
            "--src-out", str(r / "data" / f"{split}.src"), "--tgt-out", str(r / "data" / f"{split}.tgt"),
            "--src-lang", data["src"], "--tgt-lang", data["tgt"], "--src-tokenizer", tokenizer.get("src", "none"),
            "--tgt-tokenizer", tokenizer.get("tgt", "none"), *prepare_options(data, split),
            "--stats-out", str(r / "data" / f"{split}.stats.json")))
    for side in ("src", "tgt"):
        run_logged(nmtlib("vocab", f"--{side}", str(r / "data" / f"train.{side}"), "--out",
                          str(r / "vocab" / f"{side}.txt"), "--size", str(data["vocab_size"][side])))


# --- summary -------------------------------------------------------------------------------------


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def read_steps(work: Path) -> list[dict[str, Any]]:
    """``steps.tsv`` (name, budget s, exit code, wall s, note; a line as each step ends), in the
    script's order."""
    steps = []
    path = work / "steps.tsv"
    for line in path.read_text(encoding="utf-8").splitlines() if path.exists() else []:
        name, budget, rc, seconds, note = (line.split("\t") + [""] * 5)[:5]
        steps.append({"step": name, "what": STEPS.get(name, ""), "budget_s": int(budget) if budget else None,
                      "exit_code": int(rc) if rc else None, "wall_s": float(seconds) if seconds else None,
                      "note": note})
    order = list(STEPS)
    return sorted(steps, key=lambda s: order.index(s["step"]) if s["step"] in order else len(order))


def cuda_tests(xml_file: Path) -> dict[str, Any] | None:
    """Counts of a pytest JUnit XML file, and the failed tests' names."""
    try:
        root = ET.parse(xml_file).getroot()
    except (OSError, ET.ParseError):
        return None
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in ([root] if root.tag == "testsuite" else root.iter("testsuite")):
        for key in counts:
            counts[key] += int(suite.get(key, 0))
    failed = [f"{case.get('classname')}::{case.get('name')}" for case in root.iter("testcase")
              if case.find("failure") is not None or case.find("error") is not None]
    passed = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    return {"passed": passed, "failed": counts["failures"], "errors": counts["errors"],
            "skipped": counts["skipped"], "failed_tests": failed}


def log_lines(path: Path, pattern: str) -> list[re.Match]:
    """The lines of a step's log that match ``pattern``: the progress a script prints as it goes,
    which is all there is of a step that ran out of time before writing its JSON."""
    text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
    return [m for m in re.finditer(pattern, text, re.M)]


def gpu_share(result: Any, log: Path) -> list[dict[str, Any]]:
    rows = [{"jobs": r["jobs"], "total": r["total_tgt_tokens_per_s"], "each": r["per_job_tgt_tokens_per_s"]}
            for r in (result or {}).get("results", [])]
    if not rows:  # gpu_share.py's progress: "  4 job(s): 61234 tgt tok/s in all"
        rows = [{"jobs": int(m[1]), "total": float(m[2]), "each": []}
                for m in log_lines(log, r"^  (\d+) job\(s\): ([\d.]+) tgt tok/s in all$")]
    base = next((r["total"] for r in rows if r["jobs"] == 1), None)
    return [{"jobs": r["jobs"], "total_tgt_tokens_per_s": r["total"], "per_job_tgt_tokens_per_s": r["each"],
             "against_1_job": r["total"] / base if base else None, "from_log": result is None} for r in rows]


def decoding(result: Any, log: Path) -> list[dict[str, Any]]:
    rows = [{"beam": d["beam"], "batch": d["batch"], "in_flight": d.get("in_flight", 1),
             "ours": d["ours"]["sentences_per_s"], "peer": d["peer"]["sentences_per_s"]}
            for d in (result or {}).get("decode", [])]
    if not rows:  # peer_opennmt.py's progress: "  beam 12, batch 30, 2 in flight: ours 610.2 sent/s, peer 237.1 sent/s"
        rows = [{"beam": int(m[1]), "batch": int(m[2]), "in_flight": int(m[3] or 1), "ours": float(m[4]),
                 "peer": float(m[5])}
                for m in log_lines(log, r"^  beam (\d+), batch (\d+)(?:, (\d+) in flight)?: ours ([\d.]+) sent/s, "
                                        r"peer ([\d.]+) sent/s$")]
    return [{"beam": r["beam"], "batch": r["batch"], "in_flight": r["in_flight"], "ours_sentences_per_s": r["ours"],
             "peer_sentences_per_s": r["peer"], "ratio": r["ours"] / r["peer"] if r["peer"] else None,
             "from_log": result is None} for r in rows]


def train_speed(result: Any) -> dict[str, Any] | None:
    rows = (result or {}).get("results", [])
    keys = ("arch", "scale", "parameters", "batch", "steps", "bf16", "cuda_graphs", "tgt_tokens_per_s", "s_per_step",
            "peak_mb", "graphs_recorded", "record_s")
    return {k: rows[0].get(k) for k in keys} if rows else None


def perplexities(model_dir: Path) -> dict[str, Any] | None:
    """Each evaluation of ``train_log.csv`` (one per epoch), and the device ``env.json`` names."""
    try:
        with (model_dir / "train_log.csv").open(encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError:
        return None
    env = read_json(model_dir / "env.json") or {}
    return {"device": env.get("cuda_device") or env.get("device"),
            "log": [{"epoch": int(r["epoch"]), "step": int(r["step"]), "dev_ppl": float(r["dev_ppl"]),
                     "train_ppl": float(r["train_ppl"]) if r["train_ppl"] else None,
                     "target_tokens_per_s": float(r["target_tokens_per_s"])} for r in rows]}


def machine() -> dict[str, Any]:
    def out(cmd: list[str]) -> str | None:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip() or None
        except (OSError, subprocess.SubprocessError):
            return None

    root = Path(__file__).resolve().parent.parent
    return {"gpu": out(["nvidia-smi", "-L"]) or "none", "python": platform.python_version(),
            "torch": out([sys.executable, "-c", "import torch; print(torch.__version__)"]),
            "commit": out(["git", "-C", str(root), "describe", "--always", "--dirty"]) or "unknown (no .git here)",
            "cpus": os.cpu_count(), "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def targets(s: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue #45's targets beside what was measured. ``met`` is None where nothing was, and for
    every speed of a tiny run (its shapes are not the targets')."""
    def row(target: str, measured: str | None, met: bool | None, speed: bool = True) -> dict[str, Any]:
        return {"target": target, "measured": measured or "not measured",
                "met": None if speed and s["mode"] == "tiny" else met}

    rows = []
    for batch in sorted({d["batch"] for d in s["decoding"] if d["beam"] == 12} or {30, 1}, reverse=True):
        found = [d for d in s["decoding"] if d["beam"] == 12 and d["batch"] == batch and d["ratio"] is not None]
        rows.append(row(f"beam-12 decoding, batch {batch}: ≥ {DECODE_RATIO:g}× OpenNMT-py sentences/s, paper scale, "
                        f"float32", ", ".join(f"{times(d['ratio'])} ({d['in_flight']} in flight)" for d in found),
                        max(d["ratio"] for d in found) >= DECODE_RATIO if found else None))
    at4 = next((r["against_1_job"] for r in s["gpu_share"] if r["jobs"] == 4 and r["against_1_job"]), None)
    rows.append(row(f"4 training jobs on one GPU: ≥ {SHARE_RATIO_AT_4:g}× the target tokens/s of 1 job",
                    at4 and times(at4), at4 >= SHARE_RATIO_AT_4 if at4 else None))
    ts = s["train_speed"]
    speed = ts and f"{ts['tgt_tokens_per_s']:,.0f} ({'bf16' if ts['bf16'] else 'float32'}, {ts['scale']} scale)"
    rows.append(row(f"bf16 paper-scale training, Luong 4×1000 global+feed: ≥ {BF16_TOKENS_PER_S:,} target tokens/s",
                    speed, ts["tgt_tokens_per_s"] >= BF16_TOKENS_PER_S if ts and ts["bf16"] else None))
    t = s["cuda_tests"]
    rows.append(row("the CUDA tests pass", t and f"{t['passed']} passed, {t['failed']} failed, {t['errors']} errors, "
                                               f"{t['skipped']} skipped",
                    t["failed"] + t["errors"] == 0 and t["passed"] > 0 if t else None, speed=False))
    return rows


def summarize(work: Path, mode: str) -> dict[str, Any]:
    res, logs = work / "results", work / "logs"
    s: dict[str, Any] = {
        "issue": 45, "mode": mode, "machine": machine(), "steps": read_steps(work),
        "cuda_tests": cuda_tests(res / "e-cuda-tests.xml"),
        "gpu_share": gpu_share(read_json(res / "a-gpu-share.json"), logs / "a-gpu-share.log"),
        "decoding": decoding(read_json(res / "b-peer-decode.json"), logs / "b-peer-decode.log"),
        "train_speed": train_speed(read_json(res / "c-train-speed.json")),
        "dev_perplexity": {p: perplexities(work / "models" / p) for p in ("fp32", "bf16")},
    }
    s["targets"] = targets(s)
    return s


def number(x: Any, digits: int = 0) -> str:
    return "—" if x is None else f"{x:,.{digits}f}"


def times(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}×"


def markdown(s: dict[str, Any]) -> str:
    def table(head: list[str], rows: list[list[Any]]) -> list[str]:
        return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
                *("| " + " | ".join(str(c) for c in row) + " |" for row in rows), ""]

    met = {True: "**yes**", False: "**no**", None: "—"}
    m = s["machine"]
    out = [f"# Device checks (issue #{s['issue']}), {s['mode']} run", "",
           f"{m['date']}; GPU: {m['gpu']}; torch {m['torch']}, Python {m['python']}, {m['cpus']} CPUs; "
           f"commit {m['commit']}.", ""]
    if s["mode"] == "tiny":
        out += ["Tiny run: every step shrunk to check the script, not the machine; the numbers mean nothing.", ""]
    out += ["## Targets", "", *table(["target", "measured", "met?"],
                                     [[t["target"], t["measured"], met[t["met"]]] for t in s["targets"]])]
    out += ["## Steps", "", *table(["step", "what", "budget s", "exit code", "wall s", "note"], [
        [st["step"], st["what"], number(st["budget_s"]), number(st["exit_code"]), number(st["wall_s"], 1), st["note"]]
        for st in s["steps"]])]
    def heading(title: str, rows: list[dict[str, Any]]) -> list[str]:
        return [f"## {title}" + (" (from the step's log: it ended before writing its JSON)" if rows[0]["from_log"]
                                 else ""), ""]

    if s["gpu_share"]:
        out += [*heading("(a) Training jobs sharing the GPU", s["gpu_share"]), *table(
            ["jobs", "tgt tok/s of each", "tgt tok/s in all", "against 1 job"],
            [[r["jobs"], ", ".join(number(x) for x in r["per_job_tgt_tokens_per_s"]),
              number(r["total_tgt_tokens_per_s"]), times(r["against_1_job"])] for r in s["gpu_share"]])]
    if s["decoding"]:
        out += [*heading("(b) Decoding sentences/s, ours against OpenNMT-py", s["decoding"]), *table(
            ["beam", "batch", "ours: batches in flight", "ours sent/s", "peer sent/s", "ours/peer"],
            [[d["beam"], d["batch"], d["in_flight"], number(d["ours_sentences_per_s"], 1),
              number(d["peer_sentences_per_s"], 1), times(d["ratio"])] for d in s["decoding"]])]
    ts = s["train_speed"]
    if ts:
        out += ["## (c) Paper-scale training", "", *table(
            ["arch", "scale", "params", "bf16", "CUDA graphs", "tgt tok/s", "s/step", "peak MB", "graphs", "record s"],
            [[ts["arch"], ts["scale"], number(ts["parameters"]), ts["bf16"], ts["cuda_graphs"],
              number(ts["tgt_tokens_per_s"]), number(ts["s_per_step"], 3), number(ts["peak_mb"]),
              ts["graphs_recorded"], number(ts["record_s"], 1)]])]
    ppl = s["dev_perplexity"]
    epochs = sorted({(r["epoch"], r["step"]) for p in ppl.values() if p for r in p["log"]})
    if epochs:
        def dev(p: str, key: tuple[int, int]) -> str:
            rows = [r for r in (ppl[p] or {}).get("log", []) if (r["epoch"], r["step"]) == key]
            return number(rows[0]["dev_ppl"], 3) if rows else "—"

        devices = "; ".join(f"{p}: {ppl[p]['device']}" for p in ppl if ppl[p])
        out += ["## (d) multi30k-deen global-general-feed, seed 1: dev perplexity", "", f"Trained on {devices}.", "",
                *table(["epoch", "step", "float32", "bf16"], [[e, st, dev("fp32", (e, st)), dev("bf16", (e, st))]
                                                             for e, st in epochs])]
    t = s["cuda_tests"]
    if t and t["failed_tests"]:
        out += ["## (e) Failed CUDA tests", "", *(f"- `{name}`" for name in t["failed_tests"]), ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("data", help="an experiment's corpus, prepared splits and vocabularies (the rules' commands)")
    d.add_argument("config", type=Path)
    d.add_argument("--cache", type=Path, required=True, help="the download cache holding the corpus")
    d.add_argument("--workdir", type=Path, required=True, help="results/<experiment>/ goes here")
    d.add_argument("--head", type=int, default=None, help="keep the first N lines of each raw split")
    s = sub.add_parser("summary", help="summary.json and summary.md of a run's folder")
    s.add_argument("work", type=Path)
    s.add_argument("--out", type=Path, required=True)
    s.add_argument("--mode", choices=["full", "tiny"], default="full")
    args = p.parse_args(argv)
    if args.command == "data":
        args.workdir.mkdir(parents=True, exist_ok=True)
        config, cache = args.config.resolve(), args.cache.resolve()
        os.chdir(args.workdir)  # where the workflow would run: results/<experiment>/ is relative to it
        make_data(config, cache, args.head)
        return 0
    summary = summarize(args.work, args.mode)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False), encoding="utf-8")
    (args.out / "summary.md").write_text(markdown(summary), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
