#!/usr/bin/env bats
# local_cluster.sh's command line: bad input is exit 2 with one line, and creates nothing.

setup() {
  load '../helpers/common'
  work=$(hpc_test_tmp)
}

@test "--help prints the usage comment" {
  run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --help
  assert_success
  assert_line --index 0 "Usage: bash hpc_files/local_cluster.sh [options] up|down|status|env"
  assert_line --partial "--tmpdir MODE"
  assert_line --partial "--config NAME      default, second or site [HPC_CLUSTER_CONFIG]"
  assert_line --partial "  second   differs where real clusters differ: nodes named by their address, 127.0.0.1 and"
}

@test "bad input: <args> -> exit 2 and <message>" {
  while IFS='|' read -r args message; do
    # shellcheck disable=SC2086 # the table's arguments are words
    run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$work/c" $args
    assert_equal "$status" 2
    assert_equal "$output" "local_cluster.sh: $message"
  done <<'EOT'
|command: missing; accepted: up, down, status, env
start|start: unknown; accepted: up, down, status, env, --dir, --port-base, --config, --tmpdir, --help
up down|down: only one command at a time (already: up)
--tmpdir fast up|--tmpdir: 'fast' is not accepted; accepted: provided, emulated
--port-base 80 up|--port-base: '80' is not a port number between 1024 and 65000
--port-base x up|--port-base: 'x' is not a port number between 1024 and 65000
up --tmpdir|--tmpdir: needs a value
--config third up|--config: 'third' is not accepted; accepted: default, second, site
--config Second up|--config: 'Second' is not accepted; accepted: default, second, site
up --config|--config: needs a value
--config=third up|--config: 'third' is not accepted; accepted: default, second, site
--port-base=x up|--port-base: 'x' is not a port number between 1024 and 65000
--dir= up|--dir: empty; accepted: a folder name without whitespace
--verbose=1 up|--verbose=1: unknown; accepted: up, down, status, env, --dir, --port-base, --config, --tmpdir, --help
EOT
  [ ! -e "$work/c" ]
}

@test "a folder with whitespace is refused before anything is made" {
  run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$work/c" up
  assert_equal "$status" 2
  assert_output "local_cluster.sh: --dir: '$work/c' contains whitespace, which slurm.conf cannot hold"
  [ ! -e "$work/c" ]
}

@test "env prints everything a shell needs: SLURM_CONF for the folder (--dir DIR or --dir=DIR) and HPC_CLUSTER=local" {
  run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir /tmp/somewhere env
  assert_success
  assert_output "export SLURM_CONF=/tmp/somewhere/etc/slurm.conf HPC_CLUSTER=local"
  run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir=/tmp/elsewhere env
  assert_success
  assert_output "export SLURM_CONF=/tmp/elsewhere/etc/slurm.conf HPC_CLUSTER=local"
  # The line works as the README uses it.
  (
    unset SLURM_CONF HPC_CLUSTER
    eval "$output"
    [[ $SLURM_CONF == /tmp/elsewhere/etc/slurm.conf && $HPC_CLUSTER == local ]]
  )
}

@test "HPC_CLUSTER_CONFIG is checked like --config" {
  HPC_CLUSTER_CONFIG=big run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$work/c" up
  assert_equal "$status" 2
  assert_output "local_cluster.sh: --config: 'big' is not accepted; accepted: default, second, site"
  [ ! -e "$work/c" ]
}

@test "env of a folder whose cluster runs the second configuration: the generic profile and its partition" {
  mkdir -p "$BATS_TEST_TMPDIR/c/etc"
  printf 'second\n' >"$BATS_TEST_TMPDIR/c/etc/config"
  run bash "$HPC_ROOT/hpc_files/local_cluster.sh" --dir "$BATS_TEST_TMPDIR/c" env
  assert_success
  assert_output "export SLURM_CONF=$BATS_TEST_TMPDIR/c/etc/slurm.conf HPC_CLUSTER=generic SBATCH_PARTITION=compute"
}
