#!/usr/bin/env bats
# Scaling tests on the local cluster (shared setup: tests/helpers/scaling_study.bash): --scale-parallel
# (runs released together, the overlap flagged), and status and cancel of an experiment's studies.
# Set by submit_study (helpers/scaling_study.bash); declared for shellcheck.
declare -g study_dir report_id
declare -ga run_ids

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  load '../helpers/scaling_study'
  hpc_scaling_setup_file
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  load '../helpers/scaling_study'
  hpc_scaling_setup
}

@test "--scale-parallel: runs released together share the machine; the report says so in its first lines and flags the overlap in report.md, summary.csv and the plot's data" {
  # -W lightning: srun's tasks are the ranks. The overlap is the study's: the report finds it in
  # the runs' own times and nodes (wall.json), whatever the program, so each rank only sleeps its
  # share of 24 s (24 / world, as sleep_train.py shares its batch; no torch to import: 3 imports a
  # study bought nothing here). The report measures wall time then: 1x2 (12 s, as long as
  # sleep_train.py's 1x2 of 25 steps) meets the efficiency target, so the verdict names its flag,
  # and runs released together overlap by many seconds. The report of samples/s: scaling_report.bats.
  local share="24 / (int(os.environ['num_nodes']) * int(os.environ['gpus_per_node']))"
  hpc_configs "$PROJECT" "python -c \"import os, time; time.sleep($share)\""
  submit_study --scale-gpus 1,2 -W lightning --scale-parallel -e parallel
  grep -q '"order": "parallel"' "$study_dir/study.json" || fail "$(cat "$study_dir/study.json")"
  hpc_wait_job "$report_id" 300
  assert_equal "$(hpc_job_state "$report_id")" "COMPLETED 0:0"
  run sed -n 1,4p "$study_dir/report.md"
  assert_output --partial "parallel"
  assert_output --partial "overlap"
  run grep -c 'overlap' "$study_dir/summary.csv"
  [[ $output -ge 1 ]] || fail "no overlap flag in summary.csv: $(cat "$study_dir/summary.csv")"
  [[ -f $study_dir/scaling.png ]] || fail "no plot"
}

@test "status and cancel of an experiment cover every run and the report job; two studies of one experiment land in two folders" {
  local first_dir first_ids id
  # Runs that only wait to be cancelled: one process each (no launcher), no torch to import.
  cp "$HPC_ROOT/tests/fixtures/manage/tasks.py" "$PROJECT/"
  hpc_configs "$PROJECT" 'python tasks.py sleep 600'
  submit_study --scale-nodes 1 --scale-gpus 1,2 -e twice
  first_dir=$study_dir first_ids=("${run_ids[@]}" "$report_id")
  submit_study --scale-nodes 1 --scale-gpus 1,2 -e twice
  [[ $study_dir != "$first_dir" && -f $first_dir/study.json && -f $study_dir/study.json ]] ||
    fail "two studies of 'twice' share a folder: $first_dir, $study_dir"
  run bash "$PROJECT/hpc_files/job_submitter.sh" status twice
  assert_success
  for id in "${first_ids[@]}" "${run_ids[@]}" "$report_id"; do
    assert_output --regexp "(^|[^0-9])$id([^0-9]|$)"
  done
  run bash "$PROJECT/hpc_files/job_submitter.sh" cancel twice
  assert_success
  for id in "${first_ids[@]}" "${run_ids[@]}" "$report_id"; do
    hpc_wait_job "$id" 60
    assert_equal "$(hpc_job_field "$id" JobState)" CANCELLED
  done
}
