#!/usr/bin/env bats
# The test command can fail: one failing test makes tests/run.sh exit non-zero, and shellcheck
# finds nothing in the repository's shell files.

setup() {
  load '../helpers/common'
}

@test "a deliberately failing bats test makes tests/run.sh exit 1" {
  run bash "$HPC_ROOT/tests/run.sh" --no-install --no-cluster --no-lint --no-pytest \
    --bats "$HPC_ROOT/tests/fixtures/harness/failing.bats"
  assert_equal "$status" 1
  assert_line "suite: 0 passed, 1 failed"
}

@test "a passing bats test makes tests/run.sh exit 0 (the control)" {
  run bash "$HPC_ROOT/tests/run.sh" --no-install --no-cluster --no-lint --no-pytest \
    --bats "$HPC_ROOT/tests/fixtures/harness/passing.bats"
  assert_success
  assert_line "suite: 1 passed, 0 failed"
}

@test "unit tests run with set -u: a library function reading an unset variable fails them; elsewhere not" {
  # shellcheck disable=SC2016 # the planted test's own expansions, done when it runs
  local planted='@test "reads an unset variable" {
  f() { printf "%s\\n" "${hpc_never_set_anywhere}x"; }
  run f
  [ "$status" -eq 0 ]
}'
  mkdir -p "$BATS_TEST_TMPDIR/tests/unit" "$BATS_TEST_TMPDIR/other"
  printf '%s\n' "$planted" >"$BATS_TEST_TMPDIR/tests/unit/unset.bats"
  printf '%s\n' "$planted" >"$BATS_TEST_TMPDIR/other/unset.bats"
  run bash "$HPC_ROOT/tests/run.sh" --no-install --no-cluster --no-lint --no-pytest \
    --bats "$BATS_TEST_TMPDIR/tests/unit/unset.bats"
  assert_equal "$status" 1
  assert_line "suite: 0 passed, 1 failed"
  run bash "$HPC_ROOT/tests/run.sh" --no-install --no-cluster --no-lint --no-pytest \
    --bats "$BATS_TEST_TMPDIR/other/unset.bats"
  assert_success
  assert_line "suite: 1 passed, 0 failed"
}

@test "a missing bats file fails the suite even though no test failed" {
  run bash "$HPC_ROOT/tests/run.sh" --no-install --no-cluster --no-lint --no-pytest \
    --bats "$HPC_ROOT/tests/fixtures/harness/absent.bats"
  assert_equal "$status" 1
}
