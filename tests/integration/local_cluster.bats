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
  local run_dir
  # A cluster that a failed test left up would hold its ports (and bats' output, were it open).
  for run_dir in "$BATS_TEST_TMPDIR"/*/run; do
    [[ -d $run_dir ]] || continue
    bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "${run_dir%/run}" down >/dev/null 2>&1 || true
  done
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

@test "a second cluster in another folder, second configuration: up twice works, down leaves none of its daemons" {
  other=$BATS_TEST_TMPDIR/cluster2
  base=$((${HPC_CLUSTER_PORT_BASE:-17817} + 10))
  held=$BATS_TEST_TMPDIR/held
  run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$other" --port-base "$base" --config second up 7>"$held"
  assert_success
  assert_line "export SLURM_CONF=$other/etc/slurm.conf HPC_CLUSTER=generic SBATCH_PARTITION=compute"
  pids=$(cat "$other"/run/*.pid)
  # The daemons keep none of the caller's descriptors beyond 0-2.
  for pid in $pids; do
    run find "/proc/$pid/fd" -lname "$held"
    assert_output ""
  done
  # A second 'up' keeps the recorded configuration.
  run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$other" --port-base "$base" up
  assert_success
  assert_output "export SLURM_CONF=$other/etc/slurm.conf HPC_CLUSTER=generic SBATCH_PARTITION=compute"
  [ "$(cat "$other"/run/*.pid)" = "$pids" ]
  SLURM_CONF=$other/etc/slurm.conf run sinfo -h -N -o '%N %P %T %m %G'
  assert_output "127.0.0.1 compute idle 4000 gpu:a100:2
127.0.0.2 compute idle 4000 gpu:a100:2"
  # No default partition: a job must name it.
  SLURM_CONF=$other/etc/slurm.conf run sbatch --wrap true
  assert_failure
  assert_output "sbatch: error: Batch job submission failed: No partition specified or system default partition"
  run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$other" --config default up
  assert_equal "$status" 1
  assert_output "local_cluster.sh: the cluster in $other runs the 'second' configuration; bring it down first to start 'default'"
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
  assert_line "cluster folder: $other (configuration: second, SLURM_TMPDIR mode: provided)"
  assert_line "slurmctld: stopped"
  assert_line "slurmd 127.0.0.2: stopped"
  # Once down, the folder can change its configuration (the other's state does not get in the way).
  run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$other" --port-base "$base" --config default up
  assert_success
  SLURM_CONF=$other/etc/slurm.conf run sinfo -h -N -o '%N %P %T %m %G'
  assert_output "n1 debug* idle 8000 gpu:2
n2 debug* idle 8000 gpu:2"
  run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$other" down
  assert_success
}

@test "up on ports another cluster holds: names each port and its holder, exits 1, starts nothing" {
  other=$BATS_TEST_TMPDIR/overlap
  # This cluster's slurmctld port is the running cluster's first slurmd port, its n1's the second's.
  base=$((${HPC_CLUSTER_PORT_BASE:-17817} + 1))
  n1=$(cat "$HPC_CLUSTER_DIR/run/slurmd-n1.pid")
  n2=$(cat "$HPC_CLUSTER_DIR/run/slurmd-n2.pid")
  run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$other" --port-base "$base" up
  assert_equal "$status" 1
  assert_output "local_cluster.sh: port $base (slurmctld of this cluster) is in use by slurmd (pid $n1: slurmd -f $HPC_CLUSTER_DIR/etc/slurm.conf -N n1)
local_cluster.sh: port $((base + 1)) (slurmd n1 of this cluster) is in use by slurmd (pid $n2: slurmd -f $HPC_CLUSTER_DIR/etc/slurm.conf -N n2)
local_cluster.sh: port(s) $base $((base + 1)) in use: nothing was started; choose another --port-base (this one: $base) or stop what holds them"
  run pgrep -f "$other"
  assert_failure
  [ ! -e "$other/run" ]
}

@test "a failed up (a slurmd that does not start) stops the munged and slurmctld it started" {
  other=$BATS_TEST_TMPDIR/failing
  base=$((${HPC_CLUSTER_PORT_BASE:-17817} + 20))
  stubs=$BATS_TEST_TMPDIR/stubs
  mkdir -p "$stubs"
  printf '#!/bin/sh\necho "slurmd: fatal: stand-in that never starts" >&2\nexit 1\n' >"$stubs/slurmd"
  chmod +x "$stubs/slurmd"
  PATH=$stubs:$PATH run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$other" --port-base "$base" up
  assert_equal "$status" 1
  assert_line "slurmd: fatal: stand-in that never starts"
  assert_line "local_cluster.sh: slurmd n1 did not start"
  assert_line "local_cluster.sh: 'up' failed: stopped what it had started (munged slurmctld slurmd n1)"
  run pgrep -f "$other"
  assert_failure
  run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$other" status
  assert_failure
  assert_line "munged: stopped"
  assert_line "slurmctld: stopped"
}

@test "down ends only its own cluster's job steps, also beside a folder whose name begins with its own" {
  one=$BATS_TEST_TMPDIR/c
  two=$BATS_TEST_TMPDIR/c2
  # Clear of the ports tests/run.sh gives the site (+30..+33) and second (+50...) clusters, which
  # run beside this file when it has the first cluster's base.
  base=$((${HPC_CLUSTER_PORT_BASE:-17817} + 70))
  run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$one" --port-base "$base" up
  assert_success
  run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$two" --port-base "$((base + 5))" up
  assert_success
  export SLURM_CONF=$two/etc/slurm.conf
  marker=$BATS_TEST_TMPDIR/finished
  id=$(hpc_sbatch -N1 -o /dev/null --wrap "sleep 4 && touch '$marker'")
  for ((i = 0; i < 100; i++)); do
    [[ $(hpc_job_field "$id" JobState) == RUNNING ]] && break
    sleep 0.2
  done
  run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$one" down
  assert_success
  hpc_wait_job "$id" 30
  run hpc_job_state "$id"
  assert_output "COMPLETED 0:0"
  [ -e "$marker" ]
  run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$two" down
  assert_success
}
