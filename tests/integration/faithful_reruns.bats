#!/usr/bin/env bats
# Faithful reruns on the local cluster: a job runs only the plan it was written with (swapped plan
# files end it FAILED with the reason, never COMPLETED running the other command); resubmit gives
# the job the values the configs file's ${VARS} had at submission; a map's submitter killed before
# its release leaves nothing once 'cancel EXP' has run.
# shellcheck disable=SC2016 # configs lines are single-quoted on purpose: the job expands them
# Set by hpc_run_job or hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_out job_state

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "faithful project"
  hpc_warm_venv "$PROJECT" 'python probe.py exit 0' -e warm
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  submitter=$PROJECT/hpc_files/job_submitter.sh
  outputs="$SCRATCH/faithful project/hpc_outputs"
  unset EPOCHS
}

# plan_named SCRIPT: the plan file that the job script SCRIPT names (the test's paths hold no
# special character but spaces).
plan_named() {
  local line
  line=$(grep '^hpc_job_main ' "$1")
  line=${line#hpc_job_main }
  printf '%s\n' "${line//\\ / }"
}

@test "two plans swapped while their jobs are held: each job ends FAILED with the reason in its log, neither runs the other's command" {
  hpc_configs "$PROJECT" 'python probe.py env train'
  hpc_submit_held "$PROJECT" -g 0 -e train
  local train=$job_id train_out=$job_out
  hpc_configs "$PROJECT" 'python probe.py env cleanup'
  hpc_submit_held "$PROJECT" -g 0 -e cleanup
  local cleanup=$job_id cleanup_out=$job_out plan_t plan_c
  plan_t=$(plan_named "$outputs/train_venv-none_$train.sh")
  plan_c=$(plan_named "$outputs/cleanup_venv-none_$cleanup.sh")
  mv -- "$plan_t" "$plan_t.x" && mv -- "$plan_c" "$plan_t" && mv -- "$plan_t.x" "$plan_c"
  scontrol release "$train" "$cleanup"
  hpc_wait_job "$train" 120
  hpc_wait_job "$cleanup" 120
  assert_equal "$(hpc_job_state "$train")" "FAILED 1:0"
  assert_equal "$(hpc_job_state "$cleanup")" "FAILED 1:0"
  run grep -F "FAILED at step 'plan': the plan file '$plan_t' is not this job's (it was written for experiment 'cleanup'): not run" "$train_out"
  assert_success
  run grep -F "FAILED at step 'plan': the plan file '$plan_c' is not this job's (it was written for experiment 'train'): not run" "$cleanup_out"
  assert_success
  run grep -h '^PROBE' "$train_out" "$cleanup_out"
  assert_output ''
  run --separate-stderr bash "$submitter" status train </dev/null
  [[ $(grep -E "^$train " <<<"$output" | tr -s ' ') == "$train train venv-none FAILED 1:0"* ]] || fail "$output"
}

@test "submitted with EPOCHS=12: resubmitted from a shell without EPOCHS, or with EPOCHS=5, the job runs --epochs 12" {
  hpc_configs "$PROJECT" 'python probe.py env --epochs ${EPOCHS:-5}'
  EPOCHS=12 hpc_run_job "$PROJECT" -g 0 -e epochs
  assert_equal "$job_state" "COMPLETED 0:0"
  run grep -c '"argv": \["--epochs", "12"\]' "$job_out"
  assert_output 1
  local how
  for how in unset 5; do
    if [[ $how == unset ]]; then
      run --separate-stderr env -u EPOCHS bash "$submitter" resubmit epochs </dev/null
      assert_equal "$stderr" "job_submitter.sh: note: EPOCHS is not set in this shell; the job gets the value it had at submission, '12'"
    else
      run --separate-stderr env EPOCHS=5 bash "$submitter" resubmit epochs </dev/null
      assert_equal "$stderr" "job_submitter.sh: note: EPOCHS is '5' in this shell; the job gets the value it had at submission, '12'"
    fi
    assert_success
    job_id=$(sed -n 's/^Resubmitted job [0-9]* of epochs as job \([0-9]*\)$/\1/p' <<<"$output")
    job_out=$(sed -n 's/^Output: //p' <<<"$output")
    [[ -n $job_id && -n $job_out ]] || fail "no job in: $output"
    hpc_wait_job "$job_id" 120
    assert_equal "$(hpc_job_state "$job_id")" "COMPLETED 0:0"
    run grep -c '"argv": \["--epochs", "12"\]' "$job_out"
    assert_output 1
  done
}

@test "a map's submitter killed (SIGKILL) after its third held array, before its release: cancel EXP cancels its held jobs and leaves nothing of it (plans, kept scripts, manifests, map folder, record)" {
  hpc_configs "$PROJECT" 'python -c "print(1)"'
  printf 'item%s\n' 0 1 2 3 4 5 6 7 8 9 >"$BATS_TEST_TMPDIR/items.txt"
  hpc_keep_max_array_size 4
  # An sbatch that kills the submitter (SIGKILL) once SLURM has taken the third array, held: before
  # the gather and the release.
  local dir=$BATS_TEST_TMPDIR/killing_sbatch real
  real=$(command -v sbatch)
  mkdir -p "$dir"
  printf '%s\n' '#!/usr/bin/env bash' "n=\$(cat $(printf %q "$dir/n") 2>/dev/null || echo 0)" \
    "echo \$((n + 1)) >$(printf %q "$dir/n")" "$(printf %q "$real") \"\$@\"" 'rc=$?' \
    '((n + 1 != 3)) || kill -KILL "$PPID"' 'exit "$rc"' >"$dir/sbatch"
  chmod +x "$dir/sbatch"
  local before
  before=$(cd "$outputs" && find . -name 'killed_*' | sort)
  run env PATH="$dir:$PATH" bash "$submitter" -y -g 0 -e killed --map-over "$BATS_TEST_TMPDIR/items.txt" \
    --gather 'python -c "print(2)"'
  assert_equal "$status" 137
  [[ -n $(cd "$outputs" && find . -name 'killed*.plan') ]] || fail "the killed submission left no plan"
  [[ -n $(find "$outputs/map/killed" -mindepth 1 -maxdepth 1) ]] || fail "the killed submission left no map folder"
  local ids
  ids=$(squeue -h -n "faithful project-killed" -o %F | sort -u | wc -l)
  assert_equal "$ids" 3
  run env hpc_pending_settle_s=0 bash "$submitter" cancel killed </dev/null
  assert_success
  local start=$SECONDS
  while [[ -n $(squeue -h -n "faithful project-killed" -o %i) ]]; do
    ((SECONDS - start < 60)) || fail "jobs left in the queue: $(squeue -h -n "faithful project-killed")"
    sleep 0.2
  done
  assert_equal "$(cd "$outputs" && find . -name 'killed_*' | sort)" "$before"
  assert_equal "$(find "$outputs/map/killed" -mindepth 1)" ""
  local f
  for f in "$outputs"/submissions/*; do
    [[ ! -s $f || $(head -n 1 "$f") == ended ]] || fail "a record is left: $f: $(cat "$f")"
  done
}
