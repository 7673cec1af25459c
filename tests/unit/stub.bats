#!/usr/bin/env bats
# The plan-style stub helper of the unit tests (tests/helpers/stub.bash): calls that follow the
# plan pass; an unplanned call, a call with other arguments and a planned call that never came
# fail the test (through unstub), so that a test using it can fail.

bats_require_minimum_version 1.5.0

setup() {
  load '../helpers/common'
  load '../helpers/stub'
}

@test "stub: planned calls, in order, run their commands with the call's arguments, stdin and status; unstub passes and removes the stub" {
  local dir="$BATS_TEST_TMPDIR/a dir"
  stub sbatch "--parsable --output='$dir/x_%j.out' * : cat >\"\$BATS_TEST_TMPDIR/script\"; echo 4242" \
    'show config : printf "%s|" "$@"; exit 3' \
    '--test-only ?ob.sh'
  run --separate-stderr sbatch --parsable "--output=$dir/x_%j.out" --job-name=j <<<'#!/bin/bash'
  assert_success
  assert_output 4242
  assert_equal "$(<"$BATS_TEST_TMPDIR/script")" '#!/bin/bash'
  run --separate-stderr sbatch show config
  assert_equal "$status" 3
  assert_output 'show|config|'
  run --separate-stderr sbatch --test-only job.sh
  assert_success
  assert_output ''
  run unstub sbatch
  assert_success
  assert_output ''
  [[ ! -e $BATS_TEST_TMPDIR/stubs/bin/sbatch ]]
}

@test "stub: a last '*' matches no argument too; elsewhere a pattern word is one argument" {
  stub squeue '-h * : echo rest' '-h * : echo none' '* x : echo two'
  run squeue -h -j 1,2
  assert_output rest
  run squeue -h
  assert_output none
  run --separate-stderr squeue a x
  assert_output two
  run unstub squeue
  assert_success
}

@test "stub: an unplanned call fails loudly (exit 1, one line naming it) and fails unstub" {
  stub scancel '5001 : echo cancelled'
  run scancel 5001
  assert_success
  run --separate-stderr scancel 5002
  assert_equal "$status" 1
  assert_equal "$stderr" "stub scancel: unplanned call 2: 5002 (the plan has 1 call(s))"
  run --separate-stderr unstub scancel
  assert_equal "$status" 1
  assert_equal "$stderr" "stub scancel: unplanned call 2: 5002 (the plan has 1 call(s))"
}

@test "stub: a call whose arguments do not match its plan line fails, and so does unstub" {
  stub srun '--overlap -N 2 *'
  run --separate-stderr srun --overlap -N 3 'a b'
  assert_equal "$status" 1
  assert_equal "$stderr" "stub srun: call 1: --overlap -N 3 a\\ b does not match its plan line '--overlap -N 2 *'"
  run --separate-stderr unstub srun
  assert_equal "$status" 1
  assert_equal "$stderr" "stub srun: call 1: --overlap -N 3 a\\ b does not match its plan line '--overlap -N 2 *'"
  # Exactly as many arguments as words, without a last '*'.
  stub srun 'a'
  run --separate-stderr srun a b
  assert_equal "$status" 1
  run unstub srun
  assert_failure 1
}

@test "stub: a planned call that never happens fails unstub; a stub without a plan asserts no call" {
  stub scontrol 'show job 1 : true' 'show job 2 : true'
  run scontrol show job 1
  assert_success
  run --separate-stderr unstub scontrol
  assert_equal "$status" 1
  assert_equal "$stderr" "unstub scontrol: 1 planned call(s) did not happen: 1 of 2"
  stub sbatch
  run unstub sbatch
  assert_success
  stub sbatch
  run --separate-stderr sbatch --parsable
  assert_equal "$status" 1
  assert_equal "$stderr" "stub sbatch: unplanned call 1: --parsable (the plan has 0 call(s))"
  run unstub sbatch
  assert_failure 1
  run --separate-stderr unstub nothing
  assert_equal "$status" 1
  assert_equal "$stderr" "unstub nothing: no stub of nothing"
}

@test "stub_through: each planned call is answered by the stand-in, with its arguments, stdin and status" {
  local standin="$BATS_TEST_TMPDIR/a stand-in"
  printf '#!/usr/bin/env bash\nprintf "[%%s]" "$@"; cat; exit 4\n' >"$standin"
  chmod +x "$standin"
  stub_through sinfo "$standin" '-h *'
  run sinfo -h 'a b' <<<'in'
  assert_equal "$status" 4
  assert_output '[-h][a b]in'
  run --separate-stderr sinfo -h
  assert_equal "$status" 1
  run unstub sinfo
  assert_failure 1
}
