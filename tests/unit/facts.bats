#!/usr/bin/env bats
# One home per rule (hpc_files/lib/hpc_facts.bash): the ended and failed SLURM states, the
# emulated SLURM_TMPDIR's name and record, and where the toolkit's parts lie, defined once and
# used by the submitter, the job, the management commands and plai_cleanups alike.

setup() {
  load '../helpers/common'
  load '../helpers/shipped'
  cd "$HPC_ROOT" || return 1
}

# Pure (no process, no output): loaded with the file.
# shellcheck source=hpc_files/lib/hpc_facts.bash
source "${BATS_TEST_DIRNAME:?}/../../hpc_files/lib/hpc_facts.bash"

# code_lines_outside_facts PATTERN: prints the code lines (not comments) of shipped Bash files
# other than hpc_facts.bash that match the extended regex PATTERN.
code_lines_outside_facts() {
  local f
  shipped_bash | while IFS= read -r f; do
    [[ $f != hpc_files/lib/hpc_facts.bash ]] || continue
    grep -nE -- "$1" "$f" | grep -vE '^[0-9]+:[[:space:]]*#' | sed "s|^|$f:|" || true
  done
}

@test "facts: the ended and failed states are listed only in hpc_facts.bash" {
  run code_lines_outside_facts 'OUT_OF_MEMORY|BOOT_FAIL|FAILED TIMEOUT'
  assert_output ''
}

@test "facts: the tmpdir's name and record are spelt only in hpc_facts.bash" {
  run code_lines_outside_facts '\.hpc_tmpdir\b|hpc_tmpdir\.'
  assert_output ''
}

@test "facts: where the runners and helpers lie is worked out only in hpc_facts.bash" {
  # (plai_cleanups/hpc_cleanup.bash finds hpc_files/ itself first: the library is in there.)
  run code_lines_outside_facts '-d [^]]*(virtual_env_hpc_files|python_helpers)'
  assert_output ''
}

@test "facts: one list of ended states for status and cleanup; PREEMPTED has ended, PENDING has not" {
  local state
  for state in COMPLETED CANCELLED FAILED TIMEOUT NODE_FAIL BOOT_FAIL DEADLINE OUT_OF_MEMORY PREEMPTED; do
    run hpc_facts_state_ended "$state"
    assert_success
  done
  for state in PENDING RUNNING SUSPENDED COMPLETING CONFIGURING REQUEUED REQUEUE_HOLD RESIZING STOPPED ''; do
    run hpc_facts_state_ended "$state"
    assert_failure
  done
  # The failed ones (resubmit --failed) are among the ended ones.
  assert_equal "$hpc_facts_failed_states" ' FAILED TIMEOUT NODE_FAIL CANCELLED '
  for state in $hpc_facts_failed_states; do
    run hpc_facts_state_ended "$state"
    assert_success
  done
}

@test "facts: a tmpdir name the job makes is read back by cleanup as that job's; other names are not" {
  # shellcheck source=hpc_files/lib/hpc_common.bash
  source hpc_files/lib/hpc_common.bash
  hpc_facts_tmpdir_name bob 123 0123456789abcdef
  assert_equal "$hpc_facts_tmpdir_name" hpc_tmpdir.bob.123.0123456789abcdef
  hpc_facts_tmpdir_name_id bob "$hpc_facts_tmpdir_name"
  assert_equal "$hpc_facts_tmpdir_id" 123
  hpc_facts_tmpdir_name_id bob hpc_tmpdir.bob.77
  assert_equal "$hpc_facts_tmpdir_id" 77
  local name
  for name in hpc_tmpdir.bobby.1 hpc_tmpdir.bob.01 hpc_tmpdir.bob.1.0123 hpc_tmpdir.bob.1.0123456789ABCDEF \
    hpc_tmpdir.b.b.1 hpc_tmpdir.bob. x.hpc_tmpdir.bob.1; do
    run hpc_facts_tmpdir_name_id bob "$name"
    assert_failure
  done
  hpc_facts_tmpdir_name_id bob hpc_tmpdir.bobby.1 || true
  assert_equal "$hpc_facts_tmpdir_id" ''
}

@test "facts: the record the job writes is the one cleanup and the job's removal accept" {
  local dir=$BATS_TEST_TMPDIR/t
  mkdir "$dir"
  hpc_facts_tmpdir_record_write "$dir" 42
  hpc_facts_tmpdir_record_matches "$dir" 42
  run hpc_facts_tmpdir_record_matches "$dir" 4
  assert_failure
  run hpc_facts_tmpdir_record_matches "$dir" 421
  assert_failure
  # A link is never read as the record.
  mkdir "$dir/../u" && printf '7\n' >"$dir/../u/real" && ln -s "$dir/../u/real" "$dir/../u/.hpc_tmpdir"
  run hpc_facts_tmpdir_record_matches "$dir/../u" 7
  assert_failure
}

@test "facts: the toolkit's parts beside hpc_files/ in the repository, inside it in an installed project" {
  # shellcheck source=hpc_files/lib/hpc_common.bash
  source hpc_files/lib/hpc_common.bash
  hpc_facts_locate "$HPC_ROOT/hpc_files"
  assert_equal "$hpc_toolkit_dir" "$HPC_ROOT"
  assert_equal "$hpc_python_helpers_dir" "$HPC_ROOT/python_helpers"
  assert_equal "$hpc_venv_dir" "$HPC_ROOT/virtual_env_hpc_files"
  assert_equal "$hpc_container_lib" "$HPC_ROOT/singularity_hpc_files/container_runner.bash"
  local project=$BATS_TEST_TMPDIR/p
  mkdir "$project"
  bash hpc_files/install.sh "$project" >/dev/null
  hpc_facts_locate "$project/hpc_files"
  assert_equal "$hpc_toolkit_dir" "$project/hpc_files"
  assert_equal "$hpc_python_helpers_dir" "$project/hpc_files/python_helpers"
  [[ -f $hpc_container_lib && -d $hpc_venv_dir && -d $hpc_python_helpers_dir/src ]]
}
