#!/usr/bin/env bats
# Faults of a map task's own files, without SLURM: hpc_map.bash's job side sourced alone.

bats_require_minimum_version 1.5.0

setup() {
  load '../helpers/common'
  source "$HPC_ROOT/hpc_files/lib/hpc_job.bash"
  source "$HPC_ROOT/hpc_files/lib/hpc_map.bash"
  # No SLURM to ask: the task's final state comes from its status alone.
  # shellcheck disable=SC2329 # called by hpc_followup_final_state
  scontrol() { return 1; }
  export SLURM_JOB_ID=41 SLURM_ARRAY_JOB_ID=40 SLURM_ARRAY_TASK_ID=1
  map_index=1 map_item=one hpc_map_start_utc=2026-11-23T12:00:00Z hpc_map_start_s=1.5
}

@test "a task whose final status.json cannot be written (full disk, folder gone) fails: step map-status, never COMPLETED-but-LOST" {
  task_dir=$BATS_TEST_TMPDIR/tasks/1
  mkdir -p "$task_dir"
  hpc_map_task_end 0
  run python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["state"])' "$task_dir/status.json"
  assert_output COMPLETED
  # /dev/null/... cannot be made, even by root: as a full disk, the write fails.
  task_dir=/dev/null/tasks/1
  run --separate-stderr hpc_map_task_end 0
  assert_failure 1
  [[ $stderr == *"cannot write /dev/null/tasks/1/status.json"* ]] || fail "no reason in: $stderr"
  [[ $stderr == *"FAILED at step 'map-status': the task's final status was not written"* ]] || fail "no failed step in: $stderr"
  # A failed program stays failed with its own status.
  run --separate-stderr hpc_map_task_end 7
  assert_failure 7
}
