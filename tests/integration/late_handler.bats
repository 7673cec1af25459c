#!/usr/bin/env bats
# A program that starts slowly (heavy imports before its handler) gets the time-limit warning
# under every launcher, once it installs its handler, and its requeued run resumes: the warning
# is sent while every rank is still "importing" (each waits for a file the test makes after
# the log says nobody catches it yet). The torchrun case is the tutorial-shaped DDP trainer.
# Set by hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_out

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "late project"
  cp "$HPC_ROOT/tests/fixtures/project/"{late_handler.py,ddp_snapshot.py} "$PROJECT/"
  # The venv: a copy of the one built once per bats run (not what this file tests).
  hpc_venv_seed "$PROJECT"
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
}

# count FILE REGEX: prints how many times REGEX (grep -oE) occurs in FILE.
count() {
  grep -oE -- "$2" "$1" 2>/dev/null | wc -l
}

# wait_count FILE REGEX N [TIMEOUT_S]: waits until REGEX occurs N times in FILE (180 s at most).
wait_count() {
  local start=$SECONDS polls=0
  until (($(count "$1" "$2") >= $3)); do
    ((SECONDS - start <= ${4:-180})) || fail "'$2' not $3 times in $1 within ${4:-180}s: $(cat "$1" 2>&1)"
    hpc_poll_pause "$((++polls))"
  done
}

# warn_while_importing EXP RANKS TASKS: (job_id, job_out set) once all RANKS ranks of run 1 are
# "importing" (WAITING or SETUP), sends the job the warning; once each of the TASKS tasks' logs
# says no process catches it yet, makes the file SCRATCH/PROJECT/EXP.go the ranks wait for.
warn_while_importing() {
  wait_count "$job_out" '(WAITING|SETUP) rank=[0-9]+' "$2"
  hpc_send_warning "$job_id"
  wait_count "$job_out" 'no process of the program catches SIGUSR1 \(yet\)' "$3" 120
  touch "$SCRATCH/late project/$1.go"
}

# late_job EXP RANKS TASKS ARGS...: late_handler.py under the job_submitter.sh ARGS, --requeue 1:
# warned while importing (warn_while_importing), each rank gets the warning once its handler is
# installed, saves and exits 0; the requeued run resumes on every rank and the job is COMPLETED.
# The warning reached the program's processes by their pids, none died of it, and the workers'
# stderr has no noise.
late_job() {
  local exp=$1 ranks=$2 tasks=$3 state rank pids warned
  shift 3
  # shellcheck disable=SC2016 # expanded in the job
  hpc_configs "$PROJECT" 'python late_handler.py ${scratch_dir}/${exp_name}.go ${scratch_dir}/${exp_name}.mark'
  hpc_submit_job "$PROJECT" "$@" --time 00:10:00 --requeue 1 -e "$exp"
  warn_while_importing "$exp" "$ranks" "$tasks"
  hpc_wait_requeued "$job_id" 1 300
  state=$(hpc_job_state "$job_id")
  [[ $state == "COMPLETED 0:0" ]] || fail "job $job_id ended $state; its output: $(cat "$job_out")"
  for ((rank = 0; rank < ranks; rank++)); do
    assert_equal "$(count "$job_out" "HANDLER rank=$rank\$")" 1
    assert_equal "$(count "$job_out" "WARNED rank=$rank\$")" 1
    assert_equal "$(count "$job_out" "RESUMED rank=$rank\$")" 1
  done
  run grep -E 'NO WARNING|exit (code|status) 138|Error in sitecustomize' "$job_out"
  assert_output ''
  assert_equal "$(count "$job_out" '\[hpc n[0-9]+\] requeueing \(restart 1 of 1\)$')" 1
  # The warning went to run 1's ranks, by their pids, and to nothing else.
  pids=$(sed -En 's/^(\[rank [0-9]+\] )?START rank=[0-9]+ restart=0 pid=([0-9]+)$/\2/p' "$job_out" | sort -u)
  warned=$(sed -En 's/^\[hpc n[0-9]+\] time-limit warning SIGUSR1 passed to (.*)$/\1/p' "$job_out" |
    grep -oE '[0-9]+ \(' | tr -d ' (' | sort -u)
  assert_equal "$warned" "$pids"
}

@test "slow start, -W none: the warning sent while it imports reaches it once its handler is installed; requeued, it resumes" {
  late_job none 1 1
}

@test "slow start, -W torchrun -g 1: the worker, whose children are the rank-lines filters, gets the warning once its handler is installed; requeued, it resumes" {
  late_job torchrun1 1 1 -W torchrun -g 1
}

@test "slow start, -W lightning -g 2 --label-ranks: each task's program gets the warning once its handler is installed; requeued, both resume" {
  late_job lightning 2 2 -W lightning -g 2 --label-ranks
}

@test "slow start, -W accelerate -g 2 on CPU nodes: both workers get the warning once their handlers are installed; requeued, both resume; no sitecustomize noise" {
  late_job accelerate 2 1 -W accelerate -g 2
}

@test "slow start, -W torchrun -g 2, the tutorial's DDP trainer: warned while it sets up, it saves snapshot.pt at the next epoch; the requeued run resumes from it and finishes" {
  # Epochs of 3 s: both ranks, which install their handlers within moments of each other, are
  # warned (a round each second) before the first epoch ends, where the ranks agree to stop; 6
  # epochs leave 18 s for that, and the requeued run trains on from there to the end.
  # shellcheck disable=SC2016 # expanded in the job
  hpc_configs "$PROJECT" 'python ddp_snapshot.py 6 100 ${scratch_dir}/${exp_name}/snapshot.pt --epoch-seconds 3 --handler-after ${scratch_dir}/${exp_name}.go'
  hpc_submit_job "$PROJECT" -W torchrun -g 2 --time 00:10:00 --requeue 1 -e ddp
  warn_while_importing ddp 2 1
  hpc_wait_requeued "$job_id" 1 300
  local state stopped pids warned
  state=$(hpc_job_state "$job_id")
  [[ $state == "COMPLETED 0:0" ]] || fail "job $job_id ended $state; its output: $(cat "$job_out")"
  # Run 1: both ranks took the warning once their handlers were in (each run installs them once),
  # by their pids, and nothing else did; rank 0 saved and all stopped.
  assert_equal "$(count "$job_out" 'HANDLER rank=[01]')" 4
  assert_equal "$(count "$job_out" 'WARNED rank=[01] ')" 2
  pids=$(grep -oE 'RUN rank=[01] local=[01] node=n[0-9]+ pid=[0-9]+ restart=0' "$job_out" |
    sed -E 's/.* pid=([0-9]+) .*/\1/' | sort -u)
  assert_equal "$(wc -l <<<"$pids")" 2
  warned=$(sed -En 's/^\[hpc n[0-9]+\] time-limit warning SIGUSR1 passed to (.*)$/\1/p' "$job_out" |
    grep -oE '[0-9]+ \(' | tr -d ' (' | sort -u)
  assert_equal "$warned" "$pids"
  stopped=$(grep -oE 'STOPPED epoch=[0-9]+' "$job_out" | sed 's/.*=//')
  [[ $stopped =~ ^[0-9]+$ ]] || fail "run 1 did not stop at the warning: $(cat "$job_out")"
  assert_equal "$(count "$job_out" "SNAPSHOT epoch=$stopped")" 1
  assert_equal "$(count "$job_out" '\[hpc n[0-9]+\] requeueing \(restart 1 of 1\)')" 1
  # Run 2 resumed from the snapshot and trained on to the end.
  assert_equal "$(count "$job_out" "RESUMED epoch=$stopped from=$SCRATCH/late project/ddp/snapshot.pt")" 1
  assert_equal "$(count "$job_out" 'DONE epochs=6')" 1
  run grep -E 'exit (code|status) 138' "$job_out"
  assert_output ''
}
