#!/usr/bin/env bats
# W&B sweeps, offline grid sweeps and repeats as array jobs on the local cluster. No W&B server
# is reachable here: agents run a recording wandb stand-in (tests/fixtures/wandb_stub, first on
# PATH); offline runs use the real wandb package, which writes them without a server.
# shellcheck disable=SC2016 # configs lines are single-quoted on purpose
# Set by hpc_run_job or hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id

SENTINEL_KEY=hpc-sentinel-key-0123456789abcdef

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "sweep project"
  hpc_warm_venv "$PROJECT" 'python probe.py env' -e warmup
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  export HOME="$BATS_TEST_TMPDIR/home"
  mkdir -p "$HOME"
  unset WANDB_API_KEY
  export WANDB_STUB_LOG="$BATS_TEST_TMPDIR/wandb log"
  mkdir -p "$WANDB_STUB_LOG"
  export PATH="$HPC_ROOT/tests/fixtures/wandb_stub:$PATH"
  HPC_TEST_SENTINEL_SHA=$(printf '%s' "$SENTINEL_KEY" | sha256sum | cut -d' ' -f1)
  export HPC_TEST_SENTINEL_SHA
}

# array_states ID: every task's final state, one per line, sorted.
array_states() {
  scontrol show job "$1" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | sort
}

@test "a 3-agent sweep is one array 1-3%K; each task had one node and one GPU and ran wandb agent --count 1 with the key" {
  printf '%s\n' "$SENTINEL_KEY" >"$HOME/wandb_credentials.txt"
  chmod 600 "$HOME/wandb_credentials.txt"
  hpc_submit_job "$PROJECT" -w me/proj/abc123 --num-sweeps 3 --max-concurrent 2 -e sweep3
  hpc_wait_job "$job_id" 120
  assert_equal "$(scontrol show job "$job_id" | grep -c 'ArrayTaskId=')" 3
  assert_equal "$(array_states "$job_id")" "COMPLETED
COMPLETED
COMPLETED"
  run scontrol show job "$job_id"
  assert_output --partial "ArrayTaskThrottle=2"
  for task in 1 2 3; do
    run cat "$WANDB_STUB_LOG/${job_id}_$task"
    assert_line "argv: agent --count 1 me/proj/abc123"
    assert_line "key: sentinel"
    # One GPU: a single device index.
    assert_line --regexp '^gpus: [01]$'
  done
  assert_equal "$(hpc_job_field "${job_id}_1" NumNodes)" 1
  assert_equal "$(hpc_job_field "${job_id}_1" TresPerNode)" "gres:gpu:1"
}

@test "the sentinel key is nowhere: ps, scontrol show job -dd, batch scripts, job script, manifest, output, bash -x" {
  export WANDB_API_KEY=$SENTINEL_KEY
  trace="$BATS_TEST_TMPDIR/trace"
  ps_log="$BATS_TEST_TMPDIR/ps"
  (for _ in $(seq 1 100); do
    ps -eo args >>"$ps_log" 2>/dev/null
    sleep 0.02
  done) &
  ps_pid=$!
  out=$(bash -x "$PROJECT/hpc_files/job_submitter.sh" -y -w me/proj/abc123 --num-sweeps 2 -e secret 2>"$trace") ||
    fail "submission failed: $out $(tail -5 "$trace")"
  wait "$ps_pid" || true
  local id
  id=$(sed -n 's/^Submitted job \([0-9]*\).*/\1/p' <<<"$out")
  hpc_wait_job "$id" 120
  places=("$trace" "$ps_log")
  for task in 1 2; do
    scontrol show job -dd "${id}_$task" >"$BATS_TEST_TMPDIR/show_$task"
    places+=("$BATS_TEST_TMPDIR/show_$task")
    (cd "$BATS_TEST_TMPDIR" && scontrol write batch_script "${id}_$task" "batch_$task" >/dev/null) &&
      places+=("$BATS_TEST_TMPDIR/batch_$task")
    run grep -x "key: sentinel" "$WANDB_STUB_LOG/${id}_$task"
    assert_success
  done
  mapfile -t outputs < <(find "$SCRATCH/sweep project/hpc_outputs" -type f \( -name "secret_*" -o -path '*manifests*' \))
  ((${#outputs[@]} >= 3)) || fail "expected the job script and outputs, got: ${outputs[*]}"
  places+=("${outputs[@]}")
  for place in "${places[@]}"; do
    if grep -qF "$SENTINEL_KEY" "$place"; then fail "the key is in $place"; fi
  done
}

@test "credentials: mode 644 refused with the chmod fix, 600 works, no key at all and no --num-sweeps without a terminal are clear errors" {
  printf '%s\n' "$SENTINEL_KEY" >"$HOME/wandb_credentials.txt"
  chmod 644 "$HOME/wandb_credentials.txt"
  run bash "$PROJECT/hpc_files/job_submitter.sh" -y --dry-run -w me/proj/abc123 --num-sweeps 2
  assert_equal "$status" 2
  assert_output "job_submitter.sh: -w/--wandb-sweepid: $HOME/wandb_credentials.txt can be read by others (mode 644); run: chmod 600 $HOME/wandb_credentials.txt"
  chmod 600 "$HOME/wandb_credentials.txt"
  run bash "$PROJECT/hpc_files/job_submitter.sh" -y --dry-run -w me/proj/abc123 --num-sweeps 2
  assert_success
  run bash "$PROJECT/hpc_files/job_submitter.sh" -y --dry-run -w me/proj/abc123 </dev/null
  assert_equal "$status" 2
  assert_output "job_submitter.sh: --num-sweeps: how many agents? Give --num-sweeps N (there is no terminal to ask on)"
  rm "$HOME/wandb_credentials.txt"
  run bash "$PROJECT/hpc_files/job_submitter.sh" -y --dry-run -w me/proj/abc123 --num-sweeps 2
  assert_equal "$status" 2
  assert_output "job_submitter.sh: -w/--wandb-sweepid: no W&B API key: set WANDB_API_KEY, or put the key in $HOME/wandb_credentials.txt (chmod 600)"
}

@test "--repeat 3: three tasks with seeds 0, 1, 2 and their own checkpoint folders" {
  hpc_configs "$PROJECT" 'python -c "import os; print(\"REPEAT\", os.environ[\"seed\"], os.environ[\"checkpoints_dir\"])"'
  hpc_submit_job "$PROJECT" -g 0 --repeat 3 -e seeds
  hpc_wait_job "$job_id" 120
  assert_equal "$(array_states "$job_id")" "COMPLETED
COMPLETED
COMPLETED"
  for task in 0 1 2; do
    out="$SCRATCH/sweep project/hpc_outputs/seeds_venv-none_${job_id}_$task.out"
    run grep '^REPEAT' "$out"
    assert_output "REPEAT $task $SCRATCH/sweep project/seeds/checkpoints/task_$task"
    [ -d "$SCRATCH/sweep project/seeds/checkpoints/task_$task" ]
  done
}

@test "an offline 2x2 grid sweep runs 4 tasks, each with its point, WANDB_MODE=offline, real offline runs on scratch" {
  cat >"$PROJECT/hpc_files/offline.yml" <<'EOS'
program: sweep_train.py
method: grid
parameters:
  lr: {values: [0.1, 0.01]}
  batch_size: {values: [8, 16]}
EOS
  hpc_submit_job "$PROJECT" --wandb-offline --sweep-config "$PROJECT/hpc_files/offline.yml" -g 0 -e offline
  hpc_wait_job "$job_id" 240
  assert_equal "$(array_states "$job_id")" "COMPLETED
COMPLETED
COMPLETED
COMPLETED"
  run bash -c "cat \"$SCRATCH/sweep project/hpc_outputs/\"offline_venv-none_${job_id}_*.out | grep '^OFFLINE' | cut -d' ' -f2-4 | sort"
  assert_output "lr=0.01 batch_size=16 mode=offline
lr=0.01 batch_size=8 mode=offline
lr=0.1 batch_size=16 mode=offline
lr=0.1 batch_size=8 mode=offline"
  # Each task its own WANDB_DIR: no race on a shared latest-run or debug.log.
  for task in 0 1 2 3; do
    run find "$SCRATCH/sweep project/offline/task_$task/wandb" -maxdepth 1 -name 'offline-run-*'
    assert_equal "${#lines[@]}" 1
  done
}

@test "offline sweeps refuse random and bayes methods" {
  printf 'program: x.py\nmethod: random\nparameters:\n  lr: {min: 0.1, max: 1.0}\n' >"$PROJECT/hpc_files/random.yml"
  run bash "$PROJECT/hpc_files/job_submitter.sh" -y --wandb-offline --sweep-config "$PROJECT/hpc_files/random.yml"
  assert_equal "$status" 2
  assert_output "job_submitter.sh: --wandb-offline: method 'random' samples from a server; offline sweeps need method: grid"
}

@test "an array beyond the cluster's MaxArraySize (1001 here) is refused before anything is submitted" {
  before=$(squeue -h | wc -l)
  run bash "$PROJECT/hpc_files/job_submitter.sh" -y -g 0 --repeat 2000 -e toolarge
  assert_equal "$status" 2
  assert_output --partial "2000 tasks exceed this cluster's MaxArraySize 1001"
  assert_equal "$(squeue -h | wc -l)" "$before"
  [ ! -e "$SCRATCH/sweep project/toolarge" ]
}

@test "a configs file naming another sweep wins, with a warning saying which sweep runs and why" {
  printf '%s\n' "$SENTINEL_KEY" >"$HOME/wandb_credentials.txt"
  chmod 600 "$HOME/wandb_credentials.txt"
  hpc_configs "$PROJECT" 'wandb agent me/proj/fromconfigs'
  run bash "$PROJECT/hpc_files/job_submitter.sh" -y --dry-run -w me/proj/abc123 --num-sweeps 2
  assert_success
  assert_line "job_submitter.sh: warning: the configs file runs sweep 'me/proj/fromconfigs' but -w says 'me/proj/abc123': using the configs file's, which states the experiment"
  assert_line "hpc_plan_command=( wandb agent --count 1 me/proj/fromconfigs )"
  # The sweep's entity and project come from sweeper.yml when -w gives the id alone.
  hpc_configs "$PROJECT" 'python probe.py env'
  run bash "$PROJECT/hpc_files/job_submitter.sh" -y --dry-run -w abc123 --num-sweeps 2
  assert_success
  assert_line "hpc_plan_command=( wandb agent --count 1 my-entity/my-project/abc123 )"
}
