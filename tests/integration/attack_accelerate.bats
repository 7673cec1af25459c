#!/usr/bin/env bats
# Faults of -W accelerate on the local cluster, with a user's program that waits (plain print,
# no signal handler of its own): scancel while it runs ends CANCELLED, the time limit TIMEOUT,
# never COMPLETED; its lines reach the log while it runs; the secrets of the submitting shell
# (WANDB_API_KEY, DB_PASS) are on no process's command line and not in `scontrol show job -dd`.

# Set by hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_out

SENTINEL_KEY=sentinel-acc-7e6d5c
SENTINEL_PASS=sentinel-accdb-4b3a29

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "accelerate faults"
  # The faults are the launcher's (accelerate launch on each node, its workers): a worker that
  # prints its rank (RANK, set by accelerate launch) and waits needs no torch of its own, which
  # would cost each of the four workers of this file an import (3 CPU-s).
  cat >"$PROJECT/wait_forever.py" <<'PY'
"""A user's program under accelerate launch that never ends by itself: each process says it is ready, then waits."""
import os
import time

print(f"READY rank={os.environ['RANK']}", flush=True)
while True:
    time.sleep(1)
PY
  # The venv: a copy of the one built once per bats run (not what this file tests).
  hpc_venv_seed "$PROJECT"
  # The job past its time limit (1 min) runs beside the scancel test's (each takes 1 GPU of each
  # node): its test waits for its end instead of starting it then.
  hpc_configs "$PROJECT" 'python wait_forever.py'
  hpc_submit_job "$PROJECT" -W accelerate --gpus 1 --num-nodes 2 --time 00:01:00 --signal-lead 0 -e timed
  export TIMED_ID=$job_id TIMED_OUT=$job_out
}

teardown_file() {
  # Not left to its time limit when its test did not run (a filter).
  [[ -z ${TIMED_ID:-} ]] || scancel "$TIMED_ID" 2>/dev/null || true
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
}

@test "accelerate 2 nodes x 1 GPU, scancel while it runs: CANCELLED (never COMPLETED); no secret of the submitting shell on any command line or in scontrol show job -dd" {
  local dir=$BATS_TEST_TMPDIR
  hpc_configs "$PROJECT" 'python wait_forever.py'
  WANDB_API_KEY=$SENTINEL_KEY DB_PASS=$SENTINEL_PASS hpc_submit_job "$PROJECT" -W accelerate --gpus 1 --num-nodes 2 -e cancelled
  hpc_wait_output "$job_out" '^READY rank=1$' 150
  hpc_wait_output "$job_out" '^READY rank=0$' 10
  # Every process's command line, several times, and SLURM's view of the job.
  local _
  for _ in 1 2 3; do
    python3 -c '
import glob
for path in glob.glob("/proc/[0-9]*/cmdline"):
    try:
        print(open(path, "rb").read().replace(b"\0", b" ").decode("utf-8", "replace"))
    except OSError:
        pass' >>"$dir/cmdlines"
    sleep 0.3
  done
  scontrol show job -dd "$job_id" >"$dir/show"
  # This job's launchers (the timed job's run beside them), by its rendezvous port.
  local port
  port=$(sed -n 's/^\[hpc n1\] rendezvous at n1:\([0-9]*\)$/\1/p' "$job_out")
  [[ $port =~ ^[0-9]+$ ]] || fail "no rendezvous line: $(cat "$job_out")"
  run grep -cE -- "--main_process_port $port( |$)" "$dir/cmdlines"
  [[ $output -ge 2 ]] || fail "accelerate's launchers were not sampled: $output"
  run grep -lF -e "$SENTINEL_KEY" -e "$SENTINEL_PASS" "$dir/cmdlines" "$dir/show"
  assert_output ''
  scancel "$job_id"
  hpc_wait_job "$job_id" 60
  run hpc_job_state "$job_id"
  assert_output --regexp '^CANCELLED '
  # The program's lines reached the log while it ran (mawk held them until 4 KiB or its end).
  run grep -c '^READY rank=[01]$' "$job_out"
  assert_output 2
}

@test "accelerate 2 nodes x 1 GPU, a program without a handler past its time limit: TIMEOUT, never COMPLETED" {
  # Submitted by setup_file (python wait_forever.py, --time 00:01:00 --signal-lead 0).
  job_id=$TIMED_ID job_out=$TIMED_OUT
  hpc_wait_job "$job_id" 240
  run hpc_job_state "$job_id"
  assert_output --regexp '^TIMEOUT '
  run grep -E '^\[hpc n[12]\] .*(exit|status).* 138' "$job_out"
  assert_output ''
}
