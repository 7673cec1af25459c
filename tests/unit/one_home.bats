#!/usr/bin/env bats
# Rules that each have one home after the line-budget clean-up (issue 38): the size formatter
# shared by staging and plai_cleanups (hpc_human_size), and the container's --workdir check of
# '.' and '..' at any place of the path.

bats_require_minimum_version 1.5.0

setup() {
  load '../helpers/common'
  hpc_program=job_submitter.sh
  # shellcheck source=hpc_files/lib/hpc_common.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
}

@test "hpc_human_size: bytes for people, tenths cut, from B to PiB" {
  local row
  for row in '0|0 B' '1023|1023 B' '1024|1.0 KiB' '1536|1.5 KiB' '1048575|1023.9 KiB' '1048576|1.0 MiB' \
    "$((5 * 1024 ** 3 + 1024 ** 3 * 99 / 100))|5.9 GiB" "$((1024 ** 4))|1.0 TiB" "$((3 * 1024 ** 5))|3.0 PiB" \
    "$((2048 * 1024 ** 5))|2048.0 PiB"; do
    run hpc_human_size "${row%%|*}"
    assert_success
    assert_equal "${row%%|*} -> $output" "${row%%|*} -> ${row#*|}"
  done
}

@test "--workdir in a container: '.' or '..' anywhere in the path is refused (exit 2, one line)" {
  # shellcheck source=singularity_hpc_files/container_runner.bash
  source "$HPC_ROOT/singularity_hpc_files/container_runner.bash"
  local path
  for path in /a/. /a/./b /. /.. /a/.. /a/../ /a/b/./; do
    run --separate-stderr hpc_container_check_workdir "$path"
    assert_equal "$path -> $status" "$path -> 2"
    assert_equal "$stderr" "job_submitter.sh: --workdir: '$path': '.' and '..' are not allowed: give the plain path, e.g. /code"
  done
  for path in /.code /a/..b /a/b.. /code./x; do
    hpc_container_check_workdir "$path" || fail "'$path' refused"
  done
}
