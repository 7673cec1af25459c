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
  # -W lightning: srun's tasks are the ranks (sleep_train.py reads SLURM's variables through
  # hpc_helpers): the overlap is the study's, and torchrun's agents were a torch import a run more.
  SCALE_STEPS=25 submit_study --scale-gpus 1,2 -W lightning --scale-parallel -e parallel
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
