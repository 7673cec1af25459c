#!/usr/bin/env bats
# The embedded cluster itself: tasks, GPUs, final states, both SLURM_TMPDIR modes, up/down.

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_cluster_require
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  work=$(hpc_test_tmp)
  cd "$work" || return
}

teardown() {
  hpc_cluster_mode provided
}

@test "a 2-node job of 2 tasks per node with gpu:2 runs 4 ranks, 2 per node, each with GPUs" {
  cat >job.sh <<'EOS'
#!/bin/bash
srun bash -c 'echo "rank=$SLURM_PROCID node=$SLURMD_NODENAME gpus=${CUDA_VISIBLE_DEVICES-unset}"'
EOS
  id=$(hpc_sbatch -N2 --ntasks-per-node=2 --gres=gpu:2 -o "$work/out" job.sh)
  hpc_wait_job "$id" 60
  run hpc_job_state "$id"
  assert_output "COMPLETED 0:0"
  run sort "$work/out"
  assert_output "rank=0 node=n1 gpus=0,1
rank=1 node=n1 gpus=0,1
rank=2 node=n2 gpus=0,1
rank=3 node=n2 gpus=0,1"
}

@test "a failing job reads FAILED with its exit code, also from the jobcomp file" {
  id=$(hpc_sbatch -N1 -o /dev/null --wrap 'exit 7')
  hpc_wait_job "$id" 60
  run hpc_job_state "$id"
  assert_output "FAILED 7:0"
  run grep -E "^JobId=$id .*JobState=FAILED" "$HPC_CLUSTER_DIR/log/jobcomp.log"
  assert_success
}

@test "provided mode: every node's tasks get their own SLURM_TMPDIR, removed after the job" {
  hpc_cluster_mode provided
  cat >job.sh <<'EOS'
#!/bin/bash
srun bash -c 'test -d "$SLURM_TMPDIR" && echo "$SLURMD_NODENAME $SLURM_TMPDIR"'
EOS
  id=$(hpc_sbatch -N2 --ntasks-per-node=1 -o "$work/out" job.sh)
  hpc_wait_job "$id" 60
  run hpc_job_state "$id"
  assert_output "COMPLETED 0:0"
  run sort "$work/out"
  assert_output "n1 $HPC_CLUSTER_DIR/scratch/n1/slurm_tmpdir/job$id
n2 $HPC_CLUSTER_DIR/scratch/n2/slurm_tmpdir/job$id"
  [ ! -e "$HPC_CLUSTER_DIR/scratch/n1/slurm_tmpdir/job$id" ]
  [ ! -e "$HPC_CLUSTER_DIR/scratch/n2/slurm_tmpdir/job$id" ]
}

@test "emulated mode: jobs get no SLURM_TMPDIR, only their node's local scratch root" {
  hpc_cluster_mode emulated
  cat >job.sh <<'EOS'
#!/bin/bash
srun bash -c 'echo "$SLURMD_NODENAME tmpdir=${SLURM_TMPDIR-unset} scratch=$HPC_LOCAL_SCRATCH"'
EOS
  id=$(hpc_sbatch -N2 --ntasks-per-node=1 -o "$work/out" job.sh)
  hpc_wait_job "$id" 60
  run sort "$work/out"
  assert_output "n1 tmpdir=unset scratch=$HPC_CLUSTER_DIR/scratch/n1
n2 tmpdir=unset scratch=$HPC_CLUSTER_DIR/scratch/n2"
}

@test "a second cluster in another folder: up twice works, down leaves none of its daemons" {
  other=$BATS_TEST_TMPDIR/cluster2
  run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$other" --port-base 18917 up
  assert_success
  assert_line "export SLURM_CONF=$other/etc/slurm.conf"
  pids=$(cat "$other"/run/*.pid)
  run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$other" --port-base 18917 up
  assert_success
  assert_output "export SLURM_CONF=$other/etc/slurm.conf"
  [ "$(cat "$other"/run/*.pid)" = "$pids" ]
  SLURM_CONF=$other/etc/slurm.conf run sinfo -h -N -o '%N %T'
  assert_output "n1 idle
n2 idle"
  run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$other" down
  assert_success
  for pid in $pids; do
    run kill -0 "$pid"
    assert_failure
  done
  run pgrep -f "$other"
  assert_failure
  run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$other" status
  assert_failure
  assert_line "slurmctld: stopped"
}
