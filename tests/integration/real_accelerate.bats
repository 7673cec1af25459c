#!/usr/bin/env bats
# -W accelerate with programs the toolkit did not write, on nodes whose torch has no CUDA device
# (the local cluster's GPUs are SLURM's only): Accelerate's own test script, shipped in the
# package and run unchanged, and a PartialState() alone. Each must run in one world of nodes x
# GPUs processes (Accelerate's multi-CPU mode, gloo), never one process alone per rank, or fail.
# A plain Accelerator() (no cpu=True) in one world of 4: launcher_accelerate.bats, on the job of
# its launcher test.

# Set by hpc_run_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_out job_state

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "real accelerate"
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
