#!/usr/bin/env bats
# A scaling study of a program the toolkit did not write: Lightning's own BoringModel under
# -W lightning, measured by the one-line scaling.ThroughputCallback (no loop of its own).

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "lightning scaling"
  cp "$HPC_ROOT/tests/fixtures/scaling/boring_throughput.py" "$PROJECT/"
  # The venv: a copy of the one built once per bats run (not what this file tests).
  hpc_venv_seed "$PROJECT"
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
}

# metric RUN FIELD: FIELD of the run folder RUN's metrics.json.
metric() {
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$study_dir/runs/$1/metrics.json" "$2"
}

@test "BoringModel + ThroughputCallback, -W lightning --scale-gpus 1,2 on 1 node: each run writes metrics.json (world 1 and 2, 10 measured steps of 1 sample a rank); the report uses samples/s" {
  hpc_configs "$PROJECT" 'python boring_throughput.py'
  local out
  out=$(bash "$PROJECT/hpc_files/job_submitter.sh" -y --scaling-test --scale-gpus 1,2 -W lightning -e boring 2>&1) ||
    fail "submission failed: $out"
  study_dir=$(sed -n 's/^Folder: //p' <<<"$out")
  report_id=$(sed -n 's/.*report job \([0-9][0-9]*\) after them.*/\1/p' <<<"$out")
  [[ -n $report_id && -f $study_dir/study.json ]] || fail "no report job or study folder in: $out"
  hpc_wait_job "$report_id" 400
  assert_equal "$(hpc_job_state "$report_id")" "COMPLETED 0:0"
  local run world
  for run in 1x1-r1:1 1x2-r1:2; do
    world=${run#*:} run=${run%%:*}
    [[ -f $study_dir/runs/$run/metrics.json ]] || fail "no metrics.json in runs/$run: $(ls "$study_dir/runs/$run")"
    assert_equal "$(metric "$run" world_size)" "$world"
    assert_equal "$(metric "$run" steps_measured)" 10
    assert_equal "$(metric "$run" samples)" "$((10 * world))"
    assert_equal "$(metric "$run" backend)" gloo
  done
  run grep -c 'Metric: throughput in samples/s' "$study_dir/report.md"
  assert_output 1
}
