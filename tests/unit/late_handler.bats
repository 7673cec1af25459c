#!/usr/bin/env bats
# hpc_job_warn (hpc_files/lib/hpc_job_signals.bash) without SLURM, for a program that installs
# its handler late (heavy imports first), in the trees the launchers make: the rank-lines
# wrapper's output filters (which ignore the warning) are the program's children, so the program
# is no leaf; it still gets the warning once it installs its handler, and the looking ends with
# the program when it never does.
# shellcheck disable=SC2030,SC2031 # each @test runs in its own subshell: what it adds to started stays there
# Set by hpc_job.bash, whose source shellcheck does not follow here; declared for shellcheck.
declare -g hpc_job_rank_lines_code

bats_require_minimum_version 1.5.0

setup() {
  load '../helpers/common'
  tmp=$(hpc_test_tmp)
  # shellcheck source=/dev/null # hpc_job.bash is linted on its own (tests/run.sh)
  source "$HPC_ROOT/hpc_files/lib/hpc_job.bash"
  export SLURM_JOB_ID=4242 SLURMD_NODENAME=n1
  started=()
}

teardown() {
  local pid
  for pid in "${started[@]}"; do
    # Reaped here, so that the shell does not report them as killed.
    { kill -KILL "$pid" && wait "$pid"; } 2>/dev/null || true
  done
}

# late_code, run as python3 -c CODE FILE GO: a program whose imports take long: writes its pid
# to FILE.pid, installs its USR1 handler only once GO exists (30 s at most; never when GO is
# 'never'), then writes 'ready' to FILE.ready; on USR1 writes 'got USR1' to FILE ('got USR1 N
# times' on the Nth); ends after 30 s. Sleeps in-process: no child of its own. Each file
# appears whole (written, then renamed).
late_code='import os, signal, sys, time
path, go = sys.argv[1], sys.argv[2]
def put(name, text):
    open(name + ".tmp", "a").write(text)
    os.replace(name + ".tmp", name)
put(path + ".pid", str(os.getpid()))
for _ in range(600):
    if go != "never" and os.path.exists(go):
        break
    time.sleep(0.05)
else:
    if go != "never":
        sys.exit(3)
got = []
def on(s, f):
    got.append(1)
    put(path, "got USR1" if len(got) == 1 else f"got USR1 {len(got)} times")
if go != "never":
    signal.signal(signal.SIGUSR1, on)
    put(path + ".ready", "ready")
time.sleep(30)'

# wait_file FILE [TENTHS]: waits (TENTHS/10 s at most, default 10 s) until FILE exists.
wait_file() {
  local i
  for ((i = 0; i < ${2:-100}; i++)); do
    [[ -e $1 ]] && return 0
    sleep 0.1
  done
  fail "$1 did not appear"
}

# wait_line FILE REGEX: waits (10 s at most) until a line of FILE matches REGEX.
wait_line() {
  local i
  for ((i = 0; i < 100; i++)); do
    grep -qE -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "no line matching '$2' in $1: $(cat "$1" 2>&1)"
}

# warn_in_background ROOT: hpc_job_warn ROOT USR1 in the background, its lines into $tmp/warn.log
# and its status into $tmp/warn.status once it ends; sets warner to its pid.
warn_in_background() {
  (
    status=0
    hpc_job_warn "$1" USR1 >"$tmp/warn.log" 2>&1 || status=$?
    echo "$status" >"$tmp/warn.status"
  ) &
  warner=$!
  started+=("$warner")
}

@test "late handler, torchrun's shape: a worker behind the rank-lines filters gets the warning once it installs its handler; the looking then ends while the agent runs on" {
  # The agent (no handler) and its worker: the rank-lines wrapper, which becomes the program and
  # leaves its two output filters (awk, ignoring USR1) as the program's children.
  bash -c 'bash -c "$1" hpc_rank_lines - python3 -c "$2" "$3/w" "$3/go" & wait' _ \
    "$hpc_job_rank_lines_code" "$late_code" "$tmp" &
  started+=($!)
  local root=$! worker
  wait_file "$tmp/w.pid"
  worker=$(<"$tmp/w.pid")
  # The worker is no leaf: its filters are its children.
  local i
  for ((i = 0; i < 100; i++)); do
    pgrep -P "$worker" >/dev/null && break
    sleep 0.1
  done
  pgrep -P "$worker" >/dev/null || fail "worker $worker has no filters below it"
  warn_in_background "$root"
  wait_line "$tmp/warn.log" 'no process of the program catches SIGUSR1 \(yet\)'
  # The warning came while the program was still importing; now it installs its handler.
  touch "$tmp/go"
  wait_file "$tmp/w"
  assert_equal "$(cat "$tmp/w")" "got USR1"
  wait_file "$tmp/warn.status"
  assert_equal "$(cat "$tmp/warn.status")" 0
  run cat "$tmp/warn.log"
  assert_line --index 0 "[hpc n1] no process of the program catches SIGUSR1 (yet): it gets the warning once it installs a handler, else it runs on until the time limit"
  assert_line --index 1 "[hpc n1] time-limit warning SIGUSR1 passed to $worker (python3)"
  assert_equal "${#lines[@]}" 2
  # The agent was never signalled: USR1 would have killed it.
  kill -0 "$root"
}

@test "late handler, two workers behind filters: the one that catches at once and the late one each get it once" {
  bash -c 'bash -c "$1" hpc_rank_lines rank python3 -c "$2" "$3/a" "$3/a.go" &
    bash -c "$1" hpc_rank_lines rank python3 -c "$2" "$3/b" "$3/b.go" & wait' _ \
    "$hpc_job_rank_lines_code" "$late_code" "$tmp" &
  started+=($!)
  local root=$! a b
  touch "$tmp/a.go"
  wait_file "$tmp/a.ready"
  wait_file "$tmp/b.pid"
  a=$(<"$tmp/a.pid") b=$(<"$tmp/b.pid")
  warn_in_background "$root"
  wait_file "$tmp/a"
  wait_line "$tmp/warn.log" "passed to $a \\(python3\\)$"
  [ ! -e "$tmp/warn.status" ] || fail "the looking ended before worker b had it: $(cat "$tmp/warn.log")"
  touch "$tmp/b.go"
  wait_file "$tmp/b"
  wait_file "$tmp/warn.status"
  run cat "$tmp/warn.log"
  assert_output "[hpc n1] time-limit warning SIGUSR1 passed to $a (python3)
[hpc n1] time-limit warning SIGUSR1 passed to $b (python3)"
  assert_equal "$(cat "$tmp/a")" "got USR1"
  assert_equal "$(cat "$tmp/b")" "got USR1"
  kill -0 "$root"
}

@test "late handler, Lightning's shape with --label-ranks: the task itself is the program behind its filters; it gets the warning once its handler is installed" {
  bash -c "$hpc_job_rank_lines_code" hpc_rank_lines rank=0 python3 -c "$late_code" "$tmp/p" "$tmp/go" &
  started+=($!)
  local program=$!
  wait_file "$tmp/p.pid"
  assert_equal "$(<"$tmp/p.pid")" "$program"
  warn_in_background "$program"
  wait_line "$tmp/warn.log" 'no process of the program catches SIGUSR1 \(yet\)'
  touch "$tmp/go"
  wait_file "$tmp/p"
  assert_equal "$(cat "$tmp/p")" "got USR1"
  wait_file "$tmp/warn.status"
  run cat "$tmp/warn.log"
  assert_line --index 1 "[hpc n1] time-limit warning SIGUSR1 passed to $program (python3)"
}

@test "late handler: a program behind filters that never installs one is never signalled; the looking ends when it ends" {
  # The program ends by itself (GO 'never': no handler, 30 s) once the test sends it SIGTERM.
  bash -c "$hpc_job_rank_lines_code" hpc_rank_lines - python3 -c "$late_code" "$tmp/p" never &
  started+=($!)
  local program=$!
  wait_file "$tmp/p.pid"
  warn_in_background "$program"
  wait_line "$tmp/warn.log" 'no process of the program catches SIGUSR1 \(yet\)'
  # Still looking while the program runs (it may install a handler yet).
  sleep 2
  [ ! -e "$tmp/warn.status" ] || fail "the looking ended while the program ran: $(cat "$tmp/warn.log")"
  kill -0 "$program"
  kill -TERM "$program"
  wait_file "$tmp/warn.status" 100
  assert_equal "$(cat "$tmp/warn.status")" 0
  run cat "$tmp/warn.log"
  assert_equal "${#lines[@]}" 1
  [ ! -e "$tmp/p" ]
}
