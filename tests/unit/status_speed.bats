#!/usr/bin/env bats
# status, cancel, logs, resubmit and gather do not slow with a project's history (issue 39, item 3):
# what the commands need of each recorded job comes from the index of the manifests
# (manifests/.index) checked against one find in one awk, a few Bash steps per record; the default
# view asks nothing of the older records but whether SLURM still has them. Speed is measured in
# bench/status; here, the work that grows with the history (bash -x's traced commands), never the
# time. Without SLURM: the table-driven stand-ins of tests/fixtures/manage/bin.

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/manage_fixture'
  manage_fixture_project
}

setup() {
  load '../helpers/common'
  load '../helpers/stub'
  # shellcheck source=tests/helpers/manage_fixture.bash
  source "$BATS_TEST_DIRNAME/../helpers/manage_fixture.bash"
  manage_fixture_setup
}

# trace_lines ARGS...: how many commands bash -x traces for the submitter's ARGS.
trace_lines() {
  bash -x "$submitter" "$@" 2>&1 >/dev/null </dev/null | grep -c '^+'
}

@test "status of a long history: a few Bash steps per recorded job once indexed (bash -x), the same table as --all's rows" {
  plant_history 50 2000
  manage status
  assert_equal "$status" 0
  local few many
  few=$(trace_lines status)
  plant_history 550 3000
  manage status
  assert_equal "$status" 0
  many=$(trace_lines status)
  # Before: about 36 traced commands per record (its row of the index split and checked in Bash,
  # the default view's look at each older one); now its fields stored (bash -x: one line each).
  ((many - few < 12 * 550)) || fail "bash -x: $few lines for 50 recorded jobs, $many for 600"
  local hidden='older jobs not shown (ended, or forgotten by SLURM): bash job_submitter.sh status --all'
  assert_equal "${lines[-1]}" "580 $hidden"
  manage status h7
  assert_equal "$(grep -cE '^[0-9]+ +h7 ' <<<"$output")" 20
  assert_equal "${lines[-1]}" "40 $hidden h7"
  manage status --all
  assert_equal "$(grep -c '^[0-9]' <<<"$output")" 600
}

@test "cancel, logs and resubmit of a long history: a few Bash steps per recorded job (bash -x)" {
  plant_history 50 2000
  manage status
  local cmd many
  local -A few=()
  for cmd in cancel logs resubmit; do few[$cmd]=$(trace_lines "$cmd" h3); done
  plant_history 550 3000
  manage status
  # Before: about 35 each (the index's row of each record split and checked in Bash); resubmit
  # still looks at each record's origin (commands/resubmit.bash: the chain of resubmissions).
  for cmd in cancel logs resubmit; do
    many=$(trace_lines "$cmd" h3)
    ((many - few[$cmd] < 14 * 550)) || fail "$cmd: bash -x: ${few[$cmd]} lines for 50 recorded jobs, $many for 600"
  done
}
