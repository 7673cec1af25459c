#!/usr/bin/env bats
# hpc_files/demo.sh --make-project DIR: the project `make demo` makes (demo_project/), made in
# DIR with nothing else: the guides' examples run in it (tests/integration/docs_examples.bats).
# No cluster: the SLURM clients and the cluster's daemons are stubs that must not be called.

setup() {
  load '../helpers/common'
  load '../helpers/stub'
  project="$(hpc_test_tmp)/my demo"
  local name
  for name in sbatch srun salloc squeue sinfo scontrol scancel munged slurmctld slurmd; do
    stub "$name"
  done
}

teardown() {
  local name
  for name in sbatch srun salloc squeue sinfo scontrol scancel munged slurmctld slurmd; do
    unstub "$name"
  done
}

@test "--make-project DIR: the demo program and requirements, the toolkit, the configs file, scratch/; no job" {
  run bash "$HPC_ROOT/hpc_files/demo.sh" --make-project "$project"
  assert_success
  assert_output ''
  cmp "$HPC_ROOT/tests/fixtures/demo_project/ddp_demo.py" "$project/ddp_demo.py"
  cmp "$HPC_ROOT/tests/fixtures/demo_project/requirements.txt" "$project/requirements.txt"
  cmp "$HPC_ROOT/tests/fixtures/demo_project/experiment_configurations.txt" \
    "$project/hpc_files/experiment_configurations.txt"
  [[ -d $project/scratch ]] || fail "no scratch folder"
  run bash "$project/hpc_files/job_submitter.sh" --help
  assert_success
  assert_line --index 0 "Usage: bash job_submitter.sh [options]"
}

@test "--make-project without a folder, or with two: exit 2, one line naming the option, nothing made" {
  run bash "$HPC_ROOT/hpc_files/demo.sh" --make-project
  assert_equal "$status" 2
  assert_output "demo.sh: --make-project: needs one folder, the project to make"
  run bash "$HPC_ROOT/hpc_files/demo.sh" --make-project "$project" "$project.2"
  assert_equal "$status" 2
  assert_output "demo.sh: --make-project: needs one folder, the project to make"
  [[ ! -e $project && ! -e $project.2 ]] || fail "something was made"
}

@test "--help names --make-project" {
  run bash "$HPC_ROOT/hpc_files/demo.sh" --help
  assert_success
  assert_line "       bash hpc_files/demo.sh --make-project DIR"
}
