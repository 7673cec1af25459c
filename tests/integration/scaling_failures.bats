#!/usr/bin/env bats
# Scaling tests on the local cluster (shared setup: tests/helpers/scaling_study.bash): studies with
# failed runs: one failed configuration, every run failed, resubmit --failed. The runs of two nodes
# are srun's tasks (-W lightning): what these tests assert is the study's (states, exit codes, logs,
# the baseline, which run is re-run and where), never a number the program measured, so their
# program (fails_by_config, below) only exits: 3 in the configuration SCALE_FAIL_CONFIG names, as
# sleep_train.py does before its training, else 0, without importing torch (seconds of CPU a
# rank). The report then measures wall time (wall.json); samples/s is scaling_report.bats'.
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

# fails_by_config: the configs file runs a program that exits 3 in the configuration that
# SCALE_FAIL_CONFIG names (or in every one: all), as sleep_train.py does, else exits 0.
fails_by_config() {
  local failing="os.environ.get('SCALE_FAIL_CONFIG') in ('all', os.environ['scaling_config'])"
  hpc_configs "$PROJECT" "python -c \"import os, sys; sys.exit(3 if $failing else 0)\""
}

@test "a configuration that fails: its row says FAILED with exit code and log path, the report job ends COMPLETED; a failed baseline is named on report.md's first line" {
  fails_by_config
  SCALE_FAIL_CONFIG=1x1 submit_study --scale-nodes 1,2 --scale-gpus 1 -W lightning -e failing
  hpc_wait_job "$report_id" 300
  assert_equal "$(hpc_job_state "$report_id")" "COMPLETED 0:0"
  run sed -n 1p "$study_dir/report.md"
  assert_output "**The smallest configuration 1x1 failed; the baseline is 2x1 instead.**"
  run grep -F "| 1x1 | 1 | ${run_ids[0]} | FAILED | 3 | runs/1x1-r1/job_${run_ids[0]}.out |" "$study_dir/report.md"
  assert_success
  [[ -f $study_dir/runs/1x1-r1/job_${run_ids[0]}.out ]] || fail "no log runs/1x1-r1/job_${run_ids[0]}.out"
}

@test "every run fails: the report job writes report.md, then ends FAILED" {
  # What fails is the program, at its start: no launcher (and no torch) is needed to fail it.
  SCALE_FAIL_CONFIG=all submit_study --scale-nodes 1 --scale-gpus 1,2 -e allfail
  hpc_wait_job "$report_id" 300
  assert_equal "$(hpc_job_state "$report_id")" "FAILED 1:0"
  run sed -n 1p "$study_dir/report.md"
  assert_output "**Every run failed: no speedup or efficiency can be computed.**"
  run grep -c '| FAILED | 3 |' "$study_dir/report.md"
  assert_output 2
}

@test "resubmit --failed on a study re-runs exactly the failed run, shaped as before, in its own folder, and a new report job after it; the other run's folder untouched; study.json, status and the report show the newest attempt" {
  fails_by_config
  SCALE_FAIL_CONFIG=2x1 submit_study --scale-nodes 1,2 --scale-gpus 1 -W lightning -e rescale
  hpc_wait_job "$report_id" 300
  assert_equal "$(hpc_job_state "$report_id")" "COMPLETED 0:0"
  # The report job's log lies in the study's folder.
  [[ -f $study_dir/report_$report_id.out ]] || fail "no report_$report_id.out in $study_dir: $(ls "$study_dir")"
  local before new_id new_report
  before=$(find "$study_dir/runs/1x1-r1" -printf '%p %T@ %s\n' | sort)
  # The failure came from the submitting shell's environment: this one has none.
  run bash "$PROJECT/hpc_files/job_submitter.sh" resubmit rescale --failed
  assert_success
  assert_line --index 0 --regexp "^Resubmitted run\(s\) 2x1-r1 of study ${study_dir##*/} as job\(s\) [0-9]+$"
  new_id=$(sed -n 's/^Resubmitted run(s) .* as job(s) \([0-9]*\)$/\1/p' <<<"$output")
  new_report=$(sed -n 's/^Report job \([0-9]*\): .*/\1/p' <<<"$output")
  [[ -n $new_id && -n $new_report ]] || fail "no new ids in: $output"
  assert_equal "${#lines[@]}" 2
  assert_equal "$(hpc_job_field "$new_report" Dependency | sed 's/(.*//')" "afterany:$new_id"
  assert_equal "$(hpc_job_field "$new_id" JobName)" "rescale-scale-2x1-r1"
  assert_equal "$(hpc_job_field "$new_id" NumNodes | sed 's/-.*//')" 2
  hpc_wait_job "$new_id" 300
  hpc_wait_job "$new_report" 300
  assert_equal "$(hpc_job_state "$new_report")" "COMPLETED 0:0"
  [[ -f $study_dir/runs/2x1-r1/job_$new_id.out && -f $study_dir/report_$new_report.out ]] ||
    fail "the new run's or report's log is not in the study: $(ls "$study_dir" "$study_dir/runs/2x1-r1")"
  run python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["state"])' "$study_dir/runs/2x1-r1/status.attempt1.json"
  assert_output FAILED
  assert_equal "$(find "$study_dir/runs/1x1-r1" -printf '%p %T@ %s\n' | sort)" "$before"
  # study.json: the new ids; the report: every configuration ok, the newest attempt's job.
  run python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["report_job_id"], *[c["job_id"] for c in d["configurations"]])' "$study_dir/study.json"
  assert_output "$new_report ${run_ids[0]} $new_id"
  run python3 -c 'import csv,sys; print(*[r["config"] + ":" + r["runs_ok"] + "/" + r["runs_total"] for r in csv.DictReader(open(sys.argv[1]))])' "$study_dir/summary.csv"
  assert_output "1x1:1/1 2x1:1/1"
  run grep -c ",$new_id,COMPLETED," "$study_dir/results.csv"
  assert_output 1
  run bash "$PROJECT/hpc_files/job_submitter.sh" status rescale
  assert_success
  assert_line --regexp "^$new_id +rescale +.* COMPLETED +0(:0)? +$study_dir/runs/2x1-r1/job_$new_id.out$"
  assert_line --regexp "^$new_report +rescale +.* COMPLETED +0(:0)? +$study_dir/report_$new_report.out$"
  run bash "$PROJECT/hpc_files/job_submitter.sh" resubmit rescale --failed
  assert_success
  assert_output "Nothing to resubmit: every run of study ${study_dir##*/} succeeded."
}
