#!/usr/bin/env bats
# tests/run.sh's pytest keeps the tests of one xdist_group on one pytest-xdist worker (issue 37):
# a module fixture that starts an expensive process once (torch imported in a child) then serves
# every test of its module once, not once per worker that got some of them. Proved in a copy of
# the runner whose tests/python holds a fixture module: each test records its worker. On two CPUs
# or fewer it runs one process (workers would import and collect everything again); a stub nproc
# says how many CPUs run.sh sees.

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
  # The CPUs run.sh counts: workers only where there are more than two (unless told).
  unset HPC_PYTEST_WORKERS
  mkdir "$BATS_TEST_TMPDIR/bin"
  cat >"$BATS_TEST_TMPDIR/bin/nproc" <<'EOF'
#!/bin/sh
echo "$HPC_FAKE_NPROC"
EOF
  chmod +x "$BATS_TEST_TMPDIR/bin/nproc"
}

@test "tests/run.sh runs the tests of one xdist_group on one pytest-xdist worker" {
  HPC_FAKE_NPROC=4 PATH=$BATS_TEST_TMPDIR/bin:$PATH \
    run bash "$tree/tests/run.sh" --no-install --no-cluster --no-lint --bats "$tree/tests/unit"
  assert_success
  assert_line "suite: 8 passed, 0 failed"
  assert_equal "$(wc -l <"$HPC_GROUP_SEEN")" 8
  assert_equal "$(sort -u "$HPC_GROUP_SEEN" | wc -l)" 1
  refute_line --partial none
  # A worker's name (gw0...), not the one process's.
  refute grep -qx none "$HPC_GROUP_SEEN"
}

@test "tests/run.sh runs pytest in one process on two CPUs: workers would import and collect again" {
  HPC_FAKE_NPROC=2 PATH=$BATS_TEST_TMPDIR/bin:$PATH \
    run bash "$tree/tests/run.sh" --no-install --no-cluster --no-lint --bats "$tree/tests/unit"
  assert_success
  assert_line "suite: 8 passed, 0 failed"
  assert_equal "$(sort -u "$HPC_GROUP_SEEN")" none
  assert_equal "$(wc -l <"$HPC_GROUP_SEEN")" 8
}
