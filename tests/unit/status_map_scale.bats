#!/usr/bin/env bats
# status EXP of a large map that SLURM has forgotten (issue 39, item 3): the summary line of each
# array counts its items from the tasks' status files in one awk, with no work per task in Bash;
# the same counts as before (and as --tasks shows), the same files trusted. Without SLURM: the
# table-driven stand-ins of tests/fixtures/manage/bin (as tests/unit/status_scale.bats).

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

# plant_map EXP ID N: a map EXP of one array ID of N tasks, SLURM's word on none of them; each
# task i wrote its status file: COMPLETED, FAILED (exit 3) when i % 10 == 7, and left RUNNING
# (lost) when i % 10 == 8; task 9 wrote none. (One mkdir and one awk write the 2,000 tasks'
# folders and files: a loop of the test's shell runs bats' DEBUG trap at every command.)
plant_map() {
  local exp=$1 id=$2 n=$3
  make_manifest "$exp" "$id" "0-$((n - 1))" map
  map_dir=$outputs/map/$exp/20300101-000000-$id
  mkdir -p -- "$map_dir/tasks"
  (cd -- "$map_dir/tasks" && seq 0 $((n - 1)) | xargs mkdir --)
  DIR=$map_dir/tasks awk -v id="$id" -v n="$n" 'BEGIN {
    for (i = 0; i < n; i++) {
      if (i == 9) continue
      state = "COMPLETED"; code = 0
      if (i % 10 == 7) { state = "FAILED"; code = 3 }
      if (i % 10 == 8) state = "RUNNING"
      file = ENVIRON["DIR"] "/" i "/status.json"
      printf "{\"item\": \"%s\", \"array_job_id\": \"%s\", \"task_id\": \"%s\", \"state\": \"%s\", \"exit_code\": %s}\n", i, id, i, state, code >file
      close(file)
    }
  }'
}

# trace_lines ARGS...: how many commands bash -x traces for the submitter's ARGS (its lines that
# begin with '+': a value of many lines, traced, is one command).
trace_lines() {
  bash -x "$submitter" "$@" 2>&1 >/dev/null </dev/null | grep -c '^+'
}

@test "status EXP of a map SLURM has forgotten: each array's items per state from its status files, as --tasks lists them; another attempt's file, a file of another array's task, a link and another user's file as before" {
  plant_map m 700 40
  # Task 12's second attempt (the newer file read last) says FAILED; a file in task 13's folder
  # names a task of another array; 14's file is a link to one that says COMPLETED; 15's another
  # user's (both LOST: a FAILED file, RUNNING left).
  printf '{"array_job_id": "700", "task_id": "12", "state": "FAILED", "exit_code": 4}\n' \
    >"$map_dir/tasks/12/status_2.json"
  printf '{"array_job_id": "999", "task_id": "13", "state": "FAILED", "exit_code": 1}\n' \
    >"$map_dir/tasks/13/status_2.json"
  printf '{"array_job_id": "700", "task_id": "14", "state": "COMPLETED", "exit_code": 0}\n' >"$tmp/14.json"
  rm -- "$map_dir/tasks/14/status.json" "$map_dir/tasks/15/status.json"
  ln -s "$tmp/14.json" "$map_dir/tasks/14/status.json"
  printf '{"array_job_id": "700", "task_id": "15", "state": "COMPLETED", "exit_code": 0}\n' \
    >"$map_dir/tasks/15/status.json"
  chown nobody "$map_dir/tasks/15/status.json"
  manage status m --tasks
  assert_equal "$status" 0
  assert_line --regexp '^700_12 +m +venv-none +FAILED +4 '
  assert_line --regexp '^700_13 +m +venv-none +COMPLETED +0 '
  assert_line --regexp '^700_14 +m +venv-none +LOST +- '
  assert_line --regexp '^700_17 +m +venv-none +FAILED +3 '
  assert_line --regexp '^700_18 +m +venv-none +LOST +0 '
  local completed failed lost
  completed=$(grep -cE '^700_[0-9]+ +m +venv-none +COMPLETED ' <<<"$output")
  failed=$(grep -cE '^700_[0-9]+ +m +venv-none +FAILED ' <<<"$output")
  lost=$(grep -cE '^700_[0-9]+ +m +venv-none +LOST ' <<<"$output")
  assert_equal "$completed $failed $lost" "28 5 7"
  manage status m
  assert_equal "$status" 0
  assert_equal "$stderr" ""
  assert_equal "$(tr -s ' ' <<<"${lines[1]}")" \
    "700_[0-39] m venv-none 40 items: 28 COMPLETED, 5 FAILED, 7 LOST - $outputs/m_venv-none_700_%a.out"
}

@test "status EXP of a forgotten map whose ended states status kept (the .states file): SLURM's kept word still wins over a file's, in the summary as on each task's line" {
  plant_map m 710 20
  # SLURM said task 0 FAILED and task 9 (no file) COMPLETED before it forgot them.
  printf '0\t710\tFAILED\t1:0\n9\t710\tCOMPLETED\t0:0\n' | sed 's/^/710_/' >"$manifests/m_710.states"
  chmod 600 "$manifests/m_710.states"
  manage status m
  assert_equal "$status" 0
  assert_equal "$(tr -s ' ' <<<"${lines[1]}")" \
    "710_[0-19] m venv-none 20 items: 3 FAILED, 14 COMPLETED, 3 LOST - $outputs/m_venv-none_710_%a.out"
}

@test "status EXP's summary of a forgotten map does no work per item: bash -x writes about as many lines for 2,000 items as for 200" {
  plant_map small 720 200
  plant_map big 730 2000
  local few many
  few=$(trace_lines status small)
  many=$(trace_lines status big)
  # Before: thousands of lines more (several per item).
  ((many - few < 200)) || fail "bash -x: $few lines for 200 items, $many for 2,000"
  manage status big
  assert_equal "$(tr -s ' ' <<<"${lines[1]}")" \
    "730_[0-1999] big venv-none 2000 items: 1599 COMPLETED, 200 FAILED, 201 LOST - $outputs/big_venv-none_730_%a.out"
}

@test "status EXP of a forgotten map whose ended states status kept (.states): counted in the one awk too, no work per item (bash -x), the same counts as each task's line" {
  # kept_states ID N EXP: SLURM said every third task FAILED and the others COMPLETED before it
  # forgot them (COMPLETED with a file left RUNNING: LOST, as task 8).
  kept_states() {
    awk -v id="$1" -v n="$2" 'BEGIN {
      for (i = 0; i < n; i++) printf "%s_%s\t%s\t%s\t0:0\n", id, i, id, (i % 3 ? "COMPLETED" : "FAILED")
    }' >"$manifests/$3_$1.states"
    chmod 600 "$manifests/$3_$1.states"
  }
  plant_map small 750 200
  plant_map big 760 2000
  kept_states 750 200 small
  kept_states 760 2000 big
  local few many
  few=$(trace_lines status small)
  many=$(trace_lines status big)
  ((many - few < 200)) || fail "bash -x: $few lines for 200 items, $many for 2,000"
  manage status big
  assert_equal "$status" 0
  assert_equal "$stderr" ""
  assert_equal "$(tr -s ' ' <<<"${lines[1]}")" \
    "760_[0-1999] big venv-none 2000 items: 667 FAILED, 1200 COMPLETED, 133 LOST - $outputs/big_venv-none_760_%a.out"
  manage status big --tasks
  assert_equal "$(grep -cE '^760_[0-9]+ .* FAILED ' <<<"$output")" 667
  assert_equal "$(grep -cE '^760_[0-9]+ .* COMPLETED ' <<<"$output")" 1200
  assert_equal "$(grep -cE '^760_[0-9]+ .* LOST ' <<<"$output")" 133
  assert_line --regexp '^760_8 +big +venv-none +LOST '
  # A kept state that is not an ended one (the file is the user's own, but not as status writes
  # it) is not trusted by the count: each task's state, as before.
  printf '760_5\t760\tRUNNING\t0:0\n' >>"$manifests/big_760.states"
  manage status big
  assert_equal "$status" 0
  assert_equal "$(tr -s ' ' <<<"${lines[1]}")" \
    "760_[0-1999] big venv-none 2000 items: 667 FAILED, 1200 COMPLETED, 133 LOST - $outputs/big_venv-none_760_%a.out"
  # Another user's states file (planted beside the manifest) is not read: one line says so, the
  # files alone count.
  chown nobody "$manifests/big_760.states"
  manage status big
  assert_equal "$status" 0
  assert_equal "$(tr -s ' ' <<<"${lines[1]}")" \
    "760_[0-1999] big venv-none 2000 items: 1599 COMPLETED, 200 FAILED, 201 LOST - $outputs/big_venv-none_760_%a.out"
  [[ $stderr == *"not read: $manifests/big_760.states "* ]] || fail "no line about the states file: $stderr"
}

@test "status EXP of a chunked map SLURM has forgotten: its items counted per state on a line of their own, its array's line SLURM's word on its tasks, as before" {
  make_manifest m 740 0-11 map
  local dir=$outputs/map/m/20300101-000000-740 i state
  mkdir -p "$dir"
  printf '{"name": "m", "count": 40}\n' >"$dir/manifest.json"
  for i in $(seq 0 35); do
    mkdir -p "$dir/tasks/$i"
    state=COMPLETED
    ((i != 5)) || state=FAILED
    printf '{"item": "%s", "array_job_id": "740", "task_id": "%s", "state": "%s", "exit_code": 0, "chunk": "%s"}\n' \
      "$i" "$((i / 3))" "$state" "$((i / 3))" >"$dir/tasks/$i/status.json"
  done
  manage status m
  assert_equal "$status" 0
  assert_equal "$(tr -s ' ' <<<"${lines[1]}")" \
    "740_[0-11] m venv-none 12 items: 12 UNKNOWN - $outputs/m_venv-none_740_%a.out"
  assert_line "map m/20300101-000000-740: 40 items: 35 COMPLETED, 1 FAILED, 4 not started"
}
