#!/usr/bin/env bats
# What a job used (hpc_usage.bash, the command 'usage') on the local cluster: a sampler per node
# beside the program, its figures checked against what /proc says of the program itself.

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "usage project"
  cp "$HPC_ROOT/tests/fixtures/usage/hold.py" "$PROJECT/"
  # The venv is built by the first job: not inside a test's time.
  hpc_warm_venv "$PROJECT" 'python probe.py env' -e warmup
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  # Set by hpc_run_job.
  job_id='' job_out='' job_state=''
}

# field LINE NAME: the number after NAME= in LINE.
field() {
  sed -n "s/.*$2=\([0-9.]*\).*/\1/p" <<<"$1"
}

@test "a job holding 500 MB for 12 s, one CPU busy for 4 CPU-s of them, on a 4-CPU request: its last lines report peak memory and CPU within 20 % of /proc's, and suggest -c 1; 'usage' says the same" {
  hpc_configs "$PROJECT" 'python hold.py'
  # 12 s: advice needs 10 s of a job. Busy for its first 4 CPU-s only, then idle (HOLD_UNTIL names
  # a file never made: it ends at 12 s): a busy loop's every CPU-s is one of the suite's (12 s
  # busy were 12 CPU-s on a quiet machine). What the samples miss after the last one is not lost:
  # the batch shell reaped the program, and its reaped total is counted at the end (4.4 CPU-s
  # counted of the program's own 4.35 when it was busy throughout), so the 20 % hold.
  HOLD_SECONDS=12 HOLD_BUSY=4 HOLD_UNTIL=$BATS_TEST_TMPDIR/never hpc_run_job "$PROJECT" -g 0 -c 4 -t 00:10:00 -e hold
  assert_equal "$job_state" "COMPLETED 0:0"
  local hold usage vmhwm cpu_s peak used
  hold=$(grep '^HOLD ' "$job_out") || fail "no HOLD line: $(cat "$job_out")"
  vmhwm=$(field "$hold" vmhwm_kb) cpu_s=$(field "$hold" cpu_s)
  usage=$(grep -E '^\[hpc n[12]\] usage n[12]: CPU ' "$job_out") || fail "no usage line: $(cat "$job_out")"
  # 'usage n1: CPU 0.95 of 4 allocated (23 %, 20.3 CPU-s); peak memory 530 MiB ...'
  used=$(sed -n 's/.*allocated ([0-9]* %, \([0-9.]*\) CPU-s).*/\1/p' <<<"$usage")
  printf '# counted %s CPU-s, the program its own %s\n' "$used" "$cpu_s" >&3
  peak=$(sed -n 's/.*peak memory \([0-9]*\) MiB.*/\1/p' <<<"$usage")
  python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if abs(a - b) <= 0.2 * b else 1)' "$used" "$cpu_s" ||
    fail "CPU-s $used, the program's own $cpu_s: $usage"
  python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if abs(a - b) <= 0.2 * b else 1)' "$peak" "$((vmhwm / 1024))" ||
    fail "peak $peak MiB, the program's VmHWM $((vmhwm / 1024)) MiB: $usage"
  [[ $usage == *" of 4 allocated "* ]] || fail "$usage"
  grep -qE '^\[hpc n[12]\] usage n[12]: suggestion; asked 4 CPUs, used [0-9.]+: -c 1 would do' "$job_out" ||
    fail "no suggestion: $(grep usage "$job_out")"
  run --separate-stderr bash "$PROJECT/hpc_files/job_submitter.sh" usage hold
  assert_success
  assert_line --index 0 "=== job $job_id (hold)"
  assert_line --index 1 "${usage#\[hpc * }"
  # Bad input: one line, exit 2; nothing recorded for an experiment's jobs: exit 1.
  run --separate-stderr bash "$PROJECT/hpc_files/job_submitter.sh" usage nosuch
  assert_equal "$status" 2
  assert_equal "${#stderr_lines[@]}" 1
  run --separate-stderr bash "$PROJECT/hpc_files/job_submitter.sh" usage
  assert_equal "$status" 2
}

@test "torchrun's workers (children of the agent, which ends with them): their CPU counted, within 20 % of their own /proc figures; a job too short for a sample says so instead of zeros" {
  hpc_configs "$PROJECT" 'python hold.py'
  # Each worker spins until it has used 12 CPU-s (HOLD_CPU=1), whatever the load: the count also
  # holds torchrun's own start (an import of torch, 3 CPU-s), which 12 s of wall time on a loaded
  # machine (a third of a CPU each) left above 20 % of what the workers used. The workers' last
  # seconds after the sampler's last look count too (their agent's supervisor leaves its reaped
  # total): on a loaded machine the job outlives the first minute's 2 s samples (then 15 s), and
  # that tail was lost (14.4 CPU-s counted of the workers' own 24.25; now 27.9 of 24.28).
  HOLD_MB=100 HOLD_SECONDS=12 HOLD_CPU=1 hpc_run_job "$PROJECT" -W torchrun -g 2 -c 2 -t 00:10:00 -e workers
  assert_equal "$job_state" "COMPLETED 0:0"
  local own used usage
  own=$(grep -h '^\(\[rank [0-9]\] \)\{0,1\}HOLD ' "$job_out" | sed -n 's/.*cpu_s=\([0-9.]*\).*/\1/p' | awk '{ s += $1 } END { print s }')
  usage=$(grep -E '^\[hpc n[12]\] usage n[12]: CPU ' "$job_out") || fail "no usage line: $(cat "$job_out")"
  used=$(sed -n 's/.*allocated ([0-9]* %, \([0-9.]*\) CPU-s).*/\1/p' <<<"$usage")
  printf '# counted %s CPU-s, the workers their own %s\n' "$used" "$own" >&3
  python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if b > 1 and abs(a - b) <= 0.2 * b else 1)' "$used" "$own" ||
    fail "CPU-s $used, the workers' own $own: $usage"
  # Over before the sampler's first look.
  hpc_configs "$PROJECT" 'true'
  hpc_run_job "$PROJECT" -g 0 -e short
  # (Or the sampler's step had not even started when the program ended.)
  grep -qE '^\[hpc n[12]\] usage( n[12])?: (not measured \((the job ended before its first sample|the sampler.s step did not start)\)|CPU )' "$job_out" ||
    fail "$(grep usage "$job_out")"
  run grep -c 'peak memory 0 MiB' "$job_out"
  assert_output 0
}
