#!/usr/bin/env bats
# Lightning's BoringModel (its own SLURM handler, shared setup: helpers/real_programs) preempted on
# the site configuration (local_cluster.sh --config site), as real_lightning_requeue.bats has it
# at its time limit: a job of 2 nodes x 1 (as there) submitted without --requeue, preempted by a
# job of partition 'high'. At SLURM's notice (its --signal, SIGUSR1) the batch shell makes the job
# requeueable and passes the signal on; Lightning saves hpc_ckpt_1.ckpt and requeues the job
# itself (the toolkit's scontrol lets it: a preemption, counted against nothing); the second run
# restores from that checkpoint and trains to the end: COMPLETED, the steps after the checkpoint
# not lost.
# Set by hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_out

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  load '../helpers/site'
  load '../helpers/real_programs'
  hpc_site_cluster_use
  # Its venv is the seeded copy, checked there (a warm-up job would copy it again and run a job).
  hpc_real_setup_file
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  load '../helpers/site'
}

teardown() {
  [[ -z ${high:-} ]] || scancel "$high" 2>/dev/null || true
  [[ -z ${job_id:-} ]] || scancel "$job_id" 2>/dev/null || true
}

@test "site: Lightning's BoringModel 2x1 preempted (no --requeue): told, saves hpc_ckpt_1.ckpt, requeues itself uncounted, status says preempted; restored, COMPLETED, trained to the end once" {
  hpc_site_lock preempt
  local root="$SCRATCH/real project/boring" start from
  # Steps of 3 s, as in real_lightning_requeue.bats: every rank takes the signal within a step.
  # shellcheck disable=SC2016 # expanded in the job
  hpc_configs "$PROJECT" 'python boring_requeue.py --num_nodes ${num_nodes} --devices ${gpus_per_node} --max-steps 20 --step-seconds 3 --root-dir ${scratch_dir}/${exp_name}'
  hpc_submit_job "$PROJECT" -W lightning --gpus 1 --num-nodes 2 --time 00:10:00 -e boring
  hpc_site_wait_line "$job_id" "$job_out" '^STEP 5$' 300
  # Both GPUs of a node: the job holds one of each node's two.
  high=$(hpc_site_preempt 2)
  # Requeued and held back by SLURM for a while: status says it was preempted.
  start=$SECONDS
  until [[ $(squeue -h -j "$job_id" -o '%T %r') == "PENDING BeginTime" ]]; do
    ((SECONDS - start < 120)) || fail "job $job_id not requeued within 120 s: $(squeue -h -j "$job_id" -o '%T %r')"
    sleep 0.5
  done
  run --separate-stderr bash "$PROJECT/hpc_files/job_submitter.sh" status boring
  [[ $(grep -E "^$job_id " <<<"$output" | tr -s ' ') == "$job_id boring venv-lightning PENDING (preempted, requeued, restarts at "* ]] ||
    fail "status does not say the job was preempted and requeued: $output"
  hpc_site_wait_line "$job_id" "$job_out" '^DONE steps=20$' 300
  hpc_wait_job "$job_id" 120
  run sacct -n -P -X -j "$job_id" -o State,ExitCode
  assert_output "COMPLETED|0:0"
  run sacct -n -P -X -D -j "$job_id" -o State
  assert_equal "${#lines[@]}" 2
  assert_line --index 0 --regexp '^(REQUEUED|PREEMPTED)$'
  assert_line --index 1 COMPLETED
  run cat "$job_out"
  assert_equal "$(grep -c '^START rank=[01] node=n[12] restart=0$' "$job_out")" 2
  assert_equal "$(grep -c '^START rank=[01] node=n[12] restart=1$' "$job_out")" 2
  # Run 1: told of the preemption, made requeueable, Lightning saved and requeued, not counted.
  assert_line --regexp "^\[hpc n1\] preempted by a higher-priority job \(SIGUSR1 at SLURM.s notice"
  assert_line --regexp '^\[hpc n1\] made requeueable \(it was submitted without --requeue N\): '
  assert_line --partial "Handling auto-requeue signal: 10"
  assert_line "[hpc n1] requeueing for the program (scontrol requeue $job_id) after the preemption; it does not count against --requeue N"
  # Run 2: restored from Lightning's checkpoint, trained on to the end once.
  assert_equal "$(grep -c "Restoring states from the checkpoint path at $root/hpc_ckpt_1.ckpt$" "$job_out")" 1
  run grep -E '^TRAIN from_step=' "$job_out"
  assert_equal "${#lines[@]}" 2
  assert_line --index 0 "TRAIN from_step=0"
  from=${lines[1]#TRAIN from_step=}
  ((from >= 5)) || fail "run 2 did not resume from the checkpoint: ${lines[1]}"
  assert_equal "$(grep -c '^DONE steps=20$' "$job_out")" 1
  # The steps run 2 printed are those after the checkpoint, each once.
  run sed -n '/^TRAIN from_step=[1-9]/,$s/^STEP //p' "$job_out"
  assert_equal "${lines[*]}" "$(seq -s ' ' $(((from / 5 + 1) * 5)) 5 20)"
  run cat "$job_out"
  refute_line --regexp 'requeueing \(restart|not requeued'
}
