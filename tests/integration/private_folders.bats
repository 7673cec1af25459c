#!/usr/bin/env bats
# On the local cluster, a lab's group-writable scratch (umask 002) with another member of the
# group (a real second Unix user, tests/helpers/mate.bash): the folder SLURM writes a job's log
# into is the user's alone, so the other member cannot plant a link named like the next job's
# output (ids are sequential) through which SLURM would overwrite a file of the user's.
# shellcheck disable=SC2016 # bash -c scripts in single quotes get their values as arguments, on purpose

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  load '../helpers/mate'
  # The shared folder: outside bats' own temporary folders (0700), so that the other member can
  # reach it, as on a cluster's /project/<group>.
  LAB=$(mktemp -d "/tmp/hpc lab.XXXXXX")
  chmod 755 "$LAB"
  export LAB
  hpc_test_project "private project" "$LAB/scratch"
  # The lab's folder before the first submission; every submission under umask 002.
  mate_ready
  umask 002
  hpc_warm_venv "$PROJECT" 'python -c "print(\"job ran\")"'
}

teardown_file() {
  rm -rf -- "${LAB:?}"
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  load '../helpers/mate'
  umask 002
  job_id='' job_out='' job_state=''
}

@test "the other member cannot plant links named like the next jobs' outputs; the next job's log is its own file and the user's file is intact" {
  printf 'precious\n' >"$LAB/victim.txt"
  hpc_configs "$PROJECT" 'python -c "print(\"job ran\")"'
  hpc_run_job "$PROJECT" -g 0 -e first
  assert_equal "$job_state" "COMPLETED 0:0"
  local dir=${job_out%/*} name=${job_out##*/} next i mode
  local stem=${name%_"$job_id".out}
  # Links for the next few ids (another job may take one in between): each attempt refused.
  for ((i = 1; i <= 3; i++)); do
    next=$((job_id + i))
    run as_mate 'ln -s -- "$1" "$2"' _ "$LAB/victim.txt" "$dir/${stem}_$next.out"
    assert_failure
    assert_output --partial "Permission denied"
  done
  mode=$(stat -c %a "$dir")
  (((8#$mode & 8#077) == 0)) || fail "$dir has mode $mode"
  hpc_run_job "$PROJECT" -g 0 -e first
  assert_equal "$job_state" "COMPLETED 0:0"
  [[ -f $job_out && ! -L $job_out ]] || fail "the log is not a regular file: $job_out"
  grep -qx 'job ran' "$job_out" || fail "not the job's log: $(cat "$job_out")"
  assert_equal "$(<"$LAB/victim.txt")" precious
}
