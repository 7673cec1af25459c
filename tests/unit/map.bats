#!/usr/bin/env bats
# Map + gather at submission, without SLURM: the PATH stubs of tests/fixtures/submitter/bin record
# every sbatch and scontrol call (job ids 4242, 4243, ...). Here: an array above the cluster's
# MaxArraySize (the scontrol stub's HPC_STUB_MAX_ARRAY_SIZE) is split into parts, each after the
# one before, and the gather depends on every part. The whole flow on a real cluster is
# tests/integration/map_gather.bats.

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/submitter'
  hpc_test_warm_profiles
}

setup() {
  load '../helpers/common'
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
  # An sbatch call's last argument is the submission's tag (hpc_pending.bash): left out.
  [[ $1 != sbatch || ${argv[-1]-} != --comment=hpc-toolkit:* ]] || unset 'argv[-1]'
}

# arg_of PREFIX: the element of argv that starts with PREFIX (the last one).
arg_of() {
  local a found=''
  for a in "${argv[@]}"; do [[ $a != "$1"* ]] || found=$a; done
  printf '%s\n' "$found"
}

# plan_of SCRIPT: the plan file that the job script SCRIPT names (its line hpc_job_main PATH,
# %q-quoted: the test's paths hold no special character but spaces).
plan_of() {
  local line
  line=$(grep '^hpc_job_main ' "$1")
  line=${line#hpc_job_main }
  printf '%s\n' "${line//\\ / }"
}

@test "a map of 10 indices above MaxArraySize 4: three held arrays 0-3, 0-3, 0-1 with offsets 0, 4, 8, each after the one before; the gather after all three; all released" {
  HPC_STUB_MAX_ARRAY_SIZE=4 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-9 --max-concurrent 2 --gather "python gather.py" -e big </dev/null
  assert_success
  assert_line --regexp '^The map is above MaxArraySize 4: 3 arrays, one after the other: 4242 4243 4244 \(indices 0-3 4-7 8-9\)$'
  assert_line --regexp '^Gather job 4245: after the array ends'
  argv_of sbatch 1
  assert_equal "$(arg_of --array=)" "--array=0-3%2"
  assert_equal "$(arg_of --hold)" "--hold"
  argv_of sbatch 2
  assert_equal "$(arg_of --array=)" "--array=0-3%2"
  assert_equal "$(arg_of --dependency=)" "--dependency=afterany:4242"
  assert_equal "$(arg_of --hold)" "--hold"
  run grep -x 'hpc_plan_map_offset=4' "$(plan_of "$stub_log/sbatch.2.script")"
  assert_success
  argv_of sbatch 3
  assert_equal "$(arg_of --array=)" "--array=0-1%2"
  assert_equal "$(arg_of --dependency=)" "--dependency=afterany:4243"
  run grep -x 'hpc_plan_map_offset=8' "$(plan_of "$stub_log/sbatch.3.script")"
  assert_success
  argv_of sbatch 4
  assert_equal "$(arg_of --dependency=)" "--dependency=afterany:4242:4243:4244"
  assert_equal "$(arg_of --kill-on-invalid-dep=)" "--kill-on-invalid-dep=yes"
  # The first part's own plan: offset 0.
  run grep -x 'hpc_plan_map_offset=0' "$(plan_of "$stub_log/sbatch.1.script")"
  assert_success
  # Released together, once the gather was submitted.
  local n=1 released=''
  while [[ -e $stub_log/scontrol.$n.args ]]; do
    argv_of scontrol "$n"
    [[ ${argv[0]} != release ]] || released=${argv[*]:1}
    n=$((n + 1))
  done
  assert_equal "$released" "4242 4243 4244"
}

# config_calls: how many times scontrol show config was asked.
config_calls() {
  local n=1 count=0
  while [[ -e $stub_log/scontrol.$n.args ]]; do
    argv_of scontrol "$n"
    [[ ${argv[0]} != show || ${argv[1]} != config ]] || count=$((count + 1))
    n=$((n + 1))
  done
  printf '%s\n' "$count"
}

@test "the dry run of a map above MaxArraySize says how many tasks in how many arrays, not one array" {
  HPC_STUB_MAX_ARRAY_SIZE=4 run --separate-stderr bash "$submitter" --dry-run -g 0 --map-range 0-9 -e a </dev/null
  assert_success
  refute_line --partial "One array"
  assert_line --regexp '^10 tasks in 3 arrays \(MaxArraySize 4\), each after the one before \(afterany\), indices 0-3 4-7 8-9: at most [0-9]+ at once, folder .*/map/a/[0-9]{8}-[0-9]{6}-ARRAYID$'
  # Within MaxArraySize: one array.
  HPC_STUB_MAX_ARRAY_SIZE=1000 run --separate-stderr bash "$submitter" --dry-run -g 0 --map-range 0-9 -e b </dev/null
  assert_success
  assert_line --regexp '^One array of 10 task\(s\): --array=0-9%[0-9]+ \(at most [0-9]+ at once\), folder '
}

@test "MaxArraySize and MaxJobCount are asked of SLURM once in 10 minutes (per cluster and SLURM_CONF): a dry run keeps nothing" {
  export HPC_STUB_MAX_JOB_COUNT=100
  HPC_STUB_MAX_ARRAY_SIZE=4 run --separate-stderr bash "$submitter" --dry-run -g 0 --map-range 0-9 -e a </dev/null
  assert_success
  assert_equal "$(config_calls)" 1
  HPC_STUB_MAX_ARRAY_SIZE=4 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-9 -e a </dev/null
  assert_success
  assert_line --regexp '^The map is above MaxArraySize 4: 3 arrays'
  assert_equal "$(config_calls)" 2
  # Within 10 minutes: what SLURM said then (a reconfigured cluster is seen after them).
  HPC_STUB_MAX_ARRAY_SIZE=1000 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-9 -e b </dev/null
  assert_success
  assert_line --regexp '^The map is above MaxArraySize 4: 3 arrays'
  assert_equal "$(config_calls)" 2
  HPC_STUB_MAX_ARRAY_SIZE=1000 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-200 -e c </dev/null
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: --map-range: 201 tasks are more than this cluster can hold (MaxJobCount 100); accepted: at most 100 tasks"
  # A refusal is made on what SLURM says now: asked again before it.
  assert_equal "$(config_calls)" 3
  # Another SLURM configuration: asked again.
  SLURM_CONF=$tmp/other.conf HPC_STUB_MAX_ARRAY_SIZE=1000 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-9 -e d </dev/null
  assert_success
  refute_line --partial 'above MaxArraySize'
  assert_equal "$(config_calls)" 4
  # Older than 10 minutes: asked again.
  local file
  for file in "$tmp/cache/slurm/"*.limits; do
    sed -i "1s/.*/$((EPOCHSECONDS - 601))/" "$file"
  done
  HPC_STUB_MAX_ARRAY_SIZE=1000 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-9 -e e </dev/null
  assert_success
  refute_line --partial 'above MaxArraySize'
  assert_equal "$(config_calls)" 5
}

@test "a map within MaxArraySize is one array whose task ids are the indices" {
  HPC_STUB_MAX_ARRAY_SIZE=1001 run --separate-stderr bash "$submitter" -y -g 0 --map-range 3-5 -e small </dev/null
  assert_success
  argv_of sbatch 1
  assert_equal "$(arg_of --array=)" "--array=3-5%4"
  [[ ! -e $stub_log/sbatch.2.args ]] || fail "more than one sbatch call"
}

@test "resubmit --failed of a map above MaxArraySize 4: failed indices 2 and 9 as one held array 0-1 whose task ids map to the indices; a new gather after it; released" {
  HPC_STUB_MAX_ARRAY_SIZE=4 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-9 --max-concurrent 2 --gather "python gather.py" -e big </dev/null
  assert_success
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$output")
  [[ -d $map_dir ]] || fail "no map folder in: $output"
  # What the ended tasks wrote: 2 and 9 failed (array job ids and task ids of the three parts).
  local i state part task
  for i in 0 1 2 3 4 5 6 7 8 9; do
    state=COMPLETED part=$((4242 + i / 4)) task=$((i % 4))
    [[ $i != 2 && $i != 9 ]] || state=FAILED
    mkdir -p "$map_dir/tasks/$i"
    printf '{"index": %s, "array_job_id": "%s", "task_id": "%s", "state": "%s", "exit_code": 1, "attempt": 1}\n' \
      "$i" "$part" "$task" "$state" >"$map_dir/tasks/$i/status.json"
  done
  rm -f "$stub_log"/*
  HPC_STUB_MAX_ARRAY_SIZE=4 run --separate-stderr bash "$submitter" resubmit big --failed </dev/null
  assert_success
  assert_line --regexp "^Resubmitted task\(s\) 2,9 of map ${map_dir##*/} as job 4242 \(array 0-1%2, task ids 0-1 are indices 2 9: above MaxArraySize 4\)$"
  argv_of sbatch 1
  assert_equal "$(arg_of --array=)" "--array=0-1%2"
  assert_equal "$(arg_of --hold)" "--hold"
  run grep -xF 'hpc_plan_map_indices=2\ 9' "$(plan_of "$stub_log/sbatch.1.script")"
  assert_success
  argv_of sbatch 2
  assert_equal "$(arg_of --dependency=)" "--dependency=afterany:4242"
  [[ ! -e $stub_log/sbatch.3.args ]] || fail "more than two sbatch calls"
  local n=1 released=''
  while [[ -e $stub_log/scontrol.$n.args ]]; do
    argv_of scontrol "$n"
    [[ ${argv[0]} != release ]] || released=${argv[*]:1}
    n=$((n + 1))
  done
  assert_equal "$released" "4242"
}

@test "resubmit --failed of a map, a TERM while its new gather is being submitted: the held resubmission and the gather are cancelled, never released; the submitter ends by the signal" {
  HPC_STUB_MAX_ARRAY_SIZE=1001 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-3 --gather "python gather.py" -e sigre </dev/null
  assert_success
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$output")
  local i state
  for i in 0 1 2 3; do
    state=COMPLETED
    [[ $i != 2 ]] || state=FAILED
    mkdir -p "$map_dir/tasks/$i"
    printf '{"index": %s, "array_job_id": "4242", "task_id": "%s", "state": "%s", "exit_code": 1, "attempt": 1}\n' \
      "$i" "$i" "$state" >"$map_dir/tasks/$i/status.json"
  done
  rm -f "$stub_log"/*
  hpc_test_slow_sbatch 2
  HPC_STUB_MAX_ARRAY_SIZE=1001 hpc_test_signal_during_sbatch TERM resubmit sigre --failed
  assert_equal "$hpc_test_rc" 143
  assert_equal "$(hpc_test_cancelled)" "4242 4243"
  assert_equal "$(<"$tmp/err")" "job_submitter.sh: stopped by SIGTERM; the resubmission (jobs 4242 4243) was cancelled"
  local n=1
  while [[ -e $stub_log/scontrol.$n.args ]]; do
    argv_of scontrol "$n"
    [[ ${argv[0]} != release ]] || fail "released: ${argv[*]}"
    n=$((n + 1))
  done
}

@test "resubmit --failed of more failed indices than MaxArraySize 4 (indices 0-9 all failed): three held arrays 0-3, 4-7 as ids 0-3, 8-9 as ids 0-1, each after the one before; the gather after all three; all released" {
  HPC_STUB_MAX_ARRAY_SIZE=4 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-9 --max-concurrent 2 --gather "python gather.py" -e big </dev/null
  assert_success
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$output")
  [[ -d $map_dir ]] || fail "no map folder in: $output"
  local i
  for i in 0 1 2 3 4 5 6 7 8 9; do
    mkdir -p "$map_dir/tasks/$i"
    printf '{"index": %s, "array_job_id": "%s", "task_id": "%s", "state": "FAILED", "exit_code": 1, "attempt": 1}\n' \
      "$i" "$((4242 + i / 4))" "$((i % 4))" >"$map_dir/tasks/$i/status.json"
  done
  rm -f "$stub_log"/*
  HPC_STUB_MAX_ARRAY_SIZE=4 run --separate-stderr bash "$submitter" resubmit big --failed </dev/null
  assert_success
  assert_line --index 0 "Resubmitted task(s) 0-9 of map ${map_dir##*/} as jobs 4242 4243 4244 (above MaxArraySize 4: 3 arrays, one after the other)"
  assert_line --index 1 "Gather job 4245: after jobs 4242 4243 4244 end (afterany); output $map_dir/gather_4245.out"
  argv_of sbatch 1
  assert_equal "$(arg_of --array=)" "--array=0-3%2"
  assert_equal "$(arg_of --dependency=)" ""
  run grep -xF "hpc_plan_map_indices=''" "$(plan_of "$stub_log/sbatch.1.script")"
  assert_success
  argv_of sbatch 2
  assert_equal "$(arg_of --array=)" "--array=0-3%2"
  assert_equal "$(arg_of --dependency=)" "--dependency=afterany:4242"
  run grep -xF 'hpc_plan_map_indices=4\ 5\ 6\ 7' "$(plan_of "$stub_log/sbatch.2.script")"
  assert_success
  argv_of sbatch 3
  assert_equal "$(arg_of --array=)" "--array=0-1%2"
  assert_equal "$(arg_of --dependency=)" "--dependency=afterany:4243"
  argv_of sbatch 4
  assert_equal "$(arg_of --dependency=)" "--dependency=afterany:4242:4243:4244"
  [[ ! -e $stub_log/sbatch.5.args ]] || fail "more than four sbatch calls"
  local n=1 released=''
  while [[ -e $stub_log/scontrol.$n.args ]]; do
    argv_of scontrol "$n"
    [[ ${argv[0]} != release ]] || released=${argv[*]:1}
    n=$((n + 1))
  done
  assert_equal "$released" "4242 4243 4244"
}

@test "resubmit --failed when a task replaced its tasks/<i> folder by a link elsewhere: refused with one line naming it, nothing submitted, nothing moved or written through the link" {
  HPC_STUB_MAX_ARRAY_SIZE=1001 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-3 --gather "python gather.py" -e linked </dev/null
  assert_success
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$output")
  [[ -d $map_dir ]] || fail "no map folder in: $output"
  local i elsewhere=$BATS_TEST_TMPDIR/elsewhere before
  for i in 0 1 2 3; do
    mkdir -p "$map_dir/tasks/$i"
    printf '{"index": %s, "array_job_id": "4242", "task_id": "%s", "state": "COMPLETED", "exit_code": 0, "attempt": 1}\n' \
      "$i" "$i" >"$map_dir/tasks/$i/status.json"
  done
  mkdir -p "$elsewhere"
  printf '{"state": "FAILED", "exit_code": 1}\n' >"$elsewhere/status.json"
  rm -r "$map_dir/tasks/2"
  ln -s "$elsewhere" "$map_dir/tasks/2"
  before=$(find "$elsewhere" -printf '%P %y %s %T@\n' | sort)
  rm -f "$stub_log"/*
  run --separate-stderr bash "$submitter" resubmit linked --failed </dev/null
  assert_equal "$status" 1
  assert_equal "${stderr##*$'\n'}" "job_submitter.sh: $map_dir/tasks/2 is a symbolic link: a task's folder is never followed; remove the link (task 2 then runs again into a new folder) and resubmit; nothing was submitted"
  [[ ! -e $stub_log/sbatch.1.args ]] || fail "sbatch was called"
  assert_equal "$(find "$elsewhere" -printf '%P %y %s %T@\n' | sort)" "$before"
}

@test "gather EXP while a resubmit --failed of the map holds its lock: it waits for it, so neither's ids in manifest.json are lost" {
  HPC_STUB_MAX_ARRAY_SIZE=1001 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-1 --gather "python gather.py" -e race </dev/null
  assert_success
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$output")
  [[ -d $map_dir ]] || fail "no map folder in: $output"
  # A stand-in for a resubmission: under the map folder's lock, it reads manifest.json, takes its
  # time, then writes it back with one more array id.
  local marker=$BATS_TEST_TMPDIR/locked holder i new_gather
  # shellcheck disable=SC2016 # the stand-in's own $1 and $2
  flock "$map_dir" bash -c ': >"$2"; python3 -c "
import json, sys, time
path = sys.argv[1]
doc = json.load(open(path))
time.sleep(3)
doc[\"array_ids\"].append(\"9999\")
json.dump(doc, open(path, \"w\"))
" "$1/manifest.json"' _ "$map_dir" "$marker" 3>&- &
  holder=$!
  for ((i = 0; i < 100; i++)); do
    [[ ! -e $marker ]] || break
    sleep 0.1
  done
  [[ -e $marker ]] || fail "the stand-in never took the lock"
  run --separate-stderr bash "$submitter" gather race </dev/null
  wait "$holder"
  assert_success
  new_gather=$(sed -n 's/^Gather job \([0-9]*\) of map .*/\1/p' <<<"$output")
  [[ -n $new_gather ]] || fail "no gather job in: $output"
  run python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["array_ids"][-1], d["gather_ids"][-1])' "$map_dir/manifest.json"
  assert_output "9999 $new_gather"
}

# shellcheck disable=SC2034,SC2154 # the variables the sourced library reads and sets
@test "a map task's index: the array task id, plus the part's offset, or the resubmission's index list" {
  # shellcheck source=/dev/null # the library's variables are not this test's
  source "$HPC_ROOT/hpc_files/lib/hpc_map.bash"
  hpc_job_fail() { echo "FAIL $*" && return 1; }
  SLURM_ARRAY_TASK_ID=1
  hpc_map_task_index
  assert_equal "$hpc_map_index" 1
  hpc_plan_map_offset=8
  hpc_map_task_index
  assert_equal "$hpc_map_index" 9
  hpc_plan_map_offset=0 hpc_plan_map_indices='2 1500'
  hpc_map_task_index
  assert_equal "$hpc_map_index" 1500
  SLURM_ARRAY_TASK_ID=2
  run hpc_map_task_index
  assert_output "FAIL map array task 2 has no index in the resubmission's list (2 1500)"
}

@test "resubmit --failed of a map: squeue down, or manifest.json holding an array id that is not a number: refused with one line, exit 1, nothing submitted or moved (squeue's error was taken for 'nothing runs')" {
  HPC_STUB_MAX_ARRAY_SIZE=1001 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-1 --gather "python gather.py" -e odd </dev/null
  assert_success
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$output")
  [[ -d $map_dir ]] || fail "no map folder in: $output"
  local i before
  for i in 0 1; do
    mkdir -p "$map_dir/tasks/$i"
    printf '{"index": %s, "array_job_id": "4242", "task_id": "%s", "state": "FAILED", "exit_code": 1, "attempt": 1}\n' \
      "$i" "$i" >"$map_dir/tasks/$i/status.json"
  done
  before=$(find "$map_dir" -printf '%P %y %s\n' | sort)
  rm -f "$stub_log"/*
  hpc_test_squeue_like_slurm fail
  run --separate-stderr bash "$submitter" resubmit odd --failed </dev/null
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: squeue failed: squeue: error: Unable to contact slurm controller (connect failure); nothing was submitted"
  [[ ! -e $stub_log/sbatch.1.args ]] || fail "sbatch was called"
  # The array 4242 still running; a second array id edited into manifest.json as a word.
  python3 -c 'import json,sys; p=sys.argv[1]; d=json.load(open(p)); d["array_ids"].append("abc"); json.dump(d, open(p, "w"))' "$map_dir/manifest.json"
  before=$(find "$map_dir" -printf '%P %y %s\n' | sort)
  HPC_STUB_LIVE_IDS=4242 run --separate-stderr bash "$submitter" resubmit odd --failed </dev/null
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: $map_dir/manifest.json holds 'abc', which is not a job id; nothing was submitted"
  [[ ! -e $stub_log/sbatch.1.args ]] || fail "sbatch was called"
  assert_equal "$(find "$map_dir" -printf '%P %y %s\n' | sort)" "$before"
}

@test "a map whose folder's root (map/EXP, or map/) is a symbolic link is refused before anything is submitted, as a study's is; the link's target untouched" {
  local outputs="$SCRATCH/my project/hpc_outputs" target=$BATS_TEST_TMPDIR/elsewhere
  mkdir -p "$outputs/map" "$target"
  ln -s "$target" "$outputs/map/lnk"
  HPC_STUB_MAX_ARRAY_SIZE=1001 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-1 -e lnk </dev/null
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: $outputs/map/lnk is a symbolic link; the map's folders are made in a folder of their own, never through a link: nothing was submitted"
  [[ ! -e $stub_log/sbatch.1.args ]] || fail "sbatch was called"
  [[ -z $(ls -A "$target") ]] || fail "written through the link: $(ls -A "$target")"
}

@test "resubmit --failed of a map whose manifest.json was edited: an array or gather id holding shell code (PPID[\$(...)]), an empty id list or a throttle with more than digits are refused with one line before any use; nothing runs, nothing is submitted" {
  HPC_STUB_MAX_ARRAY_SIZE=1001 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-1 --gather "python gather.py" -e inj </dev/null
  assert_success
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$output")
  [[ -d $map_dir ]] || fail "no map folder in: $output"
  local i key value pwned=$BATS_TEST_TMPDIR/pwned
  for i in 0 1; do
    mkdir -p "$map_dir/tasks/$i"
    printf '{"index": %s, "array_job_id": "4242", "task_id": "%s", "state": "FAILED", "exit_code": 1, "attempt": 1}\n' \
      "$i" "$i" >"$map_dir/tasks/$i/status.json"
  done
  cp "$map_dir/manifest.json" "$BATS_TEST_TMPDIR/manifest.json"
  for key in array_ids gather_ids; do
    value="PPID[\$(touch $pwned)]"
    python3 -c 'import json,sys; p,k,v=sys.argv[1:]; d=json.load(open(p)); d[k]=[v]; json.dump(d, open(p, "w"))' \
      "$map_dir/manifest.json" "$key" "$value"
    rm -f "$stub_log"/*
    run --separate-stderr bash "$submitter" resubmit inj --failed </dev/null
    assert_equal "$status" 1
    # The record's ids are words: the first word of the edited id is named.
    assert_equal "${stderr##*$'\n'}" "job_submitter.sh: $map_dir/manifest.json holds '${value%% *}', which is not a job id; nothing was submitted"
    [[ ! -e $pwned ]] || fail "the id ran as code ($key)"
    [[ ! -e $stub_log/sbatch.1.args ]] || fail "sbatch was called ($key)"
    cp "$BATS_TEST_TMPDIR/manifest.json" "$map_dir/manifest.json"
  done
  python3 -c 'import json,sys; p=sys.argv[1]; d=json.load(open(p)); d["array_ids"]=[]; json.dump(d, open(p, "w"))' "$map_dir/manifest.json"
  run --separate-stderr bash "$submitter" resubmit inj --failed </dev/null
  assert_equal "$status" 1
  assert_equal "${stderr##*$'\n'}" "job_submitter.sh: $map_dir/manifest.json names no array job; nothing was submitted"
  cp "$BATS_TEST_TMPDIR/manifest.json" "$map_dir/manifest.json"
  python3 -c 'import json,sys; p,v=sys.argv[1:]; d=json.load(open(p)); d["array"]=v; json.dump(d, open(p, "w"))' \
    "$map_dir/manifest.json" "0-1%4\$(touch x)"
  rm -f "$stub_log"/*
  run --separate-stderr bash "$submitter" resubmit inj --failed </dev/null
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: $map_dir/manifest.json holds the throttle '4\$(touch x)', which is not a whole number; nothing was submitted"
  [[ ! -e $stub_log/sbatch.1.args ]] || fail "sbatch was called"
}

@test "resubmit --failed of a map whose task planted status.attempt1.json as a link to a folder: the earlier status becomes status.attempt2.json; nothing moved into the folder, the link stays" {
  HPC_STUB_MAX_ARRAY_SIZE=1001 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-1 -e planted </dev/null
  assert_success
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$output")
  [[ -d $map_dir ]] || fail "no map folder in: $output"
  local elsewhere=$BATS_TEST_TMPDIR/elsewhere
  mkdir -p "$map_dir/tasks/0" "$map_dir/tasks/1" "$elsewhere"
  printf '{"index": 0, "array_job_id": "4242", "task_id": "0", "state": "COMPLETED", "exit_code": 0, "attempt": 1}\n' >"$map_dir/tasks/0/status.json"
  printf '{"index": 1, "array_job_id": "4242", "task_id": "1", "state": "FAILED", "exit_code": 1, "attempt": 1}\n' >"$map_dir/tasks/1/status.json"
  ln -s "$elsewhere" "$map_dir/tasks/1/status.attempt1.json"
  rm -f "$stub_log"/*
  run --separate-stderr bash "$submitter" resubmit planted --failed </dev/null
  assert_success
  run find "$elsewhere" -mindepth 1
  assert_output ''
  [[ -L $map_dir/tasks/1/status.attempt1.json && ! -e $map_dir/tasks/1/status.json ]] || fail "$(ls -l "$map_dir/tasks/1")"
  run cat "$map_dir/tasks/1/status.attempt2.json"
  assert_output '{"index": 1, "array_job_id": "4242", "task_id": "1", "state": "FAILED", "exit_code": 1, "attempt": 1}'
}

@test "a kept MaxArraySize or MaxJobCount never refuses alone: the cluster reconfigured within the 10 minutes is asked again first (and then the request runs)" {
  HPC_STUB_MAX_ARRAY_SIZE=4 HPC_STUB_MAX_JOB_COUNT=100 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-9 -e a </dev/null
  assert_success
  assert_equal "$(config_calls)" 1
  # The cluster now holds 1000 jobs and arrays of 1000: a map of 201 tasks is not refused.
  HPC_STUB_MAX_ARRAY_SIZE=1000 HPC_STUB_MAX_JOB_COUNT=1000 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-200 -e b </dev/null
  assert_success
  refute_line --partial 'above MaxArraySize'
  assert_equal "$(config_calls)" 2
  # What was kept says MaxArraySize 4 again; --repeat 10 (one array) is asked again, not refused.
  local file
  for file in "$tmp/cache/slurm/"*.limits; do
    sed -i 's/^MaxArraySize = .*/MaxArraySize = 4/' "$file"
  done
  HPC_STUB_MAX_ARRAY_SIZE=1000 HPC_STUB_MAX_JOB_COUNT=1000 run --separate-stderr bash "$submitter" -y -g 0 --repeat 10 -e c </dev/null
  assert_success
  assert_equal "$(config_calls)" 3
  # Still too many after asking: refused, exit 2, one line.
  HPC_STUB_MAX_ARRAY_SIZE=1000 HPC_STUB_MAX_JOB_COUNT=1000 run --separate-stderr bash "$submitter" -y -g 0 --repeat 1001 -e d </dev/null
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: --repeat/--num-sweeps: 1001 tasks exceed this cluster's MaxArraySize 1000 (indices 0..999)"
}

@test "a kept MaxArraySize file that is a link, or owned by another user, is not read: scontrol is asked; a link in place of it or of sinfo's kept answer: its target is not written" {
  HPC_STUB_MAX_ARRAY_SIZE=1000 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-9 -e a </dev/null
  assert_success
  assert_equal "$(config_calls)" 1
  local file elsewhere=$BATS_TEST_TMPDIR/elsewhere
  file=$(echo "$tmp/cache/slurm/"*.limits)
  [[ -f $file ]] || fail "no kept limits: $(ls "$tmp/cache/slurm")"
  # Another user's file saying MaxArraySize 2: read, it split the map into five arrays.
  sed -i 's/^MaxArraySize = .*/MaxArraySize = 2/' "$file"
  chown nobody "$file"
  HPC_STUB_MAX_ARRAY_SIZE=1000 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-9 -e b </dev/null
  assert_success
  refute_line --partial 'above MaxArraySize'
  assert_equal "$(config_calls)" 2
  # A link to a folder in its place (and in place of what sinfo said): not read, and nothing
  # written into the folder.
  rm -f "$file" "${file%.limits}.txt"
  mkdir -p "$elsewhere"
  ln -s "$elsewhere" "$file"
  ln -s "$elsewhere" "${file%.limits}.txt"
  HPC_STUB_MAX_ARRAY_SIZE=1000 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-9 -e c </dev/null
  assert_success
  assert_equal "$(config_calls)" 3
  run find "$elsewhere" -mindepth 1
  assert_output ''
}

@test "a kept MaxArraySize above the cluster's (lowered within the 10 minutes): sbatch's refusal says so, exit 1, nothing left; the next submission asks again and splits the map" {
  HPC_STUB_MAX_ARRAY_SIZE=1001 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-1 -e a </dev/null
  assert_success
  assert_equal "$(config_calls)" 1
  # The cluster now takes task ids up to 3 only, as SLURM refuses a larger --array.
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  # shellcheck disable=SC2016 # the stand-in's own variables
  printf '#!/usr/bin/env bash\nfor a; do\n  if [[ $a =~ ^--array=[0-9]+-([0-9]+) ]] && ((BASH_REMATCH[1] >= 4)); then\n    echo "sbatch: error: Batch job submission failed: Invalid job array specification" >&2\n    exit 1\n  fi\ndone\nexec %q "$@"\n' \
    "$fixtures/bin/sbatch" >"$BATS_TEST_TMPDIR/bin/sbatch"
  chmod +x "$BATS_TEST_TMPDIR/bin/sbatch"
  local outputs=$SCRATCH/my\ project/hpc_outputs before
  before=$(find "$outputs" -printf '%P %y\n' | sort)
  PATH=$BATS_TEST_TMPDIR/bin:$PATH HPC_STUB_MAX_ARRAY_SIZE=4 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-9 -e b </dev/null
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: sbatch refused the job: sbatch: error: Batch job submission failed: Invalid job array specification (this cluster's MaxArraySize was taken as 1001, kept from scontrol show config within the last 10 minutes; the next submission asks again)"
  assert_equal "$(find "$outputs" -printf '%P %y\n' | sort)" "$before"
  assert_equal "$(config_calls)" 1
  PATH=$BATS_TEST_TMPDIR/bin:$PATH HPC_STUB_MAX_ARRAY_SIZE=4 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-9 -e b </dev/null
  assert_success
  assert_line --regexp '^The map is above MaxArraySize 4: 3 arrays'
  assert_equal "$(config_calls)" 2
}

@test "resubmit --failed of a map whose tasks/ folder was replaced by a link: refused with one line naming it, nothing submitted, nothing moved in the link's target" {
  HPC_STUB_MAX_ARRAY_SIZE=1001 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-1 -e linkedtasks </dev/null
  assert_success
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$output")
  [[ -d $map_dir ]] || fail "no map folder in: $output"
  local i elsewhere=$BATS_TEST_TMPDIR/elsewhere before
  mkdir -p "$elsewhere"
  for i in 0 1; do
    mkdir -p "$elsewhere/$i"
    printf '{"index": %s, "array_job_id": "4242", "task_id": "%s", "state": "FAILED", "exit_code": 1, "attempt": 1}\n' \
      "$i" "$i" >"$elsewhere/$i/status.json"
  done
  rm -rf "$map_dir/tasks"
  ln -s "$elsewhere" "$map_dir/tasks"
  before=$(find "$elsewhere" -printf '%P %y %s\n' | sort)
  rm -f "$stub_log"/*
  run --separate-stderr bash "$submitter" resubmit linkedtasks --failed </dev/null
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: $map_dir/tasks is a symbolic link: a map's tasks are never followed; nothing was submitted"
  [[ ! -e $stub_log/sbatch.1.args ]] || fail "sbatch was called"
  assert_equal "$(find "$elsewhere" -printf '%P %y %s\n' | sort)" "$before"
}

@test "resubmit --failed of a map whose plan file others can write (a group member appended code): refused with one line naming it, nothing submitted, no new plan file (its text was copied into a new 0600 file that the job would trust)" {
  HPC_STUB_MAX_ARRAY_SIZE=1001 run --separate-stderr bash "$submitter" -y -g 0 --map-range 0-1 -e tampered </dev/null
  assert_success
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$output")
  [[ -d $map_dir ]] || fail "no map folder in: $output"
  local i plan plans_before
  for i in 0 1; do
    mkdir -p "$map_dir/tasks/$i"
    printf '{"index": %s, "array_job_id": "4242", "task_id": "%s", "state": "FAILED", "exit_code": 1, "attempt": 1}\n' \
      "$i" "$i" >"$map_dir/tasks/$i/status.json"
  done
  plan=$(plan_of "$map_dir/task.sh")
  [[ -f $plan ]] || fail "no plan file $plan"
  printf 'touch %q\n' "$tmp/ran" >>"$plan"
  chmod 664 "$plan"
  plans_before=$(find "$tmp/scratch" -name '*.plan' | sort)
  rm -f "$stub_log"/*
  run --separate-stderr bash "$submitter" resubmit tampered --failed </dev/null
  assert_equal "$status" 1
  assert_equal "${stderr##*$'\n'}" "job_submitter.sh: the plan file '$plan' of job 4242 can be changed by others (mode 664): not read; nothing was submitted"
  [[ ! -e $stub_log/sbatch.1.args ]] || fail "sbatch was called"
  assert_equal "$(find "$tmp/scratch" -name '*.plan' | sort)" "$plans_before"
}
