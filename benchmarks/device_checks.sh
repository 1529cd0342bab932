#!/usr/bin/env bash
# Issue #45's checks on a lent GPU machine, in one device call of at most 9 minutes: each step runs
# under its own time budget, so that one slow or failing step leaves the others their time, and
# the script goes on after a step that fails. OUT then holds device_checks.tar.gz (every step's
# log, the benchmarks' JSON, the CUDA tests' JUnit XML, the training logs; no model files) and
# summary.md + summary.json (each step's exit code and wall time, the measurements beside the
# issue's targets).
#
#   bash benchmarks/device_checks.sh OUT            # on the lent machine: OUT is "$OUT"
#   bash benchmarks/device_checks.sh --tiny OUT     # anywhere: every step shrunk (tests/test_device_checks.py)
#
# Steps, in order: setup (the bundle's wheels, the peer), (e) the tests that skip without CUDA,
# (a) gpu_share.py, (b) peer_opennmt.py's decoding, (c) train_speed.py in bf16, (d) two epochs of
# multi30k-deen's global-general-feed in float32 and in bf16. What the machine lacks comes from
# `python benchmarks/device_bundle.py --corpus multi30k --corpus small_parallel_enja --peer`.
# Environment: WHEELS (.whl), DATA (benchmarks/out/device-data), WORK (/tmp/nmt-device-checks, emptied
# first), PYTHON (python3), PEER (where OpenNMT-py is when the bundle has none of its wheels;
# ~/.cache/nmtlib-peer), TOTAL_S (540: every step ends by then), DEVICE_CHECKS_TINY=1 (as --tiny),
# SLACK (every budget and TOTAL_S times this: 1, or 4 for --tiny, which runs on shared CPUs).
set -uo pipefail  # not -e: a failing step is recorded, and the next one runs

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BENCH="$ROOT/benchmarks"
TINY="${DEVICE_CHECKS_TINY:-0}"
[ "${1:-}" = "--tiny" ] && { TINY=1; shift; }
[ $# -eq 1 ] || { sed -n '9,10p' "$0" >&2; exit 2; }
mkdir -p "$1" && OUTDIR="$(cd "$1" && pwd)"
WHEELS="$(realpath -m "${WHEELS:-$ROOT/.whl}")"
DATA="$(realpath -m "${DATA:-$ROOT/benchmarks/out/device-data}")"
WORK="$(realpath -m "${WORK:-/tmp/nmt-device-checks}")"
PYTHON="${PYTHON:-python3}"
MODE=$([ "$TINY" = 1 ] && echo tiny || echo full)
SLACK="${SLACK:-$([ "$TINY" = 1 ] && echo 4 || echo 1)}"
TOTAL_S="${TOTAL_S:-$((540 * SLACK))}"
RESERVE_S=15  # the summary and the tarball, after the last step
# shellcheck source=benchmarks/device_common.sh
. "$BENCH/device_common.sh"

DEADLINE=$(( $(date +%s) + TOTAL_S - RESERVE_S ))
rm -rf "$WORK" && mkdir -p "$WORK/logs" "$WORK/results" "$WORK/models"
RES="$WORK/results"
cd "$ROOT" || exit 2

# record NAME BUDGET RC SECONDS NOTE: one line of steps.tsv (short lines: appends from two steps at once stay whole)
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >> "$WORK/steps.tsv"; }
# skip NAME WHY: a step that did not run (it returns 1, as a failed one)
skip() { record "$1" "" "" "" "skipped: $2"; echo "$(date -u +%T) $1: skipped: $2"; return 1; }

# step NAME BUDGET CMD...: CMD under `timeout` (its whole process group), cut to the time left before the
# deadline; its output to logs/NAME.log, its exit code and wall time to steps.tsv; returns the exit code
step() {
  local name=$1 budget=$(($2 * SLACK)) left rc t0 ms note=""
  shift 2
  left=$(( DEADLINE - $(date +%s) ))
  [ "$budget" -gt "$left" ] && { budget=$left; note="budget cut to the time left"; }
  [ "$budget" -gt 0 ] || { skip "$name" "no time left of the ${TOTAL_S} s"; return; }
  echo "$(date -u +%T) $name: started (budget ${budget} s)"
  t0=$(date +%s%N)
  { printf '$'; printf ' %q' "$@"; echo; } > "$WORK/logs/$name.log"
  timeout -k 5 "$budget" "$@" >> "$WORK/logs/$name.log" 2>&1
  rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  case $rc in
    124) note="timed out after ${budget} s" ;;
    137) note="killed: timed out after ${budget} s, or out of memory" ;;
  esac
  record "$name" "$budget" "$rc" "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))" "$note"
  echo "$(date -u +%T) $name: exit code $rc in $((ms / 1000)) s${note:+ ($note)}"
  [ $rc -eq 0 ] || tail -n 5 "$WORK/logs/$name.log" | sed "s/^/  $name| /"
  return $rc
}

# --- setup: the bundle's wheels on the paths, the peer from its wheels ---------------------------
step setup-bundle 10 bash "$BENCH/device_common.sh" install_bundle "$WHEELS" "$WORK/site"
use_bundle "$WORK/site"
export PYTHONPATH="$ROOT:$PYTHONPATH"  # nmtlib travels as the tree: `python -m nmtlib` from any folder
if compgen -G "$WHEELS/peer/*.whl" > /dev/null; then
  PEER="$WORK/peer-venv"
  step setup-peer 15 env PEER="$PEER" bash "$BENCH/peer/setup_offline.sh" "$WHEELS/peer"
else
  PEER="${PEER:-$HOME/.cache/nmtlib-peer}"
  skip setup-peer "no peer wheels in $WHEELS/peer; the peer is looked for in $PEER"
fi
# the tests and scripts find the corpora as shared/data, the peer as $PEER; scratch goes to WORK
mkdir -p "$WORK/shared" && ln -sfn "$DATA" "$WORK/shared/data"
export PEER NMTLIB_SHARED="$WORK/shared" NMTLIB_BENCH_OUT="$WORK/bench-out" PYTHONUNBUFFERED=1
if "$PYTHON" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
  DEVICE=cuda
else
  DEVICE=cpu
fi
echo "$(date -u +%T) $MODE run on $DEVICE; bundle $WHEELS, data $DATA, peer $PEER, work $WORK"

# gpu_step NAME BUDGET CMD...: a step that measures the GPU; a full run without one skips it
gpu_step() {
  if [ "$MODE" = full ] && [ "$DEVICE" != cuda ]; then skip "$1" "no CUDA"; return; fi
  step "$@"
}
tiny() { [ "$TINY" = 1 ] && printf '%s\n' "$@"; }  # arguments for the tiny run only
BF16=(); [ "$DEVICE" = cuda ] && BF16=(--bf16)  # bf16 is the GPU's: on a CPU the run stays float32

# --- (e) the tests that skip without CUDA: tests/test_cuda.py, and the one peer test that asks for a
# device itself (`grep -n cuda.is_available tests/`; tests/test_device_checks.py keeps this list whole)
CUDA_TESTS=(tests/test_cuda.py tests/test_benchmarks.py::test_peer_side_by_side_tiny_on_cuda_reports_both_gpu_peaks)
step e-cuda-tests 100 "$PYTHON" -m pytest -q -rA -p no:cacheprovider --junitxml="$RES/e-cuda-tests.xml" \
  "${CUDA_TESTS[@]}"

# --- (a) training jobs side by side on one GPU
mapfile -t A_TINY < <(tiny --scale tiny --steps 3 --warmup 1 --jobs 1,2)
gpu_step a-gpu-share 90 "$PYTHON" "$BENCH/gpu_share.py" --device "$DEVICE" --jobs 1,2,4,8 --scale small \
  "${A_TINY[@]}" --json "$RES/a-gpu-share.json"

# --- (b) paper-scale float32 decoding against OpenNMT-py, ours with graphed steps (what took batch 1 past
# 3x in RESULTS.md G5) and 1 and 2 batches in flight (2: G6's proposal), the peer decoding once per batch
# size; peer_opennmt.py has no decoding without training, so 2 training steps make the checkpoints
mapfile -t B_TINY < <(tiny --scale tiny --decode-sentences 4 --decode-batch-sizes 30)
if [ ! -x "$PEER/venv/bin/python" ]; then
  skip b-peer-decode "OpenNMT-py is not installed in $PEER (device_bundle.py --peer)"
elif [ ! -d "$DATA/small_parallel_enja" ]; then
  skip b-peer-decode "no small_parallel_enja in $DATA (device_bundle.py --corpus small_parallel_enja)"
else
  gpu_step b-peer-decode 180 "$PYTHON" "$BENCH/peer_opennmt.py" --device "$DEVICE" --scale paper --cuda-graphs \
    --train-steps 2 --report-every 1 --beams 12 --decode-batch-sizes 30,1 --in-flight 1,2 "${B_TINY[@]}" \
    --data-cache "$DATA" --peer "$PEER" --work "$WORK/peer" --json "$RES/b-peer-decode.json"
fi

# --- (c) paper-scale training speed, bf16 and CUDA graphs, Luong 4x1000 global+feed
mapfile -t C_TINY < <(tiny --scale tiny --steps 2 --warmup 1)
gpu_step c-train-speed 45 "$PYTHON" "$BENCH/train_speed.py" --device "$DEVICE" --scale paper \
  --archs luong-global-general-feed "${BF16[@]}" --cuda-graphs --steps 60 --warmup 3 "${C_TINY[@]}" \
  --json "$RES/c-train-speed.json"

# --- (d) two epochs of multi30k-deen's global-general-feed, the config's recipe, float32 and bf16 side
# by side on the GPU; the data by the workflow's own commands, where `nmtlib train --config` finds it
CONFIG="$ROOT/config/experiments/multi30k-deen.yaml"
EXPERIMENT="$WORK/experiment"
mapfile -t D_TINY < <(tiny --head 200)
if step d-data 30 "$PYTHON" "$BENCH/device_checks.py" data "$CONFIG" --cache "$DATA" --workdir "$EXPERIMENT" \
  "${D_TINY[@]}"; then
  train() {  # train PRECISION BUDGET [--set KEY=VALUE...]
    local precision=$1 budget=$2
    shift 2
    gpu_step "d-train-$precision" "$budget" env -C "$EXPERIMENT" "$PYTHON" -m nmtlib train --config "$CONFIG" \
      --variant global-general-feed --seed 1 --set epochs=2 --set "device=$DEVICE" "$@" \
      --out "$WORK/models/$precision" --no-progress
  }
  train fp32 70 --set bf16=false &
  if [ "$DEVICE" = cuda ]; then train bf16 70 --set bf16=true & else skip d-train-bf16 "no CUDA (train.bf16)"; fi
  wait
else
  skip d-train-fp32 "no data (d-data)"
  skip d-train-bf16 "no data (d-data)"
fi

# --- the summary and the tarball
"$PYTHON" "$BENCH/device_checks.py" summary "$WORK" --out "$WORK" --mode "$MODE" > "$WORK/logs/summary.log" 2>&1 \
  || cat "$WORK/logs/summary.log"
pack() {  # everything but the installs, the models and the tokenized corpus (rebuilt by d-data)
  tar czf "$OUTDIR/device_checks.tar.gz" -C "$WORK" --exclude=./site --exclude=./peer-venv --exclude=./shared \
    --exclude='*.pt' --exclude='./experiment/results/*/corpus' --exclude='./experiment/results/*/data/*.src' \
    --exclude='./experiment/results/*/data/*.tgt' "$@" .
}
pack
if [ "$(stat -c %s "$OUTDIR/device_checks.tar.gz")" -gt $((15 * 1024 * 1024)) ]; then
  pack --exclude=./peer --exclude=./bench-out  # over what a device call returns: the logs of our steps only
fi
cp "$WORK/summary.md" "$WORK/summary.json" "$OUTDIR/" 2>/dev/null
echo
cat "$OUTDIR/summary.md" 2>/dev/null
ls -l "$OUTDIR"
