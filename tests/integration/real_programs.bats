#!/usr/bin/env bats
# Programs shaped like users' programs, not like the toolkit, through a real time limit: a
# torchrun trainer in the shape of pytorch/examples' DDP tutorial (snapshot.pt, resume) and a
# program that knows nothing of the warning.
# Set by hpc_run_job or hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_out job_state

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "real project"
  cp "$HPC_ROOT/tests/fixtures/project/"{ddp_snapshot.py,oblivious.py,boring_requeue.py} "$PROJECT/"
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
}

@test "torchrun 2x2 DDP trainer: warned, saves snapshot.pt, requeued once, resumes at the next epoch, COMPLETED; rank 0 on the first node; no 138" {
  # Rank 0 saves ${SLURM_TMPDIR}/snapshot.pt; --copy-back brings it to ${scratch_dir}/${exp_name}/,
  # where the restarted run finds it (its SLURM_TMPDIR is new).
  # 200 epochs of 1 s, a 4 min limit, the warning 60 s before it: SLURM sends it 120 to 180 s
  # into a run (up to 60 s early; here about 10 s), so run 1 cannot finish first (200 s), and
  # run 2, from epoch 114 or later, finishes (86 s or less) before its own warning. With 110
  # epochs in 3 min, run 1 once finished (on CI) before a warning that came late.
  # shellcheck disable=SC2016 # expanded in the job
  hpc_configs "$PROJECT" 'python ddp_snapshot.py 200 10 ${SLURM_TMPDIR}/snapshot.pt ${scratch_dir}/${exp_name}/snapshot.pt'
  hpc_submit_job "$PROJECT" -W torchrun --gpus 2 --num-nodes 2 --time 00:04:00 --signal-lead 60 \
    --requeue 1 --copy-back snapshot.pt -e ddp
  hpc_wait_requeued "$job_id" 1 600
  local state
  state=$(hpc_job_state "$job_id")
  [[ $state == "COMPLETED 0:0" ]] || fail "job $job_id ended $state; its output: $(cat "$job_out")"
  assert_equal "$(hpc_job_field "$job_id" Restarts)" 1
  # The ranks share the node's output: a line may start before another rank's newline (whole
  # lines per rank are not this test's subject). One mark per line, for the checks below.
  marks=$BATS_TEST_TMPDIR/marks
  sed -E 's/(RUN rank=|WARNED rank=|EPOCH |SNAPSHOT epoch=|STOPPED epoch=|RESUMED epoch=|DONE epochs=|\[hpc n[0-9]\] )/\n\1/g' "$job_out" >"$marks"
  # Global rank 0 on the first node in both runs; 4 ranks each run.
  run grep -E '^RUN rank=0 ' "$marks"
  assert_line --index 0 --regexp '^RUN rank=0 local=0 node=n1 pid=[0-9]+ restart=0$'
  assert_line --index 1 --regexp '^RUN rank=0 local=0 node=n1 pid=[0-9]+ restart=1$'
  assert_equal "${#lines[@]}" 2
  assert_equal "$(grep -c '^RUN rank=[0-3] ' "$marks")" 8
  # Run 1: the warning reached both workers of each node and nothing else (not the agents): the
  # processes its 'passed to' lines name (one line, or one per round when a worker installed its
  # handler late) are the node's two workers, by the pids of their RUN lines. Rank 0 saved and all
  # stopped.
  local node workers warned
  for node in n1 n2; do
    workers=$(sed -En "s/^RUN rank=[0-3] local=[01] node=$node pid=([0-9]+) restart=0$/\1 (python)/p" "$marks" | sort -u)
    assert_equal "$(wc -l <<<"$workers")" 2
    warned=$(sed -En "s/^\[hpc $node\] time-limit warning SIGUSR1 passed to (([0-9]+ \([^)]*\) ?)+)$/\1/p" "$marks" |
      grep -oE '[0-9]+ \([^)]*\)' | sort -u)
    assert_equal "$warned" "$workers"
  done
  stopped=$(sed -n 's/^STOPPED epoch=//p' "$marks")
  [[ $stopped =~ ^[0-9]+$ ]] || fail "run 1 did not stop at the warning: $(cat "$marks")"
  run grep -E '^(SNAPSHOT epoch=|STOPPED|RESUMED|DONE|\[hpc n[12]\] (requeueing|copied back))' "$marks"
  assert_line "STOPPED epoch=$stopped"
  assert_line "SNAPSHOT epoch=$stopped"
  assert_line --regexp '^\[hpc n1\] requeueing \(restart 1 of 1\)$'
  assert_line --regexp "^\[hpc n1\] copied back to .*/ddp: snapshot.pt$"
  # Run 2 resumed from the copied-back snapshot and trained on from the next epoch to the end.
  assert_line "RESUMED epoch=$stopped from=$SCRATCH/real project/ddp/snapshot.pt"
  assert_line "DONE epochs=200"
  first_after=$(sed -n '/^RESUMED /,$p' "$marks" | sed -n 's/^EPOCH //p' | head -n 1)
  assert_equal "$first_after" "$((stopped + 1))"
  # Nobody died of the warning; no node lacked the snapshot's copy-back by mistake.
  run grep -E 'exit (code|status) 138|copy-back WARNING|found on none' "$marks"
  assert_output ''
  [ -f "$SCRATCH/real project/ddp/snapshot.pt" ]
}

@test "Lightning's BoringModel, 2x2, its own SLURM handler, --requeue 1: requeued once by Lightning, restored from hpc_ckpt_1.ckpt, the second warning refused, COMPLETED" {
  # Lightning saves hpc_ckpt_N.ckpt in default_root_dir on the warning and runs 'scontrol
  # requeue' itself: the toolkit's scontrol counts it against --requeue 1. 20 steps of 3 s: each
  # run is warned once it has trained to a STEP line (SLURM's own warning would come minutes
  # later), and the second run, refused, trains on to the end. Steps of 3 s, not 1: Lightning's
  # handler saves behind a barrier of all four ranks, which must all take the warning within one
  # step (the warning reaches the second node's ranks later; with 1 s steps, on a busy CI
  # machine, the ranks met in different collectives and the job hung to its time limit).
  # shellcheck disable=SC2016 # expanded in the job
  hpc_configs "$PROJECT" 'python boring_requeue.py --num_nodes ${num_nodes} --devices ${gpus_per_node} --max-steps 20 --step-seconds 3 --root-dir ${scratch_dir}/${exp_name}'
  hpc_submit_job "$PROJECT" -W lightning --gpus 2 --num-nodes 2 --time 00:05:00 --signal-lead 60 --requeue 1 -e boring
  # shellcheck disable=SC2329 # called by hpc_wait_requeued
  trained() { sed -n "/^START rank=0 node=n1 restart=$1\$/,\$p" "$job_out" 2>/dev/null | grep -q '^STEP [1-9]'; }
  hpc_wait_requeued "$job_id" 1 500 trained
  local state root="$SCRATCH/real project/boring"
  state=$(hpc_job_state "$job_id")
  [[ $state == "COMPLETED 0:0" ]] || fail "job $job_id ended $state; its output: $(cat "$job_out")"
  assert_equal "$(hpc_job_field "$job_id" Restarts)" 1
  run cat "$job_out"
  assert_equal "$(grep -c '^START rank=[0-3] node=n[12] restart=0$' "$job_out")" 4
  assert_equal "$(grep -c '^START rank=[0-3] node=n[12] restart=1$' "$job_out")" 4
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
  assert_equal "$(grep -c '^DONE steps=20$' "$job_out")" 1
  # Run 1 ended for Lightning's requeue; run 2 was warned, then finished its work.
  assert_equal "$(grep -c '^\[hpc n1\] ended after the time-limit warning (SIGUSR1): the program exited with 0 after ' "$job_out")" 1
  refute_line --partial 'the program finished successfully'
  run grep -E 'requeueing \(restart|scontrol requeue [0-9]+ failed|exit (code|status) 138|already requeued' "$job_out"
  assert_output ''
  # The records of the program's requeue are gone with the job.
  run find "$SCRATCH/real project/hpc_outputs" -name ".hpc_requeue.$job_id.*"
  assert_output ''
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
  # SLURM ended the run at the time limit: a restart would start from step 0 again.
  run grep -E 'passed to|exit (code|status) 138|requeue' <(grep -v '^\[hpc n1\] starting after' "$job_out")
  assert_output "[hpc n1] not requeued: SLURM ended this run (SIGTERM: the time limit or scancel) before the program ended by itself"
  run find "$SCRATCH/real project/noauto" -name 'hpc_ckpt_*'
  assert_output ''
}

@test "a program without a handler for the warning runs on to the time limit: TIMEOUT, not killed by SIGUSR1" {
  hpc_configs "$PROJECT" 'python oblivious.py 600'
  # SLURM's own warning (the one real warning test without a launcher), at 60 s at the latest.
  hpc_run_job "$PROJECT" --gpus 0 --time 00:02:00 --signal-lead 60 -e oblivious
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
