#!/usr/bin/env bats
# Maps beyond a QOS's MaxSubmitJobsPerUser on the site configuration (local_cluster.sh --config
# site; its QOS 'limited': MaxSubmitJobsPerUser=4): --chunk auto reads the limit and what the user
# already has submitted, and runs the items several per task so that the tasks and the gather fit,
# or refuses in one line naming the limit when nothing fits; a plain map with its gather beyond
# the limit is refused before anything is submitted (never half-submitted), saying the fix.
# shellcheck disable=SC2016 # configs lines are single-quoted on purpose: the job expands them

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  load '../helpers/site'
  hpc_site_cluster_use
  hpc_test_project "limits map project"
  cp "$HPC_ROOT/tests/fixtures/map/"{featurize.py,gather.py} "$PROJECT/"
  hpc_warm_venv "$PROJECT" 'python probe.py exit 0' -e warm
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  load '../helpers/site'
  submitter=$PROJECT/hpc_files/job_submitter.sh
  outputs="$SCRATCH/limits map project/hpc_outputs"
  printf '%s\n' a b c d e f >"$BATS_TEST_TMPDIR/items.txt"
  hpc_configs "$PROJECT" 'python featurize.py --index ${map_index} --item "${map_item}" --out ${task_dir}'
}

teardown() {
  local id
  for id in ${cancel_ids:-}; do scancel "$id" 2>/dev/null || true; done
}

# hold_jobs N: submits N held jobs of the QOS 'limited' (they count against its limit); their ids
# are cancelled by teardown.
hold_jobs() {
  local i
  for ((i = 0; i < $1; i++)); do
    cancel_ids+=" $(hpc_sbatch --qos=limited -H -o /dev/null --wrap true)"
  done
}

@test "site: --chunk auto with a gather in the QOS 'limited' (4 jobs at most, 1 already held): 6 items in 2 tasks of 3 and the gather; every item done, the gather ok" {
  local out map gather tasks
  hpc_site_lock qos
  hold_jobs 1
  out=$(SBATCH_QOS=limited bash "$submitter" -y -g 0 --map-over "$BATS_TEST_TMPDIR/items.txt" --chunk auto \
    --gather 'python gather.py' -e fitted 2>&1 </dev/null) || fail "the map was refused: $out"
  [[ $out == *"6 items, 3 per task: 2 tasks"* ]] || fail "not chunked to fit the limit: $out"
  [[ $out == *"MaxSubmitJobsPerUser 4 of QOS limited"*"1 already submitted"* ]] || fail "the limit not said: $out"
  map=$(sed -n 's/^Submitted job \([0-9][0-9]*\).*/\1/p' <<<"$out")
  gather=$(sed -n 's/^Gather job \([0-9][0-9]*\):.*/\1/p' <<<"$out")
  [[ -n $map && -n $gather ]] || fail "no array or gather id in: $out"
  cancel_ids+=" $map $gather"
  hpc_wait_job "$gather" 240
  run hpc_job_state "$gather"
  assert_output "COMPLETED 0:0"
  tasks=$(sacct -n -P -X -j "$map" -o JobID,State | grep -c "^${map}_[0-9]*|COMPLETED$") || true
  assert_equal "$tasks" 2
  run --separate-stderr bash "$submitter" status fitted
  assert_line --regexp "^map fitted/[^:]*: 6 items: 6 COMPLETED$"
}

@test "site: --chunk auto in the QOS 'limited' with its 4 jobs already submitted: one line naming the limit and what to do; nothing submitted, recorded or made" {
  local before
  hpc_site_lock qos
  hold_jobs 4
  before=$(find "$outputs" "$SCRATCH/limits map project" | sort)
  SBATCH_QOS=limited run --separate-stderr bash "$submitter" -y -g 0 --map-over "$BATS_TEST_TMPDIR/items.txt" \
    --chunk auto -e nofit </dev/null
  assert_equal "$status" 1
  assert_equal "${#stderr_lines[@]}" 1
  [[ $stderr == *"--chunk auto: "*"MaxSubmitJobsPerUser 4 of QOS limited"*"4 already submitted"* &&
    $stderr == *"once earlier jobs have ended"* ]] || fail "not one line with the limit and the way out: $stderr"
  run diff <(printf '%s\n' "$before") <(find "$outputs" "$SCRATCH/limits map project" | sort)
  assert_output ''
  run squeue -h -n "limits map project-nofit"
  assert_output ''
}

@test "site: a plain map whose 4 tasks fit the QOS 'limited' but not with its gather: refused before anything is submitted, one line naming the limit and --chunk auto" {
  local before start
  hpc_site_lock qos
  printf '%s\n' a b c d >"$BATS_TEST_TMPDIR/items.txt"
  before=$(find "$outputs" "$SCRATCH/limits map project" | sort)
  start=$(date +%Y-%m-%dT%H:%M:%S)
  SBATCH_QOS=limited run --separate-stderr bash "$submitter" -y -g 0 --map-over "$BATS_TEST_TMPDIR/items.txt" \
    --gather 'python gather.py' -e halfmap </dev/null
  assert_equal "$status" 1
  assert_equal "${#stderr_lines[@]}" 1
  [[ $stderr == *"4 tasks and its gather are 5 jobs"*"MaxSubmitJobsPerUser 4 of QOS limited, 0 already"* &&
    $stderr == *"--chunk auto"* ]] || fail "no limit or fix said: $stderr"
  run diff <(printf '%s\n' "$before") <(find "$outputs" "$SCRATCH/limits map project" | sort)
  assert_output ''
  # SLURM never held a job of it, not even for a moment.
  run sacct -n -X -P -S "$start" --name "limits map project-halfmap" -o JobID
  assert_output ''
}
