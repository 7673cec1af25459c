# shellcheck shell=bash
# Scaling studies on the local cluster (2 nodes x 2 GPUs), shared by tests/integration/scaling_*.bats:
# one job per configuration, a report job after all of them (afterany) that writes results.csv,
# summary.csv, report.md and the plot. The program is tests/fixtures/scaling/sleep_train.py, whose
# efficiency is known in closed form. Load it after common and cluster.

# hpc_scaling_setup_file: setup_file of a scaling test file: the project (PROJECT, SCRATCH) with
# sleep_train.py, and its venv: a copy of the one built once per bats run, which the toolkit's
# own test of a ready build takes (hpc_venv_seed), so no warm-up job (a job's CPU) before the tests.
hpc_scaling_setup_file() {
  hpc_test_project "scaling project"
  cp "$HPC_ROOT/tests/fixtures/scaling/sleep_train.py" "$PROJECT/"
  hpc_venv_seed "$PROJECT"
}

# hpc_scaling_setup: setup of a scaling test: no failing configuration or cost from an earlier
# test, the configs file runs sleep_train.py.
hpc_scaling_setup() {
  unset SCALE_FAIL_CONFIG SCALE_C SCALE_D SCALE_STEPS
  hpc_configs "$PROJECT" 'python sleep_train.py'
}

# submit_study ARGS...: submits a scaling test with -y ARGS; sets study_dir, report_id, run_ids.
submit_study() {
  out=$(bash "$PROJECT/hpc_files/job_submitter.sh" -y --scaling-test "$@" 2>&1) || fail "submission failed: $out"
  study_dir=$(sed -n 's/^Folder: //p' <<<"$out")
  report_id=$(sed -n 's/.*report job \([0-9][0-9]*\) after them.*/\1/p' <<<"$out")
  # shellcheck disable=SC2034 # for the calling test
  read -r -a run_ids <<<"$(sed -n 's/.*(jobs \([0-9 ]*\)), report job.*/\1/p' <<<"$out")"
  [[ -n $report_id && -f $study_dir/study.json ]] || fail "no report job or study folder in: $out"
}

# efficiency CONFIG: the efficiency column of summary.csv for CONFIG.
efficiency() {
  python3 -c 'import csv,sys; print(next(r["efficiency"] for r in csv.DictReader(open(sys.argv[1]))
                                          if r["config"] == sys.argv[2]))' "$study_dir/summary.csv" "$1"
}
