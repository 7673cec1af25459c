#!/usr/bin/env bats
# status on the site configuration (local_cluster.sh --config site) once the controller has forgotten
# the jobs (MinJobAge=5): their final states come from sacct, for a single job, an array and a map.
# status is not asked before the controller forgets, so that no state it kept can answer.
# shellcheck disable=SC2016 # configs lines are single-quoted on purpose: the job expands them
# Set by hpc_run_job or hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_out

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  load '../helpers/site'
  hpc_site_cluster_use
  hpc_test_project "site project"
  cp "$HPC_ROOT/tests/fixtures/manage/tasks.py" "$HPC_ROOT/tests/fixtures/map/"{featurize.py,gather.py} "$PROJECT/"
  hpc_warm_venv "$PROJECT" 'python probe.py exit 0' -e warm
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  load '../helpers/site'
  submitter=$PROJECT/hpc_files/job_submitter.sh
  outputs="$SCRATCH/site project/hpc_outputs"
}

# row KEY: the status line of KEY (a job id or ARRAYID_TASK), its spaces squeezed.
row() {
  grep -E "^$1 " <<<"$output" | tr -s ' '
}

@test "site: status after MinJobAge: a job, a failed job, an array and a map read their final states from sacct" {
  local ok failed array map task want
  hpc_configs "$PROJECT" 'python probe.py exit 0'
  hpc_submit_job "$PROJECT" -g 0 -e ok
  ok=$job_id ok_out=$job_out
  hpc_configs "$PROJECT" 'python probe.py exit 3'
  hpc_submit_job "$PROJECT" -g 0 -e failed
  failed=$job_id failed_out=$job_out
  hpc_configs "$PROJECT" 'python tasks.py fail 1,2 3'
  hpc_submit_job "$PROJECT" -g 0 --repeat 3 -e rep
  array=$job_id
  printf '%s\n' a b c >"$BATS_TEST_TMPDIR/items.txt"
  hpc_configs "$PROJECT" 'python featurize.py --index ${map_index} --item "${map_item}" --out ${task_dir}'
  out=$(MAP_FAIL_INDEX=1 MAP_EXIT_CODE=5 bash "$submitter" -y -g 0 --map-over "$BATS_TEST_TMPDIR/items.txt" -e mapped 2>&1) ||
    fail "map submission failed: $out"
  map=$(sed -n 's/^Submitted job \([0-9][0-9]*\).*/\1/p' <<<"$out")
  [[ -n $map ]] || fail "no array id in: $out"
  for id in "$ok" "$failed" "$array" "$map"; do hpc_wait_job "$id" 180; done
  for id in "$ok" "$failed" "$array" "$map"; do hpc_wait_forgotten "$id" 150; done

  run --separate-stderr bash "$submitter" status ok
  assert_equal "$status" 0
  assert_equal "$(row "$ok")" "$ok ok venv-none COMPLETED 0:0 $ok_out"
  run --separate-stderr bash "$submitter" status failed
  assert_equal "$(row "$failed")" "$failed failed venv-none FAILED 3:0 $failed_out"
  run --separate-stderr bash "$submitter" status rep
  for task in 0 1 2; do
    want="COMPLETED 0:0"
    [[ $task == 0 ]] || want="FAILED 3:0"
    assert_equal "$(row "${array}_$task")" "${array}_$task rep venv-none $want $outputs/rep_venv-none_${array}_$task.out"
  done
  run --separate-stderr bash "$submitter" status mapped
  assert_equal "$status" 0
  # A map's tasks: the state and exit code of their status files, SLURM's agreeing.
  for task in 0 1 2; do
    want="COMPLETED 0"
    [[ $task != 1 ]] || want="FAILED 5"
    assert_equal "$(row "${map}_$task")" "${map}_$task mapped venv-none $want $outputs/mapped_venv-none_${map}_$task.out"
  done
  refute_output --partial UNKNOWN
  refute_output --partial 'from its log'
}
