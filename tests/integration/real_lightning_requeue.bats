#!/usr/bin/env bats
# Programs shaped like users' programs, not like the toolkit (shared setup: helpers/real_programs):
# Lightning's BoringModel with its own SLURM handler, requeued by Lightning; --copy-back on every
# node of a Lightning job.
# Set by hpc_run_job or hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_out job_state

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  load '../helpers/real_programs'
  hpc_real_setup_file
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
}

@test "Lightning's BoringModel, 2 nodes x 1, its own SLURM handler, --requeue 1: requeued once by Lightning, restored from hpc_ckpt_1.ckpt, the second warning refused, COMPLETED" {
  # Lightning saves hpc_ckpt_N.ckpt in default_root_dir on the warning and runs 'scontrol
  # requeue' itself: the toolkit's scontrol counts it against --requeue 1. 14 steps of 3 s: each
  # run is warned once it has trained a step (its first STEP line; SLURM's own warning would come
  # minutes later), and the second run, refused, trains on to the end (about 10 steps after its
  # warning, where the refusal needs seconds). Steps of 3 s, not 1: Lightning's
  # handler saves behind a barrier of all ranks, which must all take the warning within one
  # step (the warning reaches the second node's ranks later; with 1 s steps, on a busy CI
  # machine, the ranks met in different collectives and the job hung to its time limit).
  # One rank a node: two nodes are what the handler's barrier and the warning's way to the second
  # node need; Lightning 2x2 (and its requeue, by preemption) is job_submitter.bats' and
  # site_preempt_lightning.bats', and each rank more is a Lightning import (7 CPU-s) per run.
  # shellcheck disable=SC2016 # expanded in the job
  hpc_configs "$PROJECT" 'python boring_requeue.py --num_nodes ${num_nodes} --devices ${gpus_per_node} --max-steps 14 --step-seconds 3 --say-every 1 --root-dir ${scratch_dir}/${exp_name}'
  hpc_submit_job "$PROJECT" -W lightning --gpus 1 --num-nodes 2 --time 00:05:00 --signal-lead 60 --requeue 1 -e boring
  # shellcheck disable=SC2329 # called by hpc_wait_requeued
  trained() { sed -n "/^START rank=0 node=n1 restart=$1\$/,\$p" "$job_out" 2>/dev/null | grep -q '^STEP [1-9]'; }
  hpc_wait_requeued "$job_id" 1 500 trained
  local state root="$SCRATCH/real project/boring"
  state=$(hpc_job_state "$job_id")
  [[ $state == "COMPLETED 0:0" ]] || fail "job $job_id ended $state; its output: $(cat "$job_out")"
  assert_equal "$(hpc_job_field "$job_id" Restarts)" 1
  run cat "$job_out"
  assert_equal "$(grep -c '^START rank=[01] node=n[12] restart=0$' "$job_out")" 2
  assert_equal "$(grep -c '^START rank=[01] node=n[12] restart=1$' "$job_out")" 2
  assert_equal "$(grep -c '^START rank=1 node=n2 restart=[01]$' "$job_out")" 2
  # Run 1: Lightning handled the warning, saved its checkpoint and requeued the job through the
  # toolkit's scontrol; the batch shell said so and did not requeue again.
  assert_line --partial "Handling auto-requeue signal: 10"
  assert_equal "$(grep -c "^\[hpc n1\] requeueing for the program (scontrol requeue $job_id), restart 1 of 1: SLURM ends this run now and starts the job again$" "$job_out")" 1
  assert_line "[hpc n1] received SIGTERM: SLURM ends this run for the requeue the program asked for (restart 1 of 1); passing it to the program"
  # Lightning exits 0 on that SIGTERM (or srun fails): either way not "finished successfully"
  # (below, for the whole log). The batch shell says which when its program ends within SLURM's
  # KillWait (10 s after that SIGTERM); on a busy machine SLURM's SIGKILL may come first.
  local run1
  run1=$(sed -n '1,/, restart 1, /p' "$job_out")
  if grep -q '^\[hpc n1\] the program ' <<<"$run1"; then
    grep -qE "^\[hpc n1\] the program (exited with status 0 after SLURM's SIGTERM|failed with exit status [0-9]+ after|was ended by SLURM \(SIGTERM: )" <<<"$run1" ||
      fail "run 1 ended otherwise: $(grep '^\[hpc n1\] the program ' <<<"$run1")"
  fi
  # Run 2: restored from Lightning's checkpoint, not from step 0.
  assert_equal "$(grep -c "Restoring states from the checkpoint path at $root/hpc_ckpt_1.ckpt$" "$job_out")" 1
  run grep -E '^TRAIN from_step=' "$job_out"
  assert_equal "${#lines[@]}" 2
  assert_line --index 0 "TRAIN from_step=0"
  [[ ${lines[1]#TRAIN from_step=} -gt 0 ]] || fail "run 2 did not resume: ${lines[1]}"
  # Run 2 was warned too: its requeue refused, Lightning's 'failed' true, the run went on to the end.
  run cat "$job_out"
  assert_line "[hpc n1] not requeued: the program asked (scontrol requeue $job_id), but 1 restart(s) done of the 1 allowed (--requeue 1); the run goes on"
  assert_line --partial "Requeuing SLURM job $job_id failed with error code 1"
  assert_line "[hpc n1] not requeued: 1 restart(s) done of the 1 allowed"
  assert_equal "$(grep -c '^DONE steps=14$' "$job_out")" 1
  # Run 1 ended for Lightning's requeue; run 2 was warned, then finished its work.
  assert_equal "$(grep -c '^\[hpc n1\] ended after the time-limit warning (SIGUSR1): the program exited with 0 after ' "$job_out")" 1
  refute_line --partial 'the program finished successfully'
  run grep -E 'requeueing \(restart|scontrol requeue [0-9]+ failed|exit (code|status) 138|already requeued' "$job_out"
  assert_output ''
  # The records of the program's requeue are gone with the job.
  run find "$SCRATCH/real project/hpc_outputs" -name ".hpc_requeue.$job_id.*"
  assert_output ''
}

@test "--copy-back looks on every node: each node's copy kept apart (PATH, PATH.n2); a path on no node is named in the log and by status" {
  # Each rank (one per node) writes its rank into its node's SLURM_TMPDIR.
  hpc_configs "$PROJECT" "python -c \"import os; open(os.environ['SLURM_TMPDIR'] + '/rank.txt', 'w').write(os.environ['SLURM_PROCID'])\""
  hpc_run_job "$PROJECT" -W lightning --gpus 1 --num-nodes 2 --copy-back rank.txt absent.txt -e everynode
  assert_equal "$job_state" "COMPLETED 0:0"
  dest="$SCRATCH/real project/everynode"
  assert_equal "$(cat "$dest/rank.txt")" 0
  assert_equal "$(cat "$dest/rank.txt.n2")" 1
  run cat "$job_out"
  assert_line "[hpc n1] copied back to $dest: rank.txt"
  assert_line "[hpc n2] copied back to $dest: rank.txt.n2"
  assert_line "[hpc n1] copy-back WARNING: absent.txt was found on none of the 2 node(s): nothing was copied back for it"
  refute_line --partial "rank.txt was found on none"
  run bash "$PROJECT/hpc_files/job_submitter.sh" status everynode
  assert_success
  assert_line "$job_id: copy-back WARNING: absent.txt was found on none of the 2 node(s): nothing was copied back for it"
}
