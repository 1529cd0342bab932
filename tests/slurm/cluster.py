"""A real single-node Slurm cluster in a temporary folder, for tests and for trying the profile.

Debian's own daemons (``munged``, ``mariadbd``, ``slurmdbd``, ``slurmctld``, ``slurmd``) are
started directly as root, without systemd, each in the foreground under this process so that
``stop()`` ends exactly the processes it started. Everything lives under one folder: configs,
state, logs, the MUNGE socket and the MariaDB data; the daemons listen on free ports of
127.0.0.1, so the cluster touches nothing in /etc or /run and two clusters can coexist.

The cluster:

- one node with the machine's CPUs and memory (``slurmd -C``), ``DefMemPerCPU`` set so that a
  job without ``--mem`` does not take the whole node;
- ``GPUS`` "GPUs": a ``gpu`` GRES backed by placeholder files (the node has no GPU; Slurm only
  counts and hands them out, so GPU-requesting jobs can be scheduled), and ``SHARDS_PER_GPU``
  ``shard`` GRES on each (Slurm's way of letting several jobs share one GPU);
- partitions ``cpu`` (default) and ``gpu``, both on that node;
- accounting through ``slurmdbd`` + MariaDB, as on a production cluster, so ``sacct`` works
  (the Snakemake Slurm plugin's default status command) and an account ``nmt`` exists;
- ``ProctrackType=proctrack/linuxproc`` and ``TaskPlugin=task/none`` (no cgroups needed).

Command line, for trying ``--profile slurm`` by hand (as root)::

    python tests/slurm/cluster.py start /tmp/nmt-slurm   # prints the environment to export
    python tests/slurm/cluster.py stop /tmp/nmt-slurm
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: Debian packages providing the cluster (bookworm: Slurm 22.05, MariaDB 10.11).
PACKAGES = ["slurmctld", "slurmd", "slurm-client", "slurmdbd", "munge", "mariadb-server"]
#: Programs the cluster needs, each from one of PACKAGES.
PROGRAMS = ["munged", "mungekey", "mariadbd", "mariadb-install-db", "slurmdbd", "slurmctld", "slurmd",
            "sbatch", "squeue", "sacct", "sacctmgr", "scontrol", "scancel", "sinfo"]

CLUSTER = "nmttest"
NODE = "nmtnode"
ACCOUNT = "nmt"
CPU_PARTITION = "cpu"
GPU_PARTITION = "gpu"
GPUS = 2
#: ``shard`` GRES per GPU (gres.conf), what the profile's NMT_SLURM_GPU_SHARDS names
SHARDS_PER_GPU = 4
# small InnoDB files: the accounting database holds a few dozen rows
MARIADB_OPTS = ["--innodb-log-file-size=8M", "--innodb-buffer-pool-size=32M",
                "--innodb-data-file-path=ibdata1:10M:autoextend"]


class ClusterUnavailable(RuntimeError):
    """The cluster cannot be set up on this machine at all (not root, no apt): a reason to skip."""


class ClusterError(RuntimeError):
    """Setting up or running the cluster failed: a test failure, with the daemon logs."""


def missing_programs() -> list[str]:
    return [p for p in PROGRAMS if shutil.which(p) is None and not Path("/usr/sbin", p).exists()]


def ensure_installed(log=print) -> None:
    """Install the Debian packages with apt-get where a program is missing.

    Raises ClusterUnavailable where that is impossible (not root, no apt-get) and ClusterError
    where apt-get fails.
    """
    missing = missing_programs()
    if not missing:
        return
    if os.geteuid() != 0:
        raise ClusterUnavailable(f"not root: cannot install {' '.join(PACKAGES)} (missing: {' '.join(missing)})")
    if shutil.which("apt-get") is None:
        raise ClusterUnavailable(f"apt-get unavailable: cannot install {' '.join(PACKAGES)} "
                                 f"(missing: {' '.join(missing)})")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *PACKAGES]
    log(f"[cluster] missing {' '.join(missing)}: {' '.join(cmd)}")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0 and "Unable to locate package" in proc.stdout + proc.stderr:
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, text=True)
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ClusterError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}")
    still = missing_programs()
    if still:
        raise ClusterError(f"after installing {' '.join(PACKAGES)}, still missing: {' '.join(still)}")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _node_hardware() -> dict[str, int]:
    """CPUs, topology and memory as slurmd detects them (a node configured with more is drained)."""
    out = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout
    fields = dict(re.findall(r"(\w+)=(\d+)", out.splitlines()[0]))
    keys = ["CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore", "RealMemory"]
    return {k: int(fields[k]) for k in keys}


class SlurmCluster:
    """A single-node Slurm cluster under ``root`` (created; removed by the caller)."""

    def __init__(self, root: Path, gpus: int = GPUS) -> None:
        self.root = Path(root).resolve()
        self.gpus = gpus
        self.etc = self.root / "etc"
        # sockets and pid files: a short path whose every parent is traversable (munged checks;
        # pytest's tmp folders are private, and a socket path must stay under 108 bytes)
        self.run_dir = Path(tempfile.mkdtemp(prefix="nmt-slurm-run-"))
        self.run_dir.chmod(0o755)
        self.logs = self.root / "log"
        self.procs: dict[str, subprocess.Popen] = {}
        self.hostname = socket.gethostname()
        self.hardware: dict[str, int] = {}

    # -- environment for clients (sbatch, squeue, sacct, snakemake) ----------------------------
    @property
    def conf(self) -> Path:
        return self.etc / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        path = f"{self.root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
        return {**os.environ, "SLURM_CONF": str(self.conf), "PATH": path}

    def cmd(self, *args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
        """Run a Slurm client command against this cluster."""
        proc = subprocess.run(list(args), env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise ClusterError(f"{' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}")
        return proc

    # -- configuration --------------------------------------------------------------------------
    def _write_configs(self) -> None:
        for d in (self.etc, self.run_dir, self.logs, self.root / "ctld", self.root / "spool", self.root / "dev",
                  self.root / "bin"):
            d.mkdir(parents=True, exist_ok=True)
        # munged checks permissions: socket folder traversable by all, key private
        (self.root / "munge").mkdir(mode=0o700, exist_ok=True)
        hw = self.hardware = _node_hardware()
        self.ports = {name: _free_port() for name in ("ctld", "slurmd", "dbd", "mysql")}
        sock = self.run_dir / "munge.socket"
        gpu_files = [self.root / "dev" / f"gpu{i}" for i in range(self.gpus)]
        for f in gpu_files:
            f.touch()
        r = self.root
        slurm_conf = f"""\
# written by tests/slurm/cluster.py
ClusterName={CLUSTER}
SlurmctldHost={self.hostname}(127.0.0.1)
SlurmctldPort={self.ports['ctld']}
SlurmdPort={self.ports['slurmd']}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
StateSaveLocation={r}/ctld
SlurmdSpoolDir={r}/spool
SlurmctldPidFile={self.run_dir}/slurmctld.pid
SlurmdPidFile={self.run_dir}/slurmd.pid
SlurmctldLogFile={self.logs}/slurmctld.log
SlurmdLogFile={self.logs}/slurmd.log
PlugStackConfig={self.etc}/plugstack.conf
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu,shard
DefMemPerCPU=1024
MinJobAge=300
KillWait=10
# only jobs submitted with --requeue (the profile's slurm-requeue) may be requeued
JobRequeue=0
ReturnToService=2
SlurmdTimeout=60
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort={self.ports['dbd']}
AccountingStoragePass={sock}
AccountingStorageTRES=gres/gpu,gres/shard
AccountingStoreFlags=job_comment
NodeName={NODE} NodeHostname={self.hostname} NodeAddr=127.0.0.1 CPUs={hw['CPUs']} Boards={hw['Boards']} \
SocketsPerBoard={hw['SocketsPerBoard']} CoresPerSocket={hw['CoresPerSocket']} \
ThreadsPerCore={hw['ThreadsPerCore']} RealMemory={hw['RealMemory']} Gres=gpu:{self.gpus},shard:{self.gpus * SHARDS_PER_GPU} State=UNKNOWN
PartitionName={CPU_PARTITION} Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
PartitionName={GPU_PARTITION} Nodes={NODE} MaxTime=INFINITE State=UP
"""
        # one "GPU" per placeholder file; duplicate File= entries (/dev/null twice) are rejected
        gres_conf = "".join(f"NodeName={NODE} Name=gpu File={f}\n" for f in gpu_files)
        # shards on each GPU (Slurm 22.05+): several jobs on one GPU, each with its share
        gres_conf += "".join(f"NodeName={NODE} Name=shard Count={SHARDS_PER_GPU} File={f}\n" for f in gpu_files)
        dbd_conf = f"""\
AuthType=auth/munge
AuthInfo=socket={sock}
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort={self.ports['dbd']}
SlurmUser=root
PidFile={self.run_dir}/slurmdbd.pid
LogFile={self.logs}/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={self.ports['mysql']}
StorageUser=root
StorageLoc=slurm_acct_db
"""
        self.conf.write_text(slurm_conf)
        (self.etc / "gres.conf").write_text(gres_conf)
        (self.etc / "plugstack.conf").write_text("")
        dbd = self.etc / "slurmdbd.conf"  # slurmdbd reads it next to $SLURM_CONF, mode 600 only
        dbd.write_text(dbd_conf)
        dbd.chmod(0o600)
        # Inside a job, snakemake-executor-plugin-slurm-jobstep (0.6) clears every SLURM_* variable
        # but a few job ids before it calls srun, SLURM_CONF included, so srun would look for
        # /etc/slurm/slurm.conf (or a configless slurmd's /run/slurm/conf) and fail. A production
        # cluster has one of those; this one keeps its config here, so jobs find srun through a
        # wrapper that sets SLURM_CONF and runs the real srun.
        srun = shutil.which("srun") or "/usr/bin/srun"
        wrapper = self.root / "bin" / "srun"
        wrapper.write_text(f"#!/bin/sh\nSLURM_CONF={self.conf} exec {srun} \"$@\"\n")
        wrapper.chmod(0o755)
        (self.root / "cluster.json").write_text(json.dumps({"conf": str(self.conf), "run_dir": str(self.run_dir),
                                                             "ports": self.ports}))

    # -- daemons -----------------------------------------------------------------------------------
    def _spawn(self, name: str, args: list[str]) -> None:
        out = open(self.logs / f"{name}.out", "ab")
        # a session of its own: a Ctrl-C in the terminal reaches the test, which stops the daemons
        proc = subprocess.Popen(args, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.root)
        out.close()
        self.procs[name] = proc
        with open(self.root / "pids", "a") as f:
            f.write(f"{name} {proc.pid}\n")

    def _wait(self, what: str, ok, timeout: float, logs: list[str]) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise ClusterError(f"{name} exited ({proc.returncode}) while waiting for {what}\n"
                                       + self.log_tails(logs + [name]))
            try:
                if ok():
                    return
            except (subprocess.SubprocessError, OSError):
                pass
            time.sleep(0.3)
        raise ClusterError(f"timed out after {timeout:.0f} s waiting for {what}\n" + self.log_tails(logs))

    def log_tails(self, names: list[str], lines: int = 15) -> str:
        parts = []
        for name in dict.fromkeys(names):
            for path in (self.logs / f"{name}.log", self.logs / f"{name}.out"):
                if path.exists() and path.stat().st_size:
                    tail = path.read_text(errors="replace").splitlines()[-lines:]
                    parts.append(f"--- {path}\n" + "\n".join(tail))
        return "\n".join(parts)

    def _ok(self, *args: str) -> bool:
        return subprocess.run(list(args), env=self.env, capture_output=True, timeout=15).returncode == 0

    def start(self, timeout: float = 90) -> None:
        if os.geteuid() != 0:
            raise ClusterUnavailable("not root: slurmd and slurmctld must run as root here")
        t0 = time.monotonic()
        self._write_configs()
        sock = self.run_dir / "munge.socket"
        key = self.root / "munge" / "munge.key"
        subprocess.run(["mungekey", "--create", f"--keyfile={key}"], check=True, capture_output=True)
        self._spawn("munged", ["munged", "--foreground", f"--socket={sock}", f"--key-file={key}",
                               f"--pid-file={self.run_dir}/munged.pid", f"--log-file={self.logs}/munged.log",
                               f"--seed-file={self.root}/munge/seed"])
        self._wait("munged", lambda: self._ok("munge", "-n", "-S", str(sock)), 20, ["munged"])

        datadir = self.root / "mysql"
        proc = subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={datadir}", "--user=root",
                               "--auth-root-authentication-method=normal", "--skip-test-db",
                               "--skip-name-resolve", *MARIADB_OPTS], capture_output=True, text=True)
        if proc.returncode != 0:
            raise ClusterError(f"mariadb-install-db failed:\n{(proc.stdout + proc.stderr)[-2000:]}")
        self._spawn("mariadb", ["mariadbd", "--no-defaults", f"--datadir={datadir}", "--user=root",
                                f"--socket={self.run_dir}/mysql.sock", f"--port={self.ports['mysql']}",
                                "--bind-address=127.0.0.1", "--skip-name-resolve", "--skip-log-bin",
                                f"--pid-file={self.run_dir}/mariadb.pid", f"--log-error={self.logs}/mariadb.log",
                                "--innodb-flush-log-at-trx-commit=0", *MARIADB_OPTS])
        self._wait("MariaDB", lambda: self._ok("mariadb-admin", f"--socket={self.run_dir}/mysql.sock",
                                                "-u", "root", "ping"), 30, ["mariadb"])

        self._spawn("slurmdbd", ["slurmdbd", "-D"])
        self._wait("slurmdbd", lambda: self._ok("sacctmgr", "-n", "list", "cluster"), 30, ["slurmdbd"])
        # the cluster, an account and root's association before slurmctld registers
        self.cmd("sacctmgr", "-i", "add", "cluster", CLUSTER)
        self.cmd("sacctmgr", "-i", "add", "account", ACCOUNT, "Description=nmtlib tests", "Organization=nmtlib")
        self.cmd("sacctmgr", "-i", "add", "user", "root", f"Account={ACCOUNT}", f"DefaultAccount={ACCOUNT}")

        self._spawn("slurmctld", ["slurmctld", "-D"])
        self._wait("slurmctld", lambda: self._ok("scontrol", "ping"), 30, ["slurmctld"])
        self._spawn("slurmd", ["slurmd", "-D", "-N", NODE])

        def node_idle() -> bool:
            state = self.cmd("sinfo", "-h", "-N", "-n", NODE, "-o", "%T", check=False).stdout.split()
            return bool(state) and state[0] == "idle"

        self._wait(f"node {NODE} to be idle", node_idle, max(10.0, timeout - (time.monotonic() - t0)),
                   ["slurmctld", "slurmd"])

    def cancel_all_jobs(self, timeout: float = 30) -> list[str]:
        """scancel every job of the cluster and wait for them to end; returns the ids left over."""
        ids = self.cmd("squeue", "-h", "-o", "%i", check=False).stdout.split()
        if ids:
            self.cmd("scancel", "--full", *ids, check=False)
        deadline = time.monotonic() + timeout
        while ids and time.monotonic() < deadline:
            time.sleep(0.5)
            ids = self.cmd("squeue", "-h", "-t", "all", "-o", "%i %T", check=False).stdout.splitlines()
            ids = [line.split()[0] for line in ids if line.split()[1] not in
                   ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY",
                    "BOOT_FAIL", "DEADLINE")]
        return ids

    def stop(self) -> None:
        """Cancel the jobs, then stop the daemons this object started (by their pid), newest first."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            try:
                left = self.cancel_all_jobs()
                if left:
                    print(f"[cluster] jobs still running at shutdown: {left}", file=sys.stderr)
            except (subprocess.SubprocessError, OSError, ClusterError):
                pass
        for name in reversed(list(self.procs)):
            _terminate(self.procs[name])
        self.procs.clear()
        left = kill_left_behind(str(self.conf))
        if left:
            print(f"[cluster] killed {len(left)} process(es) its jobs left behind: {'; '.join(left)}", file=sys.stderr)
        (self.root / "pids").unlink(missing_ok=True)
        shutil.rmtree(self.run_dir, ignore_errors=True)


def kill_left_behind(conf: str) -> list[str]:
    """SIGKILL every process with ``SLURM_CONF=conf`` in its environment but this one: what the
    cluster's jobs (or a test's Snakemake) left running once the daemons are gone. proctrack/
    linuxproc follows a job's process tree only, so a process orphaned before its job ended (a
    Snakemake hung in its signal handler, docs/reliability.md L5) outlives the job. Returns each
    process killed, as "pid: command"."""
    mark, killed = f"SLURM_CONF={conf}".encode(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if mark not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:120]
            os.kill(int(entry.name), signal.SIGKILL)
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue  # ended meanwhile, or not ours to read
        killed.append(f"{entry.name}: {command.strip()}")
    return killed


def _terminate(proc: subprocess.Popen, timeout: float = 15) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def stop_from_pidfile(root: Path) -> None:
    """Stop the daemons a `start` command left running (their pids are in ROOT/pids)."""
    pids = Path(root) / "pids"
    if not pids.exists():
        print(f"no daemons recorded in {pids}")
        return
    entries = [line.split() for line in pids.read_text().splitlines() if line.strip()]
    env = {**os.environ, "SLURM_CONF": str(Path(root) / "etc" / "slurm.conf")}
    ids = subprocess.run(["squeue", "-h", "-o", "%i"], env=env, capture_output=True, text=True).stdout.split()
    if ids:
        subprocess.run(["scancel", "--full", *ids], env=env, capture_output=True)
        time.sleep(3)
    for name, pid in reversed(entries):
        try:
            os.kill(int(pid), signal.SIGTERM)
        except ProcessLookupError:
            continue
        for _ in range(50):
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        else:
            os.kill(int(pid), signal.SIGKILL)
        print(f"stopped {name} ({pid})")
    pids.unlink()
    run_dir = json.loads((Path(root) / "cluster.json").read_text())["run_dir"]
    shutil.rmtree(run_dir, ignore_errors=True)


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in ("start", "stop"):
        print(__doc__.split("Command line")[1] if "Command line" in __doc__ else __doc__, file=sys.stderr)
        print("usage: cluster.py start|stop DIR", file=sys.stderr)
        return 2
    root = Path(argv[2])
    if argv[1] == "stop":
        stop_from_pidfile(root)
        return 0
    try:
        ensure_installed()
        root.mkdir(parents=True, exist_ok=True)
        cluster = SlurmCluster(root)
        cluster.start()
    except (ClusterUnavailable, ClusterError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    # leave the daemons running: they are in sessions of their own
    print(f"export SLURM_CONF={cluster.conf} PATH={cluster.root / 'bin'}:$PATH")
    print(f"export NMT_SLURM_ACCOUNT={ACCOUNT} NMT_SLURM_PARTITION={CPU_PARTITION} "
          f"NMT_SLURM_GPU_PARTITION={GPU_PARTITION}")
    print(f"# stop with: {sys.executable} {Path(__file__).resolve()} stop {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
