#!/usr/bin/env bats
# Time limits without losing work: the warning signal reaches the program on every node, the
# checkpoint it was writing is copied back whole, SLURM_TMPDIR is removed, and --requeue N
# restarts a warned job N times, resuming from its checkpoint.
# Set by hpc_run_job or hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_out job_state

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "life project"
  # The venv: a copy of the shared build (the first job would build it inside a test's time).
  hpc_venv_seed "$PROJECT"
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
}

teardown() {
  hpc_cluster_mode provided
}

@test "time limit of 2 min, warning 60 s before: signal on both nodes, checkpoint copied back whole, tmpdir gone" {
  hpc_cluster_mode emulated
  hpc_configs "$PROJECT" 'python ckpt.py'
  hpc_run_job "$PROJECT" -W lightning --gpus 1 --num-nodes 2 --time 00:02:00 --signal-lead 60 \
    --copy-back checkpoints -e warned
  assert_equal "$job_state" "COMPLETED 0:0"
  run cat "$job_out"
  assert_line --regexp '^SIGNAL rank=0 node=n1 signal=SIGUSR1$'
  assert_line --regexp '^SIGNAL rank=1 node=n2 signal=SIGUSR1$'
  assert_line --partial "time-limit warning (SIGUSR1)"
  final=$(sed -n 's/^FINAL //p' "$job_out")
  [ -n "$final" ]
  copied=$(sha256sum "$SCRATCH/life project/warned/checkpoints/state.bin" | cut -d' ' -f1)
  assert_equal "$copied" "$final"
  for node in n1 n2; do
    [ -z "$(find "$HPC_CLUSTER_DIR/scratch/$node" -maxdepth 1 -name "hpc_tmpdir.$(id -un).$job_id.*")" ]
  done
}

@test "--requeue 2: three runs with restart counts 0, 1, 2, each resuming; one log; requeued from the batch shell" {
  hpc_configs "$PROJECT" 'python ckpt.py'
  hpc_submit_job "$PROJECT" --gpus 0 --time 00:05:00 --signal-lead 60 --requeue 2 --copy-back checkpoints -e requeued
  # Each run is warned once it has started, as the time limit would (see hpc_warn_job).
  # shellcheck disable=SC2329 # called by hpc_wait_requeued
  started() { grep -qx "START rank=0 node=n1 restart=$1" "$job_out"; }
  hpc_wait_requeued "$job_id" 2 400 started
  local state
  state=$(hpc_job_state "$job_id")
  [[ $state == "COMPLETED 0:0" ]] || fail "job $job_id ended $state; its output: $(grep -v '^CHECKPOINT' "$job_out")"
  assert_equal "$(hpc_job_field "$job_id" Restarts)" 2
  # One log holds all three runs: it was appended to, not truncated.
  run grep -E '^(START|RESUMED)' "$job_out"
  assert_line --index 0 "START rank=0 node=n1 restart=0"
  assert_line --regexp '^RESUMED restart=1 from='
  assert_line "START rank=0 node=n1 restart=1"
  assert_line --regexp '^RESUMED restart=2 from='
  assert_line "START rank=0 node=n1 restart=2"
  assert_equal "$(grep -c 'requeueing (restart' "$job_out")" 2
  assert_equal "$(grep -c '^FINAL ' "$job_out")" 3
  # Each run resumed from what the one before copied back.
  first_final=$(sed -n 's/^FINAL //p' "$job_out" | sed -n 1p)
  assert_equal "$(sed -n 's/^RESUMED restart=1 from=//p' "$job_out")" "$first_final"
}

@test "--requeue 2: a job that exits 1 is not requeued" {
  hpc_configs "$PROJECT" 'python probe.py exit 1'
  hpc_run_job "$PROJECT" --gpus 0 --requeue 2 -e nonrequeue
  assert_equal "$job_state" "FAILED 1:0"
  assert_equal "$(hpc_job_field "$job_id" Restarts)" 0
  run grep -c 'requeueing' "$job_out"
  assert_output 0
}

@test "a program that stops at the warning (exit 138 = 128+SIGUSR1; exit 0 with --requeue 1) is reported as stopped there, not as failed" {
  cp "$HPC_ROOT/tests/fixtures/project/stopper.py" "$PROJECT/"
  hpc_configs "$PROJECT" 'python stopper.py 138'
  hpc_submit_job "$PROJECT" --gpus 0 --time 00:05:00 --signal-lead 60 -e stop138
  local id138=$job_id out138=$job_out
  hpc_configs "$PROJECT" 'python stopper.py 0'
  hpc_submit_job "$PROJECT" --gpus 0 --time 00:05:00 --signal-lead 60 --requeue 1 -e stop0
  local id0=$job_id out0=$job_out
  # The warning is sent once each program has started, as the time limit would (hpc_warn_job).
  hpc_warn_job "$id138" "$out138" '^START restart=0$'
  hpc_wait_job "$id138" 200
  # The program's own status stays the job's.
  assert_equal "$(hpc_job_state "$id138")" "FAILED 138:0"
  run grep -E '^\[hpc n[12]\] (stopped|the program)' "$out138"
  assert_output --regexp '^\[hpc n[12]\] stopped at the time-limit warning \(SIGUSR1\): the program exited with 138 \(128\+SIGUSR1\) after [0-9.]+ s; whether it saved its work, its own lines above say$'
  grep -qx 'SAVED restart=0' "$out138"
  run bash "$PROJECT/hpc_files/job_submitter.sh" status stop138
  assert_success
  assert_line --regexp "^$id138 +stop138 +venv-none +FAILED +138:0 "
  assert_line --regexp "^$id138: stopped at the time-limit warning \(SIGUSR1\): the program exited with 138 \(128\+SIGUSR1\) after [0-9.]+ s; whether it saved its work, its own lines above say$"

  job_out=$out0
  # shellcheck disable=SC2329 # called by hpc_wait_requeued
  started() { grep -qx "START restart=$1" "$job_out"; }
  hpc_wait_requeued "$id0" 1 400 started
  assert_equal "$(hpc_job_state "$id0")" "COMPLETED 0:0"
  run grep -E '^\[hpc n[12]\] (stopped|ended|the program|requeueing|not requeued)' "$out0"
  assert_equal "${#lines[@]}" 4
  assert_line --index 0 --regexp '^\[hpc n[12]\] ended after the time-limit warning \(SIGUSR1\): the program exited with 0 after [0-9.]+ s; whether it stopped early and saved its work or finished, its own lines above say$'
  assert_line --index 1 --regexp '^\[hpc n[12]\] requeueing \(restart 1 of 1\)$'
  assert_line --index 2 --regexp '^\[hpc n[12]\] ended after the time-limit warning \(SIGUSR1\): the program exited with 0 after '
  assert_line --index 3 --regexp '^\[hpc n[12]\] not requeued: 1 restart\(s\) done of the 1 allowed$'
  refute_output --partial 'failed'
}
