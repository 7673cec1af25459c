#!/usr/bin/env bats
# -W accelerate with programs the toolkit did not write, on nodes whose torch has no CUDA device
# (the local cluster's GPUs are SLURM's only): Accelerate's own test script, shipped in the
# package and run unchanged, and a plain Accelerator() (no cpu=True). Each must run in one world
# of nodes x GPUs processes (Accelerate's multi-CPU mode, gloo), never one process alone per rank.

# Set by hpc_run_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_out job_state

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "real accelerate"
  cp "$HPC_ROOT/tests/fixtures/project/accelerate_plain.py" "$PROJECT/"
  # Accelerate's state made without the Accelerator (as its distributed-inference examples do):
  # on CPUs, it would run every process alone.
  printf '%s\n' 'from accelerate import PartialState' 'state = PartialState()' \
    'print(f"PARTIAL rank={state.process_index} world={state.num_processes}", flush=True)' >"$PROJECT/partial_alone.py"
  # Accelerate's test script as the package ships it, byte for byte: found in the package's
  # folder, which find_spec names without importing accelerate (and torch: 3 CPU-s).
  python3 -c 'import importlib.util as u, os
print(os.path.join(u.find_spec("accelerate").submodule_search_locations[0], "test_utils", "scripts", "test_script.py"))' \
    >"$BATS_FILE_TMPDIR/script_path"
  cp "$(cat "$BATS_FILE_TMPDIR/script_path")" "$PROJECT/test_script.py"
  # The venv: a copy of the one built once per bats run (not what this file tests).
  hpc_venv_seed "$PROJECT"
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
}

# check_test_script: the job ran Accelerate's test script in one world of 2 processes to the end.
check_test_script() {
  [[ $job_state == "COMPLETED 0:0" ]] || fail "job $job_id ended $job_state: $(cat "$job_out")"
  run grep -c '^Num processes: 2$' "$job_out"
  assert_output 2
  run grep -c '^Num processes: 1$' "$job_out"
  assert_output 0
  run grep -c '^Distributed environment: DistributedType.MULTI_CPU  Backend: gloo$' "$job_out"
  assert_output 2
  run cat "$job_out"
  assert_line --regexp '^\[hpc n[12]\] torch sees no CUDA device on n[12]: Accelerate runs its 2 processes on CPUs \(gloo\)$'
  run grep -c '^\*\*Test reinstantiated state\*\*$' "$job_out"
  assert_output 2
}

@test "accelerate's shipped test_script.py, unchanged, 2 nodes x 1 GPU on CPU torch: 'Num processes: 2' on both, MULTI_CPU, COMPLETED" {
  cmp "$(cat "$BATS_FILE_TMPDIR/script_path")" "$PROJECT/test_script.py"
  hpc_configs "$PROJECT" 'python test_script.py'
  hpc_run_job "$PROJECT" -W accelerate --gpus 1 --num-nodes 2 -e testscript
  check_test_script
}

@test "accelerate's test script as python -m accelerate.test_utils.scripts.test_script: accepted (not a launcher), 2 x 1, one world of 2, COMPLETED" {
  hpc_configs "$PROJECT" 'python -m accelerate.test_utils.scripts.test_script'
  hpc_run_job "$PROJECT" -W accelerate --gpus 1 --num-nodes 2 -e testmodule
  check_test_script
}

@test "a plain Accelerator() all-reduce, 2 nodes x 2 on CPU torch: one world of 4 (MULTI_CPU), ranks 0..3 once, sum 6 on each, COMPLETED" {
  hpc_configs "$PROJECT" 'python accelerate_plain.py'
  hpc_run_job "$PROJECT" -W accelerate --gpus 2 --num-nodes 2 -e plain
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

@test "PartialState() alone (no cpu=True), 2 nodes x 1 on CPU torch: each process ran alone, so the job ends FAILED, one line saying why; never COMPLETED" {
  # Two processes, one per node, are a world of 2 that --multi_gpu starts as it starts one of 4
  # (the launcher's check compares each process's count with the job's, whatever the shape):
  # two imports of torch and Accelerate (3 CPU-s each) fewer than 2 x 2.
  hpc_configs "$PROJECT" 'python partial_alone.py'
  hpc_run_job "$PROJECT" -W accelerate --gpus 1 --num-nodes 2 -e partial
  [[ $job_state == "FAILED 1:0" ]] || fail "job $job_id ended $job_state: $(cat "$job_out")"
  # Every process that printed before the first one's failure ended the job ran alone: how many
  # printed depends on the machine's load (a loaded one: only the first), so at least one does.
  run grep -c '^PARTIAL ' "$job_out"
  ((output >= 1)) || fail "no PARTIAL line: $(cat "$job_out")"
  run grep -vc '^PARTIAL rank=0 world=1$' <(grep '^PARTIAL ' "$job_out")
  assert_output 0
  run grep -cE "^\[hpc n[12]\] Accelerate ran this process alone \(DistributedType.NO, 1 process\), not in the job's world of 2: " "$job_out"
  assert_output 1
}
