# shellcheck shell=bash
# bats runs setup_suite once for a run of files from tests/unit/ (it is found beside the first
# file), before any of them, however many run side by side. What the submitter tests start from
# (every cluster profile compiled: a Python process each; the toolkit installed) is made once
# for the run too, but by the first file that needs it (hpc_test_warm_profiles in its
# setup_file): a run of files that need none does not pay for it.

# setup_suite: python3 without pyenv's shim (hpc_test_python_direct).
setup_suite() {
  HPC_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  export HPC_ROOT
  # shellcheck source=tests/helpers/python_direct.bash
  source "$HPC_ROOT/tests/helpers/python_direct.bash"
  hpc_test_python_direct
}
