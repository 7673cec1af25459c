#!/usr/bin/env bats
# Node faults during a 2-node job on the local cluster: a node's slurmd lost for a minute, a node
# set DOWN. The job must end within a bounded time with the program's state (or NODE_FAIL), and
# the emulated SLURM_TMPDIR of the nodes that can be reached must be removed.
# Set by hpc_run_job or hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_out

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "faults project"
  # The venv: a copy of the one built once per bats run (not what this file tests), which the
  # toolkit's test of a ready build takes (hpc_venv_seed): no first job needed to prove it.
  hpc_venv_seed "$PROJECT"
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_cluster_mode emulated
}

teardown() {
  [[ -z ${restarter:-} ]] || wait "$restarter" || true
  # Whatever the test left: both slurmd running, both nodes up, the default mode.
  scontrol update nodename=n2 state=resume >/dev/null 2>&1 || true
  hpc_cluster_mode provided
}

# tmpdir_of NODE: the emulated SLURM_TMPDIR of this test's job on NODE.
tmpdir_of() {
  local base match
  # hpc_tmpdir.<user>.<job id>.<token>: the token is the job's own (unguessable) part.
  base=$HPC_CLUSTER_DIR/scratch/$1/hpc_tmpdir.$(id -un).$job_id
  match=$(compgen -G "$base.*") || match=$base.none
  printf '%s\n' "${match%%$'\n'*}"
}

# wait_gone PATH TIMEOUT_S: waits until PATH no longer exists; fails the test after TIMEOUT_S.
wait_gone() {
  local start=$SECONDS
  while [[ -e $1 ]]; do
    ((SECONDS - start <= $2)) || fail "$1 still exists after ${2}s"
    sleep 0.5
  done
}

@test "the second node's slurmd killed during a 2-node torchrun job and back after the job gave up on it: COMPLETED, bounded" {
  hpc_configs "$PROJECT" 'python probe.py sleep 10'
  hpc_submit_job "$PROJECT" -W torchrun --gpus 1 --num-nodes 2 -e slurmdkill
  hpc_wait_output "$job_out" '^\[hpc n2\] starting' 60
  hpc_slurmd_kill n2
  killed=$SECONDS
  # Back once the program has ended and the batch shell gave up on n2's guard (the stop message
  # to n2 lost): at the log line that says so, 40 to 50 s after the kill, at most 100 s.
  (
    for ((i = 0; i < 500; i++)); do
      ! grep -qF "the guard of node(s) n2 did not answer the stop signal" "$job_out" || break
      sleep 0.2
    done
    bash "$HPC_ROOT/hpc_files/local_cluster.sh" up >/dev/null 2>&1
  ) 3>&- &
  restarter=$!
  hpc_wait_job "$job_id" 150
  elapsed=$((SECONDS - killed))
  printf '# the job ended %s s after the kill\n' "$elapsed" >&3
  assert_equal "$(hpc_job_state "$job_id")" "COMPLETED 0:0"
  ((elapsed < 120)) || fail "the job ended ${elapsed}s after the kill"
  assert_equal "$(grep -c '^SLEPT rank=' "$job_out")" 2
  # The batch shell gave up on n2's guard, said so, and SLURM's end of the job cleaned n2.
  grep -qF "[hpc n1] the guard of node(s) n2 did not answer the stop signal within 30 s" "$job_out" ||
    fail "no word about n2's guard in: $(cat "$job_out")"
  [ ! -e "$(tmpdir_of n1)" ]
  wait "$restarter"
  restarter=
  wait_gone "$(tmpdir_of n2)" 30
  printf '# n2 clean %s s after the kill\n' "$((SECONDS - killed))" >&3
}

@test "the second node set DOWN during a 2-node torchrun job: NODE_FAIL or FAILED, bounded, n1's SLURM_TMPDIR removed" {
  hpc_configs "$PROJECT" 'python probe.py sleep 120'
  hpc_submit_job "$PROJECT" -W torchrun --gpus 1 --num-nodes 2 -e nodedown
  hpc_wait_output "$job_out" '^\[hpc n2\] starting' 60
  [ -d "$(tmpdir_of n1)" ]
  scontrol update nodename=n2 state=down reason=test
  down=$SECONDS
  hpc_wait_job "$job_id" 90
  elapsed=$((SECONDS - down))
  printf '# the job ended %s s after the node went down\n' "$elapsed" >&3
  state=$(hpc_job_state "$job_id")
  [[ $state == NODE_FAIL* || $state == FAILED* ]] || fail "state: $state"
  ((elapsed < 60)) || fail "the job ended ${elapsed}s after the node went down"
  [ ! -e "$(tmpdir_of n1)" ]
}
