#!/usr/bin/env bats
# The rank-lines wrapper (hpc_job_rank_lines_code in hpc_job.bash) without SLURM: labels, whole
# lines from writers that share one pipe, the program's status and pid.
# Set by hpc_job.bash, whose source shellcheck does not follow here; declared for shellcheck.
declare -g hpc_job_rank_lines_code

bats_require_minimum_version 1.5.0

setup() {
  load '../helpers/common'
  # shellcheck source=/dev/null # hpc_job.bash is linted on its own (tests/run.sh)
  source "$HPC_ROOT/hpc_files/lib/hpc_job.bash"
}

# wrapped MODE ARGV...: ARGV behind the wrapper in MODE (-, rank, rank=N).
wrapped() {
  bash -c "$hpc_job_rank_lines_code" hpc_rank_lines "$@"
}

@test "rank=N labels stdout and stderr apart; the status is the program's" {
  local out_file=$BATS_TEST_TMPDIR/out err_file=$BATS_TEST_TMPDIR/err i
  status=0
  wrapped rank=3 bash -c 'echo out; echo err >&2; printf "no newline"; exit 7' >"$out_file" 2>"$err_file" || status=$?
  assert_equal "$status" 7
  # The line filters outlive the program by a moment (they end at its EOF): wait for their last line.
  for ((i = 0; i < 100; i++)); do
    [[ $(<"$err_file") == "[rank 3] err" && $(<"$out_file") == *"no newline" ]] && break
    sleep 0.05
  done
  assert_equal "$(<"$out_file")" "[rank 3] out
[rank 3] no newline"
  assert_equal "$(<"$err_file")" "[rank 3] err"
}

@test "rank takes torchrun's RANK of the worker; - only keeps lines whole" {
  RANK=5 run wrapped rank echo hi
  assert_output "[rank 5] hi"
  RANK=5 run wrapped - echo hi
  assert_output "hi"
}

@test "the wrapper becomes the program: same pid, so signals reach the program itself" {
  bash -c "$hpc_job_rank_lines_code" hpc_rank_lines - bash -c 'echo "$$" >"$0"' "$BATS_TEST_TMPDIR/pid" &
  pid=$!
  wait "$pid"
  assert_equal "$(cat "$BATS_TEST_TMPDIR/pid")" "$pid"
}

@test "four writers on one pipe, 20000 unflushed lines each: every line whole" {
  log_file=$BATS_TEST_TMPDIR/out
  for rank in 0 1 2 3; do
    wrapped "rank=$rank" python3 -c '
import sys
for i in range(20000):
    print(f"LINE rank={sys.argv[1]} i={i} " + "x" * 60)' "$rank" &
  done | cat >"$log_file"
  for rank in 0 1 2 3; do
    assert_equal "$(grep -cE "^\[rank $rank\] LINE rank=$rank i=[0-9]+ x{60}\$" "$log_file")" 20000
  done
  assert_equal "$(wc -l <"$log_file")" 80000
}

@test "the line filters ignore the signals sent to the whole process group; the program still gets them" {
  # A program that handles USR1, signals its own process group (its own session here, as a
  # task's under slurmstepd), prints after it and exits: the filters must still be there.
  run setsid -w bash -c "$hpc_job_rank_lines_code" hpc_rank_lines rank=1 python3 -c '
import os, signal, time
got = []
signal.signal(signal.SIGUSR1, lambda *_: got.append(1))
os.killpg(0, signal.SIGUSR1)
time.sleep(0.2)
print("after", len(got))'
  assert_success
  assert_output "[rank 1] after 1"
}

# supervised_torchrun SUMMARY: hpc_job_supervise of a 'torchrun' that prints SUMMARY on stderr
# and exits 1, as torchrun does when a worker failed; sets status to the supervisor's exit.
supervised_torchrun() {
  status=0
  # shellcheck disable=SC2016 # $1 is the inner bash's
  (hpc_plan_launcher=torchrun HPC_WARNING_SIGNAL=USR1 hpc_job_supervise bash -c 'printf "%s\n" "$1" >&2; exit 1' torchrun "$1") 2>/dev/null || status=$?
}

@test "torchrun's summary naming an exit code outside 1..255 (a program printing its own) keeps torchrun's failure, never exit 0" {
  local code summary
  for code in 256 512 -256 0; do
    summary="Root Cause (first observed failure):
[0]:
  time      : 2026-11-23_12:00:00
  host      : node1
  rank      : 0 (local_rank: 0)
  exitcode  : $code (pid: 42)"
    supervised_torchrun "$summary"
    assert_equal "$code:$status" "$code:1"
  done
  # A real one still wins: exit code 3 of rank 0.
  supervised_torchrun "${summary/exitcode  : 0/exitcode  : 3}"
  assert_equal "$status" 3
}

@test "a line reaches the output as soon as the program prints it (Debian's mawk reads a pipe until 4 KiB or its end unless told not to): a running program's log is never held back until it ends, where a SIGKILL at scancel would lose it" {
  local out_file=$BATS_TEST_TMPDIR/out go=$BATS_TEST_TMPDIR/go i seen_at=''
  : >"$out_file"
  # A user's program: one line, flushed, then a wait (here until the test has looked, at most
  # 20 s), as a training loop between its logs.
  wrapped rank=2 python3 -c '
import os, sys, time
print("READY", flush=True)
for _ in range(200):
    if os.path.exists(sys.argv[1]):
        break
    time.sleep(0.1)' "$go" >"$out_file" 2>&1 &
  for ((i = 0; i < 150; i++)); do
    [[ $(<"$out_file") == "[rank 2] READY" ]] && seen_at=$i && break
    sleep 0.1
  done
  : >"$go"
  wait
  assert_equal "$(<"$out_file")" "[rank 2] READY"
  [[ -n $seen_at ]] || fail "the line was held back while the program ran"
}

@test "labelled lines stay whole, one write each, also longer than awk's buffer" {
  local out_file=$BATS_TEST_TMPDIR/out
  wrapped rank=1 python3 -c 'print("a" * 5000); print("b" * 10)' >"$out_file"
  run awk '{ print length($0) }' "$out_file"
  assert_output $'5009\n19'
}
