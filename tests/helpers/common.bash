# shellcheck shell=bash
# Loaded by every .bats file: bats-support, bats-assert, and the repository root.
HPC_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export HPC_ROOT
load "$HPC_ROOT/node_modules/bats-support/load"
load "$HPC_ROOT/node_modules/bats-assert/load"

# hpc_test_tmp: a fresh temporary folder whose path contains a space, so every test also
# proves that paths with spaces work.
hpc_test_tmp() {
  local dir="$BATS_TEST_TMPDIR/with space"
  mkdir -p "$dir"
  printf '%s\n' "$dir"
}
