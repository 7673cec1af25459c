#!/usr/bin/env bats
# The lint still finds what it finds (issue 37: its passes and cache make it cheaper, not
# blinder): tests/run.sh's lint, run in a small repository of its own, passes on clean files and
# fails on a planted error of each kind it catches, naming it: a misspelt global read across
# files (shellcheck -x, SC2154), SC2086 in a shipped file, an unreachable line (the second pass,
# SC2317), a shfmt diff, a ruff error, a mypy error.

setup_file() {
  load '../helpers/common'
  # One mypy cache for the file's runs: the standard library's types are checked once.
  export HPC_MYPY_CACHE=$BATS_FILE_TMPDIR/mypy HPC_LINT_CACHE=$BATS_FILE_TMPDIR/shellcheck
}

setup() {
  load '../helpers/common'
}

# mini_repo DIR: a git repository with tests/run.sh's lint and clean files of each kind it lints.
mini_repo() {
  local dir=$1
  mkdir -p "$dir/tests/helpers" "$dir/tests/unit" "$dir/tests/python" "$dir/bench" \
    "$dir/hpc_files/lib" "$dir/python_helpers/src/mini"
  cp "$HPC_ROOT/tests/run.sh" "$HPC_ROOT/tests/shellcheck_keys.py" "$HPC_ROOT/tests/slowest.py" "$dir/tests/"
  cp "$HPC_ROOT/tests/helpers/python_direct.bash" "$dir/tests/helpers/"
  cp "$HPC_ROOT/.editorconfig" "$dir/"
  # shellcheck disable=SC2016 # shell code as data
  printf '%s\n' '# shellcheck shell=bash' '# names.bash: the name the tools say.' 'hpc_name=mini' '' \
    '# hpc_say: prints the name.' 'hpc_say() {' '  echo "$hpc_name"' '}' >"$dir/hpc_files/lib/names.bash"
  # shellcheck disable=SC2016 # shell code as data
  printf '%s\n' '#!/usr/bin/env bash' '# shellcheck source=hpc_files/lib/names.bash' \
    'source "${BASH_SOURCE[0]%/*}/lib/names.bash"' 'hpc_say' 'echo "name: $hpc_name"' >"$dir/hpc_files/tool.sh"
  printf '%s\n' '"""A module."""' '' '' 'def answer() -> int:' '    """The answer."""' '    return 42' \
    >"$dir/python_helpers/src/mini/__init__.py"
  printf '%s\n' '"""Tests."""' >"$dir/tests/python/conftest.py"
  printf '%s\n' '"""Benchmarks."""' >"$dir/bench/bench.py"
  git -C "$dir" init -q
  git -C "$dir" add -A
}

# lint DIR: tests/run.sh's lint alone in DIR, as `make lint` runs it.
lint() {
  run bash "$1/tests/run.sh" --no-install --no-cluster --no-pytest --bats "$1/tests/unit"
}

@test "lint: passes clean files, fails naming each planted error (global, SC2086, unreachable, shfmt, ruff, mypy)" {
  local repo=$BATS_TEST_TMPDIR/repo
  mini_repo "$repo"
  lint "$repo"
  assert_success
  # The four tools (shellcheck, shfmt, ruff, mypy): each recorded, none failed (hpc_name is
  # known from the library that tool.sh follows).
  assert_line "suite: 4 passed, 0 failed"

  # shellcheck disable=SC2016 # shell code as data
  sed -i 's/"name: $hpc_name"/"name: $hpc_nmae"/' "$repo/hpc_files/tool.sh"
  printf '%s\n' 'exit 0' 'echo never' >>"$repo/hpc_files/tool.sh"
  # shellcheck disable=SC2016 # shell code as data
  sed -i 's/  echo "$hpc_name"/  echo $hpc_name/' "$repo/hpc_files/lib/names.bash"
  printf '%s\n' 'hpc_far() {' '    hpc_say' '}' 'hpc_far' >>"$repo/hpc_files/lib/names.bash"
  sed -i '1a import os' "$repo/bench/bench.py"
  sed -i 's/return 42/return "42"/' "$repo/python_helpers/src/mini/__init__.py"
  lint "$repo"
  assert_failure
  assert_line "In hpc_files/tool.sh line 5:"
  assert_line --partial "SC2154 (warning): hpc_nmae is referenced but not assigned"
  assert_line "In hpc_files/tool.sh line 7:"
  assert_line --partial "SC2317 (info): Command appears to be unreachable"
  assert_line "In hpc_files/lib/names.bash line 7:"
  assert_line --partial "SC2086 (info): Double quote to prevent globbing"
  assert_line "-    hpc_say"
  assert_line --regexp "F401 .*\`os\` imported but unused"
  assert_line --regexp "^python_helpers/src/mini/__init__.py:6: error: Incompatible return value type"
  assert_line "suite: 0 passed, 4 failed"
  local tool
  for tool in shellcheck shfmt ruff mypy; do assert_line --regexp "^failed: (.* )?$tool "; done
}

@test "lint: the second pass checks each shipped file on its own flow, whichever files it is checked with" {
  local repo=$BATS_TEST_TMPDIR/repo
  mini_repo "$repo"
  # A call to the library's function that always exits, then a line: unreachable only through
  # the library's flow, which the second pass does not follow (docs/testing.md: what is lost).
  printf '%s\n' '' '# hpc_stop: ends the program.' 'hpc_stop() {' '  exit 1' '}' >>"$repo/hpc_files/lib/names.bash"
  printf '%s\n' 'hpc_stop' 'echo after' >>"$repo/hpc_files/tool.sh"
  git -C "$repo" add -A
  lint "$repo"
  assert_success
  assert_line "suite: 4 passed, 0 failed"
}
