#!/usr/bin/env bats
# A program shaped like users' programs, not like the toolkit (shared setup: helpers/real_programs):
# a torchrun trainer in the shape of pytorch/examples' DDP tutorial through a real time limit:
# warned, snapshot.pt saved and copied back, requeued once, resumed at the next epoch.
# Set by hpc_run_job or hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_out

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

@test "torchrun 2x2 DDP trainer: warned, saves snapshot.pt, requeued once, resumes at the next epoch, COMPLETED; rank 0 on the first node; no 138" {
  # Rank 0 saves ${SLURM_TMPDIR}/snapshot.pt; --copy-back brings it to ${scratch_dir}/${exp_name}/,
  # where the restarted run finds it (its SLURM_TMPDIR is new).
  # 175 epochs of 1 s (paced by the clock, so a loaded machine does not stretch them), a 3 min
  # limit (the shortest that fits both runs), the warning 20 s before it: SLURM sends it 100 to
  # 160 s into a run (up to 60 s early; here about 10 s), so run 1 cannot finish first (175 s),
  # and run 2, from epoch 94 or later, finishes (81 s or less) before its own warning. With 110
  # epochs in 3 min and a lead of 60 s, run 1 once finished (on CI) before a warning that came
  # late: here it would end 15 s and more past the latest warning.
  # shellcheck disable=SC2016 # expanded in the job
  hpc_configs "$PROJECT" 'python ddp_snapshot.py 175 10 ${SLURM_TMPDIR}/snapshot.pt ${scratch_dir}/${exp_name}/snapshot.pt'
  hpc_submit_job "$PROJECT" -W torchrun --gpus 2 --num-nodes 2 --time 00:03:00 --signal-lead 20 \
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
  assert_line "DONE epochs=175"
  first_after=$(sed -n '/^RESUMED /,$p' "$marks" | sed -n 's/^EPOCH //p' | head -n 1)
  assert_equal "$first_after" "$((stopped + 1))"
  # Nobody died of the warning; no node lacked the snapshot's copy-back by mistake.
  run grep -E 'exit (code|status) 138|copy-back WARNING|found on none' "$marks"
  assert_output ''
  [ -f "$SCRATCH/real project/ddp/snapshot.pt" ]
}
