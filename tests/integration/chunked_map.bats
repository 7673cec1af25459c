#!/usr/bin/env bats
# Chunked maps (--chunk K) on the local cluster: K items per array task, each item with its own
# status and result; a failed item does not stop its chunk; the gather counts items; status EXP
# counts items; resubmit --failed re-runs only the failed items; the time-limit warning inside a
# chunk leaves the items not started NOT_RUN. The program: tests/fixtures/map/featurize.py.
# shellcheck disable=SC2016 # configs lines are single-quoted on purpose

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "chunk project"
  cp "$HPC_ROOT/tests/fixtures/map/"{featurize.py,gather.py} "$PROJECT/"
  # The venv: a copy of the one built once per bats run, which the toolkit's own test of a ready
  # build takes (hpc_venv_seed): no warm-up job.
  hpc_venv_seed "$PROJECT"
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  unset MAP_FAIL_INDEX MAP_EXIT_CODE MAP_SLEEP MAP_TERM_OK
  hpc_configs "$PROJECT" 'python featurize.py --index ${map_index} --item "${map_item}" --out ${task_dir}'
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

# states FIRST LAST: the items' states, from their status.json (none: -), space-separated.
states() {
  python3 - "$map_dir" "$1" "$2" <<'EOF'
import json, sys
out = []
for i in range(int(sys.argv[2]), int(sys.argv[3]) + 1):
    try:
        out.append(json.load(open(f"{sys.argv[1]}/tasks/{i}/status.json"))["state"])
    except OSError:
        out.append("-")
print(" ".join(out))
EOF
}

@test "a chunked map of 10 items, 4 per task, item 5 failing: the rest of its chunk runs; each item its own status and result; the gather counts items; status counts items; resubmit --failed re-runs item 5 alone" {
  MAP_SLEEP=0 MAP_FAIL_INDEX=5 submit_map --map-range 0-9 --chunk 4 --max-concurrent 3 --gather "python gather.py" -e chunks
  [[ $out == *'10 items, 4 per task: 3 tasks'* ]] || fail "no chunk line in: $out"
  hpc_wait_job "$job_id" 180
  hpc_wait_job "$gather_id" 120
  assert_equal "$(states 0 9)" "COMPLETED COMPLETED COMPLETED COMPLETED COMPLETED FAILED COMPLETED COMPLETED COMPLETED COMPLETED"
  local i
  for i in 0 1 2 3 4 6 7 8 9; do
    [[ -f $map_dir/tasks/$i/result.json ]] || fail "no result of item $i"
  done
  # The chunk with the failed item ended FAILED (its program's first failure), the others COMPLETED.
  assert_equal "$(hpc_job_state "${job_id}_1")" "FAILED 7:0"
  assert_equal "$(hpc_job_state "${job_id}_0")" "COMPLETED 0:0"
  # The gather counts items: 9 of 10, all-ok not met.
  assert_equal "$(hpc_job_state "$gather_id")" "FAILED 1:0"
  run cat "$map_dir/gather_$gather_id.out"
  assert_output --partial "gather not run: policy all-ok needs 10/10 tasks, 9 ok; failed: 5 (exit 7)"
  run bash "$PROJECT/hpc_files/job_submitter.sh" status chunks
  assert_success
  assert_line --regexp "^map chunks/${map_dir##*/}: 10 items: 9 COMPLETED, 1 FAILED$"
  # Each chunk's task: SLURM's state (no file of its own; its items' files are counted above).
  assert_line --regexp "^${job_id}_0 +chunks +venv-none +COMPLETED +"
  assert_line --regexp "^${job_id}_1 +chunks +venv-none +FAILED +"
  # Item 5 again, alone; the others untouched.
  run bash "$PROJECT/hpc_files/job_submitter.sh" resubmit chunks --failed
  assert_success
  assert_line --regexp "^Resubmitted item\(s\) 5 of map ${map_dir##*/} as job ([0-9]+) \(array 0-0%3, 1 item\(s\) per task\)$"
  local new_id new_gather
  new_id=$(sed -n 's/^Resubmitted item(s) 5 of map [^ ]* as job \([0-9]*\) .*/\1/p' <<<"$output")
  new_gather=$(sed -n 's/^Gather job \([0-9][0-9]*\):.*/\1/p' <<<"$output")
  hpc_wait_job "$new_id" 120
  hpc_wait_job "$new_gather" 120
  assert_equal "$(states 5 5)" COMPLETED
  run python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["attempt"], d["array_job_id"], d["task_id"])' "$map_dir/tasks/5/status.json"
  assert_output "2 $new_id 0"
  [[ -f $map_dir/tasks/5/status.attempt1.json && ! -e $map_dir/tasks/4/status.attempt1.json ]] || fail "attempts"
  assert_equal "$(hpc_job_state "$new_gather")" "COMPLETED 0:0"
}

@test "the time-limit warning inside a chunk: the running item finishes, the items not started are NOT_RUN (never COMPLETED), the task ends FAILED" {
  MAP_SLEEP=4 submit_map --map-range 0-3 --chunk 4 -e warned
  local log start=$SECONDS
  # The task's log (OUTPUTS/EXP_KIND_ARRAYID_0.out), once SLURM has made it.
  until log=$(compgen -G "$SCRATCH/chunk project/hpc_outputs/warned_*_${job_id}_0.out"); do
    ((SECONDS - start <= 60)) || fail "no log of ${job_id}_0 within 60 s"
    sleep 0.2
  done
  hpc_warn_job "$job_id" "$log" 'FEATURIZE index=1 '
  hpc_wait_job "$job_id" 120
  assert_equal "$(states 0 3)" "COMPLETED COMPLETED NOT_RUN NOT_RUN"
  [[ ! -e $map_dir/tasks/2/result.json && ! -e $map_dir/tasks/3/result.json ]] || fail "an item not run has a result"
  run hpc_job_state "${job_id}_0"
  assert_output --regexp '^FAILED '
  run grep -c 'map chunk: 2 item(s) COMPLETED, 0 failed, 2 NOT_RUN' "$log"
  assert_output 1
}

@test "a chunked map in containers (-s, the apptainer stand-in): each item sees its own container paths (task_dir=/map/tasks/I) and writes its status and result; the gather sums them" {
  # Not under /tmp: the container gets its own /tmp, which would hide the project.
  box=$(mktemp -d /var/tmp/hpc-chunk-container.XXXXXX)
  local box_project="$box/box project"
  export SCRATCH=$box/scratch HOME=$box/home PATH="$HPC_ROOT/tests/fixtures/apptainer/bin:$PATH"
  export APPTAINER_STANDIN_LOG=$box/argv
  mkdir -p "$SCRATCH" "$HOME" "$APPTAINER_STANDIN_LOG"
  APPTAINERENV_PREPEND_PATH=$(dirname "$(python3 -c 'import sys; print(sys.executable)')")
  export APPTAINERENV_PREPEND_PATH
  hpc_project_make "$box_project"
  bash "$HPC_ROOT/tests/fixtures/apptainer/make_sif.sh" "$box_project/app.sif"
  cp "$HPC_ROOT/tests/fixtures/map/"{featurize,gather}.py "$box_project/"
  hpc_configs "$box_project" "python3 '$box_project/featurize.py' --index \${map_index} --item \"\${map_item}\" --out \${task_dir}"
  printf '%s\n' 'first item' 'second' 'third' >"$box/list.txt"
  out=$(MAP_SLEEP=0 bash "$box_project/hpc_files/job_submitter.sh" -y -s "$box_project/app.sif" -g 0 --map-over "$box/list.txt" \
    --chunk 2 --gather "python3 '$box_project/gather.py'" -e boxchunk 2>&1) || fail "submission failed: $out"
  job_id=$(sed -n 's/^Submitted job \([0-9][0-9]*\).*/\1/p' <<<"$out")
  gather_id=$(sed -n 's/^Gather job \([0-9][0-9]*\):.*/\1/p' <<<"$out")
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$out")
  [[ -n $job_id && -n $gather_id && -d $map_dir ]] || fail "no ids or map folder in: $out"
  hpc_wait_job "$job_id" 180
  hpc_wait_job "$gather_id" 120
  assert_equal "$(hpc_job_state "$gather_id")" "COMPLETED 0:0"
  run cat "$map_dir/gather_$gather_id.out"
  assert_line "GATHER sum=5 n_ok=3 failed=''"
  assert_equal "$(states 0 2)" "COMPLETED COMPLETED COMPLETED"
  local items=('first item' 'second' 'third') i
  for i in 0 1 2; do
    run python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["item"])' "$map_dir/tasks/$i/result.json"
    assert_output "${items[i]}"
  done
  # Items 0 and 1 ran in task 0, item 2 in task 1.
  run cat "$SCRATCH/box project/hpc_outputs/"boxchunk_*_"${job_id}_0.out"
  assert_line --partial "FEATURIZE index=0 "
  assert_line --partial " out=/map/tasks/1"
  run cat "$SCRATCH/box project/hpc_outputs/"boxchunk_*_"${job_id}_1.out"
  assert_line --partial " out=/map/tasks/2"
  rm -rf -- "${box:?}"
}
