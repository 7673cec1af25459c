#!/usr/bin/env bats
# tests/run.sh starts the integration tests as soon as the clusters are up, beside the lint, the
# unit tests and pytest, not after them (issue 37); each part's output is still printed whole, in
# order, and the counts and the failure rules stay. Proved in a copy of the runner whose
# tests/integration holds a fixture file (no cluster: --no-cluster): a unit test waits (bounded)
# for a mark that only the integration test leaves, so it passes only if both run at once.

setup() {
  load '../helpers/common'
  command -v parallel >/dev/null || skip "no GNU parallel: tests/run.sh runs one file at a time"
  tree=$(cd "$BATS_TEST_TMPDIR" && pwd -P)/tree
  mkdir -p "$tree/tests/unit" "$tree/tests/integration"
  cp "$HPC_ROOT/tests/run.sh" "$tree/tests/run.sh"
  ln -s "$HPC_ROOT/tests/helpers" "$tree/tests/helpers"
  ln -s "$HPC_ROOT/tests/slowest.py" "$tree/tests/slowest.py"
  ln -s "$HPC_ROOT/node_modules" "$tree/node_modules"
  export HPC_OVERLAP_MARK=$BATS_TEST_TMPDIR/integration_ran
  # shellcheck disable=SC2016 # the fixture's own expansions
  printf '%s\n' '@test "waits for the integration test" {' \
    '  for ((i = 0; i < 600; i++)); do [[ -e $HPC_OVERLAP_MARK ]] && return 0; sleep 0.1; done' \
    '  echo "no integration test ran meanwhile"; false' '}' >"$tree/tests/unit/waits.bats"
}

# integration_fixture STATUS: the fixture integration test leaves the mark, then passes (true) or
# fails (false).
integration_fixture() {
  # shellcheck disable=SC2016 # the fixture's own expansions
  printf '%s\n' '@test "leaves the mark" {' '  : >"$HPC_OVERLAP_MARK"' "  $1" '}' >"$tree/tests/integration/marks.bats"
}

@test "the integration tests run beside the unit tests, not after them; the unit output is printed first" {
  integration_fixture true
  run bash "$tree/tests/run.sh" --no-install --no-cluster --no-lint --no-pytest --bats "$tree/tests"
  assert_success
  assert_line --regexp "^ok 1 waits for the integration test # in [0-9]+ ms$"
  assert_line --regexp "^ok 1 leaves the mark # in [0-9]+ ms$"
  assert_line "suite: 2 passed, 0 failed"
  # The unit run's output, whole, before the integration run's.
  local unit_at integration_at
  unit_at=$(grep -n '^bats unit: 1 passed, 0 failed$' <<<"$output" | cut -d: -f1)
  integration_at=$(grep -n '^== bats integration: 1 files' <<<"$output" | cut -d: -f1)
  [[ -n $unit_at && -n $integration_at ]] && ((unit_at < integration_at)) || fail "output out of order: $output"
  assert_line --regexp '^ +[0-9]+  integration$'
}

@test "an integration test that fails beside the unit tests fails the suite" {
  integration_fixture false
  run bash "$tree/tests/run.sh" --no-install --no-cluster --no-lint --no-pytest --bats "$tree/tests"
  assert_equal "$status" 1
  assert_line --regexp "^ok 1 waits for the integration test # in [0-9]+ ms$"
  assert_line --regexp "^not ok 1 leaves the mark # in [0-9]+ ms$"
  assert_line "suite: 1 passed, 1 failed"
}

@test "the site configuration's files run in a lane of their own, beside the other integration files (one at a time with --clusters 1), and are counted" {
  # Each leaves its mark, then waits (bounded) for the other's: both pass only if they run at once.
  # shellcheck disable=SC2016 # the fixtures' own expansions
  printf '%s\n' '@test "site lane" {' '  : >"$HPC_OVERLAP_MARK.site"; : >"$HPC_OVERLAP_MARK"' \
    '  for ((i = 0; i < 300; i++)); do [[ -e $HPC_OVERLAP_MARK.rest ]] && return 0; sleep 0.1; done; false' \
    '}' >"$tree/tests/integration/site_lane.bats"
  # shellcheck disable=SC2016
  printf '%s\n' '@test "rest lane" {' '  : >"$HPC_OVERLAP_MARK.rest"' \
    '  for ((i = 0; i < 300; i++)); do [[ -e $HPC_OVERLAP_MARK.site ]] && return 0; sleep 0.1; done; false' \
    '}' >"$tree/tests/integration/rest.bats"
  run bash "$tree/tests/run.sh" --no-install --no-cluster --no-lint --no-pytest --clusters 1 --bats "$tree/tests"
  assert_success
  assert_line --regexp "^ok 1 site lane # in [0-9]+ ms$"
  assert_line --regexp "^ok 1 rest lane # in [0-9]+ ms$"
  assert_line "suite: 3 passed, 0 failed"
  assert_line --regexp '^ +[0-9]+  integration \(site lane\)$'
}
