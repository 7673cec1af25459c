#!/usr/bin/env bats
# What the submitter refuses on the local cluster (2 nodes of 4 CPUs, 8000 MB and gpu:2, one
# default partition 'debug'): requests no node could ever run are refused before anything is
# submitted or made (SLURM would accept some and leave them pending forever); a request sbatch
# itself refuses leaves no folder behind; on a cluster without a profile no memory is asked for.
# Set by hpc_run_job or hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_state

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "refusals project"
  rm -f -- "$PROJECT/requirements.txt"
  # The (empty) venv.
  hpc_warm_venv "$PROJECT" 'python probe.py env' -e warm
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  submitter=$PROJECT/hpc_files/job_submitter.sh
}

# jobs_named NAME: the ids of this user's queued or running jobs called NAME.
jobs_named() {
  squeue -h -u "$(id -un)" -n "$1" -o %i
}

@test "requests no node can run: exit 2, one line with what the cluster has, nothing queued or made" {
  local before
  before=$(find "$SCRATCH" | LC_ALL=C sort)
  while IFS='|' read -r words line; do
    read -ra args <<<"$words"
    run --separate-stderr timeout "$HPC_TEST_HANG_S" bash "$submitter" -y -e refused "${args[@]}" </dev/null
    assert_equal "$words -> $status" "$words -> 2"
    assert_equal "$words -> $stderr" "$words -> job_submitter.sh: $line"
    assert_equal "$output" ""
    assert_equal "$(jobs_named "refusals project-refused")" ""
    assert_equal "$(find "$SCRATCH" | LC_ALL=C sort)" "$before"
  done <<'EOT'
-g 0 -c 999999|-c/--cpus: 999999 CPUs per process (x 1) is more than a node of partition debug has (4); accepted: 1 to 4
-W torchrun -g 1 -n 3|-n/--num-nodes: 3 nodes are more than partition debug has; accepted: 1 to 2
--cluster generic -g 999999|-g/--gpus: 999999 GPUs per node is more than a node of partition debug has; accepted: 0 to 2
-W lightning -g 2 -c 3|-c/--cpus: 3 CPUs per process (x 2) is more than a node of partition debug has (4); accepted: 1 to 2
-g 1 -m 100G|-m/--mem-per-gpu: 100G x 1 GPU(s) is more memory than a node of partition debug has (8000M); accepted: at most 8000M
-g 1 -p nosuchpart|-p/--partition: 'nosuchpart' is not a partition of this cluster; accepted: debug
-g 1 --signal-lead 70000|--signal-lead: '70000' is not accepted; accepted: seconds before the time limit for the warning signal, 0 to 65535
EOT
}

@test "sbatch refusing the job: exit 1 with its reason, and the folders this submission made are gone" {
  # A node feature no node has, in SBATCH_CONSTRAINT (which sbatch reads): only sbatch knows.
  [[ ! -e "$SCRATCH/refusals project/typed" ]]
  # (The project's own profile: another one's venv choice would build the venv again first.)
  run --separate-stderr env SBATCH_CONSTRAINT=nosuchfeature bash "$submitter" -y -g 1 -e typed </dev/null
  assert_equal "$status" 1
  assert_equal "$stderr" "job_submitter.sh: sbatch refused the job: sbatch: error: Batch job submission failed: Invalid feature specification"
  [[ ! -e "$SCRATCH/refusals project/typed" ]]
  [[ -d "$SCRATCH/refusals project/hpc_outputs" ]]
  # A GPU type the nodes do not have is judged before sbatch (exit 2, one line), from sinfo's GRES.
  run --separate-stderr bash "$submitter" -y --cluster generic -G k80 -g 1 -e typed </dev/null
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: -G/--gpu-type: 'k80': the GPUs of partition debug have no type; accepted: no -G (any GPU)"
  [[ ! -e "$SCRATCH/refusals project/typed" ]]
}

@test "a cluster without a profile (generic): no memory asked for; SLURM's default per CPU applies and the job runs" {
  hpc_run_job "$PROJECT" --cluster generic -g 0 -c 2 -e nomem
  assert_equal "$job_state" "COMPLETED 0:0"
  # DefMemPerCPU=500 of the local cluster, not the 8G the generic profile used to ask for.
  assert_equal "$(hpc_job_field "$job_id" MinMemoryCPU)" 500M
}
