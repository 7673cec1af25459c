#!/usr/bin/env bats
# tests/run.sh's pytest keeps the tests of one xdist_group on one pytest-xdist worker (issue 37):
# a module fixture that starts an expensive process once (torch imported in a child) then serves
# every test of its module once, not once per worker that got some of them. Proved in a copy of
# the runner whose tests/python holds a fixture module: each test records its worker.

setup() {
  load '../helpers/common'
  (($(nproc) >= 2)) || skip "one CPU: pytest -n auto starts one worker"
  tree=$(cd "$BATS_TEST_TMPDIR" && pwd -P)/tree
  mkdir -p "$tree/tests/python" "$tree/tests/unit" # no unit file: pytest alone
  cp "$HPC_ROOT/tests/run.sh" "$tree/tests/run.sh"
  ln -s "$HPC_ROOT/tests/helpers" "$tree/tests/helpers"
  ln -s "$HPC_ROOT/tests/slowest.py" "$tree/tests/slowest.py"
  export HPC_GROUP_SEEN=$BATS_TEST_TMPDIR/workers
  printf '%s\n' 'import os' 'import pytest' '' 'pytestmark = pytest.mark.xdist_group("one")' '' \
    '@pytest.mark.parametrize("case", range(8))' 'def test_case(case: int) -> None:' \
    '    with open(os.environ["HPC_GROUP_SEEN"], "a") as seen:' \
    '        seen.write(os.environ.get("PYTEST_XDIST_WORKER", "none") + "\n")' \
    >"$tree/tests/python/test_grouped.py"
}

@test "tests/run.sh runs the tests of one xdist_group on one pytest-xdist worker" {
  run bash "$tree/tests/run.sh" --no-install --no-cluster --no-lint --bats "$tree/tests/unit"
  assert_success
  assert_line "suite: 8 passed, 0 failed"
  assert_equal "$(wc -l <"$HPC_GROUP_SEEN")" 8
  assert_equal "$(sort -u "$HPC_GROUP_SEEN" | wc -l)" 1
  refute_line --partial none
}
