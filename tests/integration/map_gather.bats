#!/usr/bin/env bats
# Map + gather on the local cluster (no sacct): one array of tasks, then a gather job that runs
# when the array has ended (afterany), reads the status files the tasks wrote and applies its
# policy. The task and gather programs are tests/fixtures/map/{featurize,gather}.py.
# shellcheck disable=SC2016 # configs lines are single-quoted on purpose

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "map project"
  cp "$HPC_ROOT/tests/fixtures/map/"{featurize.py,gather.py} "$PROJECT/"
  # The venv: a copy of the one built once per bats run, which the toolkit's own test of a ready
  # build takes (hpc_venv_seed): no warm-up job.
  hpc_venv_seed "$PROJECT"
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  # The programs' knobs reach a submission only when a test sets them (sbatch passes them on).
  unset MAP_FAIL_INDEX MAP_EXIT_CODE MAP_SLEEP MAP_TERM_OK
  hpc_configs "$PROJECT" 'python featurize.py --index ${map_index} --item "${map_item}" --out ${task_dir}'
  printf 'python gather.py\n' >"$PROJECT/gather_configurations.txt"
}

teardown() {
  [[ -z ${split_ids[*]:-} ]] || scancel "${split_ids[@]}" 2>/dev/null || true
}

# submit_map ARGS...: submits a map with -y -g 0 ARGS; sets job_id (the array), gather_id,
# map_dir and out (the submitter's output).
submit_map() {
  out=$(bash "$PROJECT/hpc_files/job_submitter.sh" -y -g 0 "$@" 2>&1) || fail "submission failed: $out"
  job_id=$(sed -n 's/^Submitted job \([0-9][0-9]*\).*/\1/p' <<<"$out")
  gather_id=$(sed -n 's/^Gather job \([0-9][0-9]*\):.*/\1/p' <<<"$out")
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$out")
  [[ -n $job_id && -d $map_dir ]] || fail "no array id or map folder in: $out"
}

# status_field I FIELD: a field of task I's status.json.
status_field() {
  python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print(v)' "$map_dir/tasks/$1/status.json" "$2"
}

@test "6 items, --max-concurrent 2: one array with ArrayTaskThrottle=2, at most 2 tasks at once, items exact and never run, the gather after the last task sums the results" {
  list="$BATS_TEST_TMPDIR/checkpoints list.txt"
  printf '%s\n' '# checkpoints' 'ckpt-0.pt' '' 'two words.pt' "it's \"quoted\".pt" '$(touch pwned)' '  # an indented comment' 'ckpt 4 `id`.pt' 'last;one|x.pt' >"$list"
  MAP_SLEEP=2 submit_map --map-over "$list" --max-concurrent 2 --gather-configs "$PROJECT/gather_configurations.txt" -e six
  # Editing the list after submitting changes nothing the tasks see.
  printf 'changed\n' >"$list"
  run scontrol show job "$job_id"
  assert_output --partial "ArrayTaskThrottle=2"
  assert_equal "$(hpc_job_field "$gather_id" Dependency | sed 's/(.*//')" "afterany:${job_id}_*"
  hpc_wait_job "$job_id" 180
  hpc_wait_job "$gather_id" 120
  assert_equal "$(hpc_job_state "$gather_id")" "COMPLETED 0:0"
  expected=('ckpt-0.pt' 'two words.pt' "it's \"quoted\".pt" '$(touch pwned)' 'ckpt 4 `id`.pt' 'last;one|x.pt')
  for i in 0 1 2 3 4 5; do
    assert_equal "$(status_field "$i" state)" COMPLETED
    assert_equal "$(status_field "$i" index)" "$i"
    run python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["item"])' "$map_dir/tasks/$i/result.json"
    assert_output "${expected[i]}"
  done
  [[ ! -e $PROJECT/pwned && ! -e $PROJECT/hpc_files/pwned ]] || fail "the item \$(touch pwned) was run"
  [[ -z $(find "$SCRATCH" "$PROJECT" -name pwned) ]] || fail "the item \$(touch pwned) was run"
  assert_equal "$(sed -n 4p "$map_dir/items.txt")" '$(touch pwned)'
  # At most 2 tasks overlap, from the status files' own times.
  run python3 - "$map_dir" <<'EOF'
import json, sys
spans = [json.load(open(f"{sys.argv[1]}/tasks/{i}/status.json")) for i in range(6)]
events = sorted([(s["start_s"], 1) for s in spans] + [(s["end_s"], -1) for s in spans], key=lambda e: (e[0], e[1]))
now = most = 0
for _, d in events:
    now += d
    most = max(most, now)
print("most", most)
EOF
  assert_output "most 2"
  # The gather started after the last task ended, and summed 0+1+4+9+16+25.
  last_end=$(python3 -c 'import json,sys; print(max(json.load(open(f"{sys.argv[1]}/tasks/{i}/status.json"))["end_s"] for i in range(6)))' "$map_dir")
  gather_start=$(date -d "$(hpc_job_field "$gather_id" StartTime)" +%s)
  ((gather_start >= ${last_end%.*})) || fail "the gather started at $gather_start, before the last task ended ($last_end)"
  run cat "$map_dir/gather_$gather_id.out"
  assert_line "GATHER sum=55 n_ok=6 failed=''"
  run head -n 1 "$map_dir/map_status.tsv"
  assert_output --partial $'key\tindex\titem\tstate\texit_code'
}

@test "index 3 exits 7 under all-ok: the gather ends FAILED naming index 3, exit 7 and the resubmit command; nothing is left in the queue" {
  MAP_FAIL_INDEX=3 MAP_EXIT_CODE=7 MAP_SLEEP=0 submit_map --map-range 0-5 --gather "python gather.py" -e failing
  hpc_wait_job "$job_id" 180
  hpc_wait_job "$gather_id" 120
  assert_equal "$(hpc_job_state "$gather_id")" "FAILED 1:0"
  assert_equal "$(status_field 3 state)" FAILED
  assert_equal "$(status_field 3 exit_code)" 7
  run cat "$map_dir/gather_$gather_id.out"
  assert_line "gather not run: policy all-ok needs 6/6 tasks, 5 ok; failed: 3 (exit 7); to re-run them: bash job_submitter.sh resubmit failing --failed"
  refute_line --partial "GATHER"
  assert_equal "$(squeue -h -j "$job_id,$gather_id" 2>/dev/null)" ""
}

@test "--gather-when always: the gather ends COMPLETED and results(allow_failed=True)[3] is None" {
  # A secret in the submitting shell, typed into the gather command too: masked in manifest.json.
  MAP_API_KEY=map-sentinel-secret-0123 MAP_FAIL_INDEX=3 MAP_EXIT_CODE=7 MAP_SLEEP=0 \
    submit_map --map-range 0-5 --gather "python gather.py map-sentinel-secret-0123" --gather-when always -e always
  run grep -c map-sentinel-secret-0123 "$map_dir/manifest.json"
  assert_output 0
  run grep -c '(masked)' "$map_dir/manifest.json"
  assert_output 1
  hpc_wait_job "$job_id" 180
  hpc_wait_job "$gather_id" 120
  assert_equal "$(hpc_job_state "$gather_id")" "COMPLETED 0:0"
  run cat "$map_dir/gather_$gather_id.out"
  assert_line "gather runs: policy always needs 0/6 tasks, 5 ok; failed: 3 (exit 7); to re-run them: bash job_submitter.sh resubmit always --failed"
  assert_line "GATHER sum=46 n_ok=5 failed='3'"
  assert_line "GATHER none_at=3"
}

@test "scancel of a running task (whose program exits 0 on SIGTERM) shows it CANCELLED, never COMPLETED; the gather says so" {
  MAP_SLEEP=60 MAP_TERM_OK=1 submit_map --map-range 0-1 --gather "python gather.py" -e cancelled
  hpc_wait_output_status() {
    local i
    for ((i = 0; i < 600; i++)); do
      [[ -f $map_dir/tasks/1/status.json ]] && grep -q FEATURIZE "$SCRATCH/map project/hpc_outputs/"cancelled_*_"${job_id}"_1.out 2>/dev/null && return 0
      sleep 0.2
    done
    fail "task 1 did not start"
  }
  hpc_wait_output_status
  scancel "${job_id}_1"
  scancel "${job_id}_0"
  hpc_wait_job "$job_id" 120
  hpc_wait_job "$gather_id" 120
  run status_field 1 state
  assert_output --regexp '^(CANCELLED|RUNNING)$'
  run cat "$map_dir/gather_$gather_id.out"
  assert_line --regexp "^gather not run: policy all-ok needs 2/2 tasks, 0 ok; failed: 0 \((CANCELLED|LOST)\), 1 \((CANCELLED|LOST)\);"
  run grep -c COMPLETED "$map_dir/map_status.tsv"
  assert_output 0
}

@test "status EXP shows each task and the gather job; cancel EXP cancels the array and the pending gather" {
  MAP_SLEEP=60 submit_map --map-range 0-2 --max-concurrent 1 --gather "python gather.py" -e tocancel
  run bash "$PROJECT/hpc_files/job_submitter.sh" status tocancel
  assert_success
  for i in 0 1 2; do assert_line --regexp "^${job_id}_$i +tocancel +venv-none +(PENDING|RUNNING) "; done
  assert_line --regexp "^$gather_id +tocancel +venv-gather +PENDING "
  run bash "$PROJECT/hpc_files/job_submitter.sh" cancel tocancel
  assert_success
  assert_line --regexp "^cancelled $gather_id \(tocancel, was PENDING\)$"
  hpc_wait_job "$job_id" 60
  hpc_wait_job "$gather_id" 60
  assert_equal "$(squeue -h -j "$job_id,$gather_id" 2>/dev/null)" ""
  assert_equal "$(hpc_job_state "$gather_id")" "CANCELLED 0:0"
}

@test "status EXP of a map: SLURM's word over the status files (a task's file can be written by another task), never COMPLETED without a file of its own (a task left RUNNING is LOST); the gather job too" {
  MAP_FAIL_INDEX=2 MAP_EXIT_CODE=7 MAP_SLEEP=0 submit_map --map-range 0-3 --gather "python gather.py" -e fromfiles
  hpc_wait_job "$job_id" 120
  hpc_wait_job "$gather_id" 120
  # Task 0's file as a task killed hard leaves it (RUNNING), task 1's says FAILED (exit 7), task
  # 2's COMPLETED (exit 0), task 3's is gone: SLURM says COMPLETED, COMPLETED, FAILED, COMPLETED.
  python3 - "$map_dir/tasks" <<'EOF2'
import json, sys
d = sys.argv[1]
for i, state, code in ((0, "RUNNING", None), (1, "FAILED", 7), (2, "COMPLETED", 0)):
    s = json.load(open(f"{d}/{i}/status.json")); s["state"] = state; s["exit_code"] = code
    json.dump(s, open(f"{d}/{i}/status.json", "w"))
EOF2
  rm -- "$map_dir/tasks/3/status.json"
  run bash "$PROJECT/hpc_files/job_submitter.sh" status fromfiles
  assert_success
  assert_line --regexp "^${job_id}_0 +fromfiles +venv-none +LOST +- "
  assert_line --regexp "^${job_id}_1 +fromfiles +venv-none +COMPLETED +0:0 "
  assert_line --regexp "^${job_id}_2 +fromfiles +venv-none +FAILED +7:0 "
  assert_line --regexp "^${job_id}_3 +fromfiles +venv-none +LOST +- "
  assert_line --regexp "^$gather_id +fromfiles +venv-gather +FAILED +1:0 "
}

@test "resubmit --failed re-runs exactly index 3 and a new gather in the same folder; other task folders untouched; the sum is right" {
  MAP_FAIL_INDEX=3 MAP_EXIT_CODE=7 MAP_SLEEP=0 submit_map --map-range 0-5 --max-concurrent 3 --gather "python gather.py" -e rerun
  hpc_wait_job "$job_id" 180
  hpc_wait_job "$gather_id" 120
  assert_equal "$(hpc_job_state "$gather_id")" "FAILED 1:0"
  before=$(find "$map_dir/tasks/"{0,1,2,4,5} -printf '%p %T@ %s\n' | sort)
  # The bug is fixed: MAP_FAIL_INDEX no longer set in the resubmitting shell.
  run bash "$PROJECT/hpc_files/job_submitter.sh" resubmit rerun --failed
  assert_success
  assert_line --regexp "^Resubmitted task\(s\) 3 of map ${map_dir##*/} as job [0-9]+ \(array 3%3\)$"
  new_id=$(sed -n 's/^Resubmitted .* as job \([0-9]*\) .*/\1/p' <<<"$output")
  new_gather=$(sed -n 's/^Gather job \([0-9]*\):.*/\1/p' <<<"$output")
  [[ -n $new_id && -n $new_gather ]] || fail "no new ids in: $output"
  assert_equal "$(hpc_job_field "$new_gather" Dependency | sed 's/(.*//')" "afterany:${new_id}_*"
  hpc_wait_job "$new_id" 120
  hpc_wait_job "$new_gather" 120
  assert_equal "$(hpc_job_state "$new_gather")" "COMPLETED 0:0"
  assert_equal "$(scontrol show job "$new_id" | grep -c 'ArrayTaskId=')" 1
  assert_equal "$(status_field 3 state)" COMPLETED
  assert_equal "$(status_field 3 attempt)" 2
  run python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["state"])' "$map_dir/tasks/3/status.attempt1.json"
  assert_output FAILED
  assert_equal "$(find "$map_dir/tasks/"{0,1,2,4,5} -printf '%p %T@ %s\n' | sort)" "$before"
  run cat "$map_dir/gather_$new_gather.out"
  assert_line "GATHER sum=55 n_ok=6 failed=''"
  # Nothing left to re-run.
  run bash "$PROJECT/hpc_files/job_submitter.sh" resubmit rerun --failed
  assert_success
  assert_output "Nothing to resubmit: every task of map ${map_dir##*/} succeeded."
}

@test "--dry-run of a map prints the array and throttle, the first and last task's variables, the gather's script and dependency, flags \${map_item} in the gather; creates and submits nothing" {
  list="$BATS_TEST_TMPDIR/list.txt"
  printf '%s\n' 'first item' '# a comment' 'second' 'last $(touch pwned)' >"$list"
  before=$(find "$SCRATCH" "$PROJECT" -printf '%p %T@\n' | sort)
  run --separate-stderr bash "$PROJECT/hpc_files/job_submitter.sh" --dry-run -g 0 --map-over "$list" --max-concurrent 2 \
    --gather 'python gather.py --item ${map_item}' -e dry
  assert_success
  assert_equal "$stderr" 'job_submitter.sh: warning: the gather command uses ${map_item}, which is each task'"'"'s own and undefined in the gather job'
  assert_line --regexp '^One array of 3 task\(s\): --array=0-2%2 \(at most 2 at once\), folder .*/hpc_outputs/map/dry/[0-9]{8}-[0-9]{6}-ARRAYID$'
  assert_line --regexp '^first task: map_index=0 map_item=first item map_count=3 task_dir=.*/tasks/0$'
  assert_line --regexp '^last task:  map_index=2 map_item=last \$\(touch pwned\) map_count=3 task_dir=.*/tasks/2$'
  assert_line --regexp '^sbatch .*--cpus-per-task=1 --time=00:30:00 .*--dependency=afterany:ARRAYID --kill-on-invalid-dep=yes'
  assert_line '== gather job script'
  assert_line 'configs file uses $map_item: defined by the job (each map task'"'"'s own)'
  assert_equal "$(find "$SCRATCH" "$PROJECT" -printf '%p %T@\n' | sort)" "$before"
  assert_equal "$(squeue -h -n "map project-dry,map project-dry-gather" 2>/dev/null)" ""
}

@test "--repeat 3 with --gather: three tasks with seed i and their own checkpoints_dir, then the gather" {
  hpc_configs "$PROJECT" 'python featurize.py --index ${seed} --item "${checkpoints_dir}" --out ${task_dir}'
  MAP_SLEEP=0 submit_map --repeat 3 --gather "python gather.py" -e seeds
  hpc_wait_job "$job_id" 120
  hpc_wait_job "$gather_id" 120
  assert_equal "$(hpc_job_state "$gather_id")" "COMPLETED 0:0"
  run cat "$map_dir/gather_$gather_id.out"
  assert_line "GATHER sum=5 n_ok=3 failed=''"
  for i in 0 1 2; do
    run python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["item"])' "$map_dir/tasks/$i/result.json"
    assert_output "$SCRATCH/map project/seeds/checkpoints/task_$i"
    [[ -d "$SCRATCH/map project/seeds/checkpoints/task_$i" ]] || fail "no checkpoints folder for task $i"
  done
}

@test "gather EXP submits the newest map's gather again, now: it reads the status files afresh (after a task's folder was restored by hand)" {
  MAP_SLEEP=0 submit_map --map-range 0-2 --gather "python gather.py" -e again
  hpc_wait_job "$job_id" 120
  hpc_wait_job "$gather_id" 120
  # Task 1's status file is lost, then restored by hand (SLURM's word still holds: a file that
  # claimed success where SLURM says otherwise would not count, attack_map.bats).
  mv -- "$map_dir/tasks/1/status.json" "$BATS_TEST_TMPDIR/status.json"
  run bash "$PROJECT/hpc_files/job_submitter.sh" gather again
  assert_success
  lost_id=$(sed -n 's/^Gather job \([0-9]*\) .*/\1/p' <<<"$output")
  hpc_wait_job "$lost_id" 120
  assert_equal "$(hpc_job_state "$lost_id")" "FAILED 1:0"
  run cat "$map_dir/gather_$lost_id.out"
  assert_line --partial "gather not run: policy all-ok needs 3/3 tasks, 2 ok; failed: 1 (LOST)"
  mv -- "$BATS_TEST_TMPDIR/status.json" "$map_dir/tasks/1/status.json"
  run bash "$PROJECT/hpc_files/job_submitter.sh" gather again
  assert_success
  assert_line --regexp "^Gather job [0-9]+ of map ${map_dir##*/}: output ${map_dir}/gather_[0-9]+\.out$"
  again_id=$(sed -n 's/^Gather job \([0-9]*\) .*/\1/p' <<<"$output")
  assert_equal "$(hpc_job_field "$again_id" Dependency)" "(null)"
  hpc_wait_job "$again_id" 120
  assert_equal "$(hpc_job_state "$again_id")" "COMPLETED 0:0"
  run cat "$map_dir/gather_$again_id.out"
  assert_line "GATHER sum=5 n_ok=3 failed=''"
  run bash "$PROJECT/hpc_files/job_submitter.sh" status again
  assert_line --regexp "^$again_id +again +venv-gather +COMPLETED "
  run bash "$PROJECT/hpc_files/job_submitter.sh" gather nosuchexp
  assert_equal "$status" 2
}

@test "gather EXP --here runs the gather right here: the status files read afresh, the same policy, variables and venv; no job" {
  MAP_SLEEP=0 submit_map --map-range 0-2 --gather "python gather.py" -e here
  hpc_wait_job "$job_id" 120
  hpc_wait_job "$gather_id" 120
  mv -- "$map_dir/tasks/1/status.json" "$BATS_TEST_TMPDIR/status.json"
  run --separate-stderr bash "$PROJECT/hpc_files/job_submitter.sh" gather here --here
  assert_equal "$status" 1
  assert_equal "$stderr" "gather not run: policy all-ok needs 3/3 tasks, 2 ok; failed: 1 (LOST); to re-run them: bash job_submitter.sh resubmit here --failed"
  refute_output --partial GATHER
  mv -- "$BATS_TEST_TMPDIR/status.json" "$map_dir/tasks/1/status.json"
  run --separate-stderr bash "$PROJECT/hpc_files/job_submitter.sh" gather here --here
  assert_success
  assert_equal "$stderr" "gather runs: policy all-ok needs 3/3 tasks, 3 ok"
  assert_line "GATHER sum=5 n_ok=3 failed=''"
  assert_line "GATHER python=$PROJECT/virtual_env"
  run python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sum"])' "$map_dir/sum.json"
  assert_output 5
  run grep -c COMPLETED "$map_dir/map_status.tsv"
  assert_output 3
  assert_equal "$(squeue -h -n "map project-here-gather" 2>/dev/null)" ""
  run bash "$PROJECT/hpc_files/job_submitter.sh" gather here --there
  assert_equal "$status" 2
  assert_output "job_submitter.sh: --there: unknown option of 'gather'; did you mean --here? (see 'bash job_submitter.sh gather --help')"
  # A file that claims success where SLURM says otherwise is not counted (another task could
  # have written it): named INCONSISTENT, the gather not run.
  python3 - "$map_dir/tasks/1" "$job_id" <<'EOF2'
import json, sys
d = sys.argv[1]
s = json.load(open(f"{d}/status.json")); s["task_id"] = "2"
json.dump(s, open(f"{d}/status.json", "w"))
EOF2
  run --separate-stderr bash "$PROJECT/hpc_files/job_submitter.sh" gather here --here
  assert_equal "$status" 1
  [[ $stderr == *"task 1 is INCONSISTENT: its status file names job ${job_id}_2, as the files of 1, 2 do; not counted as a success"* ]] || fail "$stderr"
}

@test "a map above MaxArraySize (1001 here) is split: two arrays, the second after the first, the gather after both; status and cancel EXP cover every part" {
  MAP_SLEEP=60 submit_map --map-range 0-1001 --max-concurrent 1 --gather "python gather.py" -e split
  # A failed assertion must not leave a thousand tasks queued (teardown).
  split_ids=("$job_id" "$gather_id")
  part2=$(sed -n "s/^The map is above MaxArraySize 1001: 2 arrays, one after the other: $job_id \([0-9]*\) (indices 0-1000 1001-1001)$/\1/p" <<<"$out")
  split_ids+=("$part2")
  [[ -n $part2 ]] || fail "no second part in: $out"
  assert_equal "$(hpc_job_field "$part2" Dependency | sed 's/(.*//')" "afterany:${job_id}_*"
  run hpc_job_field "$gather_id" Dependency
  assert_output --regexp "^afterany:${job_id}_\*\([a-z]+\),afterany:${part2}_\*\([a-z]+\)$"
  run bash "$PROJECT/hpc_files/job_submitter.sh" status split
  assert_success
  assert_line --regexp "^${part2}_0 +split +venv-none +PENDING "
  run bash "$PROJECT/hpc_files/job_submitter.sh" cancel split
  assert_success
  hpc_wait_job "$job_id" 60
  hpc_wait_job "$part2" 60
  hpc_wait_job "$gather_id" 60
  assert_equal "$(squeue -h -j "$job_id,$part2,$gather_id" 2>/dev/null)" ""
}

@test "resubmit --failed of more failed indices than MaxArraySize (1001 here) splits them as the first submission does: two arrays, the second after the first, the new gather after both" {
  MAP_SLEEP=60 submit_map --map-range 0-1001 --max-concurrent 1 --gather "python gather.py" -e resplit
  part2=$(sed -n "s/^The map is above MaxArraySize 1001: 2 arrays, one after the other: $job_id \([0-9]*\) .*/\1/p" <<<"$out")
  split_ids=("$job_id" "$gather_id" "$part2")
  # Every task cancelled (most before they ran): all 1002 indices are to be re-run.
  run bash "$PROJECT/hpc_files/job_submitter.sh" cancel resplit
  assert_success
  hpc_wait_job "$job_id" 60
  hpc_wait_job "$part2" 60
  hpc_wait_job "$gather_id" 60
  run bash "$PROJECT/hpc_files/job_submitter.sh" resubmit resplit --failed
  assert_success
  read -r -a new_ids <<<"$(sed -n 's/^Resubmitted task(s) 0-1001 of map [^ ]* as jobs \([0-9]*\) \([0-9]*\) (above MaxArraySize 1001: 2 arrays, one after the other)$/\1 \2/p' <<<"$output")"
  new_gather=$(sed -n 's/^Gather job \([0-9]*\):.*/\1/p' <<<"$output")
  split_ids+=(${new_ids[@]+"${new_ids[@]}"} ${new_gather:+"$new_gather"})
  [[ ${#new_ids[@]} -eq 2 && -n $new_gather ]] || fail "not two parts and a gather in: $output"
  assert_equal "$(hpc_job_field "${new_ids[1]}" Dependency | sed 's/(.*//')" "afterany:${new_ids[0]}_*"
  run hpc_job_field "$new_gather" Dependency
  assert_output --regexp "^afterany:${new_ids[0]}_\*\([a-z]+\),afterany:${new_ids[1]}_\*\([a-z]+\)$"
  run grep -x $'array\t0-1000%1' "${map_dir%/map/*}/manifests/resplit_${new_ids[0]}.manifest"
  assert_success
  run grep -x $'array\t0-0%1' "${map_dir%/map/*}/manifests/resplit_${new_ids[1]}.manifest"
  assert_success
  run python3 -c 'import json,sys; print(*json.load(open(sys.argv[1]))["array_ids"][-2:])' "$map_dir/manifest.json"
  assert_output "${new_ids[*]}"
  run bash "$PROJECT/hpc_files/job_submitter.sh" cancel resplit
  assert_success
}
