#!/usr/bin/env bats
# The core user paths on the site configuration (local_cluster.sh --config site: accounting in
# slurmdbd, MinJobAge=5, a preemptible default partition): a single job, 2x2 torchrun, a map with
# a gather, a scaling study, and a job out of time and one cancelled, all submitted at once; then,
# once the controller has forgotten every one of them, what the user asks next reads their ends
# from sacct: status (COMPLETED, FAILED, TIMEOUT, CANCELLED; the map's tasks, the study's runs),
# logs, resubmit --failed of the map, gather EXP and scaling-report. The second test builds on
# the first (the ids are kept in files). Lean: small programs, the jobs side by side.
# shellcheck disable=SC2016 # configs lines are single-quoted on purpose: the job expands them

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  load '../helpers/site'
  hpc_site_cluster_use
  hpc_test_project "site core project"
  cp "$HPC_ROOT/tests/fixtures/journey/"{allreduce.py,flaky.py} "$HPC_ROOT/tests/fixtures/manage/tasks.py" "$PROJECT/"
  # The map's gather: how many items succeeded (flaky.py writes no result to gather).
  printf 'import os\nprint("GATHER n_ok=" + os.environ["map_n_ok"], flush=True)\n' >"$PROJECT/count.py"
  hpc_warm_venv "$PROJECT" 'python probe.py exit 0' -e warm
  export CORE_STATE=$BATS_FILE_TMPDIR/state
  mkdir -p "$CORE_STATE"
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  load '../helpers/site'
  outputs="$SCRATCH/site core project/hpc_outputs"
}

teardown_file() {
  local file
  for file in "${CORE_STATE:-/nonexistent}"/*.id; do
    [[ -f $file ]] && scancel "$(<"$file")" 2>/dev/null || true
  done
}

# submit NAME ARGS...: job_submitter.sh -y ARGS; keeps the first job id it prints in NAME.id and
# its whole output in NAME.out; sets out and id.
submit() {
  local name=$1
  shift
  out=$(bash "$PROJECT/hpc_files/job_submitter.sh" -y "$@" 2>&1 </dev/null) || fail "job_submitter.sh $* failed: $out"
  id=$(sed -n 's/^Submitted job \([0-9][0-9]*\).*/\1/p' <<<"$out" | head -n 1)
  printf '%s\n' "$out" >"$CORE_STATE/$name.out"
  [[ -z $id ]] || printf '%s\n' "$id" >"$CORE_STATE/$name.id"
}

# toolkit ARGS...: a command of job_submitter.sh (run's output, stdout and stderr apart).
toolkit() {
  bash "$PROJECT/hpc_files/job_submitter.sh" "$@" </dev/null
}

# final ID: SLURM's final state and exit code of job ID from its accounting ('COMPLETED 0:0').
final() {
  sacct -n -P -X -j "$1" -o State,ExitCode | head -n 1 | tr '|' ' ' | sed 's/ by [0-9]*//'
}

# row KEY: the status line of KEY in output, its spaces squeezed.
row() {
  grep -E "^$1 " <<<"$output" | tr -s ' '
}

@test "site: a single job, 2x2 torchrun, a map with a gather, a study, a job out of time and a cancelled one, side by side: each ends as its program did" {
  local single ddp map map_out map_dir gather late gone waits report rank study_dir
  hpc_configs "$PROJECT" 'python probe.py exit 0'
  submit single -g 0 -e single
  single=$id
  hpc_configs "$PROJECT" 'python allreduce.py'
  submit ddp -W torchrun -g 2 -n 2 -e ddp
  ddp=$id
  hpc_configs "$PROJECT" 'python flaky.py ${map_index}'
  submit items -g 0 --map-range 0-2 --gather 'python count.py' --gather-when always -e items
  map=$id map_out=$out
  gather=$(sed -n 's/^Gather job \([0-9][0-9]*\):.*/\1/p' <<<"$out")
  printf '%s\n' "$gather" >"$CORE_STATE/gather.id"
  # The study's runs: what status, sacct and scaling-report say of them, not what they compute
  # (the ddp job above is the torchrun one): Lightning's launcher and a program without torch
  # (no torchrun agent, no import of torch: 5 fewer, seconds of CPU each).
  hpc_configs "$PROJECT" 'python probe.py exit 0'
  submit study --scaling-test --scale-gpus 1,2 -W lightning -e study
  report=$(sed -n 's/.*report job \([0-9][0-9]*\) after them.*/\1/p' <<<"$out")
  printf '%s\n' "$report" >"$CORE_STATE/report.id"
  sed -n 's/.*(jobs \([0-9 ]*\)), report job.*/\1/p' <<<"$out" >"$CORE_STATE/runs"
  hpc_configs "$PROJECT" 'python tasks.py sleep 300'
  submit late -g 0 -t 00:01:00 -e late
  late=$id
  submit gone -g 0 -e gone
  gone=$id
  # A map of two items, one at a time: its second is cancelled while it waits (no status file).
  hpc_configs "$PROJECT" 'python tasks.py sleep 10'
  submit waits -g 0 --map-range 0-1 --max-concurrent 1 --gather 'python count.py' --gather-when always -e waits
  waits=$id
  hpc_wait_output "$outputs/waits_venv-none_${waits}_0.out" '^SLEEP ' 240
  scancel "${waits}_1"
  [[ -n $single && -n $ddp && -n $map && -n $gather && -n $report && -n $late && -n $gone ]] ||
    fail "an id is missing: $(cat "$CORE_STATE"/*.out)"
  hpc_wait_output "$outputs/gone_venv-none_$gone.out" '^SLEEP ' 240
  scancel "$gone"
  for id in "$single" "$ddp" "$map" "$gather" "$report" "$late" "$gone" "$waits"; do hpc_wait_job "$id" 300; done
  assert_equal "$(final "$single")" "COMPLETED 0:0"
  assert_equal "$(final "$ddp")" "COMPLETED 0:0"
  for rank in 0 1 2 3; do
    run grep -cE "^(\[rank $rank\] )?rank $rank/4 on n[12]: sum of ranks = 6$" "$outputs/ddp_venv-torchrun_$ddp.out"
    assert_output 1
  done
  assert_equal "$(final "$gather")" "COMPLETED 0:0"
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$map_out")
  run grep -h '^GATHER n_ok=' "$map_dir/gather_$gather.out"
  assert_output 'GATHER n_ok=2'
  assert_equal "$(final "$report")" "COMPLETED 0:0"
  read -r -a runs <"$CORE_STATE/runs"
  assert_equal "${#runs[@]}" 2
  for id in "${runs[@]}"; do assert_equal "$(final "$id")" "COMPLETED 0:0"; done
  study_dir=$(sed -n 's/^Folder: //p' "$CORE_STATE/study.out")
  run head -n 1 "$study_dir/report.md"
  assert_output --regexp '^\*\*Verdict: '
  [[ $(final "$late") == "TIMEOUT "* ]] || fail "job $late: $(final "$late")"
  [[ $(final "$gone") == "CANCELLED "* ]] || fail "job $gone: $(final "$gone")"
}

@test "site: once the controller forgot them all: status from sacct (COMPLETED, FAILED, TIMEOUT, CANCELLED, the map's tasks, the study's runs), logs, resubmit --failed, gather EXP and scaling-report" {
  local name single ddp map gather late gone waits rerun again runs task want map_dir
  for name in single ddp items gather report late gone waits; do
    [[ -f $CORE_STATE/$name.id ]] || skip "the first test did not submit $name"
  done
  single=$(<"$CORE_STATE/single.id") ddp=$(<"$CORE_STATE/ddp.id") map=$(<"$CORE_STATE/items.id")
  gather=$(<"$CORE_STATE/gather.id") late=$(<"$CORE_STATE/late.id") gone=$(<"$CORE_STATE/gone.id")
  read -r -a runs <"$CORE_STATE/runs"
  for id in "$single" "$ddp" "$map" "$gather" "$(<"$CORE_STATE/report.id")" "${runs[@]}" "$late" "$gone" \
    "$(<"$CORE_STATE/waits.id")"; do
    hpc_wait_forgotten "$id" 150
  done

  run --separate-stderr toolkit status
  assert_success
  assert_equal "$(row "$single")" "$single single venv-none COMPLETED 0:0 $outputs/single_venv-none_$single.out"
  assert_equal "$(row "$ddp")" "$ddp ddp venv-torchrun COMPLETED 0:0 $outputs/ddp_venv-torchrun_$ddp.out"
  [[ $(row "$late") == "$late late venv-none TIMEOUT "* ]] || fail "job $late: $(row "$late")"
  [[ $(row "$gone") == "$gone gone venv-none CANCELLED "* ]] || fail "job $gone: $(row "$gone")"
  for task in 0 1 2; do
    want="COMPLETED 0"
    [[ $task != 1 ]] || want="FAILED 3"
    [[ $(row "${map}_$task") == "${map}_$task items venv-none $want "* ]] || fail "task $task: $(row "${map}_$task")"
  done
  [[ $(row "$gather") == "$gather items "*" COMPLETED 0:0 "* ]] || fail "gather $gather: $(row "$gather")"
  for id in "${runs[@]}"; do
    [[ $(row "$id") == "$id study "*" COMPLETED 0:0 "* ]] || fail "run $id: $(row "$id")"
  done
  # The map's item cancelled while it waited: no line of its own in sacct (the array's range).
  waits=$(<"$CORE_STATE/waits.id")
  [[ $(row "${waits}_1") == "${waits}_1 waits venv-none CANCELLED "* ]] || fail "task 1: $(row "${waits}_1")"
  refute_output --partial UNKNOWN
  refute_output --partial 'from its log'

  # logs of an ended job SLURM has forgotten: the log, then the end (no follow for ever).
  run --separate-stderr timeout "$HPC_TEST_HANG_S" bash "$PROJECT/hpc_files/job_submitter.sh" logs single </dev/null
  assert_success
  assert_output --partial 'EXIT rank=0 code=0'

  # The user fixes item 1, then re-runs what failed: only it.
  touch "$SCRATCH/site core project/fixed"
  run --separate-stderr toolkit resubmit items --failed
  assert_success
  rerun=$(sed -n 's/^Resubmitted task(s) 1 of map [^ ]* as job \([0-9][0-9]*\) .*/\1/p' <<<"$output")
  [[ -n $rerun ]] || fail "no job id in: $output $stderr"
  printf '%s\n' "$rerun" >"$CORE_STATE/rerun.id"
  hpc_wait_job "$rerun" 240
  assert_equal "$(final "$rerun" | cut -d' ' -f1)" COMPLETED

  # The gather again, now that every item is done: it counts 3 ok.
  run --separate-stderr toolkit gather items
  assert_success
  again=$(sed -n 's/^Gather job \([0-9][0-9]*\) of map .*/\1/p' <<<"$output")
  [[ -n $again ]] || fail "no job id in: $output $stderr"
  printf '%s\n' "$again" >"$CORE_STATE/again.id"
  hpc_wait_job "$again" 240
  assert_equal "$(final "$again")" "COMPLETED 0:0"
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' "$CORE_STATE/items.out")
  run grep -h '^GATHER n_ok=' "$map_dir/gather_$again.out"
  assert_output 'GATHER n_ok=3'

  # The gather of the map whose waiting item was cancelled, run here: SLURM's end of that item
  # (no status file of its own) from sacct, not LOST.
  run --separate-stderr toolkit gather waits --here
  assert_success
  [[ $stderr == *"1 (CANCELLED)"* ]] || fail "item 1 not CANCELLED: $stderr"
  [[ $stderr != *LOST* ]] || fail "item 1 LOST: $stderr"

  # The study's report drawn again, its runs long forgotten by the controller.
  run --separate-stderr toolkit scaling-report study
  assert_success
  run head -n 1 "$(sed -n 's/^Folder: //p' "$CORE_STATE/study.out")/report.md"
  assert_output --regexp '^\*\*Verdict: '
}
