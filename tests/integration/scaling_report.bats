#!/usr/bin/env bats
# Scaling tests on the local cluster (shared setup: tests/helpers/scaling_study.bash): the 1,2 x 1,2
# study of sleep_train.py (jobs shaped N x G, the report job after them, efficiencies in closed form,
# the plot, the report drawn again from a copy), and --dry-run.
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

@test "--scale-nodes 1,2 --scale-gpus 1,2 -W lightning: 4 runs shaped N x G and 1 report job after all; efficiencies within 10 % of (B*d + c)/(B*d + W*c); the plot is a PNG of at least 800x400" {
  # -W lightning: srun's tasks, one per GPU, are the ranks (sleep_train.py reads SLURM's variables
  # through hpc_helpers.distributed): what this test asserts is the study's and its report's, not
  # a launcher's, and torchrun's agent per node of each run (6 torch imports) bought it nothing.
  # Studies under torchrun: journey.bats (1 node x 1,2), second_cluster.bats (1,2 nodes x 1).
  # Steps of about a second, not tenths: a loaded machine adds tens of milliseconds to each (a
  # sleep's wake-up, gloo's all-reduce); with 2x2's steps of 0.3 s its efficiency came out 0.67
  # under a CI-like load (5920d72).
  SCALE_D=0.3 SCALE_C=0.3 SCALE_STEPS=8 submit_study --scale-nodes 1,2 --scale-gpus 1,2 -W lightning -e probe
  assert_equal "${#run_ids[@]}" 4
  local id nodes=() gres=()
  for id in "${run_ids[@]}"; do
    nodes+=("$(hpc_job_field "$id" NumNodes | sed "s/-.*//")")
    gres+=("$(scontrol show job "$id" | grep -oE 'gres/gpu(:[a-z0-9]+)?=[0-9]+|gpu:[0-9]+' | head -n 1)")
  done
  assert_equal "${nodes[*]}" "1 1 2 2"
  assert_equal "$(hpc_job_field "${run_ids[0]}" JobName)" "probe-scale-1x1-r1"
  assert_equal "$(hpc_job_field "${run_ids[3]}" JobName)" "probe-scale-2x2-r1"
  run hpc_job_field "$report_id" Dependency
  assert_output --regexp "^afterany:${run_ids[0]}(\(unfulfilled\))?,afterany:${run_ids[1]}"
  assert_output --partial "${run_ids[3]}"
  hpc_wait_job "$report_id" 400
  assert_equal "$(hpc_job_state "$report_id")" "COMPLETED 0:0"
  # B*d = 2.4 s, c = 0.3 s: 1x1 1, 1x2 and 2x1 2.7/3.0 = 0.9, 2x2 2.7/3.6 = 0.75.
  local config expected got
  for config in 1x1:1 1x2:0.9 2x1:0.9 2x2:0.75; do
    expected=${config#*:} got=$(efficiency "${config%%:*}")
    python3 -c 'import sys; e, g = map(float, sys.argv[1:]); sys.exit(0 if abs(g - e) <= 0.1 * e else 1)' "$expected" "$got" ||
      fail "efficiency of ${config%%:*}: $got, expected $expected +- 10 %"
  done
  python3 -c 'import struct,sys; d=open(sys.argv[1],"rb").read(24); assert d[:8]==b"\x89PNG\r\n\x1a\n"; w,h=struct.unpack(">II",d[16:24]); assert w>=800 and h>=400, (w,h)' "$study_dir/scaling.png"
  python3 -c 'import sys, xml.etree.ElementTree as ET; ET.parse(sys.argv[1])' "$study_dir/scaling.svg"
  [[ -f $study_dir/runs/2x2-r1/wall.json && -f $study_dir/runs/2x2-r1/metrics.json ]] || fail "no wall.json or metrics.json in runs/2x2-r1"
  assert_equal "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["world_size"])' "$study_dir/runs/2x2-r1/metrics.json")" 4
  run grep -c 'Metric: throughput in samples/s' "$study_dir/report.md"
  assert_output 1
  # scaling-report on a copied study reproduces the CSVs and report.md byte for byte.
  cp -R "$study_dir" "$BATS_TEST_TMPDIR/copied study"
  run bash "$PROJECT/hpc_files/job_submitter.sh" scaling-report "$BATS_TEST_TMPDIR/copied study" --out "$BATS_TEST_TMPDIR/again"
  assert_success
  local file
  for file in results.csv summary.csv report.md; do
    cmp "$study_dir/$file" "$BATS_TEST_TMPDIR/again/$file" || fail "$file differs when drawn again"
  done
  [[ -f $BATS_TEST_TMPDIR/again/scaling.png ]] || fail "no scaling.png drawn again"
  run bash "$PROJECT/hpc_files/job_submitter.sh" scaling-report probe
  assert_success
  assert_line "report=$study_dir/report.md"
  assert_line --index 0 --partial "scaling report: metric samples_per_s, baseline 1x1; efficiency: 1x1 1, 1x2 0."
}

@test "--dry-run prints the configurations, node-hours and dependency, creates no file and leaves the queue empty" {
  local before after
  before=$(find "$SCRATCH" | sort)
  run bash "$PROJECT/hpc_files/job_submitter.sh" --scaling-test --scale-nodes 1,2 -W torchrun -g 1 -e dry --dry-run
  assert_success
  assert_output --partial "At most "
  assert_output --partial "Report job: --dependency=afterany:<every run> --kill-on-invalid-dep=yes"
  after=$(find "$SCRATCH" | sort)
  assert_equal "$after" "$before"
  assert_equal "$(squeue -h -n dry-scale-1x1-r1 | wc -l)" 0
}
