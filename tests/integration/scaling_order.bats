#!/usr/bin/env bats
# Scaling tests on the local cluster (shared setup: tests/helpers/scaling_study.bash): a CPU-bound
# probe's study runs one run at a time (seen in the queue), each run in its own working folder.
# Set by submit_study (helpers/scaling_study.bash); declared for shellcheck.
declare -g study_dir report_id

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

@test "a CPU-bound probe in a 1,2 x 1,2 study on nodes of one machine: runs one after another (seen in the queue), no efficiency above 150 %, each run in its own working folder, every rank sees OMP_NUM_THREADS = -c" {
  cp "$HPC_ROOT/tests/fixtures/scaling/cpu_probe.py" "$PROJECT/"
  hpc_configs "$PROJECT" 'python cpu_probe.py'
  # -W lightning: srun's tasks, one per GPU, are the ranks (cpu_probe.py reads SLURM's variables
  # through hpc_helpers.distributed): what this test asserts is the study's, not a launcher's, and
  # torchrun's agent per node of each of the 8 runs (12 torch imports) bought it nothing.
  # 16 steps of 20 rounds (14 measured after the probe's 2 of warm-up): a baseline step hashes
  # 64 x 20 blocks of 64 KiB (about 0.1 s of a CPU), so the measured work of each run (about
  # 1.4 CPU-s) is many scheduler slices long and seconds of a neighbour's burst cannot double
  # it; 40 rounds hashed about 3 CPU-s a run (8 runs).
  SCALE_STEPS=16 SCALE_ROUNDS=20 \
    submit_study --scale-nodes 1,2 --scale-gpus 1,2 --repeats 2 -W lightning -c 1 -e cpuprobe
  grep -q '"order": "serial"' "$study_dir/study.json" || fail "not serial: $(cat "$study_dir/study.json")"
  # From the queue, not the toolkit's files: never two runs of the study running at once.
  # One squeue a second (each costs CPU the suite lacks): a run lasts seconds, so two runs that
  # overlapped would be seen running together.
  local queue line running most=0 deadline=$((SECONDS + 600))
  while ((SECONDS < deadline)); do
    if queue=$(squeue -h -o '%i|%j|%T' 2>/dev/null); then
      line=$(grep '^[0-9]*|cpuprobe-scale-[0-9]' <<<"$queue" || true)
      running=$(grep -c '|RUNNING$' <<<"$line" || true)
      ((running <= most)) || most=$running
      grep -q "^$report_id|" <<<"$queue" || break
    fi
    sleep 1
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
