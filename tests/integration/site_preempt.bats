#!/usr/bin/env bats
# Preemption without losing work, on the site configuration (local_cluster.sh --config site): a
# running toolkit job in the preemptible default partition is preempted by a job of partition
# 'high'. SLURM sends it its --signal at once (the site's preempt_send_user_signal), then ends it
# after the partition's GraceTime and requeues it. The program (shared setup: helpers/real_programs)
# is told, saves its snapshot, --copy-back runs, the job is requeued and resumes from the snapshot;
# the preemption does not use up --requeue N, which is for time limits. Two nodes of one rank
# each: the promise is every node's (its agent and its rank told, stopped together); two ranks on
# a node taking the warning are real_ddp_requeue.bats's (at the time limit, the same path).
# Set by hpc_run_job or hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_out

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

@test "site: torchrun 2x1 DDP trainer preempted: told, snapshot copied back, requeued without using up --requeue 1, resumed; then a time limit still requeues it; COMPLETED, every epoch once" {
  hpc_site_lock preempt
  # shellcheck disable=SC2016 # expanded in the job
  hpc_configs "$PROJECT" 'python ddp_snapshot.py 60 10 ${SLURM_TMPDIR}/snapshot.pt ${scratch_dir}/${exp_name}/snapshot.pt'
  hpc_submit_job "$PROJECT" -W torchrun --gpus 1 --num-nodes 2 --time 00:10:00 --signal-lead 60 \
    --requeue 1 --copy-back snapshot.pt -e ddp
  hpc_site_wait_line "$job_id" "$job_out" '^EPOCH 3$' 240
  # Both GPUs of a node: the job holds one of each node's two.
  high=$(hpc_site_preempt 2)
  # Requeued and held back by SLURM for a while: status says it was preempted.
  local start=$SECONDS
  until [[ $(squeue -h -j "$job_id" -o '%T %r') == "PENDING BeginTime" ]]; do
    ((SECONDS - start < 120)) || fail "job $job_id not requeued within 120 s: $(squeue -h -j "$job_id" -o '%T %r')"
    sleep 0.5
  done
  run --separate-stderr bash "$PROJECT/hpc_files/job_submitter.sh" status ddp
  [[ $(grep -E "^$job_id " <<<"$output" | tr -s ' ') == "$job_id ddp venv-torchrun PENDING (preempted, requeued, restarts at "* ]] ||
    fail "status does not say the job was preempted and requeued: $output"
  # Run 2 resumes from the snapshot; once it trains, the time-limit warning (sent by the test).
  hpc_site_wait_line "$job_id" "$job_out" '^RESUMED epoch=' 300
  resumed=$(sed -n 's/^RESUMED epoch=\([0-9]*\) .*/\1/p' "$job_out" | head -n 1)
  hpc_site_wait_line "$job_id" "$job_out" "^EPOCH $((resumed + 2))\$" 120
  hpc_send_warning "$job_id"
  # Run 3 (the controller forgets ended jobs within seconds here: sacct tells how they ended).
  hpc_site_wait_line "$job_id" "$job_out" '^DONE epochs=60$' 400
  hpc_wait_job "$job_id" 120
  run sacct -n -P -X -j "$job_id" -o State,ExitCode
  assert_output "COMPLETED|0:0"
  # Three runs: two requeued, the last COMPLETED.
  run sacct -n -P -X -D -j "$job_id" -o State
  assert_output "REQUEUED
REQUEUED
COMPLETED"
  run sacct -n -P -X -j "$high" -o State
  assert_output COMPLETED
  marks=$BATS_TEST_TMPDIR/marks
  sed -E 's/(RUN rank=|WARNED rank=|EPOCH |SNAPSHOT epoch=|STOPPED epoch=|RESUMED epoch=|DONE epochs=|\[hpc n[0-9]\] )/\n\1/g' "$job_out" >"$marks"
  run grep -E '^(STOPPED|RESUMED|DONE|\[hpc n1\] (preempted|requeueing|not requeued|copied back))' "$marks"
  # Run 1: preempted, told, stopped, copied back, requeued, not counted against --requeue 1.
  assert_line --index 0 --regexp '^\[hpc n1\] preempted by a higher-priority job \(SIGUSR1 at SLURM.s notice'
  assert_line --index 1 --regexp '^STOPPED epoch=[0-9]+$'
  assert_line --index 2 --regexp '^\[hpc n1\] copied back to .*/ddp: snapshot.pt$'
  assert_line --index 3 '[hpc n1] requeueing after the preemption (restart 1; a preemption does not count against --requeue 1)'
  # Run 2: resumed, warned of its time limit, requeued: the one restart --requeue 1 allows.
  assert_line --index 4 --regexp "^RESUMED epoch=$resumed from=.*/ddp/snapshot.pt$"
  assert_line --index 5 --regexp '^STOPPED epoch=[0-9]+$'
  assert_line --index 6 --regexp '^\[hpc n1\] copied back to .*/ddp: snapshot.pt$'
  assert_line --index 7 '[hpc n1] requeueing (restart 1 of 1)'
  assert_line --index 8 --regexp '^RESUMED epoch=[0-9]+ from='
  assert_line --index 9 'DONE epochs=60'
  # Run 3 ends the job: its snapshot copied back as every run's, no requeue.
  assert_line --index 10 --regexp '^\[hpc n1\] copied back to .*/ddp: snapshot.pt$'
  assert_equal "${#lines[@]}" 11
  # Every epoch trained once, in order, over the three runs.
  assert_equal "$(sed -n 's/^EPOCH //p' "$marks" | tr '\n' ' ')" "$(seq -s ' ' 1 60) "
}
