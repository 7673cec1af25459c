#!/usr/bin/env bats
# Faults of a map task's own files, without SLURM: hpc_map.bash's job side sourced alone.

bats_require_minimum_version 1.5.0

setup() {
  load '../helpers/common'
  load '../helpers/stub'
  # shellcheck source=/dev/null # hpc_job.bash is linted on its own (tests/run.sh)
  source "$HPC_ROOT/hpc_files/lib/hpc_job.bash"
  # shellcheck source=/dev/null # hpc_map.bash is linted on its own (tests/run.sh)
  source "$HPC_ROOT/hpc_files/lib/hpc_map.bash"
  export SLURM_JOB_ID=41 SLURM_ARRAY_JOB_ID=40 SLURM_ARRAY_TASK_ID=1
  # shellcheck disable=SC2034 # read by hpc_map.bash and hpc_followup.bash
  map_index=1 map_item=one hpc_followup_start_utc=2026-11-23T12:00:00Z hpc_followup_start_s=1.5
}

@test "a task whose final status.json cannot be written (full disk, folder gone) fails: step map-status, never COMPLETED-but-LOST" {
  task_dir=$BATS_TEST_TMPDIR/tasks/1
  mkdir -p "$task_dir"
  # No SLURM to ask (each end asks): the task's final state comes from its status alone.
  stub scontrol 'show job -o 40_1 : exit 1' 'show job -o 40_1 : exit 1' 'show job -o 40_1 : exit 1'
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
  unstub scontrol
}
