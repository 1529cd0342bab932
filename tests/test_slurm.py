"""The workflow on a real Slurm cluster through the repository's profile (``slurm/``).

- ``test_profile_dry_run_maps_resources``: ``snakemake --cores 8 --profile slurm -n`` from a
  checkout's root; every job gets its rule's partition, runtime and memory from the profile,
  its GPU (or its share of one: ``jobs_per_gpu``) from the rule, and its site settings from the
  environment (no cluster needed).

A single-node cluster (Debian's slurmctld, slurmd, slurmdbd + MariaDB, munge; see
tests/slurm/cluster.py) is started for the others and stopped after them:

- ``test_workflow_through_slurm``: ``snakemake --cores 8 --profile slurm`` runs the whole tiny
  workflow (tests/configs/tiny.yaml) in a copy of the repository; every job must have gone
  through sbatch (ids in Snakemake's log; Slurm's accounting records, with the profile's time,
  memory, requeue flag and GPU; one Slurm log per job), and every result must equal a local run
  (``snakemake --cores 2``, no profile, which also shows that local runs ignore ``gpu``);
- ``test_preempted_training_resumes``: a training job is requeued by Slurm mid-training, then
  sent SIGTERM (``scancel --signal=TERM``) and retried by Snakemake (the profile's ``retries``);
  each time training resumes from its checkpoint, and the final weights equal an uninterrupted
  run's;
- ``test_a_job_cancelled_by_hand_is_retried``: a plain ``scancel`` of a training job ends it
  CANCELLED; Snakemake sees it end (the profile's squeue status command) and submits it again,
  and training resumes from its checkpoint;
- ``test_gpu_jobs_share_a_gpu_through_slurm``: with ``jobs_per_gpu: 2`` and the cluster's
  ``shard`` GRES, training jobs ask for and get half of a GPU's shards, not a whole GPU.

Needs root and apt-get (the packages are installed when missing). Without them the cluster
tests skip with the reason; with NMT_REQUIRE_SLURM=1 (CI) they fail instead. Run:
``.venv/bin/python -m pytest tests/test_slurm.py -q -x -m slurm -rs`` (docs/slurm.md).
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, load_script

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(1500)]

TINY = ROOT / "tests" / "configs" / "tiny.yaml"
PREEMPT = ROOT / "tests" / "slurm" / "preempt.yaml"
#: rules that ask the cluster for a GPU (slurm/config.yaml); every other rule is CPU-only
GPU_RULES = {"train_model", "translate", "test_perplexity", "export_attention"}
#: generous bounds: the workflow takes minutes; a hang must fail, not block CI
RUN_TIMEOUT = 900
PREEMPT_TIMEOUT = 600
#: how long a SIGTERMed job may run on after its trainer's checkpoint before it gets SIGKILL
GRACE_SECONDS = 60

cluster_mod = load_script(ROOT / "tests" / "slurm" / "cluster.py", "nmt_slurm_cluster")


def _unavailable(reason: str) -> None:
    if os.environ.get("NMT_REQUIRE_SLURM") == "1":
        pytest.fail(f"NMT_REQUIRE_SLURM=1 but the Slurm cluster cannot run here: {reason}")
    pytest.skip(f"Slurm integration test skipped: {reason}")


# -- helpers ---------------------------------------------------------------------------------------
def _workdir(path: Path) -> Path:
    """A copy of what a user's checkout holds for running the workflow: Snakefile, workflow/,
    config/ and the slurm/ profile (results then land in the copy, not in the repository)."""
    path.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ROOT / "Snakefile", path / "Snakefile")
    for d in ("workflow", "config", "slurm"):
        shutil.copytree(ROOT / d, path / d, ignore=shutil.ignore_patterns("__pycache__"))
    return path


def _local_env() -> dict[str, str]:
    """The environment of a plain local run: no Slurm, no default profile."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SNAKEMAKE_PROFILE", "NMT_SLURM_"))}


def _slurm_env(cluster) -> dict[str, str]:
    """The cluster's client environment plus the profile's site settings (slurm/config.yaml)."""
    env = {k: v for k, v in cluster.env.items() if k != "SNAKEMAKE_PROFILE"}
    env.update(NMT_SLURM_ACCOUNT=cluster_mod.ACCOUNT, NMT_SLURM_PARTITION=cluster_mod.CPU_PARTITION,
               NMT_SLURM_GPU_PARTITION=cluster_mod.GPU_PARTITION)
    env.pop("NMT_SLURM_GPU_MODEL", None)
    env.pop("NMT_SLURM_GPU_SHARDS", None)
    return env


class Run:
    """A Snakemake process in its own process group, its output in a log file."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str], log: Path) -> None:
        self.args, self.cwd, self.log = args, cwd, log
        self.t0 = time.monotonic()
        with open(log, "wb") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "snakemake", *args], cwd=cwd, env=env,
                                         stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        self.seconds: float | None = None  # wall time, set when the process ends
        self._reaper = threading.Thread(target=self._reap, daemon=True)
        self._reaper.start()

    def _reap(self) -> None:
        self.proc.wait()
        self.seconds = time.monotonic() - self.t0

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait(self, timeout: float) -> int:
        """The exit status; a run past ``timeout`` is stopped (SIGTERM: Snakemake cancels its Slurm
        jobs) and the test fails."""
        try:
            rc = self.proc.wait(max(1.0, timeout - (time.monotonic() - self.t0)))
        except subprocess.TimeoutExpired:
            self.stop()
            pytest.fail(f"snakemake {' '.join(self.args)} did not finish within {timeout:.0f} s "
                        f"(stopped)\n{_tail(self.text())}")
        self._reaper.join(10)
        return rc

    def stop(self) -> None:
        if self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def check(self, timeout: float) -> str:
        rc = self.wait(timeout)
        text = self.text()
        assert rc == 0, f"snakemake {' '.join(self.args)} exited {rc}\n{_tail(text)}"
        return text


def _tail(text: str, lines: int = 60) -> str:
    return "\n".join(text.splitlines()[-lines:])


SUBMITTED = re.compile(r"^Job (\d+) has been submitted with SLURM jobid (\d+) \(log: (.+)\)\.$", re.M)
RULE_BLOCK = re.compile(r"^(local)?(?:rule|checkpoint) (\w+):\n(?:    .*\n)*?    jobid: (\d+)$", re.M)


def _rule_blocks(text: str) -> list[tuple[bool, str, int]]:
    """(local?, rule, Snakemake job id) of every job Snakemake started, in order."""
    return [(bool(m.group(1)), m.group(2), int(m.group(3))) for m in RULE_BLOCK.finditer(text)]


def _sacct(cluster, ids: list[str]) -> dict[str, dict[str, str]]:
    """Slurm's accounting records of jobs (the database may lag the job's end by a moment)."""
    fields = ["JobIDRaw", "JobName", "State", "ExitCode", "Partition", "Account", "AllocTRES", "Comment",
              "SubmitLine"]
    deadline = time.monotonic() + 30
    while True:
        out = cluster.cmd("sacct", "-X", "-P", "-n", "-j", ",".join(ids), f"--format={','.join(fields)}").stdout
        records = {}
        for line in out.splitlines():
            values = line.split("|", len(fields) - 1)  # SubmitLine last: it may hold "|"
            records[values[0]] = dict(zip(fields, values))
        done = all(records.get(i, {}).get("State", "").split(" ")[0] in ("COMPLETED", "FAILED", "CANCELLED")
                   for i in ids)  # "CANCELLED by 0"
        if done or time.monotonic() > deadline:
            return records
        time.sleep(1)


def _json_without_timing(path: Path):
    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if "time" not in k}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x

    return strip(json.loads(path.read_text()))


def _weights(path: Path) -> dict:
    import torch

    return torch.load(path, map_location="cpu", weights_only=True)["model"]


def _assert_same_weights(a: Path, b: Path) -> None:
    import torch

    wa, wb = _weights(a), _weights(b)
    assert wa.keys() == wb.keys(), f"{a} and {b} hold different parameters"
    differ = [k for k in wa if not torch.equal(wa[k], wb[k])]
    assert not differ, f"{a} and {b} differ in {differ}"


# -- fixtures ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    if os.geteuid() != 0:
        _unavailable("needs root (slurmctld/slurmd are started directly, without systemd)")
    try:
        cluster_mod.ensure_installed(log=lambda msg: print(msg, file=sys.stderr))
    except cluster_mod.ClusterUnavailable as err:
        _unavailable(str(err))
    c = cluster_mod.SlurmCluster(tmp_path_factory.mktemp("slurm-cluster"))
    try:
        c.start()
        yield c
    finally:
        procs = dict(c.procs)
        c.stop()
        still = [name for name, p in procs.items() if p.poll() is None]
        assert not still, f"daemons still running after stop: {still}"


@pytest.fixture(scope="module")
def local_tiny(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The reference: the same workflow and config run locally, without a profile. Started when
    the module starts so that it overlaps the cluster's start-up and the Slurm run's waits."""
    wd = _workdir(tmp_path_factory.mktemp("local-tiny"))
    run = Run(["--cores", "2", "--configfile", str(TINY)], wd, _local_env(), wd / "snakemake.log")
    yield run
    run.stop()


# -- tests ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("jobs_per_gpu, shards", [(1, None), (4, 8)])
def test_profile_dry_run_maps_resources(tmp_path: Path, jobs_per_gpu: int, shards: int | None) -> None:
    """``snakemake --cores 8 --profile slurm -n`` from a checkout's root (no cluster needed): the
    profile is found, its site settings come from the environment, and every job gets the
    partition, runtime and memory of its rule in slurm/config.yaml; a GPU job a whole GPU
    (``gpu=1`` of the site's model), or with ``jobs_per_gpu: 4`` on a site of 8 shards per GPU, a
    quarter of them (``gres=shard:2``), and ``gpu_pct`` its share in percent for local runs."""
    wd = _workdir(tmp_path / "checkout")
    env = _local_env()
    env.update(NMT_SLURM_ACCOUNT="acct1", NMT_SLURM_PARTITION="cpuq", NMT_SLURM_GPU_PARTITION="gpuq",
               NMT_SLURM_GPU_MODEL="a100")
    if shards:
        env["NMT_SLURM_GPU_SHARDS"] = str(shards)
    text = Run(["--cores", "8", "--profile", "slurm", "-n", "--config", f"jobs_per_gpu={jobs_per_gpu}"], wd, env,
               wd / "dry.log").check(RUN_TIMEOUT)
    assert "Using profile slurm for setting default command line arguments" in text
    profile = yaml.safe_load((ROOT / "slurm" / "config.yaml").read_text())
    jobs = re.findall(r"^(local)?(?:rule|checkpoint) (\w+):\n(?:    .*\n)*?    resources: (.*)$", text, re.M)
    rules = {rule for _, rule, _ in jobs if rule != "all"}
    assert GPU_RULES <= rules and {"prepare_split", "score_translation", "make_report"} <= rules, rules
    assert rules <= set(profile["set-resources"]), rules - set(profile["set-resources"])
    for local, rule, resources in jobs:
        if rule == "all":
            continue
        assert not local, f"{rule} would run on the submit host"
        res = dict(item.split("=", 1) for item in resources.split(", "))
        want = profile["set-resources"][rule]
        assert res["slurm_account"] == "acct1", (rule, res)
        assert res["runtime"] == str(want["runtime"]) and res["mem_mb"] == str(want["mem_mb"]), (rule, res)
        if rule in GPU_RULES and jobs_per_gpu == 1:
            assert (res["slurm_partition"], res.get("gpu"), res.get("gpu_model"), res.get("gres"),
                    res["gpu_pct"]) == ("gpuq", "1", "a100", None, "100"), res
        elif rule in GPU_RULES:
            assert (res["slurm_partition"], res.get("gpu"), res.get("gpu_model"), res.get("gres"),
                    res["gpu_pct"]) == ("gpuq", None, None, "shard:2", "25"), res
        else:
            assert res["slurm_partition"] == "cpuq" and not {"gpu", "gres", "gpu_pct"} & set(res), (rule, res)
    assert not (wd / "results").exists()


def test_workflow_through_slurm(local_tiny: Run, cluster, tmp_path: Path) -> None:
    wd = _workdir(tmp_path / "slurm-tiny")
    t0 = time.monotonic()
    run = Run(["--cores", "8", "--profile", "slurm", "--configfile", str(TINY),
               "--slurm-init-seconds-before-status-checks", "2", "--slurm-keep-successful-logs"],
              wd, _slurm_env(cluster), wd / "snakemake.log")
    text = run.check(RUN_TIMEOUT)
    slurm_seconds = time.monotonic() - t0
    local_text = local_tiny.check(RUN_TIMEOUT)

    assert "Using profile slurm for setting default command line arguments" in text, _tail(text, 200)
    # every job but the `all` target went through sbatch, one submission each
    blocks = _rule_blocks(text)
    remote = [(rule, jobid) for local, rule, jobid in blocks if not local]
    assert {rule for local, rule, _ in blocks if local} <= {"all"}, blocks
    submitted = {int(j): (sid, Path(log)) for j, sid, log in SUBMITTED.findall(text)}
    assert {jobid for _, jobid in remote} == set(submitted), (remote, submitted)
    slurm_ids = [sid for sid, _ in submitted.values()]
    assert len(set(slurm_ids)) == len(remote) > 0
    # the same jobs as the local run (which also ran the GPU rules: `gpu` is ignored locally)
    local_rules = sorted(rule for local, rule, _ in _rule_blocks(local_text) if rule != "all")
    assert sorted(rule for rule, _ in remote) == local_rules
    assert GPU_RULES <= set(local_rules)

    # Slurm's own records: accounting, one per job, under this run's job name, submitted with
    # the profile's resources (set-resources: runtime in minutes, mem_mb; a GPU for GPU rules)
    run_id = re.search(r"^SLURM run ID: (\S+)$", text, re.M).group(1)
    profile = yaml.safe_load((ROOT / "slurm" / "config.yaml").read_text())
    assert profile["executor"] == "slurm" and profile["slurm-requeue"] is True and profile["retries"] >= 1
    records = _sacct(cluster, slurm_ids)
    rule_of = {jobid: rule for rule, jobid in remote}
    for jobid, (sid, log) in submitted.items():
        rec, rule = records.get(sid), rule_of[jobid]
        assert rec is not None, f"Slurm has no record of job {sid} ({rule})"
        assert rec["State"] == "COMPLETED" and rec["ExitCode"] == "0:0", rec
        assert rec["JobName"] == run_id and rec["Comment"].startswith(f"rule_{rule}"), rec
        assert rec["Account"] == cluster_mod.ACCOUNT, rec
        if rule in GPU_RULES:
            assert rec["Partition"] == cluster_mod.GPU_PARTITION and "gres/gpu=1" in rec["AllocTRES"], rec
        else:
            assert rec["Partition"] == cluster_mod.CPU_PARTITION and "gres/gpu" not in rec["AllocTRES"], rec
        line, want = rec["SubmitLine"], profile["set-resources"][rule]
        assert line.startswith("sbatch ") and " --requeue " in line, line
        assert f" -t {want['runtime']} " in line and f" --mem {want['mem_mb']} " in line, (rule, want, line)
        assert (" --gpus=1 " in line) == (rule in GPU_RULES), line
        # the job's Slurm log: the jobstep's Snakemake ran this very job on the node
        assert log.exists(), f"no Slurm log {log} for job {sid} ({rule})"
        assert re.search(rf"^(local)?(?:rule|checkpoint) {rule}:", log.read_text(errors="replace"), re.M), log

    # results equal the local run's
    mine, ref = wd / "results" / "tiny", local_tiny.cwd / "results" / "tiny"
    compared = 0
    for path in sorted(ref.rglob("*")):
        rel = path.relative_to(ref)
        other = mine / rel
        if path.is_dir() or "checkpoints" in rel.parts:
            continue
        assert other.exists(), f"{rel} is missing from the Slurm run"
        if rel.parts[0] in ("corpus", "data", "vocab", "translations") and path.suffix in (".txt", ".src", ".tgt",
                                                                                            ".align", ".tsv"):
            assert other.read_bytes() == path.read_bytes(), f"{rel} differs between Slurm and local runs"
        elif rel.suffix == ".links":
            assert other.read_bytes() == path.read_bytes(), f"{rel} differs"
        elif rel.parts[0] == "scores" and rel.suffix == ".json":
            assert _json_without_timing(other) == _json_without_timing(path), f"{rel} differs"
        elif rel.name == "model.pt":
            _assert_same_weights(other, path)
        else:
            continue
        compared += 1
    scores = sorted(ref.glob("scores/*/*/test.beam*.json"))
    assert scores and compared > 20
    bleu = {str(p.relative_to(ref)): json.loads(p.read_text())["bleu"]["bleu"] for p in scores}
    print(f"\n[slurm] {len(slurm_ids)} jobs through sbatch (Slurm job ids {min(map(int, slurm_ids))}-"
          f"{max(map(int, slurm_ids))}); Slurm run {slurm_seconds:.0f} s, local run {local_tiny.seconds:.0f} s; "
          f"{compared} result files equal; BLEU {bleu}", file=sys.stderr)


def _train_job(cluster) -> tuple[str, str] | None:
    """(Slurm job id, state) of the queued or running train_model job, if any."""
    out = cluster.cmd("squeue", "-h", "-o", "%i|%T|%k", check=False).stdout
    for line in out.splitlines():
        sid, state, comment = line.split("|", 2)
        if comment.startswith("rule_train_model"):
            return sid, state
    return None


def _kill_step(cluster, job: str, step: str) -> None:
    """SIGKILL every process of step ``step`` of Slurm job ``job`` (``scontrol listpids``, on the
    test cluster's one node)."""
    out = cluster.cmd("scontrol", "listpids", job, check=False).stdout
    for line in out.splitlines()[1:]:  # PID JOBID STEPID LOCALID GLOBALID
        pid, _, stepid = line.split()[:3]
        if stepid == step:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)


def _wait_for(what: str, cond, run: Run, timeout: float = PREEMPT_TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and run.proc.poll() is None:
        value = cond()
        if value:
            return value
        time.sleep(0.2)
    run.stop()
    pytest.fail(f"timed out waiting for {what}\n{_tail(run.text())}")


def test_the_cluster_kills_what_its_jobs_leave_behind(tmp_path: Path) -> None:
    """At its stop the cluster kills every process that carries its SLURM_CONF (a job's orphan
    outlives the job under proctrack/linuxproc), and no other."""
    conf = str(tmp_path / "slurm.conf")
    ours = subprocess.Popen(["sleep", "300"], env={**os.environ, "SLURM_CONF": conf})
    other = subprocess.Popen(["sleep", "300"], env={**os.environ, "SLURM_CONF": conf + ".other"})
    try:
        left = cluster_mod.kill_left_behind(conf)
        assert ours.wait(10) == -signal.SIGKILL
        assert other.poll() is None
        assert left == [f"{ours.pid}: sleep 300"]
    finally:
        for proc in (ours, other):
            proc.kill()
            proc.wait()


def test_preempted_training_resumes(cluster, tmp_path: Path) -> None:
    """Two interruptions of one training job, both resumed from its checkpoint:

    1. Slurm requeues the running job (``scontrol requeue``, what preemption with
       PreemptMode=REQUEUE does; the cluster has JobRequeue=0, so only the profile's
       ``slurm-requeue`` makes it possible): the same Slurm job runs again;
    2. the job gets SIGTERM (``scancel --signal=TERM``): the trainer writes a checkpoint and
       exits 143, the job fails, and Snakemake submits it again (the profile's ``retries``).
       The job step's own Snakemake may hang on that SIGTERM (docs/reliability.md, L5): where
       the job still runs GRACE_SECONDS after the trainer's checkpoint, the test kills the step's
       processes, as Slurm does once a time limit's KillWait or a preemption's GraceTime is over.
       (A plain ``scancel``, which sacct calls "CANCELLED by <uid>", is
       :func:`test_a_job_cancelled_by_hand_is_retried`'s.)
    """
    model = "results/preempt/models/base/seed1/model.pt"
    last = "results/preempt/models/base/seed1/checkpoints/last.pt"
    train_log = "logs/preempt/train_model/base.seed1.log"
    resumed = re.compile(r"resuming from \S+: epoch (\d+), batch (\d+), step (\d+)")
    # the training data, made locally (not the subject here)
    wd = _workdir(tmp_path / "slurm")
    Run([model, "--cores", "2", "--configfile", str(PREEMPT), "--omit-from", "train_model"], wd, _local_env(),
        wd / "prepare.log").check(RUN_TIMEOUT)
    assert not (wd / model).exists() and (wd / "results/preempt/vocab/tgt.txt").exists()
    ref = tmp_path / "reference"
    shutil.copytree(wd, ref, symlinks=True)  # copy2 keeps mtimes: the data is not remade
    # the uninterrupted reference training, locally, while the Slurm one runs
    reference = Run([model, "--cores", "1", "--configfile", str(PREEMPT)], ref, _local_env(), ref / "snakemake.log")

    run = Run([model, "--cores", "8", "--profile", "slurm", "--configfile", str(PREEMPT),
               "--slurm-init-seconds-before-status-checks", "2", "--slurm-keep-successful-logs"],
              wd, _slurm_env(cluster), wd / "snakemake.log")

    def log_text() -> str:
        return (wd / train_log).read_text(errors="replace") if (wd / train_log).exists() else ""

    # 1. requeue once the job trains and has a checkpoint; Slurm holds a requeued job for two
    #    minutes (BeginTime), so release it at once
    job = _wait_for("the training job to run and write a checkpoint",
                    lambda: (j := _train_job(cluster)) and j[1] == "RUNNING" and (wd / last).exists() and j, run)
    first = job[0]
    cluster.cmd("scontrol", "requeue", first)
    _wait_for("the requeued job to be pending", lambda: (j := _train_job(cluster)) and j[1] == "PENDING", run)
    cluster.cmd("scontrol", "update", f"JobId={first}", "StartTime=now")
    # 2. once the requeued run has resumed training, SIGTERM it
    m1 = _wait_for("the requeued job to resume training", lambda: resumed.search(log_text()), run)
    requeued_at = int(m1.group(3))
    assert _train_job(cluster) == (first, "RUNNING")
    cluster.cmd("scancel", "--signal=TERM", first)
    _wait_for("the trainer's checkpoint on SIGTERM", lambda: "SIGTERM: checkpoint written" in log_text(), run)
    deadline = time.monotonic() + GRACE_SECONDS
    while _train_job(cluster) == (first, "RUNNING") and time.monotonic() < deadline:
        time.sleep(0.5)
    if _train_job(cluster) == (first, "RUNNING"):
        _kill_step(cluster, first, "0")
    text = run.check(PREEMPT_TIMEOUT)
    reference.check(PREEMPT_TIMEOUT)

    # the job was submitted twice: the requeued-then-SIGTERMed one and Snakemake's retry
    train_jobs = [int(j) for _, rule, j in _rule_blocks(text) if rule == "train_model"]
    ids = [sid for j, sid, _ in SUBMITTED.findall(text) if int(j) in train_jobs]
    assert len(ids) == 2 and ids[0] == first, (ids, first, _tail(text))
    assert "Trying to restart job" in text and "SIGTERM: checkpoint written at step" in text, _tail(text)
    records = _sacct(cluster, ids)
    assert records[ids[0]]["State"] == "FAILED", records
    assert records[ids[1]]["State"] == "COMPLETED", records
    history = cluster.cmd("sacct", "-X", "-D", "-P", "-n", "-j", first, "--format=State").stdout.split()
    assert history[0] == "REQUEUED" and history[-1] == "FAILED", history
    # the retry resumed mid-training from the checkpoint
    m2 = resumed.search(log_text())
    assert m2, f"the retried training did not resume from {last}:\n{_tail(log_text())}"
    retried_at = int(m2.group(3))
    with open(wd / "results/preempt/models/base/seed1/train_log.csv") as f:
        rows = list(csv.DictReader(f))
    with open(ref / "results/preempt/models/base/seed1/train_log.csv") as f:
        ref_rows = list(csv.DictReader(f))
    total = int(ref_rows[-1]["step"])
    assert 0 < requeued_at <= retried_at < total, (requeued_at, retried_at, total)
    # ... and ended where the uninterrupted run did: same dev perplexities, same weights
    assert [(r["step"], r["dev_ppl"]) for r in rows] == [(r["step"], r["dev_ppl"]) for r in ref_rows]
    _assert_same_weights(wd / model, ref / model)
    print(f"\n[slurm] training job {first}: requeued, resumed at step {requeued_at}; SIGTERM, retry {ids[1]} "
          f"resumed at step {retried_at} of {total}; weights equal the uninterrupted run; Slurm run "
          f"{run.seconds:.0f} s", file=sys.stderr)


def test_a_job_cancelled_by_hand_is_retried(cluster, tmp_path: Path) -> None:
    """``scancel <job>`` of a running training job. sacct calls it "CANCELLED by <uid>", a state
    the Slurm plugin (2.8.0) takes for still running, so that Snakemake would wait for it for ever
    (docs/reliability.md, L6); through the profile's status command, squeue, it is CANCELLED, a
    failure: Snakemake submits the job again (``retries``) and the training resumes from its
    checkpoint. (The test cluster's MinJobAge is 300 s, above the 120 s under which the plugin
    would fall back to sacct.)"""
    model = "results/preempt/models/base/seed1/model.pt"
    last = "results/preempt/models/base/seed1/checkpoints/last.pt"
    train_log = "logs/preempt/train_model/base.seed1.log"
    wd = _workdir(tmp_path / "slurm")
    Run([model, "--cores", "2", "--configfile", str(PREEMPT), "--omit-from", "train_model"], wd, _local_env(),
        wd / "prepare.log").check(RUN_TIMEOUT)
    run = Run([model, "--cores", "8", "--profile", "slurm", "--configfile", str(PREEMPT),
               "--slurm-init-seconds-before-status-checks", "2"], wd, _slurm_env(cluster), wd / "snakemake.log")
    job = _wait_for("the training job to run and write a checkpoint",
                    lambda: (j := _train_job(cluster)) and j[1] == "RUNNING" and (wd / last).exists() and j, run)
    first = job[0]
    cluster.cmd("scancel", first)
    text = run.check(PREEMPT_TIMEOUT)

    train_jobs = [int(j) for _, rule, j in _rule_blocks(text) if rule == "train_model"]
    ids = [sid for j, sid, _ in SUBMITTED.findall(text) if int(j) in train_jobs]
    assert len(ids) == 2 and ids[0] == first, (ids, first, _tail(text))
    # the plugin saw the job end through squeue (through sacct, "CANCELLED by 0" never would)
    assert "SLURM status is: 'CANCELLED'" in text and "Trying to restart job" in text, _tail(text)
    records = _sacct(cluster, ids)
    assert records[ids[0]]["State"].startswith("CANCELLED"), records
    assert records[ids[1]]["State"] == "COMPLETED", records
    log = (wd / train_log).read_text(errors="replace")
    assert re.search(r"resuming from \S+: epoch \d+, batch \d+, step [1-9]", log), _tail(log)
    assert (wd / model).exists()
    print(f"\n[slurm] training job {first} cancelled by hand ({records[ids[0]]['State']}); retry {ids[1]} "
          f"resumed from its checkpoint and completed; Slurm run {run.seconds:.0f} s", file=sys.stderr)


def test_gpu_jobs_share_a_gpu_through_slurm(cluster, tmp_path: Path) -> None:
    """``jobs_per_gpu: 2`` on a site with shards (the test cluster: SHARDS_PER_GPU per GPU): the
    tiny experiment's GPU jobs up to its models go through sbatch with ``--gres=shard:2`` (half of
    a GPU's shards) instead of ``--gpus=1``, and Slurm's accounting shows the shards allocated."""
    wd = _workdir(tmp_path / "slurm-shared")
    env = _slurm_env(cluster)
    env["NMT_SLURM_GPU_SHARDS"] = str(cluster_mod.SHARDS_PER_GPU)
    models = [f"results/tiny/models/{v}/seed1/model.pt" for v in ("base", "global-general-feed")]
    text = Run([*models, "--cores", "8", "--profile", "slurm", "--configfile", str(TINY),
                "--config", "jobs_per_gpu=2", "--slurm-init-seconds-before-status-checks", "2"],
               wd, env, wd / "snakemake.log").check(RUN_TIMEOUT)
    blocks = _rule_blocks(text)
    submitted = {int(j): sid for j, sid, _ in SUBMITTED.findall(text)}
    train = [submitted[jobid] for local, rule, jobid in blocks if rule == "train_model"]
    assert len(train) == 2, _tail(text)
    others = [submitted[jobid] for local, rule, jobid in blocks if rule != "train_model" and jobid in submitted]
    records = _sacct(cluster, train + others)
    want = f"shard:{cluster_mod.SHARDS_PER_GPU // 2}"
    for sid in train:
        rec = records[sid]
        assert rec["State"] == "COMPLETED" and rec["Partition"] == cluster_mod.GPU_PARTITION, rec
        assert f"gres/shard={cluster_mod.SHARDS_PER_GPU // 2}" in rec["AllocTRES"], rec
        assert "gres/gpu=" not in rec["AllocTRES"], rec
        assert f" --gres={want} " in rec["SubmitLine"] + " " and " --gpus" not in rec["SubmitLine"], rec
    for sid in others:  # data preparation: no GPU, no shard
        assert "gres/" not in records[sid]["AllocTRES"], records[sid]
    for model in models:
        assert (wd / model).exists(), model

