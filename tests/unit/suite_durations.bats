#!/usr/bin/env bats
# tests/run.sh starts the longest files first, as tests/unit/durations and
# tests/integration/durations have them; those lines are refreshed from a whole run:
# HPC_TEST_KEEP_REPORTS keeps the run's JUnit reports, and tests/slowest.py --durations TIER turns
# them into the durations lines (the site lane counts as integration). Proved in a copy of the
# runner (no cluster: --no-cluster; the integration files then run without one).

setup() {
  load '../helpers/common'
  tree=$(cd "$BATS_TEST_TMPDIR" && pwd -P)/tree
  mkdir -p "$tree/tests/unit" "$tree/tests/integration" "$BATS_TEST_TMPDIR/kept"
  cp "$HPC_ROOT/tests/run.sh" "$tree/tests/run.sh"
  ln -s "$HPC_ROOT/tests/helpers" "$tree/tests/helpers"
  ln -s "$HPC_ROOT/tests/slowest.py" "$tree/tests/slowest.py"
  ln -s "$HPC_ROOT/node_modules" "$tree/node_modules"
  printf '%s\n' '@test "quick" { :; }' '@test "slow" { sleep 1.2; }' >"$tree/tests/unit/two.bats"
  printf '%s\n' '@test "one" { :; }' >"$tree/tests/unit/one.bats"
  printf '%s\n' '@test "lane" { sleep 2.2; }' >"$tree/tests/integration/site_lane.bats"
  printf '%s\n' '@test "rest" { :; }' >"$tree/tests/integration/rest.bats"
}

@test "HPC_TEST_KEEP_REPORTS keeps the run's reports; slowest.py --durations makes each tier's durations lines from them" {
  HPC_TEST_KEEP_REPORTS=$BATS_TEST_TMPDIR/kept run bash "$tree/tests/run.sh" --no-install --no-cluster --no-lint \
    --no-pytest --bats "$tree/tests"
  assert_success
  assert_line "suite: 5 passed, 0 failed"
  local -a reports
  mapfile -t reports < <(find "$BATS_TEST_TMPDIR/kept" -name '*.xml' | sort)
  ((${#reports[@]} >= 2)) || fail "reports kept: ${reports[*]}"
  run python3 "$HPC_ROOT/tests/slowest.py" --durations unit "${reports[@]}"
  assert_success
  assert_output "1 two.bats
0 one.bats"
  run python3 "$HPC_ROOT/tests/slowest.py" --durations integration "${reports[@]}"
  assert_success
  assert_output "2 site_lane.bats
0 rest.bats"
}
