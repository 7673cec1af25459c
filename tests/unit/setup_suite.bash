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
  hpc_test_python_direct
  # shellcheck source=tests/helpers/submitter.bash
  source "$HPC_ROOT/tests/helpers/submitter.bash"
  hpc_test_prepare "$BATS_SUITE_TMPDIR"
}

# hpc_test_python_direct: where python3 is pyenv's shim (a script that runs a dozen more to find
# the interpreter: 50 ms of CPU at each of the hundreds of calls the tests and the toolkit make),
# puts the folder of the interpreter it resolves to first on PATH for the run: the same
# interpreter, as the shim resolves it outside a folder that picks another version.
hpc_test_python_direct() {
  local py
  py=$(command -v python3) || return 0
  [[ $py == */shims/python3 ]] && command -v pyenv >/dev/null || return 0
  py=$(cd / && pyenv which python3 2>/dev/null) || return 0
  [[ -x $py ]] || return 0
  export PATH=${py%/*}:$PATH
}
