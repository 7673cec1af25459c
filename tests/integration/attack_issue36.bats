#!/usr/bin/env bats
# The folders a job makes for its results (an array task's checkpoints/task_N and
# WORKDIR/task_N) are not writable by others whatever the umask, as the submission makes the
# experiment's: on a lab's scratch (umask 002) a group member could otherwise plant a checkpoint
# that the program loads when it resumes, or a link named like one. On the local cluster.

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "atk project"
  cp "$HPC_ROOT/tests/fixtures/project/files_land.py" "$PROJECT/"
  # The venv: a copy of the one built once per bats run (not what this file tests).
  hpc_venv_seed "$PROJECT"
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  exp_root="$SCRATCH/atk project"
  job_id=''
}

# closed PATH...: fails the test unless each PATH is a folder that nobody but its owner can write.
closed() {
  local path mode
  for path in "$@"; do
    [[ -d $path && ! -L $path ]] || fail "not a folder: $path"
    mode=$(stat -c %a "$path")
    (((8#$mode & 8#022) == 0)) || fail "$path has mode $mode"
  done
}

@test "umask 002, --repeat 2 --workdir: each task's checkpoints folder and working folder are not writable by others" {
  hpc_configs "$PROJECT" 'python files_land.py 1'
  umask 002
  hpc_submit_job "$PROJECT" -g 0 --repeat 2 -e rep --workdir "$BATS_FILE_TMPDIR/rep"
  hpc_wait_job "$job_id" 120
  local task
  for task in 0 1; do
    [ -f "$BATS_FILE_TMPDIR/rep/task_$task/snapshot.pt" ]
    closed "$exp_root/rep" "$exp_root/rep/checkpoints" "$exp_root/rep/checkpoints/task_$task" \
      "$BATS_FILE_TMPDIR/rep" "$BATS_FILE_TMPDIR/rep/task_$task"
  done
}
