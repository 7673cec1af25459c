#!/usr/bin/env bats
# hpc_files/lib/hpc_job.bash without SLURM: the time-limit warning goes only to the processes
# that catch it (SigCgt in /proc/PID/status), the outermost one of each branch, looking through a
# container runtime; a program still starting gets it once it installs its handler. And
# --copy-back from a node other than the first keeps that node's copy apart.
# The program's own 'scontrol requeue' (lib/shims/scontrol) counts against --requeue N, once.
# shellcheck disable=SC2030,SC2031 # each @test runs in its own subshell: what it exports stays there, on purpose
# Set by hpc_job.bash, whose source shellcheck does not follow here; declared for shellcheck.
declare -g hpc_job_copy_found

bats_require_minimum_version 1.5.0

setup() {
  load '../helpers/common'
  load '../helpers/stub'
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

# catcher FILE: a Python process that writes 'got USR1' to FILE when SIGUSR1 arrives, then
# exits 0; prints 'ready' to FILE.ready once its handler is installed.
catcher_code='import signal, sys, time
def on(s, f):
    open(sys.argv[1], "w").write("got USR1")
    sys.exit(0)
signal.signal(signal.SIGUSR1, on)
open(sys.argv[1] + ".ready", "w").write("ready")
time.sleep(60)'

# late_catcher_code, run as bash -c CODE worker FILE DELAY: a worker that writes its pid to
# FILE.pid, installs its USR1 trap only after DELAY seconds (its imports take long on a loaded
# node), or, DELAY a path, 0.3 s after that file exists (after an event, on a busy machine too),
# then writes 'ready' to FILE.ready; appends 'got USR1' to FILE on each USR1 and runs on
# until FILE.stop exists (20 s at most).
# shellcheck disable=SC2016 # expanded by the worker's bash
late_catcher_code='echo $$ >"$1.pid"
if [[ $2 == /* ]]; then
  until [[ -e $2 ]]; do sleep 0.05; done
  sleep 0.3
else
  sleep "$2"
fi
trap "echo got USR1 >>\"\$1\"" USR1
echo ready >"$1.ready"
for ((i = 0; i < 200; i++)); do
  [[ ! -e $1.stop ]] || exit 0
  sleep 0.1
done'

# wait_exec PID: waits (5 s at most) until the background job PID runs its own program. Until it
# does, it is a copy of this test's shell, which catches USR1 (bash's own handler), so that the
# looking would take it for a catcher and warn it.
wait_exec() {
  local i self
  self=$(tr '\0' ' ' <"/proc/$BASHPID/cmdline")
  for ((i = 0; i < 50; i++)); do
    [[ $(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) == "$self" ]] || return 0
    sleep 0.1
  done
  fail "$1 did not start its program"
}

# wait_file FILE: waits (5 s at most) until FILE exists.
wait_file() {
  local i
  for ((i = 0; i < 50; i++)); do
    [[ -e $1 ]] && return 0
    sleep 0.1
  done
  fail "$1 did not appear"
}

@test "hpc_job_catches: true for a process with a USR1 handler, false for one without and for no process" {
  python3 -c "$catcher_code" "$tmp/a" &
  started+=($!)
  local catcher=$!
  sleep 60 &
  started+=($!)
  local idle=$!
  wait_file "$tmp/a.ready"
  run hpc_job_catches "$catcher" USR1
  assert_success
  run hpc_job_catches "$idle" USR1
  assert_failure
  run hpc_job_catches "$catcher" USR2
  assert_failure
  run hpc_job_catches 999999999 USR1
  assert_failure
  run hpc_job_catches "$catcher" NOSUCHSIGNAL
  assert_failure
}

@test "hpc_job_warn_tree: a shell running two programs: only the one that catches USR1 gets it; the other runs on" {
  bash -c 'python3 -c "$1" "$2" & sleep 60 & wait' _ "$catcher_code" "$tmp/a" &
  started+=($!)
  local shell=$! plain
  wait_file "$tmp/a.ready"
  plain=$(pgrep -P "$shell" -x sleep)
  # Ended by the teardown too: left behind by its shell's end, it held bats' output open for the
  # rest of its minute (the file's last 40 s).
  started+=("$plain")
  hpc_job_warned_to=()
  hpc_job_warn_tree "$shell" USR1
  assert_equal "${#hpc_job_warned_to[@]}" 1
  [[ ${hpc_job_warned_to[0]} =~ ^[0-9]+\ \(python3\)$ ]]
  wait_file "$tmp/a"
  assert_equal "$(cat "$tmp/a")" "got USR1"
  # The shell and the program without a handler are alive: USR1 would have killed them.
  kill -0 "$shell"
  kill -0 "$plain"
}

@test "hpc_job_warn_tree: the outermost catcher of a branch gets it, not its children (forked workers)" {
  # A catching parent whose forked child inherits the handler: only the parent is signalled.
  python3 -c '
import os, signal, sys, time
got = []
signal.signal(signal.SIGUSR1, lambda s, f: got.append(os.getpid()))
child = os.fork()
if child == 0:
    time.sleep(3)
    sys.exit(7 if got else 0)
open(sys.argv[1] + ".ready", "w").write("ready")
while not got:
    time.sleep(0.05)
_, status = os.waitpid(child, 0)
open(sys.argv[1], "w").write(f"parent got it; child status {os.waitstatus_to_exitcode(status)}")
' "$tmp/p" &
  started+=($!)
  local parent=$!
  wait_file "$tmp/p.ready"
  hpc_job_warned_to=()
  hpc_job_warn_tree "$parent" USR1
  assert_equal "${#hpc_job_warned_to[@]}" 1
  [[ ${hpc_job_warned_to[0]} == "$parent "* ]]
  wait "$parent"
  assert_equal "$(cat "$tmp/p")" "parent got it; child status 0"
}

@test "hpc_job_warn_tree: a container runtime that passes signals on (apptainer) is looked through: the program below gets it once" {
  mkdir -p "$tmp/bin"
  # A runtime like Apptainer's: it catches USR1 and passes it to the program, which would die of
  # it when it has no handler; the toolkit must not signal the runtime.
  cat >"$tmp/bin/apptainer" <<'EOF'
#!/usr/bin/env bash
"$@" &
child=$!
trap 'echo runtime-got-USR1 >>"$RUNTIME_LOG"; kill -USR1 $child' USR1
while kill -0 "$child" 2>/dev/null; do wait "$child" || true; done
EOF
  chmod +x "$tmp/bin/apptainer"
  RUNTIME_LOG=$tmp/runtime.log "$tmp/bin/apptainer" python3 -c "$catcher_code" "$tmp/a" &
  started+=($!)
  local runtime=$!
  wait_file "$tmp/a.ready"
  # Started by its interpreter (#!/usr/bin/env bash), as the test machines' stand-in is.
  assert_equal "$(cat "/proc/$runtime/comm")" bash
  hpc_job_warned_to=()
  hpc_job_warn_tree "$runtime" USR1
  assert_equal "${#hpc_job_warned_to[@]}" 1
  [[ ${hpc_job_warned_to[0]} =~ ^[0-9]+\ \(python3\)$ ]]
  wait_file "$tmp/a"
  [ ! -e "$tmp/runtime.log" ]
}

@test "hpc_job_warn: a program still starting gets the warning once its handler is installed" {
  bash -c 'sleep 2; exec python3 -c "$1" "$2"' _ "$catcher_code" "$tmp/a" &
  started+=($!)
  local program=$!
  wait_exec "$program"
  run hpc_job_warn "$program" USR1
  assert_success
  assert_line --index 0 "[hpc n1] no process of the program catches SIGUSR1 (yet): it gets the warning once it installs a handler, else it runs on until the time limit"
  assert_line --index 1 --regexp '^\[hpc n1\] time-limit warning SIGUSR1 passed to [0-9]+ \(python3\)$'
  wait_file "$tmp/a"
  assert_equal "$(cat "$tmp/a")" "got USR1"
}

@test "hpc_job_warn: a program that never catches it is left alone and the wait ends with it" {
  sleep 3 &
  started+=($!)
  local program=$!
  wait_exec "$program"
  run hpc_job_warn "$program" USR1
  assert_success
  assert_output "[hpc n1] no process of the program catches SIGUSR1 (yet): it gets the warning once it installs a handler, else it runs on until the time limit"
  run wait "$program"
  assert_success
}

@test "hpc_job_warn: each worker gets the warning once, the one that installs its handler later too; the looking ends when all have it" {
  # torchrun's two workers on a loaded node: worker a catches at once, worker b later (once a
  # got it: after the first round).
  bash -c 'bash -c "$1" worker "$2/a" 0 & bash -c "$1" worker "$2/b" "$2/a" & wait' _ "$late_catcher_code" "$tmp" &
  started+=($!)
  local root=$! a b
  wait_file "$tmp/a.ready"
  wait_file "$tmp/b.pid"
  a=$(<"$tmp/a.pid") b=$(<"$tmp/b.pid")
  [ ! -e "$tmp/b.ready" ]
  SECONDS=0
  run hpc_job_warn "$root" USR1
  assert_success
  assert_output "[hpc n1] time-limit warning SIGUSR1 passed to $a (bash)
[hpc n1] time-limit warning SIGUSR1 passed to $b (bash)"
  # It ended once both had it, while the program runs on (no timed bound: the suite's 2 cores).
  kill -0 "$root"
  wait_file "$tmp/a"
  wait_file "$tmp/b"
  # A trap runs once the worker's sleep 0.1 ends: a second USR1 would be there by now.
  sleep 0.5
  assert_equal "$(cat "$tmp/a")" "got USR1"
  assert_equal "$(cat "$tmp/b")" "got USR1"
  touch "$tmp/a.stop" "$tmp/b.stop"
  wait "$root"
}

@test "hpc_job_warn: a process without a handler beside a warned worker is never signalled; the looking goes on until ROOT ends" {
  bash -c 'bash -c "$1" worker "$2/a" 0 & sleep 3; echo "sleep status $?" >"$2/plain"' _ "$late_catcher_code" "$tmp" &
  started+=($!)
  local root=$! a
  wait_file "$tmp/a.ready"
  a=$(<"$tmp/a.pid")
  SECONDS=0
  run hpc_job_warn "$root" USR1
  assert_success
  assert_output "[hpc n1] time-limit warning SIGUSR1 passed to $a (bash)"
  # ROOT had ended when it returned (ROOT writes the file as it ends), not before; its sleep,
  # without a handler, ran to its end (USR1 would have killed it). And it stopped looking soon
  # after (ROOT sleeps 3 s; the bound tells that from a look that goes on, whatever the load).
  ((SECONDS < 30)) || fail "hpc_job_warn took $SECONDS s"
  assert_equal "$(cat "$tmp/plain")" "sleep status 0"
  wait "$root"
  wait_file "$tmp/a"
  assert_equal "$(cat "$tmp/a")" "got USR1"
  touch "$tmp/a.stop"
}

@test "hpc_job_warn: a process that ignores the signal (an output filter: trap '' USR1) needs no warning: the looking ends once the others have it, while ROOT runs on" {
  # As torchrun's agent with its worker and the stderr filter (tee, awk) that ignores the signals.
  bash -c 'bash -c "$1" worker "$2/a" 0 & (trap "" USR1 && exec sleep 8) & wait' _ "$late_catcher_code" "$tmp" &
  started+=($!)
  local root=$! a
  wait_file "$tmp/a.ready"
  a=$(<"$tmp/a.pid")
  SECONDS=0
  run hpc_job_warn "$root" USR1
  assert_success
  assert_output "[hpc n1] time-limit warning SIGUSR1 passed to $a (bash)"
  # It did not look on for the filter until ROOT ended: ROOT still runs (no timed bound).
  kill -0 "$root"
  wait_file "$tmp/a"
  assert_equal "$(cat "$tmp/a")" "got USR1"
  touch "$tmp/a.stop"
  pkill -P "$root" sleep || true
  wait "$root" || true
}

@test "hpc_job_warn: a warned worker's branch is not walked again: a child it forks after the warning, with the handler inherited, never gets it" {
  # Worker p (Python) catches at once and forks a child once warned; worker b catches only once
  # p was warned (p.got: after the first round, on a busy machine too), so the looking goes on
  # past p's child.
  bash -c 'python3 -c "$1" "$3/p" & bash -c "$2" worker "$3/b" "$3/p.got" & wait' _ '
import os, signal, sys, time
got = []
signal.signal(signal.SIGUSR1, lambda s, f: got.append(1))
open(sys.argv[1] + ".ready", "w").write("ready")
while not got:
    time.sleep(0.05)
open(sys.argv[1] + ".got", "w").write("got")
child = os.fork()
if child == 0:
    got.clear()
    time.sleep(3)
    os._exit(7 if got else 0)
_, status = os.waitpid(child, 0)
open(sys.argv[1], "w").write(f"parent got it {len(got)} time(s); child status {os.waitstatus_to_exitcode(status)}")
' "$late_catcher_code" "$tmp" &
  started+=($!)
  local root=$!
  wait_file "$tmp/p.ready"
  wait_file "$tmp/b.pid"
  run hpc_job_warn "$root" USR1
  assert_success
  assert_output --regexp "^\[hpc n1\] time-limit warning SIGUSR1 passed to [0-9]+ \(python3\)
\[hpc n1\] time-limit warning SIGUSR1 passed to $(<"$tmp/b.pid") \(bash\)$"
  touch "$tmp/b.stop"
  wait "$root"
  assert_equal "$(cat "$tmp/p")" "parent got it 1 time(s); child status 0"
}

@test "hpc_job_supervise: the carrier SIGURG becomes the warning for the program below that catches it; its status is the task's" {
  # As an srun task: the wrapper stays the program's parent; SIGURG (from scancel) reaches it.
  HPC_WARNING_SIGNAL=USR1 bash -c 'source "$1/hpc_files/lib/hpc_job.bash"; set -euo pipefail
    hpc_job_supervise bash -c "python3 -c \"\$1\" \"\$2\"; exit 3" _ "$2" "$3"' _ "$HPC_ROOT" "$catcher_code" "$tmp/a" 2>"$tmp/log" &
  started+=($!)
  local task=$! status=0
  wait_file "$tmp/a.ready"
  kill -URG "$task"
  wait_file "$tmp/a"
  wait "$task" || status=$?
  assert_equal "$status" 3
  assert_equal "$(cat "$tmp/a")" "got USR1"
  run cat "$tmp/log"
  assert_output --regexp '^\[hpc n1\] time-limit warning SIGUSR1 passed to [0-9]+ \(python3\)$'
}

@test "copy-back on a node other than the first: its copy lands as PATH.NODE, and it says what it found" {
  export scratch_dir=$tmp/scratch exp_name=exp SLURM_NODEID=1 SLURMD_NODENAME=n2
  hpc_plan_copy_back=(snapshot.pt absent.txt)
  mkdir -p "$tmp/tmpdir" "$scratch_dir/exp"
  echo node2 >"$tmp/tmpdir/snapshot.pt"
  echo node1 >"$scratch_dir/exp/snapshot.pt"
  run hpc_job_copy_back "$tmp/tmpdir"
  assert_success
  assert_line "[hpc n2] copy-back: absent.txt is not in SLURM_TMPDIR on this node; nothing to copy from here"
  assert_line "[hpc n2] copied back to $scratch_dir/exp: snapshot.pt.n2"
  assert_equal "$(cat "$scratch_dir/exp/snapshot.pt")" node1
  assert_equal "$(cat "$scratch_dir/exp/snapshot.pt.n2")" node2
  hpc_job_copy_back "$tmp/tmpdir" 2>/dev/null
  assert_equal "${hpc_job_copy_found[*]}" snapshot.pt
}

@test "copy-back: a path that no node had is named loudly by the batch shell" {
  # shellcheck disable=SC2034 # read by hpc_job.bash
  hpc_plan_copy_back=(snapshot.pt ckpt/ logs)
  export SLURM_JOB_NUM_NODES=2
  # What hpc_job_stop_guards collected from the guards' 'found PATH' lines.
  # shellcheck disable=SC2034 # read by hpc_job.bash
  declare -gA hpc_job_copy_found_paths=([logs]=1 ['snapshot.pt']=1)
  run hpc_job_copy_back_missing
  assert_success
  assert_output "[hpc n1] copy-back WARNING: ckpt was found on none of the 2 node(s): nothing was copied back for it"
}

@test "copy-back: when a node's last lines never arrived (the job ending), no path is called missing; the log says the copy is unconfirmed" {
  # shellcheck disable=SC2034 # read by hpc_job.bash
  hpc_plan_copy_back=(snapshot.pt logs)
  export SLURM_JOB_NUM_NODES=2
  # shellcheck disable=SC2034 # read by hpc_job.bash
  declare -gA hpc_job_copy_found_paths=()
  run hpc_job_copy_back_missing n1
  assert_success
  assert_output "[hpc n1] copy-back: node(s) n1 did not report what they copied back (their own lines above say it); the copy-back is not confirmed"
}

# shim_env MAX RESTARTS [PLAN...]: the job's view for lib/shims/scontrol: a plan-style stub of
# the real scontrol (tests/helpers/stub.bash: the calls PLAN expects, none without one) behind the
# shim on PATH, this job's --requeue MAX in its plan file (HPC_JOB_PLAN, as the batch shell
# exports it) and SLURM_RESTART_COUNT RESTARTS, the outputs folder of the records. The test ends
# with unstub scontrol.
shim_env() {
  printf 'hpc_plan_requeue=%q\n' "$1" >"$tmp/job.plan"
  # As hpc_plan_write_file makes it: the job refuses one that others can write.
  chmod 600 "$tmp/job.plan"
  export HPC_JOB_PLAN=$tmp/job.plan SLURM_RESTART_COUNT=$2 scratch_dir=$tmp/scratch
  mkdir -p "$scratch_dir/hpc_outputs"
  stub scontrol "${@:3}"
  export PATH=$HPC_ROOT/hpc_files/lib/shims:$PATH
}

@test "scontrol shim: the program's requeue of its own job with restarts left is done once, recorded, and said truly" {
  # The real scontrol requeues once; neither the second ask nor the batch shell calls it again.
  shim_env 1 0 'requeue 4242'
  run scontrol requeue 4242
  assert_success
  assert_output "[hpc n1] requeueing for the program (scontrol requeue 4242), restart 1 of 1: SLURM ends this run now and starts the job again"
  assert_equal "$(cat "$scratch_dir/hpc_outputs/.hpc_requeue.4242.0")" 1
  # A second ask in the same run (every rank's handler, a second warning) requeues nothing more.
  run scontrol requeue 4242
  assert_success
  assert_output "[hpc n1] not requeued again: the program already requeued this job in this run (restart 1 of 1)"
  # The batch shell then neither requeues again nor says otherwise.
  hpc_job_warned=1 hpc_plan_requeue=1
  run hpc_job_maybe_requeue
  assert_success
  assert_output "[hpc n1] requeued by the program in this run (restart 1 of 1): not requeued again"
  # SLURM's SIGTERM, 5 s into a 10-minute run: not the time limit (nothing asked of SLURM).
  HPC_JOB_T0=$((EPOCHSECONDS - 5)) hpc_plan_time=00-00:10:00 run hpc_job_forward TERM
  assert_output "[hpc n1] received SIGTERM: SLURM ends this run for the requeue the program asked for (restart 1 of 1); passing it to the program"
  unstub scontrol
}

@test "scontrol shim: an array task whose job id is its array's (the program asks 'requeue \$SLURM_JOB_ID') requeues only itself: to scontrol the array's id names every task" {
  # shellcheck disable=SC2030 # each @test runs in a subshell of its own: its exports stay there
  export SLURM_ARRAY_JOB_ID=4242 SLURM_ARRAY_TASK_ID=0
  shim_env 1 0 'requeue 4242_0,77'
  run scontrol requeue 4242,77
  assert_success
  assert_output "[hpc n1] requeueing for the program (scontrol requeue 4242_0,77), restart 1 of 1: SLURM ends this run now and starts the job again"
  unstub scontrol
}

@test "scontrol shim: with the restarts used up, or without --requeue, the program's requeue is refused (status 1) and the run goes on" {
  shim_env 1 1
  run scontrol requeue 4242
  assert_failure 1
  assert_output "[hpc n1] not requeued: the program asked (scontrol requeue 4242), but 1 restart(s) done of the 1 allowed (--requeue 1); the run goes on"
  [ -z "$(ls -A "$scratch_dir/hpc_outputs")" ]
  # The batch shell says the same after the warned run, and requeues nothing.
  hpc_job_warned=1 hpc_plan_requeue=1
  run hpc_job_maybe_requeue
  assert_output "[hpc n1] not requeued: 1 restart(s) done of the 1 allowed"
  unstub scontrol
  shim_env 0 0
  run scontrol requeue 4242
  assert_failure 1
  assert_output "[hpc n1] not requeued: the program asked (scontrol requeue 4242), but this job was submitted without --requeue N (no restarts allowed); the run goes on"
  # An array task by its array's name is this job too.
  export SLURM_ARRAY_JOB_ID=4240 SLURM_ARRAY_TASK_ID=2
  run scontrol requeue 4240_2
  assert_failure 1
  # The real scontrol was never called.
  unstub scontrol
}

@test "scontrol shim: a failed requeue leaves no record and its status; other commands and other jobs go to the real scontrol as they are" {
  # The real scontrol: the requeue fails (5), then every call fails with 3.
  shim_env 2 0 'requeue 4242 : exit 5' 'show job 4242 : exit 3' 'requeue 999 : exit 3' '-Q requeue 999,4242 : exit 3'
  run scontrol requeue 4242
  assert_failure 5
  assert_line --index 0 "[hpc n1] requeueing for the program (scontrol requeue 4242), restart 1 of 2: SLURM ends this run now and starts the job again"
  assert_line --index 1 "[hpc n1] the program's scontrol requeue 4242 failed (exit status 5): not requeued by it"
  [ ! -e "$scratch_dir/hpc_outputs/.hpc_requeue.4242.0" ]
  run scontrol show job 4242
  assert_failure 3
  assert_output ''
  run scontrol requeue 999
  assert_failure 3
  # Options before the command, and this job among others: still this job's requeue.
  run scontrol -Q requeue 999,4242
  assert_failure 3
  assert_line --index 0 "[hpc n1] requeueing for the program (scontrol -Q requeue 999,4242), restart 1 of 2: SLURM ends this run now and starts the job again"
  assert_line --index 1 "[hpc n1] the program's scontrol -Q requeue 999,4242 failed (exit status 3): not requeued by it"
  # Where the record cannot be made, the program's requeue is refused: the batch shell's applies
  # (the real scontrol is not called again: the plan has no fifth call).
  rm -rf "${scratch_dir:?}/hpc_outputs"
  run scontrol requeue 4242
  assert_failure 1
  assert_output "[hpc n1] not requeued by the program (scontrol requeue 4242): cannot write the record $scratch_dir/hpc_outputs/.hpc_requeue.4242.0; the batch shell's requeue after the run applies"
  unstub scontrol
  # No real scontrol behind the shim: as if there were none at all.
  mkdir -p "$tmp/tools"
  for tool in bash dirname; do ln -s "$(command -v "$tool")" "$tmp/tools/$tool"; done
  PATH=$HPC_ROOT/hpc_files/lib/shims:$tmp/tools run -127 scontrol show job 4242
  assert_failure 127
  assert_output "scontrol: command not found"
}

@test "requeue records: the batch shell removes the earlier runs' records and this run's unless the program requeued in it; plain files only" {
  shim_env 1 2
  local records_dir=$scratch_dir/hpc_outputs
  echo 1 >"$records_dir/.hpc_requeue.4242.0"
  echo 2 >"$records_dir/.hpc_requeue.4242.1"
  echo x >"$tmp/target"
  ln -s "$tmp/target" "$records_dir/.hpc_requeue.4242.2"
  echo 1 >"$records_dir/.hpc_requeue.4343.0"
  hpc_job_requeue_records_remove
  [ ! -e "$records_dir/.hpc_requeue.4242.0" ]
  [ ! -e "$records_dir/.hpc_requeue.4242.1" ]
  [ -L "$records_dir/.hpc_requeue.4242.2" ]
  assert_equal "$(cat "$tmp/target")" x
  [ -f "$records_dir/.hpc_requeue.4343.0" ]
  rm "$records_dir/.hpc_requeue.4242.2"
  echo 3 >"$records_dir/.hpc_requeue.4242.2"
  hpc_job_requeue_records_remove
  [ -f "$records_dir/.hpc_requeue.4242.2" ]
  unstub scontrol
}

@test "batch shell: a warned run that SLURM ended (SIGTERM: time limit, scancel) is not requeued, and the log says why" {
  shim_env 1 0
  # shellcheck disable=SC2034 # read by hpc_job.bash
  hpc_job_warned=1 hpc_plan_requeue=1
  # 9 min 30 s into a 10-minute run: the time limit; 5 s into it: scancel (or the like).
  HPC_JOB_T0=$((EPOCHSECONDS - 570)) hpc_plan_time=00-00:10:00 hpc_job_forward TERM 2>/dev/null
  # shellcheck disable=SC2154 # set by hpc_job_term_reason (hpc_job_signals.bash)
  assert_equal "$hpc_job_term_why" "the time limit"
  HPC_JOB_T0=$((EPOCHSECONDS - 5)).25 hpc_plan_time=00-00:10:00 hpc_job_term_reason
  assert_equal "$hpc_job_term_why" "scancel, a requeue or preemption"
  run hpc_job_maybe_requeue
  assert_success
  assert_output "[hpc n1] not requeued: SLURM ended this run (SIGTERM: the time limit or scancel) before the program ended by itself"
  unstub scontrol
  # Without that SIGTERM, the warned run that ended by itself is requeued (the batch shell's PATH
  # has no shim).
  # shellcheck disable=SC2034 # read by hpc_job.bash
  hpc_job_ended_by_slurm=0
  stub scontrol 'requeue 4242'
  PATH=$(stub_dir)/bin:$PATH run hpc_job_maybe_requeue
  assert_output "[hpc n1] requeueing (restart 1 of 1)"
  unstub scontrol
}
