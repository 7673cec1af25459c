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

@test "the tests that switch user pass from a checkout inside a folder only its owner can read (0700)" {
  command -v runuser >/dev/null || skip "no runuser"
  # A copy of the working tree (tracked and new files, as a fresh clone has them) two levels
  # below a 0700 folder, as a clone in a private home folder is.
  local private="$BATS_TEST_TMPDIR/private home" file
  mkdir -m 700 "$private"
  mkdir -p "$private/clone"
  (cd "$HPC_ROOT" && git ls-files -z --cached --others --exclude-standard) |
    (cd "$HPC_ROOT" && tar --null -T - -cf - 2>/dev/null) | tar -xf - -C "$private/clone"
  # (A checkout whose node_modules is a link has it copied already.)
  [[ -e $private/clone/node_modules ]] || ln -s "$HPC_ROOT/node_modules" "$private/clone/node_modules"
  # Every test that runs code as another user.
  local -a files=()
  while IFS= read -r file; do files+=("$private/clone/$file"); done < <(
    cd "$HPC_ROOT" && grep -lE '\b(runuser|setpriv|su -)' tests/unit/*.bats tests/integration/*.bats | grep -v harness.bats
  )
  ((${#files[@]})) || fail "no test switches user: nothing to prove"
  run runuser -u nobody -- test -x "$private/clone/plai_cleanups"
  assert_failure
  run env -u BASH_ENV "$HPC_ROOT/node_modules/bats/bin/bats" --filter 'as an ordinary user|as another user' "${files[@]}"
  assert_success
  refute_output --partial "# skip"
  assert_output --regexp 'ok 1 '
}

@test "a unit test reaches no cluster: an unplanned SLURM call fails it, naming the call, even when swallowed; a stub answers" {
  mkdir -p "$BATS_TEST_TMPDIR/tests/unit"
  # shellcheck disable=SC2016 # the planted tests' own expansions
  printf '%s\n' "setup() { load '$HPC_ROOT/tests/helpers/common'; load '$HPC_ROOT/tests/helpers/stub'; }" \
    'teardown() { echo "file teardown ran" >&3; }' \
    '@test "swallows an unplanned sinfo" { sinfo -h -o "%N" || true; }' \
    '@test "a planned squeue" { stub squeue "-h : echo 12"; run squeue -h; [ "$output" = 12 ]; unstub squeue; }' \
    '@test "no SLURM call" { true; }' >"$BATS_TEST_TMPDIR/tests/unit/calls.bats"
  run "$HPC_ROOT/node_modules/bats/bin/bats" --tap "$BATS_TEST_TMPDIR/tests/unit/calls.bats"
  assert_equal "$status" 1
  assert_line "not ok 1 swallows an unplanned sinfo"
  assert_line --partial "unplanned SLURM call in this test: sinfo -h -o %N"
  assert_line "ok 2 a planned squeue"
  assert_line "ok 3 no SLURM call"
  # The file's own teardown still runs, for every test.
  assert_equal "$(grep -c '^file teardown ran' <<<"$output")" 3
}
