#!/usr/bin/env bats
# Scaling test on the local cluster (2 nodes x 2 GPUs): one job per configuration, a report job
# after all of them (afterany) that writes results.csv, summary.csv, report.md and the plot. The
# program is tests/fixtures/scaling/sleep_train.py, whose efficiency is known in closed form.

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "scaling project"
  cp "$HPC_ROOT/tests/fixtures/scaling/sleep_train.py" "$PROJECT/"
  hpc_configs "$PROJECT" 'python probe.py env'
  # The venv is built by the first job: not inside a test's time.
  hpc_run_job "$PROJECT" -g 0 -e warmup
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  unset SCALE_FAIL_CONFIG SCALE_C
  hpc_configs "$PROJECT" 'python sleep_train.py'
}

# submit_study ARGS...: submits a scaling test with -y ARGS; sets study_dir, report_id, run_ids.
submit_study() {
  out=$(bash "$PROJECT/hpc_files/job_submitter.sh" -y --scaling-test "$@" 2>&1) || fail "submission failed: $out"
  study_dir=$(sed -n 's/^Folder: //p' <<<"$out")
  report_id=$(sed -n 's/.*report job \([0-9][0-9]*\) after them.*/\1/p' <<<"$out")
  read -r -a run_ids <<<"$(sed -n 's/.*(jobs \([0-9 ]*\)), report job.*/\1/p' <<<"$out")"
  [[ -n $report_id && -f $study_dir/study.json ]] || fail "no report job or study folder in: $out"
}

# efficiency CONFIG: the efficiency column of summary.csv for CONFIG.
efficiency() {
  python3 -c 'import csv,sys; print(next(r["efficiency"] for r in csv.DictReader(open(sys.argv[1])) if r["config"] == sys.argv[2]))' "$study_dir/summary.csv" "$1"
}

@test "--scale-nodes 1,2 --scale-gpus 1,2 -W torchrun: 4 runs shaped N x G and 1 report job after all; efficiencies within 10 % of (B*d + c)/(B*d + W*c); the plot is a PNG of at least 800x400" {
  SCALE_C=0.1 submit_study --scale-nodes 1,2 --scale-gpus 1,2 -W torchrun -e probe
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
  # B*d = 0.8 s, c = 0.1 s: 1x1 1, 1x2 and 2x1 0.9/1.0 = 0.9, 2x2 0.9/1.2 = 0.75.
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

@test "a CPU-bound probe in a 1,2 x 1,2 study on nodes of one machine: runs one after another (seen in the queue), no efficiency above 150 %, each run in its own working folder, every rank sees OMP_NUM_THREADS = -c" {
  cp "$HPC_ROOT/tests/fixtures/scaling/cpu_probe.py" "$PROJECT/"
  hpc_configs "$PROJECT" 'python cpu_probe.py'
  SCALE_STEPS=16 submit_study --scale-nodes 1,2 --scale-gpus 1,2 --repeats 2 -W torchrun -c 1 -e cpuprobe
  grep -q '"order": "serial"' "$study_dir/study.json" || fail "not serial: $(cat "$study_dir/study.json")"
  # From the queue, not the toolkit's files: never two runs of the study running at once.
  local line running most=0 deadline=$((SECONDS + 600))
  while ((SECONDS < deadline)); do
    line=$(squeue -h -o '%j|%T' 2>/dev/null | grep '^cpuprobe-scale-[0-9]' || true)
    running=$(grep -c '|RUNNING$' <<<"$line" || true)
    ((running <= most)) || most=$running
    [[ -n $(squeue -h -j "$report_id" 2>/dev/null) ]] || break
    sleep 0.5
  done
  assert_equal "$most" 1
  assert_equal "$(hpc_job_state "$report_id")" "COMPLETED 0:0"
  # No run of a configuration beats its share of the best baseline run by more than half: the
  # study's runs never overlap (the queue above says so), but the suite's other clusters share
  # these two cores and slow any run, both baseline runs too (one CI run measured a baseline at
  # 72 % of the other, and a later run at 111 % of the better one). Runs that shared nodes
  # measured 1052 %: far above this bound, which noise does not reach.
  local key
  python3 - "$study_dir/results.csv" <<'PY' || fail "a run above 150 % of the best baseline run's share"
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["state"] == "COMPLETED"]
best = max(float(r["metric_value"]) for r in rows if r["config"] == "1x1")
for r in rows:
    efficiency = float(r["metric_value"]) / (best * int(r["world_size"]))
    print(r["config"], r["repeat"], round(efficiency, 3))
    assert efficiency <= 1.50, r
PY
  for key in 1x1-r1 1x2-r1 2x1-r1 2x2-r1; do
    [[ -f $study_dir/runs/$key/work/snapshot.txt ]] || fail "no snapshot.txt in runs/$key/work"
    run cat "$study_dir/runs/$key/"job_*.out
    refute_output --partial RESUMED
    assert_output --partial "cwd=$study_dir/runs/$key/work"
    # One line per rank: N x G of them.
    run grep -c 'OMP_NUM_THREADS=1 cwd=' <<<"$output"
    assert_output "$((${key:0:1} * ${key:2:1}))"
  done
  [[ ! -e $PROJECT/snapshot.txt ]] || fail "a run wrote snapshot.txt into the project"
}

@test "--scale-parallel: runs released together share the machine; the report says so in its first lines and flags the overlap in report.md, summary.csv and the plot's data" {
  SCALE_STEPS=25 submit_study --scale-gpus 1,2 -W torchrun --scale-parallel -e parallel
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

@test "a configuration that fails: its row says FAILED with exit code and log path, the report job ends COMPLETED; a failed baseline is named on report.md's first line" {
  SCALE_FAIL_CONFIG=1x1 SCALE_C=0 submit_study --scale-nodes 1,2 --scale-gpus 1 -W torchrun -e failing
  hpc_wait_job "$report_id" 300
  assert_equal "$(hpc_job_state "$report_id")" "COMPLETED 0:0"
  run sed -n 1p "$study_dir/report.md"
  assert_output "**The smallest configuration 1x1 failed; the baseline is 2x1 instead.**"
  run grep -F "| 1x1 | 1 | ${run_ids[0]} | FAILED | 3 | runs/1x1-r1/job_${run_ids[0]}.out |" "$study_dir/report.md"
  assert_success
  [[ -f $study_dir/runs/1x1-r1/job_${run_ids[0]}.out ]] || fail "no log runs/1x1-r1/job_${run_ids[0]}.out"
}

@test "every run fails: the report job writes report.md, then ends FAILED" {
  SCALE_FAIL_CONFIG=all submit_study --scale-nodes 1,2 --scale-gpus 1 -W torchrun -e allfail
  hpc_wait_job "$report_id" 300
  assert_equal "$(hpc_job_state "$report_id")" "FAILED 1:0"
  run sed -n 1p "$study_dir/report.md"
  assert_output "**Every run failed: no speedup or efficiency can be computed.**"
  run grep -c '| FAILED | 3 |' "$study_dir/report.md"
  assert_output 2
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

@test "status and cancel of an experiment cover every run and the report job; two studies of one experiment land in two folders" {
  local first_dir first_ids id
  SCALE_STEPS=3000 submit_study --scale-nodes 1 --scale-gpus 1,2 -W torchrun -e twice
  first_dir=$study_dir first_ids=("${run_ids[@]}" "$report_id")
  SCALE_STEPS=3000 submit_study --scale-nodes 1 --scale-gpus 1,2 -W torchrun -e twice
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

@test "resubmit --failed on a study re-runs exactly the failed run, shaped as before, in its own folder, and a new report job after it; the other run's folder untouched; study.json, status and the report show the newest attempt" {
  SCALE_FAIL_CONFIG=2x1 SCALE_C=0 submit_study --scale-nodes 1,2 --scale-gpus 1 -W torchrun -e rescale
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
