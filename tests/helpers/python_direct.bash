# shellcheck shell=bash
# Sourced by tests/run.sh (for the whole suite: lint, unit, pytest, the integration tests and
# their clusters' jobs) and tests/unit/setup_suite.bash (for a bats run of unit files started
# without run.sh).

# hpc_test_python_direct: where python3 is pyenv's shim (a script that runs a dozen more to find
# the interpreter: 50 ms of CPU at each of the thousands of calls the tests, the toolkit and
# their jobs make), puts the folder of the interpreter it resolves to first on PATH: the same
# interpreter, as the shim resolves it outside a folder that picks another version (its folder
# also holds the tools installed for it: shellcheck, shfmt, torchrun...).
hpc_test_python_direct() {
  local py
  py=$(command -v python3) || return 0
  [[ $py == */shims/python3 ]] && command -v pyenv >/dev/null || return 0
  py=$(cd / && pyenv which python3 2>/dev/null) || return 0
  [[ -x $py ]] || return 0
  export PATH=${py%/*}:$PATH
}
