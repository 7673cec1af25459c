#!/usr/bin/env bats
# Programs shaped like users' programs, not like the toolkit (shared setup: helpers/real_programs),
# that do not take the warning and run on to the time limit: Lightning without its handler
# (auto_requeue=False), and a program that knows nothing of the warning.
# Set by hpc_run_job or hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_out job_state

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  load '../helpers/real_programs'
  hpc_real_setup_file
  # The program without a handler runs to its time limit (2 min) beside the Lightning test's job
  # (the nodes hold both): its test waits for its end instead of starting it then.
  hpc_configs "$PROJECT" 'python oblivious.py 600'
  # SLURM's own warning (the one real warning test without a launcher), at 60 s at the latest.
  hpc_submit_job "$PROJECT" --gpus 0 --time 00:02:00 --signal-lead 60 -e oblivious
  export OBLIVIOUS_ID=$job_id OBLIVIOUS_OUT=$job_out
}

teardown_file() {
  # Not left to its time limit when its test did not run (a filter).
  [[ -z ${OBLIVIOUS_ID:-} ]] || scancel "$OBLIVIOUS_ID" 2>/dev/null || true
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
}

@test "Lightning with SLURMEnvironment(auto_requeue=False), --requeue 1: no handler, so no warning and no checkpoint; runs on to TIMEOUT, not requeued from step 0" {
  # shellcheck disable=SC2016 # expanded in the job
  hpc_configs "$PROJECT" 'python boring_requeue.py --num_nodes ${num_nodes} --devices ${gpus_per_node} --max-steps 1000 --step-seconds 2 --root-dir ${scratch_dir}/${exp_name} --no-auto-requeue'
  # The shortest limit; the warning is sent once it trains (hpc_warn_job: with a lead of 0 SLURM
  # sends none before the limit; Lightning's real one is lifecycle.bats').
  hpc_submit_job "$PROJECT" -W lightning --gpus 1 --num-nodes 1 --time 00:01:00 --signal-lead 0 --requeue 1 -e noauto
  hpc_warn_job "$job_id" "$job_out" '^TRAIN from_step=0$'
  hpc_wait_job "$job_id" 180
  local state
  state=$(hpc_job_state "$job_id")
  [[ $state == "TIMEOUT "* ]] || fail "job $job_id ended $state: $(cat "$job_out")"
  assert_equal "$(hpc_job_field "$job_id" Restarts)" 0
  run cat "$job_out"
  assert_line "[hpc n1] no process of the program catches SIGUSR1 (yet): it gets the warning once it installs a handler, else it runs on until the time limit"
  refute_line --partial "Handling auto-requeue signal"
  refute_line --partial "finished successfully"
  # SLURM ended the run at the time limit: a restart would start from step 0 again, so none came
  # (Restarts 0 above). The batch shell says why once its program has ended, when that is within
  # SLURM's KillWait (10 s after the SIGTERM); on a busy machine SLURM's SIGKILL may come first and
  # end the batch shell before it says anything. Either way: no other line of a requeue.
  run grep -E 'passed to|exit (code|status) 138|requeue' <(grep -v '^\[hpc n1\] starting after' "$job_out")
  [[ -z $output ]] ||
    assert_output "[hpc n1] not requeued: SLURM ended this run (SIGTERM: the time limit or scancel) before the program ended by itself"
  run find "$SCRATCH/real project/noauto" -name 'hpc_ckpt_*'
  assert_output ''
}

@test "a program without a handler for the warning runs on to the time limit: TIMEOUT, not killed by SIGUSR1" {
  # Submitted by setup_file (python oblivious.py 600, --time 00:02:00 --signal-lead 60).
  job_id=$OBLIVIOUS_ID job_out=$OBLIVIOUS_OUT
  hpc_wait_job "$job_id" 180
  job_state=$(hpc_job_state "$job_id")
  [[ $job_state == "TIMEOUT "* ]] || fail "job $job_id ended $job_state: $(cat "$job_out")"
  # Warned once, and nobody got the signal: nobody catches it.
  assert_equal "$(grep -c '^\[hpc n1\] time-limit warning (SIGUSR1): passing it to the program' "$job_out")" 1
  assert_equal "$(grep -c '^\[hpc n1\] no process of the program catches SIGUSR1 (yet)' "$job_out")" 1
  run grep -E 'passed to|exit (code|status) 138' "$job_out"
  assert_output ''
  # It ran to the time limit (120 s), well past the warning (at 60 s at the latest).
  last=$(sed -n 's/^TICK //p' "$job_out" | tail -n 1)
  ((last >= 100)) || fail "the program stopped after $last s: $(cat "$job_out")"
}
