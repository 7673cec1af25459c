#!/usr/bin/env bats
# A chunked map's task preempted while one of its items runs (the job's side alone,
# tests/helpers/chunk_job.bash): the item whose program stops at SLURM's notice and exits 0 is
# PREEMPTED, not COMPLETED, so that the requeued run runs it again (it skips only the items
# COMPLETED in an earlier run); the items not started are NOT_RUN.

bats_require_minimum_version 1.5.0

setup() {
  load '../helpers/common'
  load '../helpers/stub'
  # shellcheck source=tests/helpers/chunk_job.bash
  source "$BATS_TEST_DIRNAME/../helpers/chunk_job.bash"
}

# shellcheck disable=SC2034,SC2154,SC2329 # the variables the sourced library reads and sets; 'program' is run by it
@test "a chunk preempted while item 1 runs (its program exits 0 at the notice): item 1 PREEMPTED, the rest NOT_RUN; the requeued run runs item 1 again, not item 0" {
  chunk_job 0
  # The notice comes while item 1 runs: the batch shell's trap marks the run preempted.
  program() {
    printf '%s\n' "$map_index" >>"$BATS_TEST_TMPDIR/ran"
    [[ $map_index != 1 ]] || hpc_job_warned=1 hpc_job_preempted=1
  }
  hpc_map_task_setup
  stub scontrol 'show job -o 40_0 : echo "JobId=41 ArrayJobId=40 ArrayTaskId=0 JobState=RUNNING"'
  hpc_map_chunk_run
  assert_equal "$(item_state 0) $(item_state 1) $(item_state 2) $(item_state 3)" "COMPLETED PREEMPTED NOT_RUN NOT_RUN"
  unstub scontrol
  ((hpc_job_status != 0)) || fail "a preempted chunk's task ended 0"
  # Run 2 (requeued): item 0 is done, item 1 runs again, then the rest.
  rm "$BATS_TEST_TMPDIR/ran"
  hpc_job_warned=0 hpc_job_preempted=0
  program() { printf '%s\n' "$map_index" >>"$BATS_TEST_TMPDIR/ran"; }
  SLURM_RESTART_COUNT=1 hpc_map_chunk_run
  run cat "$BATS_TEST_TMPDIR/ran"
  assert_output "1
2
3"
  assert_equal "$(item_state 0) $(item_state 1) $(item_state 2) $(item_state 3)" "COMPLETED COMPLETED COMPLETED COMPLETED"
  assert_equal "$hpc_job_status" 0
}
