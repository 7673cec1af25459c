#!/usr/bin/env bats
# make demo (hpc_files/demo.sh) on a cluster of one's own: HPC_CLUSTER_DIR and
# HPC_CLUSTER_PORT_BASE reach local_cluster.sh, and the demo's job goes to that cluster's
# slurm.conf, not to .local_cluster's. The demo runs from a copy of the repository whose
# local_cluster.sh, install.sh and job_submitter.sh are stand-ins that say what they were given.

setup() {
  load '../helpers/common'
  load '../helpers/stub'
  repo=$BATS_TEST_TMPDIR/repo
  mkdir -p "$repo/hpc_files" "$repo/tests/fixtures"
  cp "$HPC_ROOT/hpc_files/demo.sh" "$repo/hpc_files/"
  cp -R "$HPC_ROOT/hpc_files/lib" "$repo/hpc_files/lib"
  cp -R "$HPC_ROOT/tests/fixtures/demo_project" "$repo/tests/fixtures/"
  # shellcheck disable=SC2016 # the stand-ins' own expansions
  printf '%s\n' '#!/usr/bin/env bash' \
    'echo "cluster ${HPC_CLUSTER_DIR:-default} ${HPC_CLUSTER_PORT_BASE:-default} $*" >>"$DEMO_CALLS"' \
    >"$repo/hpc_files/local_cluster.sh"
  # shellcheck disable=SC2016 # the stand-ins' own expansions
  printf '%s\n' '#!/usr/bin/env bash' 'mkdir -p "$1/hpc_files"' \
    'printf "%s\n" "#!/usr/bin/env bash" "echo \"submit SLURM_CONF=\$SLURM_CONF\" >>\"\$DEMO_CALLS\"" \
      "log=\$SCRATCH/demo.out" "printf \"rank %s: all-reduce of ranks = 6\n\" 0 1 2 3 >\"\$log\"" \
      "echo \"Submitted job 7\"" "echo \"Output: \$log\"" >"$1/hpc_files/job_submitter.sh"' \
    >"$repo/hpc_files/install.sh"
  export DEMO_CALLS=$BATS_TEST_TMPDIR/calls
}

@test "make demo honours HPC_CLUSTER_DIR and HPC_CLUSTER_PORT_BASE: that cluster comes up and takes the job" {
  local mine=$BATS_TEST_TMPDIR/my_cluster
  mkdir -p "$mine/etc"
  stub scontrol 'show job 7 : echo JobState=COMPLETED'
  HPC_CLUSTER_DIR=$mine HPC_CLUSTER_PORT_BASE=19001 run bash "$repo/hpc_files/demo.sh"
  assert_success
  assert_line "== demo: 4 ranks on 2 nodes, all-reduce = 6 on every rank"
  run cat "$DEMO_CALLS"
  assert_output "cluster $mine 19001 up
submit SLURM_CONF=$mine/etc/slurm.conf"
  unstub scontrol
}

@test "make demo without them: the repository's .local_cluster (the control)" {
  mkdir -p "$repo/.local_cluster/etc"
  stub scontrol 'show job 7 : echo JobState=COMPLETED'
  run env -u HPC_CLUSTER_DIR -u HPC_CLUSTER_PORT_BASE bash "$repo/hpc_files/demo.sh"
  assert_success
  run cat "$DEMO_CALLS"
  assert_output "cluster default default up
submit SLURM_CONF=$repo/.local_cluster/etc/slurm.conf"
  unstub scontrol
}
