#!/usr/bin/env bats
# A scaling study's run preempted on the site configuration (local_cluster.sh --config site): a
# study submitted without --requeue (runs 1x1 and 2x1, one after another here), its 2x1 run (a
# GPU of each node) preempted by a job of partition 'high' that needs both GPUs of a node. The program (tests/fixtures/scaling/sleep_train.py)
# catches no warning: it runs on until SLURM ends it at the end of the grace time, or finishes
# within it. Either way the run must be requeued and run again, and the report must read the
# re-run: COMPLETED, with its throughput; never the preempted run's end as done or as failed.
# -W lightning: srun's tasks are the ranks (sleep_train.py reads SLURM's variables through
# hpc_helpers), no torchrun agent per node: the study's launcher is not what this file asserts
# (a preempted torchrun job is site_preempt.bats's). One GPU a node (SCALE_B=4: each run's steps
# take the time they took with two): the promise is a run's, whatever its shape.
# Set by submit_study (helpers/scaling_study.bash); declared for shellcheck.
declare -g study_dir report_id
declare -ga run_ids

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  load '../helpers/site'
  load '../helpers/scaling_study'
  hpc_site_cluster_use
  hpc_scaling_setup_file
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  load '../helpers/site'
  load '../helpers/scaling_study'
  hpc_scaling_setup
}

teardown() {
  [[ -z ${high:-} ]] || scancel "$high" 2>/dev/null || true
  [[ -z ${run_ids[0]:-} ]] || scancel "${run_ids[@]}" "${report_id:-}" 2>/dev/null || true
}

@test "site: a study's run preempted (no --requeue): requeued and run again; the report reads the re-run, COMPLETED with its throughput" {
  hpc_site_lock preempt
  SCALE_B=4 SCALE_STEPS=100 SCALE_C=0 submit_study --scale-nodes 1,2 --scale-gpus 1 -W lightning -e pstudy
  assert_equal "${#run_ids[@]}" 2
  local run=${run_ids[1]} log
  log=$study_dir/runs/2x1-r1/job_$run.out
  hpc_site_wait_line "$run" "$log" '^\[hpc n1\] starting after ' 240
  high=$(hpc_site_preempt 2)
  hpc_site_wait_line "$run" "$log" '^\[hpc n1\] preempted by a higher-priority job ' 120
  # The second run starts (restart 1) and the report follows it.
  hpc_site_wait_line "$run" "$log" ', restart 1, ' 240
  hpc_wait_job "$run" 300
  hpc_wait_job "$report_id" 180
  run sacct -n -P -X -j "$report_id" -o State,ExitCode
  assert_output "COMPLETED|0:0"
  run sacct -n -P -X -D -j "$run" -o State
  assert_equal "${#lines[@]}" 2
  assert_line --index 0 --regexp '^(REQUEUED|PREEMPTED)$'
  assert_line --index 1 COMPLETED
  run cat "$log"
  assert_line --regexp '^\[hpc n1\] made requeueable \(it was submitted without --requeue N\): '
  # The report: both runs ok, the 2x1 one by its re-run; no failure, nothing PREEMPTED.
  run python3 -c 'import csv, sys
for r in csv.DictReader(open(sys.argv[1])): print(r["config"], r["job_id"], r["state"])' "$study_dir/results.csv"
  assert_output "1x1 ${run_ids[0]} COMPLETED
2x1 $run COMPLETED"
  run cat "$study_dir/report.md"
  assert_line --regexp '^\| 1x1 \(baseline\) \| 1 \| 1 \| 1 \| 1/1 \| '
  assert_line --regexp '^\| 2x1 \| 2 \| 1 \| 2 \| 1/1 \| '
  refute_output --partial PREEMPTED
  # The re-run trained to its end (the preempted run may have too, within the grace time).
  run sed -n '/, restart 1, /,$p' "$log"
  assert_line --regexp '^world 2: [0-9.]+ samples/s$'
}
