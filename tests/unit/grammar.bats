#!/usr/bin/env bats
# One grammar for times and memory sizes: the options' checks (hpc_options.bash) against the
# case tables in tests/fixtures/grammar/, which tests/python/test_profile.py holds the
# profile's checks to as well.

setup() {
  load '../helpers/common'
  # shellcheck source=hpc_files/lib/hpc_common.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
  # shellcheck source=hpc_files/lib/hpc_options.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_options.bash"
}

# grammar_mismatches CHECK TABLE: prints each row of TABLE on which CHECK disagrees.
grammar_mismatches() {
  local check=$1 verdict value got
  while read -r verdict value; do
    [[ -n $verdict && $verdict != '#'* ]] || continue
    if "$check" "$value"; then got=ok; else got=bad; fi
    [[ $got == "$verdict" ]] || printf '%s: %q is %s, expected %s\n' "$check" "$value" "$got" "$verdict"
  done <"$2"
}

@test "times: -t/--time accepts exactly the rows marked ok in tests/fixtures/grammar/time.txt" {
  run grammar_mismatches hpc_opt_check_time "$HPC_ROOT/tests/fixtures/grammar/time.txt"
  assert_success
  assert_output ''
  # The table is read (a test that reads nothing proves nothing).
  run grep -c '^\(ok\|bad\) ' "$HPC_ROOT/tests/fixtures/grammar/time.txt"
  ((output > 20))
}

@test "memory: -m/--mem-per-gpu accepts exactly the rows marked ok in tests/fixtures/grammar/mem.txt" {
  run grammar_mismatches hpc_opt_check_mem "$HPC_ROOT/tests/fixtures/grammar/mem.txt"
  assert_success
  assert_output ''
  run grep -c '^\(ok\|bad\) ' "$HPC_ROOT/tests/fixtures/grammar/mem.txt"
  ((output > 10))
}
