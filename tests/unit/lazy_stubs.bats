#!/usr/bin/env bats
# The code a plain submission does not run stands in its library as one-line stubs,
# 'f() { hpc_lib_load FILE && f "$@"; }' (hpc_common.bash), whose FILE defines the real f and is
# parsed only at the first call (issue 38: parsing is about half of a submission's work).

bats_require_minimum_version 1.5.0

setup() {
  load '../helpers/common'
  load '../helpers/shipped'
  cd "$HPC_ROOT" || return 1
}

# lazy_stubs: prints 'FILE:LINE NAME LIB' for each line of the shipped Bash that calls
# hpc_lib_load (its definition aside), NAME and LIB empty when the line is not a stub's form.
lazy_stubs() {
  local file
  shipped_bash | while IFS= read -r file; do
    grep -nE '(^|[^a-z_])hpc_lib_load([^a-z_]|$)' -- "$file" | grep -vE '^[0-9]+:[[:space:]]*#' |
      grep -vE '^[0-9]+:hpc_lib_load\(\) \{' |
      sed -E "s#^([0-9]+):([a-z_][a-z0-9_]*)\(\) \{ hpc_lib_load ([a-z_][a-z0-9_]*) && \2 \"\\\$@\"; \}\$#\1 \2 \3#; t; s#^([0-9]+):.*#\1  #" |
      sed "s#^#$file:#"
  done
}

@test "every call of hpc_lib_load is a stub whose file defines the function it stands for (not as a stub)" {
  local where name lib count=0
  while read -r where name lib; do
    [[ -n $name ]] || fail "$where calls hpc_lib_load outside the stub form 'f() { hpc_lib_load FILE && f \"\$@\"; }'"
    [[ -f hpc_files/lib/$lib.bash ]] || fail "$where: $name's file hpc_files/lib/$lib.bash is missing"
    grep -qE "^$name\(\) \{\$" "hpc_files/lib/$lib.bash" ||
      fail "$where: hpc_files/lib/$lib.bash does not define $name (its stub would call itself)"
    count=$((count + 1))
  done < <(lazy_stubs)
  ((count > 0)) || fail "no stub found"
}

@test "a stub loads its file at its first call and runs the function it stands for: hpc_manifest_ranges 1 2 3 5 is 1-3,5" {
  # shellcheck disable=SC2016 # the script of bash -c, expanded there
  run --separate-stderr bash -c '
    set -euo pipefail
    source hpc_files/lib/hpc_common.bash
    source hpc_files/lib/hpc_manifest.bash
    declare -f hpc_manifest_ranges | grep -q hpc_lib_load || { echo "not a stub before the call"; exit 1; }
    hpc_manifest_ranges 1 2 3 5
    printf "%s\n" "$hpc_manifest_ranges"
    ! declare -f hpc_manifest_ranges | grep -q hpc_lib_load || { echo "still a stub after the call"; exit 1; }
    declare -F hpc_manifest_read >/dev/null'
  assert_success
  assert_output "1-3,5"
}

@test "a stub whose file does not define its function fails with one line naming both, and does not call itself again" {
  run --separate-stderr bash -c '
    set -uo pipefail
    source hpc_files/lib/hpc_common.bash
    hpc_manifest_ranges() { hpc_lib_load hpc_facts && hpc_manifest_ranges "$@"; }
    hpc_manifest_ranges 1 2'
  assert_failure
  [[ $stderr == *"lib/hpc_facts.bash does not define hpc_manifest_ranges"* ]] || fail "stderr: $stderr"
}
