#!/usr/bin/env bats
# bash job_submitter.sh interactive through a real terminal (tmux: keys sent, the pane read): the
# shell on the first node sees the venv's Python, the job's variables and the staged data; hpc-run
# runs the configs file's DDP program on both nodes with 4 ranks; exit, or a hangup (the tmux
# session killed), ends the allocation and leaves no emulated SLURM_TMPDIR on any node.
# shellcheck disable=SC2016 # keys are single-quoted on purpose: the session's shell expands them

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "inter project"
  # The venv: a copy of the one built once per bats run (not what this file tests), which the
  # toolkit's test of a ready build takes (hpc_venv_seed): no first job needed to prove it.
  hpc_venv_seed "$PROJECT"
  mkdir -p "$SCRATCH/inter project/datasets/d1"
  printf 'hello\n' >"$SCRATCH/inter project/datasets/d1/a.txt"
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_cluster_mode emulated
  hpc_configs "$PROJECT" 'python probe.py ddp'
  session=hpc_inter_$$_$BATS_TEST_NUMBER
}

teardown() {
  tmux kill-session -t "$session" 2>/dev/null || true
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

# start_session EXP: the session in a detached tmux, as a user types it; waits for its prompt;
# sets job_id to its allocation.
start_session() {
  tmux new-session -d -s "$session" -x 200 -y 50 \
    "cd $(printf %q "$PROJECT") && SCRATCH=$(printf %q "$SCRATCH") SLURM_CONF=$(printf %q "$SLURM_CONF") HPC_CLUSTER=local bash hpc_files/job_submitter.sh interactive -W torchrun -g 2 -n 2 --data datasets -e $1; echo SESSION-ENDED \$?; sleep 600"
  wait_pane "^\(interactive $1 on " 180
  job_id=$(squeue -h -u "$(id -un)" -n "inter project-$1" -o %i | head -n 1)
  [[ $job_id =~ ^[0-9]+$ ]] || fail "no allocation of the session in squeue; the pane: $(pane)"
}

# tmpdirs_left: the emulated SLURM_TMPDIRs of job_id still on the nodes.
tmpdirs_left() {
  find "$HPC_CLUSTER_DIR/scratch/n1" "$HPC_CLUSTER_DIR/scratch/n2" -maxdepth 1 -name "hpc_tmpdir.$(id -un).$job_id.*" 2>/dev/null
}

# wait_gone: waits (bounded) until the allocation has ended and no node keeps its SLURM_TMPDIR.
wait_gone() {
  local start=$SECONDS
  while [[ -n $(squeue -h -j "$job_id" -o %i 2>/dev/null) || -n $(tmpdirs_left) ]]; do
    ((SECONDS - start < 90)) || fail "after 90 s: squeue '$(squeue -h -j "$job_id" 2>&1)', tmpdirs '$(tmpdirs_left)'"
    sleep 0.5
  done
}

@test "interactive: venv, variables and staged data in the shell; hpc-run runs 4 ranks on 2 nodes; exit cleans up" {
  start_session inter
  # While the session lives, each node has its emulated SLURM_TMPDIR.
  assert_equal "$(tmpdirs_left | wc -l)" 2
  tmux send-keys -t "$session" 'cd "$scratch_dir"; echo "VARS $exp_name $num_nodes $num_processes $OMP_NUM_THREADS"' Enter
  wait_pane '^VARS inter 2 4 [0-9]+$'
  tmux send-keys -t "$session" 'echo "DIRS ${PWD##*/} ${checkpoints_dir#"$PWD"/} $MASTER_ADDR"' Enter
  wait_pane '^DIRS inter project inter/checkpoints n1$'
  tmux send-keys -t "$session" 'sed "s/^/DATA /" "$SLURM_TMPDIR/datasets/d1/a.txt"' Enter
  wait_pane '^DATA hello$'
  tmux send-keys -t "$session" 'echo "PY $(command -v python)"' Enter
  # The venv's build that the job runs from (virtual_env or one of .virtual_env_builds/).
  wait_pane "^PY $PROJECT/(virtual_env|\\.virtual_env_builds/[^/]+)/bin/python$"
  tmux send-keys -t "$session" 'hpc-run; echo "RUN-STATUS $?"' Enter
  wait_pane '^RUN-STATUS [0-9]+$' 180
  run pane
  assert_line 'RUN-STATUS 0'
  run sed -n 's/^DDP \(rank=[0-9] world=4 sum=6\) .*source=torchrun.*/\1/p' <<<"$(pane)"
  assert_equal "$(sort <<<"$output")" "rank=0 world=4 sum=6
rank=1 world=4 sum=6
rank=2 world=4 sum=6
rank=3 world=4 sum=6"
  assert_equal "$(pane | grep -c '^DDP .*node=n1 ')" 2
  assert_equal "$(pane | grep -c '^DDP .*node=n2 ')" 2
  tmux send-keys -t "$session" 'exit' Enter
  wait_pane '^SESSION-ENDED [0-9]+$' 90
  wait_gone
}

@test "interactive: a hangup (tmux session killed) ends the allocation and cleans every node" {
  start_session hup
  assert_equal "$(tmpdirs_left | wc -l)" 2
  tmux kill-session -t "$session"
  wait_gone
}
