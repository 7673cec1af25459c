#!/usr/bin/env bats
# 'usage' and 'stack' against the truth on the local cluster: a program run by a wrapper that
# does not exec it is counted once (not in the wrapper's reaped total again), and a process
# outside the job that exports the job's SLURM_JOB_ID and SLURMD_NODENAME is neither counted nor
# shown: the job's processes are SLURM's.

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "usage truth project"
  cp "$HPC_ROOT/tests/fixtures/usage/hold.py" "$PROJECT/"
  # A wrapper that runs the program and then one more command: bash cannot exec the program.
  printf 'python hold.py\ntrue\n' >"$PROJECT/wrap.sh"
  # The venv is built by the first job: not inside a test's time.
  hpc_warm_venv "$PROJECT" 'python probe.py env' -e warmup
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  # Set by hpc_submit_job.
  job_id='' job_out='' job_state=''
}

teardown() {
  [[ -z $job_id ]] || scancel "$job_id" 2>/dev/null || true
  [[ ! -f $BATS_TEST_TMPDIR/outsider ]] || kill "$(<"$BATS_TEST_TMPDIR/outsider")" 2>/dev/null || true
}

# cpu_within_20 USAGE_LINE OWN_CPU_S: fails unless the CPU-s of USAGE_LINE is within 20 % of OWN.
cpu_within_20() {
  local used
  # 'usage n1: CPU 0.95 of 1 allocated (95 %, 20.3 CPU-s); peak memory 530 MiB ...'
  used=$(sed -n 's/.*allocated ([0-9]* %, \([0-9.]*\) CPU-s).*/\1/p' <<<"$1")
  printf '# counted %s CPU-s, the program its own %s\n' "$used" "$2" >&3
  python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if b > 1 and abs(a - b) <= 0.2 * b else 1)' \
    "$used" "$2" || fail "CPU-s $used, the program's own $2: $1"
}

@test "a program run by 'bash wrap.sh' or /usr/bin/time -v (no exec): its CPU counted once, within 20 % of its own /proc figures, not doubled" {
  local command hold usage
  local -a commands=('bash wrap.sh')
  [[ ! -x /usr/bin/time ]] || commands+=('/usr/bin/time -v python hold.py')
  for command in "${commands[@]}"; do
    hpc_configs "$PROJECT" "$command"
    # Busy for 2 CPU-s, then alive and idle until 12 s have passed, so that the sampler's looks
    # (every 2 s) see it with all its CPU-s, whatever the load: counted twice it would read about
    # 4, far outside the 20 % (the toolkit's own processes add about 0.1 CPU-s to the count).
    HOLD_MB=50 HOLD_SECONDS=12 HOLD_BUSY=2 HOLD_UNTIL=$BATS_TEST_TMPDIR/never \
      hpc_run_job "$PROJECT" -g 0 -t 00:10:00 -e wrapped
    assert_equal "$job_state" "COMPLETED 0:0"
    hold=$(grep '^HOLD ' "$job_out") || fail "$command: no HOLD line: $(cat "$job_out")"
    usage=$(grep -E '^\[hpc n[12]\] usage n[12]: CPU ' "$job_out") || fail "$command: no usage line: $(cat "$job_out")"
    cpu_within_20 "$usage" "$(sed -n 's/.*cpu_s=\([0-9.]*\).*/\1/p' <<<"$hold")"
  done
}

@test "a process outside the job with the job's SLURM_JOB_ID and SLURMD_NODENAME exported (300 MiB held): not counted by 'usage', not shown by 'stack'" {
  hpc_configs "$PROJECT" 'python hold.py'
  # Running until the test has seen what it needs (a sample taken with the outsider there), 120 s
  # at most: not a fixed 30 s of a CPU. Busy for its first 3 CPU-s only (the CPU it is counted
  # against below), then idle: a CPU kept busy while the test looks bought nothing.
  HOLD_MB=50 HOLD_SECONDS=120 HOLD_UNTIL=$BATS_TEST_TMPDIR/release HOLD_BUSY=3 \
    hpc_submit_job "$PROJECT" -g 0 -t 00:10:00 -e outsider
  # The job's program running (SLURM's own list of the job's processes names it).
  local deadline=$((SECONDS + 120)) node='' pid program=''
  until [[ -n $program ]]; do
    ((SECONDS < deadline)) || fail "the program of job $job_id never ran: $(cat "$job_out" 2>/dev/null)"
    sleep 0.5
    node=$(squeue -h -j "$job_id" -t RUNNING -o %N 2>/dev/null) || node=''
    [[ -n $node ]] || continue
    for pid in $(scontrol listpids "$job_id" "$node" 2>/dev/null | awk 'NR > 1 { print $1 }'); do
      [[ $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) != *hold.py* ]] || program=$pid
    done
  done
  # The outsider: the job's id and node exported, a Python program holding 300 MiB.
  SLURM_JOB_ID=$job_id SLURMD_NODENAME=$node python3 -c 'import pathlib, sys, time
b = bytearray(300 << 20)
for i in range(0, len(b), 4096): b[i] = 1
pathlib.Path(sys.argv[1]).touch()
time.sleep(300)' "$BATS_TEST_TMPDIR/outsider_ready" &
  local outsider=$!
  printf '%s\n' "$outsider" >"$BATS_TEST_TMPDIR/outsider"
  run --separate-stderr bash "$PROJECT/hpc_files/job_submitter.sh" stack outsider
  assert_success
  run grep -E '^== rank [0-9]' <<<"$output"
  assert_output --regexp "^== rank 0 \(local rank 0\) on $node, pid $program$"
  # The program goes on until the sampler has looked twice more (a whole sample) once the
  # outsider holds its 300 MiB, which it would have counted.
  local file="$SCRATCH/usage truth project/hpc_outputs/usage/$job_id/$node" samples=''
  deadline=$((SECONDS + 60))
  until [[ -e $BATS_TEST_TMPDIR/outsider_ready ]]; do
    ((SECONDS < deadline)) || fail "the outsider never held its memory"
    sleep 0.2
  done
  local first
  first=$(sed -n 's/^samples=//p' "$file" 2>/dev/null) || first=''
  [[ -n $first ]] || first=0
  until [[ -n $samples ]] && ((samples >= first + 2)); do
    ((SECONDS < deadline + 60)) || fail "the sampler took no sample with the outsider there: $(cat "$file")"
    sleep 0.5
    samples=$(sed -n 's/^samples=//p' "$file" 2>/dev/null) || samples=''
  done
  touch "$BATS_TEST_TMPDIR/release"
  # The job ends; what it used is the program's, not the outsider's.
  hpc_wait_job "$job_id" 180
  kill "$outsider" 2>/dev/null || true
  assert_equal "$(hpc_job_state "$job_id")" "COMPLETED 0:0"
  local usage peak hold
  usage=$(grep -E '^\[hpc n[12]\] usage n[12]: CPU ' "$job_out") || fail "no usage line: $(cat "$job_out")"
  peak=$(sed -n 's/.*peak memory \([0-9]*\) MiB.*/\1/p' <<<"$usage")
  ((peak < 250)) || fail "peak memory $peak MiB counts the outsider's 300 MiB: $usage"
  hold=$(grep '^HOLD ' "$job_out") || fail "no HOLD line: $(cat "$job_out")"
  cpu_within_20 "$usage" "$(sed -n 's/.*cpu_s=\([0-9.]*\).*/\1/p' <<<"$hold")"
}
