#!/usr/bin/env bats
# The command 'stack' on the local cluster (2 nodes x 2 GPUs): the Python stacks of a running
# job's ranks through py-spy, in a step beside the job's, the job going on.

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "stack project"
  cp "$HPC_ROOT/tests/fixtures/stack/hang.py" "$PROJECT/"
  # The venv: a copy of the one built once per bats run (not what this file tests), which the
  # toolkit's test of a ready build takes (hpc_venv_seed): no first job needed to prove it.
  hpc_venv_seed "$PROJECT"
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  # Set by hpc_submit_job.
  job_id='' job_out=''
}

teardown() {
  # A hung job is never left to its time limit, whatever the test's end.
  [[ -z $job_id ]] || scancel "$job_id" 2>/dev/null || true
}

# wait_started N: waits (60 s at most) until the job's log holds N 'rank R of W started' lines.
wait_started() {
  local deadline=$((SECONDS + 60)) n=0
  until ((n >= $1)); do
    n=$(grep -c ' started$' "$job_out" 2>/dev/null) || n=0
    ((n >= $1)) || ((SECONDS < deadline)) || fail "not $1 ranks started: $(cat "$job_out" 2>/dev/null)"
    ((n >= $1)) || sleep 0.5
  done
}

@test "stack EXP of a hung 2x2 torchrun job (rank 3 never reaches the all-reduce): the 4 ranks' stacks, in rank order, rank 3 in wait_for_data, the others in all_reduce, secrets masked; the job goes on; cancelled, its log says SLURM ended it" {
  # A secret the configs file expands into the command line, which py-spy prints: masked.
  # shellcheck disable=SC2016 # expanded in the job
  hpc_configs "$PROJECT" 'python hang.py --api-key $MY_API_KEY'
  export MY_API_KEY=sentinel-STACK-4242
  hpc_submit_job "$PROJECT" -W torchrun -g 2 -n 2 -t 00:10:00 -e hung
  wait_started 4
  local t0=$EPOCHREALTIME
  run --separate-stderr bash "$PROJECT/hpc_files/job_submitter.sh" stack hung
  printf '# stack took %s s\n' "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')" >&3
  assert_success
  assert_line --index 0 --regexp "^=== job $job_id \(hung\), 2 node\(s\)$"
  run grep -E '^== rank [0-9] ' <<<"$output"
  assert_line --index 0 --regexp '^== rank 0 \(local rank 0\) on n1, pid [0-9]+$'
  assert_line --index 1 --regexp '^== rank 1 \(local rank 1\) on n1, pid [0-9]+$'
  assert_line --index 2 --regexp '^== rank 2 \(local rank 0\) on n2, pid [0-9]+$'
  assert_line --index 3 --regexp '^== rank 3 \(local rank 1\) on n2, pid [0-9]+$'
  assert_equal "${#lines[@]}" 4
  # Rank 3's block names the function it blocks in; the others wait in the all-reduce.
  run --separate-stderr bash "$PROJECT/hpc_files/job_submitter.sh" stack "$job_id"
  assert_success
  local all=$output
  [[ $all != *sentinel-STACK-4242* ]] || fail "the secret is in stack's output"
  assert_output --partial 'python hang.py --api-key '
  run awk '/^== rank 3 /{ on = 1; next } /^== /{ on = 0 } on' <<<"$all"
  assert_output --partial 'wait_for_data (hang.py:'
  refute_output --partial 'all_reduce'
  run grep -c 'all_reduce' <<<"$(awk '/^== rank [012] /{ on = 1; next } /^== /{ on = 0 } on' <<<"$all")"
  [[ $output -ge 3 ]] || fail "all_reduce in $output frames of ranks 0-2"
  # Asked from a shell that does not export the secret: the job's own variables mask it.
  run --separate-stderr env -u MY_API_KEY bash "$PROJECT/hpc_files/job_submitter.sh" stack hung
  assert_success
  [[ $output != *sentinel-STACK-4242* ]] || fail "the secret is in stack's output from a shell without it"
  assert_output --partial 'python hang.py --api-key (masked)'
  # The job goes on.
  assert_equal "$(hpc_job_field "$job_id" JobState)" RUNNING
  # Cancelled: its log says SLURM ended it, not that the program failed.
  scancel "$job_id"
  hpc_wait_job "$job_id" 60
  run grep -E '^\[hpc n1\] the program ' "$job_out"
  assert_output --regexp '^\[hpc n1\] the program was ended by SLURM \(SIGTERM: scancel, a requeue or preemption\) after [0-9.]+ s, exit status [0-9]+$'
}

@test "stack of a job with no Python process shows its processes; of an experiment with nothing running: one line, exit 2; bad input: exit 2" {
  # Two array tasks (--repeat 2): the array's own id is one task's raw id.
  hpc_configs "$PROJECT" 'sleep 300'
  hpc_submit_job "$PROJECT" -g 0 -t 00:10:00 --repeat 2 -e sleeper
  local deadline=$((SECONDS + 60))
  until [[ $(squeue -h -j "$job_id" -t RUNNING -o %i | wc -l) == 2 ]]; do
    ((SECONDS < deadline)) || fail "the tasks of $job_id never both ran"
    sleep 0.5
  done
  # Running is not yet the program started: each task's batch shell starts it after its own
  # steps, later on a busy machine. Until stack shows it (at most 60 s), not a fixed sleep.
  local shown=''
  deadline=$((SECONDS + 60))
  until grep -q 'sleep 300$' <<<"$shown"; do
    ((SECONDS < deadline)) || fail "stack sleeper never showed the program within 60 s: $shown"
    sleep 0.5
    shown=$(bash "$PROJECT/hpc_files/job_submitter.sh" stack sleeper 2>&1) || true
  done
  run --separate-stderr bash "$PROJECT/hpc_files/job_submitter.sh" stack sleeper
  assert_success
  assert_line --regexp "^=== job ${job_id}_0 \(sleeper\), 1 node\(s\)$"
  assert_line --regexp "^=== job ${job_id}_1 \(sleeper\), 1 node\(s\)$"
  assert_line --regexp '^== n[12]: no Python program process of job [0-9]+; its processes:$'
  assert_line --regexp 'sleep 300$'
  run --separate-stderr bash "$PROJECT/hpc_files/job_submitter.sh" stack "${job_id}_1"
  assert_success
  assert_line --index 0 "=== job ${job_id}_1 (sleeper), 1 node(s)"
  scancel "$job_id"
  hpc_wait_job "$job_id" 60
  run --separate-stderr bash "$PROJECT/hpc_files/job_submitter.sh" stack sleeper
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: stack: no recorded job of sleeper is running; accepted: a running job or experiment (see 'bash job_submitter.sh status sleeper')"
  run --separate-stderr bash "$PROJECT/hpc_files/job_submitter.sh" stack sleeper --natve
  assert_equal "$status" 2
  run --separate-stderr bash "$PROJECT/hpc_files/job_submitter.sh" stack
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: stack: needs one experiment, job id or JOBID_TASK; usage: stack EXP|JOBID[_TASK]"
}
