#!/usr/bin/env bats
# bash job_submitter.sh interactive ends with its terminal, without a cluster (salloc, squeue and
# scancel are stubs): --idle-limit's bad values are refused (exit 2, one line, nothing made); the
# session is recorded as a submission (its record names its plan file, script and '.alive' file;
# salloc carries the record's tag); a hangup or SIGTERM of the submitter, or a SIGKILL of salloc,
# scancels the session's job (found by its tag) and leaves nothing; a SIGKILLed submitter leaves a
# record that names what it left, and the next 'cancel EXP' removes all of it.

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/submitter'
  hpc_test_warm_profiles
}

setup() {
  load '../helpers/common'
  # shellcheck source=tests/helpers/submitter.bash
  source "$BATS_TEST_DIRNAME/../helpers/submitter.bash"
  hpc_test_submitter_setup 'scratch space' --venv --cache "$BATS_TEST_TMPDIR/cache"
  bin=$BATS_TEST_TMPDIR/end_bin
  mkdir -p "$bin"
  # salloc: records its arguments and its parent (the submitter), then waits, as for resources.
  cat >"$bin/salloc" <<'EOF'
#!/bin/bash
printf '%s\n' "$@" >"$HPC_STUB_LOG/salloc.args.new"
printf '%s\n' "$PPID" >"$HPC_STUB_LOG/salloc.parent"
printf '%s\n' "$$" >"$HPC_STUB_LOG/salloc.pid"
mv "$HPC_STUB_LOG/salloc.args.new" "$HPC_STUB_LOG/salloc.args"
trap 'echo TERM >>"$HPC_STUB_LOG/salloc.signals"; exit 143' TERM
sleep 300 &
wait
EOF
  # squeue: the session's job 777, with the tag salloc was given, while $HPC_STUB_LOG/job.live is there.
  cat >"$bin/squeue" <<'EOF'
#!/bin/bash
printf '%s\n' "$*" >>"$HPC_STUB_LOG/squeue.calls"
[[ -e $HPC_STUB_LOG/job.live ]] || exit 0
tag=$(sed -n 's/^--comment=//p' "$HPC_STUB_LOG/salloc.args")
printf '777|777|RUNNING|None|%s\n' "$tag"
EOF
  cat >"$bin/scancel" <<'EOF'
#!/bin/bash
printf '%s\n' "$*" >>"$HPC_STUB_LOG/scancel.calls"
rm -f "$HPC_STUB_LOG/job.live"
# salloc returns once its allocation is revoked.
kill -TERM "$(cat "$HPC_STUB_LOG/salloc.pid")" 2>/dev/null || true
EOF
  chmod +x "$bin/salloc" "$bin/squeue" "$bin/scancel"
  export PATH=$bin:$PATH
}

teardown() {
  local pid
  for pid in ${driver:-} $(cat "$stub_log/salloc.pid" 2>/dev/null); do
    kill -KILL "$pid" 2>/dev/null || true
  done
}

# listing DIR: everything under DIR, with type, size, mode and modification time.
listing() {
  find "$1" -printf '%P|%y|%s|%m|%T@\n' | LC_ALL=C sort
}

# start EXP: the session of EXP on a terminal of its own (a pty, Python's), in the background;
# waits (bounded) until it has called salloc; sets driver and submitter_pid.
start() {
  python3 -c 'import pty, sys; sys.exit(pty.spawn(sys.argv[1:]) >> 8)' \
    bash "$submitter" interactive -g 0 -e "$1" </dev/null >"$BATS_TEST_TMPDIR/terminal" 2>&1 &
  driver=$!
  local i
  for ((i = 0; i < 300; i++)); do
    [[ ! -e $stub_log/salloc.args ]] || break
    sleep 0.1
  done
  [[ -e $stub_log/salloc.args ]] || fail "salloc was not called; the terminal: $(cat "$BATS_TEST_TMPDIR/terminal")"
  submitter_pid=$(<"$stub_log/salloc.parent")
}

# session_files: the session's plan file, job script and '.alive' file in the outputs folder.
session_files() {
  find "$outputs" -maxdepth 1 \( -name '*.plan' -o -name '*.sh' -o -name '*.alive' \) | LC_ALL=C sort
}

# gone PID: waits (bounded) until process PID has ended.
gone() {
  local i
  for ((i = 0; i < 300; i++)); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.1
  done
  fail "process $1 still runs"
}

@test "interactive --idle-limit: bad values refused, exit 2, one line, nothing asked or made" {
  local value before
  before=$(listing "$tmp")
  for value in 0 0s x 1441 86401s 5m -3 ''; do
    run --separate-stderr timeout "$HPC_TEST_HANG_S" bash "$submitter" interactive --idle-limit "$value" -g 0 </dev/null
    [[ $status == 2 ]] || fail "--idle-limit '$value': exit $status ($stderr)"
    [[ $stderr != *$'\n'* && $stderr == "job_submitter.sh: --idle-limit: '$value' is not accepted; accepted: minutes"* ]] ||
      fail "--idle-limit '$value': $stderr"
  done
  run --separate-stderr timeout "$HPC_TEST_HANG_S" bash "$submitter" interactive -g 0 --idle-limit </dev/null
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: --idle-limit: needs a value"
  [[ ! -e $stub_log/salloc.args ]] || fail "salloc was called"
  [[ $(listing "$tmp") == "$before" ]] || fail "changed something under $tmp"
  # A good value passes on to the dry run, which shows the salloc line.
  run --separate-stderr timeout "$HPC_TEST_HANG_S" bash "$submitter" interactive --dry-run --idle-limit 30s -g 0 </dev/null
  assert_success
  assert_line --regexp '^salloc '
}

@test "interactive: the session is recorded (its files named, salloc tagged); a hangup of the submitter scancels its job and leaves nothing" {
  : >"$stub_log/job.live"
  start hup
  local tag record
  tag=$(sed -n 's/^--comment=hpc-toolkit://p' "$stub_log/salloc.args")
  [[ -n $tag ]] || fail "salloc has no --comment=hpc-toolkit:TOKEN: $(cat "$stub_log/salloc.args")"
  record=$outputs/submissions/$tag
  [[ -f $record ]] || fail "no record $record"
  assert_equal "$(grep -c '^exp=hup$' "$record")" 1
  assert_equal "$(sed -n 's/^file=//p' "$record" | LC_ALL=C sort)" "$(session_files)"
  assert_equal "$(session_files | wc -l)" 3
  kill -HUP "$submitter_pid"
  gone "$submitter_pid"
  assert_equal "$(cat "$stub_log/scancel.calls")" 777
  [[ -z $(session_files) ]] || fail "left: $(session_files)"
  [[ ! -e $record ]] || fail "the record is left"
}

@test "interactive: SIGTERM of the submitter while salloc waits for resources: salloc gives up, nothing left" {
  start term
  kill -TERM "$submitter_pid"
  gone "$submitter_pid"
  gone "$(cat "$stub_log/salloc.pid")"
  assert_equal "$(cat "$stub_log/salloc.signals")" TERM
  [[ ! -e $stub_log/scancel.calls ]] || fail "scancel with no job: $(cat "$stub_log/scancel.calls")"
  [[ -z $(session_files) ]] || fail "left: $(session_files)"
  [[ -z $(find "$outputs/submissions" -type f) ]] || fail "a record is left"
}

@test "interactive: a SIGKILLed submitter leaves a record naming its plan, script and '.alive' file; cancel EXP removes them" {
  start lost
  kill -KILL "$submitter_pid" "$(cat "$stub_log/salloc.pid")"
  gone "$submitter_pid"
  # Its plan file and job script are left (and its '.alive' file).
  assert_equal "$(session_files | grep -c -E '\.(plan|sh)$')" 2
  # No job came of it (no allocation): once no salloc of it can answer any more, cancel removes
  # the record and what it names.
  hpc_pending_settle_s=0 run --separate-stderr bash "$submitter" cancel lost </dev/null
  assert_success
  [[ -z $(session_files) ]] || fail "left after cancel: $(session_files)"
  [[ -z $(find "$outputs/submissions" -type f) ]] || fail "a record is left after cancel"
}

@test "interactive: salloc SIGKILLed while its allocation lives: the submitter scancels the session's job, nothing left" {
  : >"$stub_log/job.live"
  start killed
  kill -KILL "$(cat "$stub_log/salloc.pid")"
  gone "$submitter_pid"
  assert_equal "$(cat "$stub_log/scancel.calls")" 777
  [[ -z $(session_files) ]] || fail "left: $(session_files)"
  [[ -z $(find "$outputs/submissions" -type f) ]] || fail "a record is left"
}
