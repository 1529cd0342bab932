"""Smoke tests of the benchmark scripts in benchmarks/: they run with tiny shapes and print their
tables. No timing is asserted here: speed targets are checked by running the scripts themselves
(benchmarks/README.md), never by timed tests."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SHARED

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "benchmarks"
sys.path.insert(0, str(BENCH))

import bench_common as bc  # noqa: E402


def run(script: str, *args: str, out: Path, check: bool = True) -> subprocess.CompletedProcess:
    # the scripts find shared/ through $NMTLIB_SHARED: hand them the one the tests found
    env = {**os.environ, "NMTLIB_BENCH_OUT": str(out), "OMP_NUM_THREADS": "1", "NMTLIB_SHARED": str(SHARED)}
    proc = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=600)
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_train_speed_prints_a_row_per_architecture(tmp_path):
    proc = run("train_speed.py", "--scale", "tiny", "--steps", "2", "--warmup", "1", "--json",
               str(tmp_path / "r.json"), out=tmp_path)
    table = [line for line in proc.stdout.splitlines() if line.startswith("| ")]
    assert table[0].startswith("| architecture | shape")
    assert {row.split("|")[1].strip() for row in table[1:]} == set(bc.ARCHS)
    assert "load average at start" in proc.stdout and "threads 1" in proc.stdout


def test_decode_speed_flexible_vs_global_table(tmp_path):
    proc = run("decode_speed.py", "--scale", "tiny", "--train-steps", "2", "--sentences", "3", "--beams", "2",
               "--batch-sizes", "2", "--corpus-size", "100", "--archs", "shu-baseline,shu-flexible",
               "--force-length", "4", "--repeat", "2", "--json", str(tmp_path / "d.json"), out=tmp_path)
    assert "| architecture | τ | beam |" in proc.stdout
    # --repeat: every setting decoded twice (in rounds); the median of the two is reported
    for r in json.loads((tmp_path / "d.json").read_text())["results"]:
        runs = r["ms_per_sentence_runs"]
        assert len(runs) == 2 and r["ms_per_sentence"] == pytest.approx(sum(runs) / 2)
    assert "Flexible Attention vs its global baseline" in proc.stdout
    main_table = proc.stdout.split("Flexible Attention vs its global baseline")[0]
    rows = [line.split("|") for line in main_table.splitlines() if line.startswith("| shu-")]
    assert len(rows) == 3  # baseline, flexible τ=∞, flexible τ=1.2
    assert all(float(r[8]) == 3.0 for r in rows)  # forced: 4 decoder steps = 3 tokens + <eos>


def test_peer_script_without_peer_says_how_to_install(tmp_path):
    proc = run("peer_opennmt.py", "--peer", str(tmp_path / "no-peer"), out=tmp_path, check=False)
    assert proc.returncode != 0
    assert "setup_opennmt.sh" in proc.stderr


def test_peer_log_parser():
    import peer_opennmt

    log = (
        "[2026-11-22 18:57:13,619 INFO] * number of parameters: 8770128\n"
        "[2026-11-22 18:57:13,619 INFO]  * src vocab size = 6640\n"
        "[2026-11-22 18:57:13,619 INFO]  * tgt vocab size = 8784\n"
        "[..] Step 50/  300; acc: 3.6; ppl: 5210.6; xent: 8.6; lr: 1.00000; sents: 3200; bsz:  490/ 800/64;"
        "  28/ 35 tok/s;     51 sec;\n"
        "[..] Step 100/  300; acc: 7.5; ppl: 283.9; xent: 5.6; lr: 1.00000; sents: 3200; bsz:  490/ 800/64;"
        " 1600/2000 tok/s;     71 sec;\n"
        "[..] Step 150/  300; acc: 7.5; ppl: 283.9; xent: 5.6; lr: 1.00000; sents: 3200; bsz:  490/ 400/64;"
        " 1600/4000 tok/s;     76 sec;\n"
    )
    out = peer_opennmt.parse_peer_train(log, 50)
    assert out["parameters"] == 8770128 and (out["src_vocab"], out["tgt_vocab"]) == (6640, 8784)
    # windows after the first: 40000 tokens in 20 s + 20000 tokens in 5 s
    assert out["tgt_tokens_per_s"] == pytest.approx(60000 / 25)
    assert out["windows"] == [35, 2000, 4000]


@pytest.mark.slow
def test_peer_side_by_side_tiny(tmp_path):
    peer = Path(os.environ.get("PEER", Path.home() / ".cache" / "nmtlib-peer"))
    if not (peer / "venv" / "bin" / "python").exists():
        pytest.skip("OpenNMT-py peer venv not installed (bash benchmarks/peer/setup_opennmt.sh)")
    if not (SHARED / "data" / "small_parallel_enja" / "train.en").exists():
        pytest.skip("shared/data/small_parallel_enja not present")
    proc = run("peer_opennmt.py", "--scale", "tiny", "--train-steps", "2", "--report-every", "1",
               "--decode-sentences", "3", "--beams", "2", "--decode-batch-sizes", "3", "--decode-repeat", "2", "--train-repeat", "2",
               "--work", str(tmp_path / "w"), "--json", str(tmp_path / "peer.json"), out=tmp_path)
    assert "| training tgt tokens/s |" in proc.stdout
    assert "| decode sent/s, beam 2, batch 3 |" in proc.stdout
    # --train/decode-repeat: both toolkits ran twice; the reported speed is one of the runs (the lower middle)
    results = json.loads((tmp_path / "peer.json").read_text())
    for side in ("ours", "peer"):
        runs = results["train"][side]["runs_tgt_tokens_per_s"]
        assert len(runs) == 2 and results["train"][side]["tgt_tokens_per_s"] == min(runs)
    (decode,) = results["decode"]
    for side in ("ours", "peer"):
        runs = decode[side]["runs_sentences_per_s"]
        assert len(runs) == 2 and all(r > 0 for r in runs)
        assert decode[side]["sentences_per_s"] == min(runs)
        assert math.isnan(decode[side]["peak_gpu_mb"])  # CPU: no allocator peak, and no GPU rows
    assert "peak GPU MB" not in proc.stdout


@pytest.mark.slow
def test_peer_side_by_side_tiny_on_cuda_reports_both_gpu_peaks(tmp_path):
    import torch

    peer = Path(os.environ.get("PEER", Path.home() / ".cache" / "nmtlib-peer"))
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    if not (peer / "venv" / "bin" / "python").exists():
        pytest.skip("OpenNMT-py peer venv not installed (bash benchmarks/peer/setup_opennmt.sh)")
    if not (SHARED / "data" / "small_parallel_enja" / "train.en").exists():
        pytest.skip("shared/data/small_parallel_enja not present")
    proc = run("peer_opennmt.py", "--scale", "tiny", "--device", "cuda", "--cuda-graphs", "--train-steps", "2",
               "--report-every", "1", "--decode-sentences", "6", "--beams", "2", "--decode-batch-sizes", "3",
               "--work", str(tmp_path / "w"), "--json", str(tmp_path / "peer.json"), out=tmp_path)
    assert "| training peak GPU MB (allocator) |" in proc.stdout
    assert "| decode peak GPU MB, beam 2, batch 3 |" in proc.stdout
    results = json.loads((tmp_path / "peer.json").read_text())
    (decode,) = results["decode"]
    for side in ("ours", "peer"):
        assert results["train"][side]["peak_gpu_mb"] > 0 and decode[side]["peak_gpu_mb"] > 0


def test_peer_in_flight_takes_several_counts(capsys):
    import peer_opennmt

    assert peer_opennmt.parse_args([]).in_flight == [1]
    assert peer_opennmt.parse_args(["--in-flight", "1,2"]).in_flight == [1, 2]
    with pytest.raises(SystemExit):
        peer_opennmt.parse_args(["--in-flight", "2,0"])
    assert "comma-separated counts of at least 1, got '2,0'" in capsys.readouterr().err


def test_peer_gpu_peak_is_read_from_the_launchers_output():
    import peer_opennmt

    assert peer_opennmt.peer_peak_gpu_mb("...\nNMTLIB_PEAK_RSS_KB 2048\nNMTLIB_PEAK_GPU_MB 1536.5\n") == 1536.5
    assert math.isnan(peer_opennmt.peer_peak_gpu_mb("NMTLIB_PEAK_RSS_KB 2048\n"))


def test_cpu_bound_counts_every_matrix_product_forward_and_backward():
    import torch
    from cpu_bound import Products

    a = torch.randn(3, 5, requires_grad=True)
    w = torch.randn(5, 7, requires_grad=True)
    bias = torch.randn(7)
    q = torch.randn(2, 4, 6)
    with Products() as rec:
        y = torch.addmm(bias, a, w)  # 2·3·5·7
        y.sum().backward()  # grad of a: (3, 7)·(7, 5); grad of w: (5, 3)·(3, 7)
        torch.bmm(q, q.transpose(1, 2))  # 2 · 2·4·6·4
        torch.tanh(q)  # not a product
    assert rec.calls == 4
    assert rec.flops == 3 * (2 * 3 * 5 * 7) + 2 * 2 * 4 * 6 * 4
    assert rec.seconds > 0
    # --shapes: one entry per (operator, operand shapes and strides), with its calls and FLOPs per call
    assert sum(calls for calls, _, _ in rec.by_shape.values()) == 4
    assert sum(calls * flops for calls, _, flops in rec.by_shape.values()) == rec.flops
    forward = rec.by_shape[(torch.ops.aten.addmm.default, (((7,), (1,)), ((3, 5), (5, 1)), ((5, 7), (7, 1))))]
    assert forward[0] == 1 and forward[2] == 2 * 3 * 5 * 7


def test_cpu_bound_prints_the_bounds_against_the_peer(tmp_path):
    proc = run("cpu_bound.py", "--train-steps", "2", "--decode-sentences", "4", "--peak-size", "256",
               "--peer-train", "1000", "--peer-decode", "10", "--shapes", "3", "--json", str(tmp_path / "b.json"),
               out=tmp_path)
    rows = [line.split("|") for line in proc.stdout.splitlines() if line.startswith("| training")
            or line.startswith("| decoding")]
    assert len(rows) == 2
    result = json.loads((tmp_path / "b.json").read_text())
    train = result["training"]
    assert train["bound_peak_per_s"] >= train["bound_mkl_per_s"] * 0.5 and train["peer_per_s"] == 1000
    assert 10 < train["mflop_per_unit"] < 100  # 2×256 model, ~26 MFLOP of products per target token
    shapes = result["training shapes"]  # the 3 costliest product shapes, in place and alone
    assert len(shapes) == 3 and "| µs per call in place |" in proc.stdout
    assert [r["ms_per_step"] for r in shapes] == sorted((r["ms_per_step"] for r in shapes), reverse=True)
    for r in shapes:
        assert r["calls_per_step"] > 0 and r["us_alone"] > 0 and r["us_numpy"] > 0
        assert r["ms_per_step"] * 1e3 == pytest.approx(r["calls_per_step"] * r["us_in_place"])


def test_gpu_share_runs_jobs_side_by_side(tmp_path):
    """benchmarks/gpu_share.py on the CPU at tiny scale: one row per job count, each job's speed."""
    proc = run("gpu_share.py", "--jobs", "1,2", "--scale", "tiny", "--steps", "2", "--warmup", "1",
               "--json", str(tmp_path / "share.json"), out=tmp_path)
    results = json.loads((tmp_path / "share.json").read_text())["results"]
    assert [r["jobs"] for r in results] == [1, 2]
    assert [len(r["per_job_tgt_tokens_per_s"]) for r in results] == [1, 2]
    for r in results:
        assert r["total_tgt_tokens_per_s"] == pytest.approx(sum(r["per_job_tgt_tokens_per_s"]))
    assert "| 1 | " in proc.stdout and "| 2 | " in proc.stdout


def test_bf16_parity_verdicts_follow_the_issues_rule():
    """|mean bf16 − mean fp32| ≤ max(0.5, the larger seed spread): worked out by hand below."""
    from bf16_parity import verdict

    assert verdict([37.0, 37.2], [36.8, 36.6]) == ("parity", pytest.approx(-0.4), 0.5)
    # a 1.0 difference against seeds 2.0 apart (sd 1.414): within the spread
    word, diff, limit = verdict([30.0, 32.0], [32.0, 32.0])
    assert (word, diff, limit) == ("parity", pytest.approx(1.0), pytest.approx(2 ** 0.5))
    assert verdict([34.0, 34.1], [31.2, 31.3])[0] == "no parity"
    assert verdict([34.0], [33.0])[0] == "no parity so far (one seed)"
    assert verdict([], [33.0])[0] == "not yet: models missing"


def test_same_weights_tells_a_change_that_moves_no_weight_from_one_that_does(tmp_path, tiny_corpus):
    """Two commits on a clone of this repository: a comment in the model code (the same weights,
    exit 0) and Adam's eps 1e-8 → 1e-6 (every weight moves a little, exit 1)."""
    repo = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", str(REPO), str(repo)], check=True)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]

    def commit(path: str, old: str, new: str) -> None:
        file = repo / path
        text = file.read_text(encoding="utf-8")
        assert old in text
        file.write_text(text.replace(old, new, 1), encoding="utf-8")
        subprocess.run([*git, "commit", "-qam", path], check=True)

    commit("nmtlib/models/builder.py", "def init_uniform(", "# a comment moves no weight\ndef init_uniform(")
    commit("nmtlib/train/schedule.py", "torch.optim.Adam(params, lr=cfg.lr)",
           "torch.optim.Adam(params, lr=cfg.lr, eps=1e-6)")
    results = tmp_path / "results"
    for folder, name, link in (("data", f"{s}.{side}", f"{s}.{side}") for s in ("train", "dev") for side in ("src", "tgt")):
        (results / folder).mkdir(parents=True, exist_ok=True)
        (results / folder / name).symlink_to(tiny_corpus / link)
    (results / "vocab").mkdir()
    for side in ("src", "tgt"):
        (results / "vocab" / f"{side}.txt").symlink_to(tiny_corpus / f"vocab.{side}")
    config = tmp_path / "tiny.yaml"
    config.write_text(
        "experiment: tiny\ndata: {corpus: synthetic, src: src, tgt: tgt}\nseeds: [1]\n"
        "train: {optimizer: adam, lr: 0.01, loss_norm: tokens, batch_size: 32, epochs: 1}\n"
        "variants:\n  g: {embedding_size: 16, hidden_size: 16, layers: 1, attention: global, score: general}\n",
        encoding="utf-8")
    common = ["--repo", str(repo), "--config", str(config), "--results", str(results), "--variant", "g",
              "--steps", "4"]
    same = run("same_weights.py", "--old", "HEAD~2", "--new", "HEAD~1", *common, out=tmp_path)
    assert "same weights: all" in same.stdout, same.stdout + same.stderr
    moved = run("same_weights.py", "--old", "HEAD~2", "--new", "HEAD", *common, out=tmp_path, check=False)
    assert moved.returncode == 1 and "DIFFERENT weights" in moved.stdout, moved.stdout + moved.stderr


def test_driver_overhead_runs_each_setting_and_prints_its_row(tmp_path):
    """Two runs of two sleeping jobs, the default rate limit and one other: a row each, and the
    driver's CPU seconds measured (a Snakemake run costs CPU, so never zero)."""
    proc = run("driver_overhead.py", "--jobs", "2", "--seconds", "0.1", "--rounds", "1", "--timespans", "50/1s",
               "--json", str(tmp_path / "d.json"), out=tmp_path)
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ") and "---" not in line]
    assert [r.split("|")[1].strip() for r in rows[1:]] == ["100/1s (default)", "50/1s"], proc.stdout
    result = json.loads((tmp_path / "d.json").read_text())
    assert set(result["runs"]) == {"default", "50/1s"}
    assert all(cpu > 0 and wall >= 2 * 0.1 for runs in result["runs"].values() for wall, cpu in runs)
