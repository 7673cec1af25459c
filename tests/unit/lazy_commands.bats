#!/usr/bin/env bats
# What a command loads (issue 38): the commands that read the records of submissions (status,
# logs, cancel, stack, usage) parse none of the libraries that only a submission runs (the
# options, the profile, the configs file, the plan: hpc_submission_load); a submission and the
# commands that submit or print the options still load them. Counted with strace, never timed.
# Without SLURM: the PATH stubs of tests/fixtures/submitter/bin.

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/submitter'
  hpc_test_warm_profiles
}

setup() {
  load '../helpers/common'
  # shellcheck source=tests/helpers/submitter.bash
  source "$BATS_TEST_DIRNAME/../helpers/submitter.bash"
  hpc_test_submitter_setup scratch --venv
  submission_libs=(hpc_options hpc_profile hpc_configs hpc_plan)
}

# libraries_of ARGS...: runs the submitter with ARGS under strace (its exit status in rc, its
# output in $BATS_TEST_TMPDIR/out); sets files to the toolkit's library files it opened.
libraries_of() {
  command -v strace >/dev/null || skip "strace is not installed"
  strace -f -o /dev/null true 2>/dev/null || skip "strace cannot trace here (ptrace not permitted)"
  rc=0
  strace -f -qq -e trace=openat,open -o "$BATS_TEST_TMPDIR/strace.txt" \
    bash "$submitter" "$@" >"$BATS_TEST_TMPDIR/out" 2>&1 </dev/null || rc=$?
  files=$(grep -o '"[^"]*\.bash"' "$BATS_TEST_TMPDIR/strace.txt" | tr -d '"' | grep -F "$project/" | sort -u)
}

@test "status, logs, cancel, stack and usage of a submitted experiment read none of the submission's libraries (hpc_options, hpc_profile, hpc_configs, hpc_plan)" {
  local lib
  local -a words
  bash "$submitter" -y -g 0 -e lazy >"$BATS_TEST_TMPDIR/out" 2>&1 ||
    fail "the submission failed: $(cat "$BATS_TEST_TMPDIR/out")"
  # The commands ask sacct too: the stubs of manage.bats, from a table that knows the job.
  export HPC_STUB_JOBS=$BATS_TEST_TMPDIR/jobs PATH=$HPC_ROOT/tests/fixtures/manage/bin:$PATH
  printf 'sacct 4242 4242 COMPLETED 0:0\n' >"$HPC_STUB_JOBS"
  for words in status "logs lazy" "cancel lazy" "stack lazy" "usage lazy"; do
    read -ra words <<<"$words"
    libraries_of "${words[@]}"
    # It ran its command (a job the stubs do not know may end it non-zero, never a missing function).
    [[ $files == */lib/commands/${words[0]}.bash* ]] || fail "${words[*]} did not load its command: $files"
    run grep -E 'command not found|unbound variable' "$BATS_TEST_TMPDIR/out"
    assert_failure
    ((rc != 127)) || fail "${words[*]}: exit 127: $(cat "$BATS_TEST_TMPDIR/out")"
    for lib in "${submission_libs[@]}"; do
      [[ $files != */lib/$lib.bash* ]] || fail "${words[*]} read $lib.bash"
    done
  done
}

@test "a submission, a dry run, help and resubmit still read the submission's libraries" {
  local lib
  libraries_of -y -g 0 -e lazy
  ((rc == 0)) || fail "the submission failed: $(cat "$BATS_TEST_TMPDIR/out")"
  for lib in "${submission_libs[@]}"; do
    [[ $files == */lib/$lib.bash* ]] || fail "the submission did not read $lib.bash"
  done
  libraries_of --dry-run -g 0 -e lazy
  ((rc == 0)) || fail "the dry run failed: $(cat "$BATS_TEST_TMPDIR/out")"
  [[ $files == */lib/hpc_plan.bash* ]] || fail "the dry run did not read hpc_plan.bash"
  libraries_of help
  ((rc == 0)) || fail "help failed: $(cat "$BATS_TEST_TMPDIR/out")"
  grep -qe '--gpus' "$BATS_TEST_TMPDIR/out" || fail "help did not print the options: $(cat "$BATS_TEST_TMPDIR/out")"
  libraries_of resubmit lazy
  ((rc == 0)) || fail "resubmit failed: $(cat "$BATS_TEST_TMPDIR/out")"
  [[ $files == */lib/hpc_options.bash* ]] || fail "resubmit did not read hpc_options.bash"
}
