#!/usr/bin/env bats
# -W accelerate on the local cluster with the real Hugging Face Accelerate (the venv sees the
# system's packages, as for torch and Lightning): a user's program (plain print, Accelerator(cpu=True),
# gloo) on 2 nodes x 2 GPUs, and one written as Accelerate's examples are (a plain Accelerator(), no
# cpu=True), which on nodes whose torch has no CUDA device must still run in one world of 4.

# Set by hpc_run_job or hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_out job_state

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "accelerate project"
  cp "$HPC_ROOT/tests/fixtures/project/"{accelerate_sum.py,accelerate_plain.py} "$PROJECT/"
  # The venv: a copy of the one built once per bats run (not what this file tests).
  hpc_venv_seed "$PROJECT"
  # One 2x2 job whose output two tests assert on (6 processes that import torch and Accelerate,
  # 3 CPU-s each, run once): the launcher's 4 ranks, its rendezvous and all-reduce; and that a
  # plain Accelerator() on CPU torch joins that one world of 4.
  hpc_configs "$PROJECT" 'python accelerate_plain.py'
  hpc_run_job "$PROJECT" -W accelerate --gpus 2 --num-nodes 2 -e plain
  export PLAIN_ID=$job_id PLAIN_OUT=$job_out PLAIN_STATE=$job_state
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
}

# plain_job: sets job_id, job_out and job_state to those of the job of setup_file (python
# accelerate_plain.py, -W accelerate --gpus 2 --num-nodes 2).
plain_job() {
  job_id=$PLAIN_ID job_out=$PLAIN_OUT job_state=$PLAIN_STATE
}

@test "accelerate 2x2: 4 processes, ranks 0..3 each once, all-reduce 6 on every rank, COMPLETED; rank 0 on the first node" {
  plain_job
  [[ $job_state == "COMPLETED 0:0" ]] || fail "job $job_id ended $job_state: $(cat "$job_out")"
  run sed -n 's/^PLAIN \(rank=[0-9]* world=4\) .*/\1/p' "$job_out"
  assert_equal "$(sort <<<"$output")" "rank=0 world=4
rank=1 world=4
rank=2 world=4
rank=3 world=4"
  run sed -n 's/^PSUM //p' "$job_out"
  assert_equal "$(sort <<<"$output")" "rank=0 sum=6
rank=1 sum=6
rank=2 sum=6
rank=3 sum=6"
  # Static rendezvous: node i is machine rank i, so ranks 0 and 1 run on the first node.
  assert_equal "$(grep -cE '^PLAIN rank=[01] world=4 type=[A-Z_]+ node=n1$' "$job_out")" 2
  assert_equal "$(grep -cE '^PLAIN rank=[23] world=4 type=[A-Z_]+ node=n2$' "$job_out")" 2
  # One accelerate launch per node (the launcher's code, named in the log), at the job's port
  # on the first node.
  run grep -E '^\[hpc n[12]\] starting .*python -c HPC_LAUNCHER_CODE --multi_gpu ' "$job_out"
  assert_equal "${#lines[@]}" 2
  port=$(sed -n 's/^\[hpc n1\] rendezvous at n1:\([0-9]*\)$/\1/p' "$job_out")
  [[ $port =~ ^[0-9]+$ ]] || fail "no rendezvous line: $(cat "$job_out")"
  assert_line --regexp "^\[hpc n1\] starting .* -c HPC_LAUNCHER_CODE --multi_gpu --num_machines 2 --machine_rank 0 --num_processes 4 --main_process_ip n1 --main_process_port $port "
  assert_line --regexp "^\[hpc n2\] starting .* -c HPC_LAUNCHER_CODE --multi_gpu --num_machines 2 --machine_rank 1 --num_processes 4 --main_process_ip n1 --main_process_port $port "
  assert_equal "$(hpc_job_field "$job_id" NumTasks)" 2
}

@test "a plain Accelerator() all-reduce, 2 nodes x 2 on CPU torch: one world of 4 (MULTI_CPU), ranks 0..3 once, sum 6 on each, COMPLETED" {
  plain_job
  [[ $job_state == "COMPLETED 0:0" ]] || fail "job $job_id ended $job_state: $(cat "$job_out")"
  run sed -n 's/^PLAIN \(rank=[0-9]* world=[0-9]* type=[A-Z_]*\) .*/\1/p' "$job_out"
  assert_equal "$(sort <<<"$output")" "rank=0 world=4 type=MULTI_CPU
rank=1 world=4 type=MULTI_CPU
rank=2 world=4 type=MULTI_CPU
rank=3 world=4 type=MULTI_CPU"
  run sed -n 's/^PSUM //p' "$job_out"
  assert_equal "$(sort <<<"$output")" "rank=0 sum=6
rank=1 sum=6
rank=2 sum=6
rank=3 sum=6"
  assert_equal "$(grep -cE '^PLAIN rank=[01] world=4 type=MULTI_CPU node=n1$' "$job_out")" 2
}

@test "accelerate 2x2 where rank 3 exits 7: the job ends FAILED 7 (not accelerate's 1); the log names the rank and node" {
  hpc_configs "$PROJECT" 'python accelerate_sum.py 3'
  hpc_run_job "$PROJECT" -W accelerate --gpus 2 --num-nodes 2 -e acc7
  [[ $job_state == "FAILED 7:0" ]] || fail "job $job_id ended $job_state: $(cat "$job_out")"
  run grep -c '^EXIT rank=3 code=7' "$job_out"
  assert_output 1
  run grep -E '^\[hpc n2\] accelerate exited with 1: its first failed worker, rank 3 \(local rank 1\) on n2, exited with 7: that is this node.s status$' "$job_out"
  assert_equal "${#lines[@]}" 1
}

@test "accelerate with --label-ranks, 2 nodes: the time-limit warning reaches each worker, never accelerate's agent (no 138); COMPLETED, copy-back whole" {
  # ckpt.py catches the warning, finishes its checkpoint and exits 0; an agent without a handler
  # would die of SIGUSR1 and fail the job.
  hpc_configs "$PROJECT" 'python ckpt.py'
  hpc_run_job "$PROJECT" -W accelerate --gpus 1 --num-nodes 2 --time 00:02:00 --signal-lead 60 \
    --copy-back checkpoints --label-ranks -e warnedacc
  [[ $job_state == "COMPLETED 0:0" ]] || fail "job $job_id ended $job_state: $(cat "$job_out")"
  run cat "$job_out"
  # ckpt.py names its rank by SLURM_PROCID (the node here); the label is the worker's RANK.
  assert_line --regexp '^\[rank 0\] SIGNAL rank=0 node=n1 signal=SIGUSR1$'
  assert_line --regexp '^\[rank 1\] SIGNAL rank=1 node=n2 signal=SIGUSR1$'
  for node in n1 n2; do
    assert_line --regexp "^\[hpc $node\] time-limit warning SIGUSR1 passed to [0-9]+ \(python\)$"
  done
  refute_line --regexp 'exit (code|status) 138'
  final=$(sed -n 's/^\[rank 0\] FINAL //p' "$job_out")
  [ -n "$final" ]
  assert_equal "$(sha256sum "$SCRATCH/accelerate project/warnedacc/checkpoints/state.bin" | cut -d' ' -f1)" "$final"
}
