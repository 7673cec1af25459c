#!/usr/bin/env bats
# The suite's CPU time (issue 37): what tests/run.sh does once so that the tests do not pay it
# at each call.

setup() {
  load '../helpers/common'
}

@test "tests/run.sh gives every test file (not only the unit files) python3 itself, not pyenv's shim (50 ms of CPU a call)" {
  local root shim want
  command -v pyenv >/dev/null || skip "no pyenv here: python3 is no shim"
  root=$(pyenv root) && shim=$root/shims/python3
  [[ -x $shim ]] || skip "pyenv has no python3 shim here"
  want=$(cd / && pyenv which python3)
  # A file outside tests/unit (no setup_suite.bash) on a PATH whose python3 is the shim again.
  PATH=$root/shims:$PATH HPC_TEST_PYTHON_SEEN=$BATS_TEST_TMPDIR/seen run bash "$HPC_ROOT/tests/run.sh" \
    --no-install --no-cluster --no-lint --no-pytest --bats "$HPC_ROOT/tests/fixtures/harness/python_path.bats"
  assert_success
  assert_line "suite: 1 passed, 0 failed"
  assert_equal "$(cat "$BATS_TEST_TMPDIR/seen")" "$want"
}
