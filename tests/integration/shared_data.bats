#!/usr/bin/env bats
# --data from a shared, read-only data set outside ${SCRATCH}/<project> (a site's /datasets, a
# lab's shared folder), on the local cluster: the job reads it from $SLURM_TMPDIR under its own
# name, equal to the source; the archive is the user's (in the project's scratch), reused while
# the source is unchanged; the shared folder is only read.
# Set by hpc_run_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_out job_state

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "shared data"
  export SHARED="$BATS_FILE_TMPDIR/lab share/datasets"
  mkdir -p "$SHARED/mnist/train" "$SHARED/mnist/with space"
  for i in $(seq 1 20); do head -c $((i * 300)) /dev/urandom >"$SHARED/mnist/train/f$i.bin"; done
  printf 'hello\n' >"$SHARED/mnist/with space/a file.txt"
  chmod -R a-w "$BATS_FILE_TMPDIR/lab share"
  # The venv: a copy of the one built once per bats run (not what this file tests).
  hpc_venv_seed "$PROJECT"
}

teardown_file() {
  chmod -R u+w "$BATS_FILE_TMPDIR/lab share" 2>/dev/null || true
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
}

# listing DIR: every entry under DIR with its size, mode and mtime.
listing() {
  (cd "$1" && find . -printf '%p %s %m %T@\n' | LC_ALL=C sort)
}

@test "a read-only shared data set outside the project's scratch: the job reads it from SLURM_TMPDIR under its own name, equal to the source; the archive is cached in the user's scratch and reused" {
  local before want archive again
  before=$(listing "$BATS_FILE_TMPDIR/lab share")
  want=$(python3 "$PROJECT/tree_sums.py" "$SHARED" mnist | cut -d' ' -f3)
  hpc_configs "$PROJECT" 'python tree_sums.py - mnist'
  hpc_run_job "$PROJECT" -g 0 -e shared1 --data "$SHARED/mnist"
  assert_equal "$job_state" "COMPLETED 0:0"
  assert_equal "$(sed -n 's/^TREE n[12] //p' "$job_out")" "$want"
  archive=$(readlink -f "$(find "$SCRATCH/shared data/.staging" -maxdepth 1 -type l | head -n 1)/data.tar")
  [[ -f $archive ]] || fail "no archive in the project's scratch"
  hpc_run_job "$PROJECT" -g 0 -e shared2 --data "$SHARED/mnist"
  assert_equal "$job_state" "COMPLETED 0:0"
  assert_equal "$(sed -n 's/^TREE n[12] //p' "$job_out")" "$want"
  again=$(readlink -f "$(find "$SCRATCH/shared data/.staging" -maxdepth 1 -type l | head -n 1)/data.tar")
  assert_equal "$again" "$archive"
  assert_equal "$(listing "$BATS_FILE_TMPDIR/lab share")" "$before"
}
