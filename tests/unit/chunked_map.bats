#!/usr/bin/env bats
# Chunked maps (--chunk K|auto), without SLURM: the submission through the PATH stubs of
# tests/fixtures/submitter/bin (job ids 4242, 4243, ...), a chunk's task with hpc_map.bash's job
# side sourced alone (the program a stand-in), and the reader's rule that a chunk's task writes
# only its own items' status. The whole flow on a real cluster: tests/integration/chunked_map.bats.

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/submitter'
  hpc_test_warm_profiles
}

setup() {
  load '../helpers/common'
  load '../helpers/stub'
  # shellcheck source=tests/helpers/submitter.bash
  source "$BATS_TEST_DIRNAME/../helpers/submitter.bash"
  # A built venv: no install job.
  hpc_test_submitter_setup scratch --venv
  # shellcheck disable=SC2016 # the reference is for the job to expand
  printf 'python featurize.py --index ${map_index}\n' >"$project/hpc_files/experiment_configurations.txt"
}

# argv_of COMMAND N: sets the array argv to the arguments of the stub's N-th call (without
# sbatch's submission tag).
argv_of() {
  [[ -e $stub_log/$1.$2.args ]] || fail "$1 was not called $2 time(s)"
  mapfile -d '' argv <"$stub_log/$1.$2.args"
  [[ $1 != sbatch || ${argv[-1]-} != --comment=hpc-toolkit:* ]] || unset 'argv[-1]'
}

# arg_of PREFIX: the element of argv that starts with PREFIX (the last one).
arg_of() {
  local a found=''
  for a in "${argv[@]}"; do [[ $a != "$1"* ]] || found=$a; done
  printf '%s\n' "$found"
}

# plan_of SCRIPT: the plan file that the job script SCRIPT names.
plan_of() {
  local line
  line=$(grep '^hpc_job_main ' "$1")
  line=${line#hpc_job_main }
  printf '%s\n' "${line//\\ / }"
}

# nothing_made: no sbatch call, no map folder.
nothing_made() {
  [[ ! -e $stub_log/sbatch.1.args ]] || fail "sbatch was called"
  [[ ! -e "$tmp/scratch/my project/hpc_outputs/map" ]] || fail "a map folder was made"
}

@test "bad --chunk: 0, -1, abc, more items than the map has, without a map, --chunk-stop-on-failure without --chunk: one line naming the option and what is accepted, exit 2, nothing submitted" {
  local value
  for value in 0 -1 abc; do
    run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-9 --chunk "$value" -e c </dev/null
    assert_failure 2
    assert_equal "$stderr" "job_submitter.sh: --chunk: '$value' is not accepted; accepted: auto or a whole number of items per task, 1 to 999999"
    nothing_made
  done
  run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-9 --chunk 11 -e c </dev/null
  assert_failure 2
  assert_equal "$stderr" "job_submitter.sh: --chunk: 11 items per task is more than the map has (10); accepted: auto or 1 to 10"
  nothing_made
  run --separate-stderr bash "$submitter" -y -g 0 --chunk 2 -e c </dev/null
  assert_failure 2
  assert_equal "$stderr" "job_submitter.sh: --chunk: runs a map's items several per task; accepted with --map-range or --map-over"
  nothing_made
  run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-9 --chunk-stop-on-failure -e c </dev/null
  assert_failure 2
  assert_equal "$stderr" "job_submitter.sh: --chunk-stop-on-failure: is for a chunked map; accepted with --chunk"
  nothing_made
  # More tasks than MaxArraySize: a larger K is needed.
  HPC_STUB_MAX_ARRAY_SIZE=4 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-9 --chunk 2 -e c </dev/null
  assert_failure 2
  assert_equal "$stderr" "job_submitter.sh: --chunk: 2 items per task make 5 tasks, more than MaxArraySize 4; accepted: auto or 3 to 10"
  nothing_made
}

@test "--chunk 3 over indices 5-14: one held array of 4 tasks (0-3) whose plan runs 3 items per task from index 5; manifest.json says which task runs which items" {
  HPC_STUB_MAX_ARRAY_SIZE=1000 run --separate-stderr bash "$submitter" -y -g 0 --map-range 5-14 --chunk 3 \
    --max-concurrent 2 --chunk-stop-on-failure -e ch </dev/null
  assert_success
  assert_line '10 items, 3 per task: 4 tasks, each running its items one after the other'
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$output")
  argv_of sbatch 1
  assert_equal "$(arg_of --array=)" "--array=0-3%2"
  assert_equal "$(arg_of --hold)" "--hold"
  local plan
  plan=$(plan_of "$stub_log/sbatch.1.script")
  run grep -x -e 'hpc_plan_map_chunk=3' -e 'hpc_plan_map_offset=5' -e 'hpc_plan_map_count=10' -e 'hpc_plan_map_chunk_stop=1' "$plan"
  assert_equal "${#lines[@]}" 4
  run python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["chunk"], d["chunks"], d["count"])' "$map_dir/manifest.json"
  assert_output "3 {'4242': {'chunk': 3, 'first': 5, 'last': 14}} 10"
}

@test "--chunk auto: K keeps the throttle's parallelism (ceil(items/throttle)) and fits MaxArraySize (ceil(items/MaxArraySize)); the dry run says so" {
  HPC_STUB_MAX_ARRAY_SIZE=1000 run --separate-stderr bash "$submitter" --dry-run -g 0 --map-range 0-99 --chunk auto --max-concurrent 4 -e a </dev/null
  assert_success
  assert_line --regexp '^100 items in chunks of 25: one array of 4 task\(s\): --array=0-3%4 \(at most 4 at once\), folder '
  # 2,000 items, throttle 1000, MaxArraySize 100: at least 20 per task to fit.
  HPC_STUB_MAX_ARRAY_SIZE=100 run --separate-stderr bash "$submitter" --dry-run -g 0 --map-range 0-1999 --chunk auto --max-concurrent 1000 -e a </dev/null
  assert_success
  assert_line --regexp '^2000 items in chunks of 20: one array of 100 task\(s\): --array=0-99%1000 '
  # 7 items, throttle 10: one item per task (no task waits for another's item).
  HPC_STUB_MAX_ARRAY_SIZE=1000 run --separate-stderr bash "$submitter" --dry-run -g 0 --map-range 0-6 --chunk auto --max-concurrent 10 -e a </dev/null
  assert_success
  assert_line --regexp '^7 items in chunks of 1: one array of 7 task\(s\): --array=0-6%10 '
}

@test "a map of many items without --chunk: a one-line note suggesting --chunk auto, and the map is submitted; none for a few items or with --chunk" {
  HPC_STUB_MAX_ARRAY_SIZE=100000 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-1999 --max-concurrent 8 -e many </dev/null
  assert_success
  assert_equal "$stderr" "job_submitter.sh: note: 2000 items are 2000 array tasks (at most 8 at once), each paying a job's start; for short items, --chunk auto runs them 250 per task"
  argv_of sbatch 1
  assert_equal "$(arg_of --array=)" "--array=0-1999%8"
  rm -f "$stub_log"/*
  HPC_STUB_MAX_ARRAY_SIZE=100000 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-9 --max-concurrent 8 -e few </dev/null
  assert_success
  refute [ -n "$stderr" ]
  HPC_STUB_MAX_ARRAY_SIZE=100000 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-1999 --chunk auto --max-concurrent 8 -e chunked </dev/null
  assert_success
  refute [ -n "$stderr" ]
}

@test "resubmit --failed of a chunked map of 2000 items with 7 planted failures: exactly those 7 items, re-chunked by the auto rule (7 items, throttle 4: 2 per task), one array with its index list, recorded in manifest.json" {
  HPC_STUB_MAX_ARRAY_SIZE=1000 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-1999 --chunk auto --max-concurrent 4 \
    --gather "python gather.py" -e big </dev/null
  assert_success
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$output")
  [[ -d $map_dir ]] || fail "no map folder in: $output"
  # What the chunks wrote: K=500, task t ran items 500t..500t+499; 7 failed.
  python3 - "$map_dir" <<'EOF'
import json, os, sys
d = sys.argv[1]
failed = {3, 499, 500, 1001, 1502, 1998, 1999}
for i in range(2000):
    os.makedirs(f"{d}/tasks/{i}", exist_ok=True)
    state = "FAILED" if i in failed else "COMPLETED"
    with open(f"{d}/tasks/{i}/status.json", "w") as f:
        json.dump({"index": i, "array_job_id": "4242", "task_id": str(i // 500), "state": state,
                   "exit_code": 1 if i in failed else 0, "attempt": 1, "chunk": 500}, f)
EOF
  rm -f "$stub_log"/*
  HPC_STUB_MAX_ARRAY_SIZE=1000 run --separate-stderr bash "$submitter" resubmit big --failed </dev/null
  assert_success
  assert_line --regexp "^Resubmitted item\(s\) 3,499-500,1001,1502,1998-1999 of map ${map_dir##*/} as job 4242 \(array 0-3%4, 2 item\(s\) per task\)$"
  argv_of sbatch 1
  assert_equal "$(arg_of --array=)" "--array=0-3%4"
  local plan
  plan=$(plan_of "$stub_log/sbatch.1.script")
  run grep -xF -e 'hpc_plan_map_indices=3\ 499\ 500\ 1001\ 1502\ 1998\ 1999' -e 'hpc_plan_map_chunk=2' "$plan"
  assert_equal "${#lines[@]}" 2
  [[ ! -e $stub_log/sbatch.3.args ]] || fail "more than two sbatch calls"
  run python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["chunks"]["4242"])' "$map_dir/manifest.json"
  assert_output "{'chunk': 2, 'indices': [3, 499, 500, 1001, 1502, 1998, 1999]}"
  # The earlier attempt of each is kept; the other items' files are not touched.
  [[ -f $map_dir/tasks/1999/status.attempt1.json && ! -e $map_dir/tasks/1999/status.json ]] || fail "1999's status not kept"
  [[ -f $map_dir/tasks/4/status.json && ! -e $map_dir/tasks/4/status.attempt1.json ]] || fail "4's status moved"
}

# chunk_job and item_state: a chunked map's task run alone (tests/helpers/chunk_job.bash).
# shellcheck source=tests/helpers/chunk_job.bash
source "$BATS_TEST_DIRNAME/../helpers/chunk_job.bash"

# shellcheck disable=SC2034,SC2154,SC2329 # the variables the sourced library reads and sets; 'program' is run by it
@test "a chunk's task: each item its own map_index, task_dir and status (naming the array task and the chunk); a failed item does not stop the rest; the task fails with the first failure" {
  chunk_job 1
  program() {
    printf '%s %s\n' "$map_index" "$task_dir" >>"$BATS_TEST_TMPDIR/ran"
    [[ $map_index != 5 ]] || return 3
  }
  hpc_map_task_setup
  hpc_map_chunk_run
  assert_equal "$hpc_job_status" 3
  run cat "$BATS_TEST_TMPDIR/ran"
  assert_output "4 $map_root/dir/tasks/4
5 $map_root/dir/tasks/5
6 $map_root/dir/tasks/6
7 $map_root/dir/tasks/7"
  assert_equal "$(item_state 4) $(item_state 5) $(item_state 6) $(item_state 7) $(item_state 8)" "COMPLETED FAILED COMPLETED COMPLETED -"
  run python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["array_job_id"], d["task_id"], d["chunk"], d["index"], d["exit_code"])' "$map_root/dir/tasks/5/status.json"
  assert_output "40 1 4 5 3"
  run grep -c 'map chunk: 3 item(s) COMPLETED, 1 failed, 0 NOT_RUN' "$BATS_TEST_TMPDIR/log"
  assert_output 1
  # The last task has the last two items only.
  rm -f "$BATS_TEST_TMPDIR/ran"
  SLURM_ARRAY_TASK_ID=2 hpc_map_task_setup
  SLURM_ARRAY_TASK_ID=2 hpc_map_chunk_run
  assert_equal "$hpc_job_status" 0
  run cat "$BATS_TEST_TMPDIR/ran"
  assert_output "8 $map_root/dir/tasks/8
9 $map_root/dir/tasks/9"
}

# shellcheck disable=SC2034,SC2154,SC2329 # the variables the sourced library reads and sets; 'program' is run by it
@test "a chunk with --chunk-stop-on-failure: the first failure stops it, the rest are NOT_RUN (resubmit --failed takes them)" {
  chunk_job 0
  hpc_plan_map_chunk_stop=1
  program() { [[ $map_index != 1 ]] || return 2; }
  hpc_map_task_setup
  hpc_map_chunk_run
  assert_equal "$hpc_job_status" 2
  assert_equal "$(item_state 0) $(item_state 1) $(item_state 2) $(item_state 3)" "COMPLETED FAILED NOT_RUN NOT_RUN"
}

# shellcheck disable=SC2034,SC2154,SC2329 # the variables the sourced library reads and sets; 'program' is run by it
@test "the time-limit warning inside a chunk: the running item ends as it does, the items not started are NOT_RUN, never COMPLETED; the task is not COMPLETED" {
  chunk_job 0
  # The warning comes while item 1 runs; it finishes its work (exit 0).
  program() { [[ $map_index != 1 ]] || hpc_job_warned=1; }
  hpc_map_task_setup
  hpc_map_chunk_run
  assert_equal "$(item_state 0) $(item_state 1) $(item_state 2) $(item_state 3)" "COMPLETED COMPLETED NOT_RUN NOT_RUN"
  assert_equal "$hpc_job_status" 1
  # It stops at the warning (exit 138): that item FAILED with its status, the task's status is its.
  rm -rf "$map_root/dir/tasks"/*
  hpc_job_warned=0
  program() {
    [[ $map_index != 2 ]] || {
      hpc_job_warned=1
      return 138
    }
  }
  hpc_map_chunk_run
  assert_equal "$(item_state 0) $(item_state 1) $(item_state 2) $(item_state 3)" "COMPLETED COMPLETED FAILED NOT_RUN"
  assert_equal "$hpc_job_status" 138
}

@test "a chunked map's reader: an item's success written by a task whose chunk does not hold it is INCONSISTENT; a success in a chunk SLURM says FAILED (another item failed) is believed; resubmit's layout counts too" {
  local dir=$BATS_TEST_TMPDIR/map/tasks
  mkdir -p "$dir"
  printf '{"array_ids": ["40", "50"], "first": 0, "last": 5, "array": "0-2%%2", "chunk": 2, "chunks": {"40": {"chunk": 2, "first": 0, "last": 5}, "50": {"chunk": 1, "indices": [5]}}}\n' >"$dir/../manifest.json"
  write() { mkdir -p "$dir/$1" && printf '{"array_job_id": "%s", "task_id": "%s", "state": "%s", "exit_code": 0, "chunk": 2}\n' "$2" "$3" "$4" >"$dir/$1/status.json"; }
  write 0 40 0 COMPLETED
  write 1 40 0 FAILED
  write 2 40 1 COMPLETED
  # Task 0 of array 40 forges item 3 (task 1's) and item 4 (task 2's).
  write 3 40 0 COMPLETED
  write 4 40 0 COMPLETED
  # The resubmission (array 50, one item per task) ran item 5 as its task 0.
  write 5 50 0 COMPLETED
  stub scontrol "show job -o 40 : printf 'JobId=41 ArrayJobId=40 ArrayTaskId=0 JobState=FAILED ExitCode=1:0\nJobId=42 ArrayJobId=40 ArrayTaskId=1 JobState=COMPLETED ExitCode=0:0\n'" \
    "show job -o 50 : printf 'JobId=51 ArrayJobId=50 ArrayTaskId=0 JobState=COMPLETED ExitCode=0:0\n'"
  PYTHONPATH=$HPC_ROOT/python_helpers/src run --separate-stderr python3 -m hpc_helpers.followup read --dir "$dir" --keys 0-5 --policy always --out "$BATS_TEST_TMPDIR/st"
  unstub scontrol
  assert_success
  assert_line "ok=0 2 5"
  assert_line "failed=1 3 4"
  [[ $stderr == *"task 3 is INCONSISTENT: its status file names job 40_0, whose chunk does not hold item 3"* ]] || fail "$stderr"
  [[ $stderr == *"task 4 is INCONSISTENT"* ]] || fail "$stderr"
}

# shellcheck disable=SC2034,SC2329,SC2016 # the library's variables; stand-ins run by it; the item's script expands its own
@test "a chunk's items start from the task's own batch shell (no new bash reading the libraries and the plan per item): without job_step.sh they still run; the command line is logged for the first item only" {
  chunk_job 2 real
  # No job_step.sh: a new bash per item could not start.
  hpc_plan_toolkit_dir=$BATS_TEST_TMPDIR/no-toolkit hpc_launcher_srun=() hpc_plan_launcher=none hpc_plan_runner=venv
  mkdir -p "$hpc_plan_toolkit_dir"
  hpc_runner_load venv
  # The runner's environment: a stand-in that expands the command as the venv runner would.
  hpc_runner_venv_enter() { hpc_configs_expand "$@"; }
  printf 'printf "%%s\\n" "$map_index" >>"%s"\n' "$BATS_TEST_TMPDIR/ran" >"$BATS_TEST_TMPDIR/item.sh"
  hpc_job_command=(bash "$BATS_TEST_TMPDIR/item.sh")
  export HPC_JOB_T0=$EPOCHREALTIME
  hpc_map_task_setup
  hpc_map_chunk_run
  assert_equal "$hpc_job_status" 0
  run cat "$BATS_TEST_TMPDIR/ran"
  assert_output $'8\n9'
  run grep -c 'starting after' "$BATS_TEST_TMPDIR/log"
  assert_output 1
  assert_equal "$(item_state 8) $(item_state 9)" "COMPLETED COMPLETED"
}

# shellcheck disable=SC2034,SC2154,SC2329 # the library's variables; 'program' is run by it
@test "a chunk's items each get their own WANDB_DIR and checkpoints_dir (task_I), not the first item's; one the submitting shell set is kept for every item" {
  chunk_job 1 folders
  hpc_plan_runner=venv hpc_plan_workdir=''
  hpc_runner_load venv
  program() { printf '%s %s\n' "$WANDB_DIR" "$checkpoints_dir" >>"$BATS_TEST_TMPDIR/ran"; }
  unset WANDB_DIR
  hpc_map_task_setup
  hpc_map_chunk_run
  run cat "$BATS_TEST_TMPDIR/ran"
  local s=$BATS_TEST_TMPDIR/scratch/exp
  assert_output "$s/task_4 $s/checkpoints/task_4
$s/task_5 $s/checkpoints/task_5
$s/task_6 $s/checkpoints/task_6
$s/task_7 $s/checkpoints/task_7"
  rm -f "$BATS_TEST_TMPDIR/ran"
  export WANDB_DIR=$BATS_TEST_TMPDIR/mine
  hpc_map_task_setup
  hpc_map_chunk_run
  run cut -d' ' -f1 "$BATS_TEST_TMPDIR/ran"
  assert_output "$WANDB_DIR
$WANDB_DIR
$WANDB_DIR
$WANDB_DIR"
}

# shellcheck disable=SC2034,SC2329 # the library's variables; 'program' is run by it
@test "SLURM's TERM inside a chunk (scancel, the time limit): the running item gets SLURM's state, the items not started get no status (LOST: resubmit --failed takes them), none COMPLETED" {
  chunk_job 0
  program() { [[ $map_index != 1 ]] || { hpc_job_ended_by_slurm=1 && return 143; }; }
  stub scontrol "show job -o 40_0 : echo 'JobId=41 ArrayJobId=40 ArrayTaskId=0 JobState=CANCELLED RunTime=00:00:05 TimeLimit=00:10:00'"
  hpc_map_task_setup
  hpc_map_chunk_run
  unstub scontrol
  assert_equal "$(item_state 0) $(item_state 1) $(item_state 2) $(item_state 3)" "COMPLETED CANCELLED - -"
  assert_equal "$hpc_job_status" 143
  run grep -c 'map chunk: 1 item(s) COMPLETED, 1 failed, 2 not run (no status: SLURM ended the task)' "$BATS_TEST_TMPDIR/log"
  assert_output 1
}

@test "the gather's verdict line of a map with thousands of failed items names the first 20 and how many more (the table has them all), not a line of megabytes" {
  local dir=$BATS_TEST_TMPDIR/map/tasks
  mkdir -p "$dir"
  # 2,000 keys, none with a file: all LOST (no manifest: nothing asked of SLURM).
  PYTHONPATH=$HPC_ROOT/python_helpers/src run --separate-stderr python3 -m hpc_helpers.followup read --dir "$dir" \
    --keys 0-1999 --policy all-ok --out "$BATS_TEST_TMPDIR/st" --rerun 'bash job_submitter.sh resubmit x --failed'
  assert_failure 1
  assert_equal "$stderr" "gather not run: policy all-ok needs 2000/2000 tasks, 0 ok; failed: 0 (LOST), 1 (LOST), 2 (LOST), 3 (LOST), 4 (LOST), 5 (LOST), 6 (LOST), 7 (LOST), 8 (LOST), 9 (LOST), 10 (LOST), 11 (LOST), 12 (LOST), 13 (LOST), 14 (LOST), 15 (LOST), 16 (LOST), 17 (LOST), 18 (LOST), 19 (LOST) and 1980 more ($BATS_TEST_TMPDIR/st.tsv); to re-run them: bash job_submitter.sh resubmit x --failed"
  run grep -c LOST "$BATS_TEST_TMPDIR/st.tsv"
  assert_output 2000
}

# shellcheck disable=SC2034,SC2329 # the library's variables; 'program' is run by it
@test "a chunk's task requeued (--requeue after the warning): the items it completed in an earlier run are not run again; the others are, a file naming another task is not taken for its own" {
  chunk_job 0
  program() { printf '%s\n' "$map_index" >>"$BATS_TEST_TMPDIR/ran"; }
  hpc_map_task_setup
  mkdir -p "$map_root/dir/tasks/"{0,1,2}
  printf '{"state": "COMPLETED", "array_job_id": "40", "task_id": "0", "attempt": 1}\n' >"$map_root/dir/tasks/0/status.json"
  printf '{"state": "COMPLETED", "array_job_id": "40", "task_id": "1", "attempt": 1}\n' >"$map_root/dir/tasks/1/status.json"
  printf '{"state": "NOT_RUN", "array_job_id": "40", "task_id": "0", "attempt": 1}\n' >"$map_root/dir/tasks/2/status.json"
  SLURM_RESTART_COUNT=1 hpc_map_chunk_run
  assert_equal "$hpc_job_status" 0
  run cat "$BATS_TEST_TMPDIR/ran"
  assert_output $'1\n2\n3'
  run grep -c 'map item 0: COMPLETED by this task in an earlier run (restart 1): not run again' "$BATS_TEST_TMPDIR/log"
  assert_output 1
  # The first run runs every item, whatever the files say.
  rm -f "$BATS_TEST_TMPDIR/ran"
  hpc_map_chunk_run
  run cat "$BATS_TEST_TMPDIR/ran"
  assert_output $'0\n1\n2\n3'
}
