# shellcheck shell=bash
# bats runs setup_suite once for a run of files from tests/unit/ (it is found beside the first
# file), before any of them, however many run side by side: what the submitter tests start from
# is made here once, not once per file (every cluster profile compiled: a Python process each;
# the toolkit installed), and each file's setup_file finds it (hpc_test_warm_profiles).

# setup_suite: HPC_WARM_CACHE and HPC_TEST_PROJECT in the run's own temporary folder; python3
# without pyenv's shim (hpc_test_python_direct).
setup_suite() {
  HPC_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  export HPC_ROOT
  # shellcheck source=tests/helpers/python_direct.bash
  source "$HPC_ROOT/tests/helpers/python_direct.bash"
  hpc_test_python_direct
  # shellcheck source=tests/helpers/submitter.bash
  source "$HPC_ROOT/tests/helpers/submitter.bash"
  hpc_test_prepare "$BATS_SUITE_TMPDIR"
}
