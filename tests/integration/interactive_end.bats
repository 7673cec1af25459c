#!/usr/bin/env bats
# bash job_submitter.sh interactive ends with its terminal, on the local cluster, through a real
# terminal (tmux): a hangup of the terminal's session (SIGHUP to each of its processes, the pty
# kept open), after a Ctrl-C at the remote prompt, ends the allocation and leaves no plan, script
# or SLURM_TMPDIR;
# with the submitter and salloc SIGKILLed, 'status EXP' names the session and 'cancel EXP' ends
# it; with every process of the terminal SIGKILLed, nobody is attached and the session's watchdog
# ends it after --idle-limit. Every wait is a bounded poll for the event.
# shellcheck disable=SC2016 # keys are single-quoted on purpose: the session's shell expands them

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "end project"
  # The venv: a copy of the one built once per bats run (not what this file tests), which the
  # toolkit's test of a ready build takes (hpc_venv_seed): no first job needed to prove it.
  hpc_venv_seed "$PROJECT"
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_cluster_mode emulated
  hpc_configs "$PROJECT" 'python probe.py env'
  session=hpc_iend_$$_$BATS_TEST_NUMBER
  outputs="$SCRATCH/end project/hpc_outputs"
}

teardown() {
  tmux kill-session -t "$session" 2>/dev/null || true
  [[ -z ${job_id:-} ]] || scancel "$job_id" 2>/dev/null || true
  hpc_cluster_mode provided
}

# pane: the session's pane, its history included.
pane() {
  tmux capture-pane -p -S - -t "$session" 2>/dev/null
}

# wait_pane REGEX [TIMEOUT_S]: waits until a line of the pane matches REGEX; fails with the pane.
wait_pane() {
  local start=$SECONDS
  until pane | grep -qE -- "$1"; do
    ((SECONDS - start < ${2:-120})) || fail "no line matching '$1' within ${2:-120}s; the pane:
$(pane)"
    sleep 0.5
  done
}

# start_session EXP [OPTION...]: the session in a detached tmux, as a user types it; waits for its
# prompt; sets job_id to its allocation and pane_sid to the terminal's session (its processes).
start_session() {
  local exp=$1 extra=''
  shift
  (($# == 0)) || printf -v extra ' %q' "$@"
  tmux new-session -d -s "$session" -x 200 -y 50 \
    "cd $(printf %q "$PROJECT") && SCRATCH=$(printf %q "$SCRATCH") SLURM_CONF=$(printf %q "$SLURM_CONF") HPC_CLUSTER=local bash hpc_files/job_submitter.sh interactive -W torchrun -g 2 -n 2 -e $exp$extra; echo SESSION-ENDED \$?; sleep 600"
  wait_pane "^\(interactive $exp on |^SESSION-ENDED" 180
  ! pane | grep -q '^SESSION-ENDED' || fail "the session ended at its start; the pane: $(pane)"
  job_id=$(squeue -h -u "$(id -un)" -n "end project-$exp" -o %i | head -n 1)
  [[ $job_id =~ ^[0-9]+$ ]] || fail "no allocation of the session in squeue; the pane: $(pane)"
  pane_sid=$(tmux display-message -p -t "$session" '#{pane_pid}')
  [[ $pane_sid =~ ^[0-9]+$ ]] || fail "no pane process"
  # The session's plan file and job script are there while it lives.
  [[ -n $(session_files "$exp") ]] || fail "no plan file or script of $exp in $outputs"
}

# session_pids: the processes of the terminal's session (started by this test, through tmux).
session_pids() {
  ps -e -o pid=,sid= | awk -v s="$pane_sid" '$2 == s { print $1 }'
}

# signal_session SIGNAL: sends SIGNAL to each process of the terminal's session, by its id, but
# the pane's own shell (the test's: it keeps the pty open).
signal_session() {
  local pid
  for pid in $(session_pids); do
    ((pid == pane_sid)) || kill "-$1" "$pid" 2>/dev/null || true
  done
}

# submitter_pid: the submitter's process (bash job_submitter.sh interactive) in the session.
submitter_pid() {
  local pid
  for pid in $(session_pids); do
    [[ $(ps -o args= -p "$pid") != "bash hpc_files/job_submitter.sh interactive "* ]] || printf '%s\n' "$pid"
  done
}

# session_files EXP: the plan files, job scripts and '.alive' files of EXP's session in the
# outputs folder, and its record (hpc_outputs/submissions/).
session_files() {
  find "$outputs" -maxdepth 1 \( -name "$1_*.plan" -o -name "$1_*.sh" -o -name "$1_*.alive" \) 2>/dev/null
  grep -lx "exp=$1" "$outputs"/submissions/* 2>/dev/null || true
}

# tmpdirs_left: the emulated SLURM_TMPDIRs of job_id still on the nodes.
tmpdirs_left() {
  find "$HPC_CLUSTER_DIR/scratch/n1" "$HPC_CLUSTER_DIR/scratch/n2" -maxdepth 1 -name "hpc_tmpdir.$(id -un).$job_id.*" 2>/dev/null
}

# wait_gone EXP [TIMEOUT_S]: waits (bounded) until the allocation has ended and nothing of EXP's
# session is left: no SLURM_TMPDIR on a node, no plan file or job script.
wait_gone() {
  local start=$SECONDS limit=${2:-120}
  while [[ -n $(squeue -h -j "$job_id" -o %i 2>/dev/null) || -n $(tmpdirs_left) || -n $(session_files "$1") ]]; do
    ((SECONDS - start < limit)) ||
      fail "after $limit s: squeue '$(squeue -h -j "$job_id" 2>&1)', tmpdirs '$(tmpdirs_left)', files '$(session_files "$1")'"
    sleep 0.5
  done
}

@test "interactive: Ctrl-C at the prompt, then a hangup of the terminal's session: the allocation ends, nothing left" {
  start_session hup
  assert_equal "$(tmpdirs_left | wc -l)" 2
  tmux send-keys -t "$session" C-c
  tmux send-keys -t "$session" 'echo "STILL $exp_name"' Enter
  wait_pane '^STILL hup$'
  # The terminal program killed: each process of its session gets SIGHUP.
  signal_session HUP
  wait_gone hup
}

@test "interactive: salloc and the submitter SIGKILLed: status names the session, cancel EXP ends it, nothing left" {
  start_session lost
  local pid
  for pid in $(session_pids); do
    [[ $(ps -o args= -p "$pid") != salloc* ]] || kill -KILL "$pid" "$(submitter_pid)"
  done
  run bash "$PROJECT/hpc_files/job_submitter.sh" status lost
  assert_success
  assert_output --partial "$job_id"
  run bash "$PROJECT/hpc_files/job_submitter.sh" cancel lost
  assert_success
  assert_output --partial "$job_id"
  wait_gone lost
}

@test "interactive: every process of the terminal SIGKILLed: nobody attached, the watchdog ends the session after --idle-limit" {
  start_session idle --idle-limit 5s
  assert_equal "$(tmpdirs_left | wc -l)" 2
  signal_session KILL
  wait_gone idle 150
}
