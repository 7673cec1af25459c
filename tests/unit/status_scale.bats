#!/usr/bin/env bats
# status that scales (issue 39): the project's manifests are read once into an index
# (manifests/.index) and, after that, only the new ones; a large history is still read
# correctly; what is read again is only the user's own regular file, never through a link.
# The default view: the jobs SLURM still runs or holds, then the most recent; --all everything;
# an array of many tasks one summary line (counts per state; items for a map), --tasks or the
# array's job id every task. Without SLURM: the table-driven stand-ins of
# tests/fixtures/manage/bin (as tests/unit/manage.bats), a real second user where needed
# (tests/helpers/mate.bash).

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

# jobs_column: the first column of the table's rows (the header apart), space-separated.
jobs_column() {
  sed -n '2,$p' <<<"$output" | grep -E '^[0-9]' | grep -v ' not shown ' | cut -d' ' -f1 | tr '\n' ' '
}

# ---------------------------------------------------------------------------------------------
# The index of the manifests

@test "a history of 300 jobs: status --all lists every one, from the index the second time; a manifest added or removed since is seen; the index is the user's alone" {
  plant_history 300 1000
  manage status --all
  assert_equal "$status" 0
  assert_equal "$stderr" ""
  assert_equal "$(grep -c '^1[0-9][0-9][0-9] ' <<<"$output")" 300
  [[ -f $manifests/.index && ! -L $manifests/.index ]] || fail "no index"
  assert_equal "$(stat -c %a "$manifests/.index")" 600
  local first=$output inode
  inode=$(stat -c %i "$manifests/.index")
  # The second time, the same table (from the index, which nothing made change: not written again).
  manage status --all
  assert_equal "$output" "$first"
  assert_equal "$(stat -c %i "$manifests/.index")" "$inode"
  # Every experiment is known from the index.
  manage status nope
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: nope: unknown experiment of project my project; known: h0 h1 h2 h3 h4 h5 h6 h7 h8 h9"
  # One added, one removed.
  make_manifest late 2000
  rm -- "$manifests/h5_1005.manifest"
  manage status --all
  assert_equal "$status" 0
  assert_equal "$(grep -c '^[12][0-9][0-9][0-9] ' <<<"$output")" 300
  assert_line --regexp '^2000 +late +venv-none '
  refute_line --regexp '^1005 '
  # An experiment's view: its 20 most recent jobs.
  manage status h5
  assert_equal "$(jobs_column)" "1105 1115 1125 1135 1145 1155 1165 1175 1185 1195 1205 1215 1225 1235 1245 1255 1265 1275 1285 1295 "
  assert_equal "${lines[-1]}" "9 older jobs not shown (ended, or forgotten by SLURM): bash job_submitter.sh status --all h5"
}

@test "the index never vouches for a manifest: a manifest replaced since it was indexed is read again; a row of the index naming no manifest, or a forged one, names nothing" {
  make_manifest e 100
  make_manifest e 101
  manage status
  assert_equal "$status" 0
  # A manifest replaced (another inode): its new experiment is read.
  make_manifest f 300
  sed 's/300/101/g; s/exp_name\tf/exp_name\te2/' "$manifests/f_300.manifest" >"$tmp/m"
  chmod 600 "$tmp/m"
  mv -f -- "$tmp/m" "$manifests/e_101.manifest"
  # A forged row, for a manifest that is not there.
  printf 'e_999.manifest\x1f1:1:1\x1f999\x1fghost\x1fvenv-none\x1f\x1f999\x1f/x\x1fsingle\x1fn\x1f.\n' >>"$manifests/.index"
  manage status
  assert_equal "$status" 0
  assert_line --regexp '^101 +e2 +venv-none '
  refute_output --partial ghost
  refute_line --regexp '^999 '
}

@test "an index that is a link, another user's, or that others can write is not read (one line says so) nor written; every manifest is read as before; a planted manifest link or another user's manifest is refused as today" {
  make_manifest e 100
  make_manifest e 101
  # A link in the index's place, to a file the user must not have overwritten.
  printf 'precious\n' >"$tmp/victim"
  ln -s "$tmp/victim" "$manifests/.index"
  manage status
  assert_equal "$status" 0
  assert_line --regexp '^100 +e +venv-none '
  assert_line --regexp '^101 +e +venv-none '
  assert_equal "$stderr" "job_submitter.sh: not read: $manifests/.index is not a regular file of ${USER:-this user} (or is a link); remove it"
  assert_equal "$(<"$tmp/victim")" precious
  [[ -L $manifests/.index ]] || fail "the link was replaced"
  rm -- "$manifests/.index"
  # Group-writable.
  manage status
  [[ -f $manifests/.index ]] || fail "no index"
  chmod 620 "$manifests/.index"
  manage status
  assert_equal "$status" 0
  assert_line --regexp '^101 +e +venv-none '
  assert_equal "$stderr" "job_submitter.sh: not read: $manifests/.index can be changed by others (mode 620); remove it"
  rm -- "$manifests/.index"
  # A manifest link and another user's manifest: refused, whether or not indexed before.
  manage status
  ln -s "$manifests/e_100.manifest" "$manifests/x_102.manifest"
  cp -p -- "$manifests/e_101.manifest" "$manifests/y_103.manifest"
  chown nobody "$manifests/y_103.manifest"
  chown nobody "$manifests/e_101.manifest"
  manage status
  assert_equal "$status" 0
  assert_line --regexp '^100 +e +venv-none '
  refute_line --regexp '^10[123] '
  assert_equal "$stderr" "job_submitter.sh: not read: 3 manifest(s) in $manifests that others can change or that are not your own files (e_101.manifest, ...); if they are yours, make them yours alone: chmod go-w"
}

# ---------------------------------------------------------------------------------------------
# The default view

@test "the default view: every job SLURM still runs or holds, then the 20 most recent, in submission order; one line says how many older ones are not shown; --all shows them" {
  plant_history 40 1000
  slurm_jobs() { cat >"$HPC_STUB_JOBS"; }
  slurm_jobs <<'EOT'
squeue 1003 1003 RUNNING -
squeue 1007 1007 PENDING -
squeue 1039 1039 RUNNING -
EOT
  manage status
  assert_equal "$status" 0
  assert_equal "$stderr" ""
  assert_equal "$(jobs_column)" "1003 1007 1020 1021 1022 1023 1024 1025 1026 1027 1028 1029 1030 1031 1032 1033 1034 1035 1036 1037 1038 1039 "
  assert_line --regexp '^1003 +h3 +venv-none +RUNNING '
  assert_line --regexp '^1007 +h7 +venv-none +PENDING '
  assert_equal "${lines[-1]}" "18 older jobs not shown (ended, or forgotten by SLURM): bash job_submitter.sh status --all"
  # squeue asked once for the user's jobs, once for the rows' states.
  assert_equal "$(calls squeue)" 2
  # An experiment's view is the same: h3's four jobs, all shown.
  manage status h3
  assert_equal "$(jobs_column)" "1003 1013 1023 1033 "
  refute_output --partial 'not shown'
  manage status --all
  assert_equal "$(grep -c '^10[0-9][0-9] ' <<<"$output")" 40
  refute_output --partial 'not shown'
  # --all with an experiment, before or after it.
  manage status h3 --all
  assert_equal "$status" 0
  assert_equal "$(jobs_column)" "1003 1013 1023 1033 "
  manage status --all h3
  assert_equal "$status" 0
  assert_equal "$(jobs_column)" "1003 1013 1023 1033 "
}

@test "status: unknown options and words are bad input (exit 2, one line); -h still the usage" {
  make_manifest e 100
  manage status --every
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: --every: unknown option of 'status'; see 'bash job_submitter.sh status --help'"
  manage status e e
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: status: unexpected word 'e'; usage: status [EXP|JOBID[_TASK]]"
  manage status --help
  assert_equal "$status" 0
  assert_line --regexp '^  --all +'
  assert_line --regexp '^  --tasks +'
}

# ---------------------------------------------------------------------------------------------
# Arrays and maps

@test "an array of more than 10 tasks: one summary line with its tasks per state; --tasks or its job id lists every task; a short array stays one line per task" {
  make_manifest big 500 0-99%4
  make_manifest small 600 0-2
  {
    printf 'squeue 500_0 501 RUNNING -\nsqueue 500_1 502 RUNNING -\n'
    printf 'squeue 500_%s 500 PENDING -\n' 90 91 92 93 94 95 96 97 98 99
    for i in $(seq 2 89); do
      if ((i % 11 == 0)); then
        printf 'scontrol 500_%s %s FAILED 1:0\n' "$i" "$((600 + i))"
      else
        printf 'scontrol 500_%s %s COMPLETED 0:0\n' "$i" "$((600 + i))"
      fi
    done
    printf 'scontrol 600_%s %s COMPLETED 0:0\n' 0 700 1 701 2 702
  } >"$HPC_STUB_JOBS"
  manage status
  assert_equal "$status" 0
  assert_equal "$stderr" ""
  assert_equal "${#lines[@]}" 5
  assert_equal "$(tr -s ' ' <<<"${lines[1]}")" \
    "500_[0-99%4] big venv-none 100 tasks: 2 RUNNING, 10 PENDING, 80 COMPLETED, 8 FAILED - $outputs/big_venv-none_500_%a.out"
  assert_line --regexp '^600_0 +small +venv-none +COMPLETED +0:0 '
  assert_line --regexp '^600_2 +small +venv-none +COMPLETED +0:0 '
  manage status --tasks
  assert_equal "${#lines[@]}" 104
  assert_line --regexp '^500_0 +big +venv-none +RUNNING +- '
  assert_line --regexp '^500_11 +big +venv-none +FAILED +1:0 '
  assert_line --regexp '^500_99 +big +venv-none +PENDING +- '
  manage status 500
  assert_equal "${#lines[@]}" 101
  manage status 500_11
  assert_equal "${#lines[@]}" 2
  assert_line --regexp '^500_11 +big +venv-none +FAILED +1:0 '
  manage status big
  assert_equal "${#lines[@]}" 2
  manage status big --tasks
  assert_equal "${#lines[@]}" 101
}

@test "a map of 30 items: one summary line counting items per state, from the tasks' status files and SLURM; --tasks each item" {
  make_manifest m 800 0-29 map
  local dir=$outputs/map/m/20300101-000000-800 i state code
  for i in $(seq 0 29); do
    mkdir -p "$dir/tasks/$i"
    state=COMPLETED code=0
    ((i % 10 != 7)) || state=FAILED code=3
    ((i < 28)) || continue
    printf '{"array_job_id": "800", "task_id": "%s", "state": "%s", "exit_code": %s}\n' "$i" "$state" "$code" \
      >"$dir/tasks/$i/status.json"
  done
  printf 'squeue 800_28 828 RUNNING -\nsqueue 800_29 800 PENDING -\n' >"$HPC_STUB_JOBS"
  manage status m
  assert_equal "$status" 0
  assert_equal "$stderr" ""
  assert_equal "$(tr -s ' ' <<<"${lines[1]}")" \
    "800_[0-29] m venv-none 30 items: 1 RUNNING, 1 PENDING, 25 COMPLETED, 3 FAILED - $outputs/m_venv-none_800_%a.out"
  manage status m --tasks
  assert_line --regexp '^800_17 +m +venv-none +FAILED +3 '
  assert_line --regexp '^800_28 +m +venv-none +RUNNING +- '
}

# ---------------------------------------------------------------------------------------------
# The other commands

@test "cancel, logs and resubmit of a large history find their experiment through the index" {
  plant_history 120 1000
  manage status
  printf 'squeue 1113 1113 RUNNING -\n' >"$HPC_STUB_JOBS"
  printf 'log of 1113\n' >"$outputs/h0_venv-none_1113.out"
  # The template's output names the first job's id: planted copies name their own.
  manage logs 1113
  assert_equal "$status" 0
  assert_output --partial 'log of 1113'
  manage cancel 1113
  assert_equal "$status" 0
  local -a argv
  mapfile -d '' argv <"$stub_log/scancel.1.args"
  assert_equal "${argv[*]}" "1113"
}

@test "a map's status files are read only as the user's own regular files at their place: a link, a task folder that is a link, another user's file say nothing (LOST once SLURM has forgotten the task)" {
  make_manifest m 900 0-11 map
  local dir=$outputs/map/m/20300101-000000-900 i
  for i in $(seq 0 11); do
    mkdir -p "$dir/tasks/$i"
    printf '{"item": "x", "array_job_id": "900", "task_id": "%s", "state": "COMPLETED", "exit_code": 0}\n' "$i" \
      >"$dir/tasks/$i/status.json"
  done
  # 9: its file a link to a file that says COMPLETED; 10: its folder a link to one that does;
  # 11: another user's file.
  mkdir -p "$tmp/elsewhere/10"
  printf '{"array_job_id": "900", "task_id": "9", "state": "COMPLETED", "exit_code": 0}\n' >"$tmp/elsewhere/9.json"
  printf '{"array_job_id": "900", "task_id": "10", "state": "COMPLETED", "exit_code": 0}\n' \
    >"$tmp/elsewhere/10/status.json"
  rm -r -- "$dir/tasks/9/status.json" "$dir/tasks/10"
  ln -s "$tmp/elsewhere/9.json" "$dir/tasks/9/status.json"
  ln -s "$tmp/elsewhere/10" "$dir/tasks/10"
  chown nobody "$dir/tasks/11/status.json"
  manage status m
  assert_equal "$status" 0
  assert_equal "$(tr -s ' ' <<<"${lines[1]}")" \
    "900_[0-11] m venv-none 12 items: 9 COMPLETED, 3 LOST - $outputs/m_venv-none_900_%a.out"
  manage status m --tasks
  assert_line --regexp '^900_8 +m +venv-none +COMPLETED +0 '
  assert_line --regexp '^900_9 +m +venv-none +LOST +- '
  assert_line --regexp '^900_10 +m +venv-none +LOST +- '
  assert_line --regexp '^900_11 +m +venv-none +LOST +- '
}

@test "cancel EXP of an experiment with a long history asks SLURM's states only of the jobs SLURM still has (one squeue -u), and cancels those" {
  plant_history 300 1000
  manage status
  printf 'squeue 1013 1013 RUNNING -\nscontrol 1023 1023 COMPLETED 0:0\n' >"$HPC_STUB_JOBS"
  rm -rf -- "${stub_log:?}"/*
  manage cancel h3
  assert_equal "$status" 0
  assert_output --partial 'cancelled 1013 (h3, was RUNNING)'
  local -a argv
  mapfile -d '' argv <"$stub_log/squeue.1.args"
  assert_equal "${argv[*]}" "-h -u $EUID -o %F"
  mapfile -d '' argv <"$stub_log/squeue.2.args"
  assert_equal "${argv[*]}" "-h -r -j 1013 -o %A|%F|%K|%T|%r"
  mapfile -d '' argv <"$stub_log/scancel.1.args"
  assert_equal "${argv[*]}" "1013"
  # A short history: every recorded job asked about, as before.
  make_manifest short 5000
  make_manifest short 5001
  rm -rf -- "${stub_log:?}"/*
  printf 'squeue 5001 5001 RUNNING -\n' >"$HPC_STUB_JOBS"
  manage cancel short
  assert_equal "$status" 0
  mapfile -d '' argv <"$stub_log/squeue.1.args"
  assert_equal "${argv[*]}" "-h -r -j 5000,5001 -o %A|%F|%K|%T|%r"
}

@test "an array of 30 tasks SLURM has forgotten: each task's state from its own log, on its line (its job id, --tasks) and in the summary; a log that is not text, a link or none says nothing" {
  make_manifest arr 700 0-29
  local i
  for i in $(seq 0 29); do
    printf '[hpc n1] job 70%s\n[hpc n1] the program finished successfully after 1.000 s\n' "$i" \
      >"$outputs/arr_venv-none_700_$i.out"
  done
  printf '[hpc n1] the program failed with exit status 3 after 2.000 s\n' >"$outputs/arr_venv-none_700_5.out"
  printf 'bin\0ary\n[hpc n1] the program finished successfully after 1.000 s\n' >"$outputs/arr_venv-none_700_6.out"
  rm -- "$outputs/arr_venv-none_700_7.out"
  rm -- "$outputs/arr_venv-none_700_8.out"
  ln -s "$outputs/arr_venv-none_700_0.out" "$outputs/arr_venv-none_700_8.out"
  manage status 700
  assert_equal "$status" 0
  assert_equal "$stderr" ""
  assert_equal "${#lines[@]}" 31
  local forgot='(from its log; SLURM has forgotten it)'
  assert_equal "$(grep -E '^700_0 ' <<<"$output" | tr -s ' ')" \
    "700_0 arr venv-none COMPLETED $forgot 0 $outputs/arr_venv-none_700_0.out"
  assert_equal "$(grep -E '^700_5 ' <<<"$output" | tr -s ' ')" \
    "700_5 arr venv-none FAILED $forgot 3 $outputs/arr_venv-none_700_5.out"
  for i in 6 7 8; do
    assert_equal "$(grep -E "^700_$i " <<<"$output" | tr -s ' ')" \
      "700_$i arr venv-none UNKNOWN (forgotten by SLURM) - $outputs/arr_venv-none_700_$i.out"
  done
  manage status arr
  assert_equal "$(tr -s ' ' <<<"${lines[1]}")" \
    "700_[0-29] arr venv-none 30 tasks: 26 COMPLETED, 1 FAILED, 3 UNKNOWN - $outputs/arr_venv-none_700_%a.out"
}
