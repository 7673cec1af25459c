#!/usr/bin/env bats
# Attacks on map + gather on the local cluster: secrets (sentinel values of WANDB_API_KEY and
# MY_TOKEN, used by the tasks' and the gather's commands) through bash -x of the submitter, every
# process's command line while the jobs run, and every file the map leaves; faults of the map's
# own files; a submitter killed while it submits a map leaves nothing that status and cancel do
# not find.
# shellcheck disable=SC2016 # configs lines are single-quoted on purpose

bats_require_minimum_version 1.5.0

SENTINEL_KEY=sentinel-XYZ123456
SENTINEL_TOKEN=sentinel-tok-77aa

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "attack map"
  cp "$HPC_ROOT/tests/fixtures/map/"{featurize.py,gather.py} "$PROJECT/"
  # The venv: a copy of the one built once per bats run, which the toolkit's own test of a ready
  # build takes (hpc_venv_seed): no warm-up job.
  hpc_venv_seed "$PROJECT"
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  export WANDB_API_KEY=$SENTINEL_KEY MY_TOKEN=$SENTINEL_TOKEN
  unset MAP_FAIL_INDEX MAP_EXIT_CODE MAP_SLEEP MAP_TERM_OK
}

# sample_cmdlines FILE: until killed, appends every process's command line to FILE (every 10 ms).
sample_cmdlines() {
  exec python3 -c '
import glob, sys, time
with open(sys.argv[1], "a") as out:
    while True:
        for path in glob.glob("/proc/[0-9]*/cmdline"):
            try:
                with open(path, "rb") as f:
                    out.write(f.read().replace(b"\0", b" ").decode("utf-8", "replace") + "\n")
            except OSError:
                pass
        out.flush()
        time.sleep(0.01)' "$1"
}

# map_ids OUTPUT: sets job_id, gather_id and map_dir from the submitter's OUTPUT.
map_ids() {
  job_id=$(sed -n 's/^Submitted job \([0-9][0-9]*\).*/\1/p' <<<"$1")
  gather_id=$(sed -n 's/^Gather job \([0-9][0-9]*\):.*/\1/p' <<<"$1")
  map_dir=$(sed -n 's/^Map [^ ]*: array job [0-9]* ([^)]*), folder //p' <<<"$1")
  [[ -n $job_id && -n $gather_id && -d $map_dir ]] || fail "no array, gather or map folder in: $1"
}

@test "map + gather: the sentinels are nowhere but the programs' own command lines: bash -x, ps, manifests, status files, logs, status" {
  local dir=$BATS_TEST_TMPDIR submitter=$PROJECT/hpc_files/job_submitter.sh out
  hpc_configs "$PROJECT" 'python probe.py env --key $WANDB_API_KEY --item "${map_item}"'
  printf '%s\n' 'a' 'b c' >"$dir/items.txt"
  sample_cmdlines "$dir/cmdlines" &
  local sampler=$!
  sleep 0.3
  out=$(bash -x "$submitter" -y -g 0 -e secretmap --map-over "$dir/items.txt" \
    --gather 'python probe.py env --token "${MY_TOKEN}"' 2>"$dir/trace.submit") || fail "submission failed: $out"
  printf '%s\n' "$out" >"$dir/out.submit"
  map_ids "$out"
  hpc_wait_job "$job_id" 120
  hpc_wait_job "$gather_id" 120
  kill "$sampler"
  wait "$sampler" || true
  assert_equal "$(hpc_job_state "$gather_id")" "COMPLETED 0:0"
  # The programs got the secrets (the configs file's will).
  grep -qF -- "$SENTINEL_TOKEN" "$map_dir/gather_$gather_id.out" || fail "the gather did not get MY_TOKEN"
  run bash "$submitter" status secretmap
  assert_success
  printf '%s\n' "$output" >"$dir/out.status"
  run bash "$submitter" logs secretmap
  printf '%s\n' "$output" >"$dir/out.logs"
  run bash "$submitter" logs "${job_id}_1"
  printf '%s\n' "$output" >"$dir/out.logs_task"
  run bash "$submitter" logs "$gather_id"
  printf '%s\n' "$output" >"$dir/out.logs_gather"
  # Of the command lines, all but the programs' own.
  grep -v '^python probe.py env --' "$dir/cmdlines" >"$dir/cmdlines.toolkit" || true
  [ -s "$dir/cmdlines.toolkit" ]
  local -a places=("$dir"/trace.* "$dir"/out.* "$dir/cmdlines.toolkit")
  local job
  for job in "${job_id}_0" "${job_id}_1" "$gather_id"; do
    scontrol show job -dd "$job" >"$dir/show_$job"
    places+=("$dir/show_$job")
  done
  # Every file of the map but the programs' own output (the task logs' program lines, the
  # gather's), whose toolkit lines are checked below.
  mapfile -t found < <(find "$map_dir" "$SCRATCH/attack map/hpc_outputs" -type f ! -name '*.out')
  ((${#found[@]} >= 6)) || fail "expected manifests, scripts and status files, got: ${found[*]}"
  places+=("${found[@]}")
  mapfile -t found < <(find "$map_dir" "$SCRATCH/attack map/hpc_outputs" -type f -name '*.out')
  local file n=0
  for file in "${found[@]}"; do
    n=$((n + 1))
    grep '^\[hpc ' "$file" >"$dir/toolkit_lines.$n" || true
    places+=("$dir/toolkit_lines.$n")
  done
  local place
  for place in "${places[@]}"; do
    if grep -qF -e "$SENTINEL_KEY" -e "$SENTINEL_TOKEN" "$place"; then
      fail "a sentinel is in $place: $(grep -F -e "$SENTINEL_KEY" -e "$SENTINEL_TOKEN" "$place" | head -3)"
    fi
  done
}

@test "two resubmit --failed at once: one resubmits index 1, the other refuses; index 1 runs once, both ids recorded" {
  local submitter=$PROJECT/hpc_files/job_submitter.sh dir=$BATS_TEST_TMPDIR out
  hpc_configs "$PROJECT" 'python featurize.py --index ${map_index} --item "${map_item}" --out ${task_dir}'
  out=$(MAP_FAIL_INDEX=1 MAP_SLEEP=0 bash "$submitter" -y -g 0 --map-range 0-2 --gather "python gather.py" -e twice 2>&1) ||
    fail "submission failed: $out"
  map_ids "$out"
  hpc_wait_job "$job_id" 120
  hpc_wait_job "$gather_id" 120
  bash "$submitter" resubmit twice --failed >"$dir/r1" 2>&1 &
  local p1=$!
  bash "$submitter" resubmit twice --failed >"$dir/r2" 2>&1 &
  local p2=$!
  local rc1=0 rc2=0
  wait "$p1" || rc1=$?
  wait "$p2" || rc2=$?
  local all
  all=$(cat "$dir/r1" "$dir/r2")
  assert_equal "$(grep -c '^Resubmitted task(s) 1 of map' <<<"$all")" 1
  assert_equal "$((rc1 + rc2))" 1
  new_id=$(sed -n 's/^Resubmitted .* as job \([0-9]*\) .*/\1/p' <<<"$all")
  hpc_wait_job "$new_id" 120
  # The map's manifest names the first array and the resubmission, and both gathers.
  run python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(d["array_ids"]), len(d["gather_ids"]))' "$map_dir/manifest.json"
  assert_output "2 2"
}

@test "a task whose batch shell is killed with SIGKILL (its status left RUNNING) is not ok: the gather ends FAILED naming it" {
  local submitter=$PROJECT/hpc_files/job_submitter.sh out
  # Index 1 kills its whole process group, the batch shell with it, as the OOM killer would.
  cat >"$PROJECT/killer.py" <<'PY'
import os, signal, sys
print("task", sys.argv[1], flush=True)
if sys.argv[1] == "1":
    os.killpg(os.getpgid(0), signal.SIGKILL)
PY
  hpc_configs "$PROJECT" 'python killer.py ${map_index}'
  out=$(bash "$submitter" -y -g 0 --map-range 0-2 --gather "python gather.py" -e killed 2>&1) || fail "submission failed: $out"
  map_ids "$out"
  hpc_wait_job "$job_id" 120
  hpc_wait_job "$gather_id" 120
  assert_equal "$(hpc_job_state "$gather_id")" "FAILED 1:0"
  run python3 -c 'import json,sys; print(" ".join(t["state"] for t in json.load(open(sys.argv[1]))["tasks"]))' "$map_dir/map_status.json"
  assert_output --regexp '^COMPLETED (FAILED|LOST) COMPLETED$'
  run cat "$map_dir/gather_$gather_id.out"
  assert_output --regexp "gather not run: policy all-ok needs 3/3 tasks, 2 ok; failed: 1 \((FAILED|LOST|exit [0-9]+)\)"
}

@test "a task forging another's status file (index 1 rewrites index 0's as COMPLETED after it exited 5): the gather does not count it, names it INCONSISTENT and ends FAILED; resubmit --failed re-runs index 0" {
  local submitter=$PROJECT/hpc_files/job_submitter.sh out
  # Index 1 waits until index 0's final status is written, then rewrites it as a success.
  cat >"$PROJECT/forger.py" <<'PY'
import json, os, sys, time
from pathlib import Path
index = int(sys.argv[1])
print("task", index, flush=True)
if index == 0:
    sys.exit(5)
victim = Path(os.environ["map_dir"]) / "tasks" / "0" / "status.json"
for _ in range(600):
    try:
        doc = json.loads(victim.read_text())
    except (OSError, ValueError):
        doc = {}
    if doc.get("state") == "FAILED":
        break
    time.sleep(0.1)
doc.update(state="COMPLETED", exit_code=0)
victim.write_text(json.dumps(doc))
print("forged", victim, flush=True)
PY
  hpc_configs "$PROJECT" 'python forger.py ${map_index}'
  out=$(bash "$submitter" -y -g 0 --map-range 0-1 --gather "python gather.py" -e forged 2>&1) || fail "submission failed: $out"
  map_ids "$out"
  hpc_wait_job "$job_id" 120
  hpc_wait_job "$gather_id" 120
  grep -q '"state": "COMPLETED"' "$map_dir/tasks/0/status.json" || fail "not forged: $(cat "$map_dir/tasks/0/status.json")"
  assert_equal "$(hpc_job_state "${job_id}_0")" "FAILED 5:0"
  assert_equal "$(hpc_job_state "$gather_id")" "FAILED 1:0"
  run cat "$map_dir/gather_$gather_id.out"
  assert_line --partial "task 0 is INCONSISTENT: its status file says COMPLETED, SLURM says job ${job_id}_0 ended FAILED 5:0; not counted as a success"
  assert_line --partial "gather not run: policy all-ok needs 2/2 tasks, 1 ok; failed: 0 (INCONSISTENT)"
  run python3 -c 'import json,sys; print(" ".join(t["state"] for t in json.load(open(sys.argv[1]))["tasks"]))' "$map_dir/map_status.json"
  assert_output "INCONSISTENT COMPLETED"
  # resubmit --failed takes SLURM's word too: index 0 again.
  hpc_configs "$PROJECT" 'python -c "print(1)"'
  run bash "$submitter" resubmit forged --failed
  assert_success
  assert_output --partial "task(s) 0"
}

@test "the submitter killed (SIGKILL) at 20 random moments of a map split by a MaxArraySize of 4, with a gather: status EXP names every job each left, cancel EXP leaves none in the queue" {
  hpc_configs "$PROJECT" 'python -c "print(1)"'
  printf 'item%s\n' 0 1 2 3 4 5 6 7 8 9 >"$BATS_TEST_TMPDIR/items.txt"
  # Three held arrays and a gather, released at the end.
  hpc_keep_max_array_size 4
  hpc_kill_loop 20 "kmap$RANDOM-" -g 0 --map-over "$BATS_TEST_TMPDIR/items.txt" --gather 'python -c "print(2)"'
  hpc_kill_loop_check
}
