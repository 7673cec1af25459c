#!/usr/bin/env bats
# Switching between two cluster profiles that want different venvs (with or without the
# system's packages, another Python): each keeps its build, so switching back reuses it instead
# of building again, back and forth. The removal of old builds after an install
# (hpc_venv_collect) keeps the newest build of each kind for the project's dependency file, and
# still removes superseded builds of the same kind, builds for an older dependency file, and
# never one a queued or running job names. No SLURM: squeue and scontrol are stubs.

bats_require_minimum_version 1.5.0

setup() {
  load '../helpers/common'
  load '../helpers/stub'
  # shellcheck disable=SC2329 # called by the library
  hpc_say() { printf 'say: %s\n' "$*"; }
  # shellcheck source=virtual_env_hpc_files/venv_runner.bash
  source "$HPC_ROOT/virtual_env_hpc_files/venv_runner.bash"
  # shellcheck source=virtual_env_hpc_files/venv_build.bash
  source "$HPC_ROOT/virtual_env_hpc_files/venv_build.bash"
  src=$BATS_TEST_TMPDIR/project
  builds=$src/.virtual_env_builds
  mkdir -p "$builds"
  printf 'numpy\n' >"$src/requirements.txt"
  hpc_venv_expect "$src"
  # A Python that is here, for the builds' pyvenv.cfg.
  pyhome=$BATS_TEST_TMPDIR/python/bin
  mkdir -p "$pyhome"
  : >"$pyhome/python3.11"
  : >"$pyhome/python3.12"
  chmod +x "$pyhome/python3.11" "$pyhome/python3.12"
}

# build N SYSTEM [VERSION [STAMP]]: a complete build venv-N made by the toolkit, with (SYSTEM true)
# or without the system's packages, of Python VERSION (3.11), for STAMP (the project's
# dependency file as it is).
build() {
  local dir=$builds/venv-$1
  mkdir -p "$dir/bin"
  : >"$dir/bin/activate"
  printf 'home = %s\ninclude-system-site-packages = %s\nversion = %s.4\n' "$pyhome" "$2" "${3:-3.11}" >"$dir/pyvenv.cfg"
  printf '%s' "${4-$hpc_venv_stamp}" >"$dir/.hpc_deps"
  hpc_venv_record "$dir"
}

# no_jobs: SLURM has no queued or running job (the stub of squeue, asked once).
no_jobs() {
  stub squeue "-h --all -o %A|%F|%Z"
}

@test "switching profiles: the other profile's build is kept by the removal after an install, and the switch back finds it ready (no install)" {
  # Profile A (no system packages) built venv-1; profile B (system packages) then built venv-2.
  build 1 false
  build 2 true
  ln -s .virtual_env_builds/venv-2 "$src/virtual_env"
  no_jobs
  hpc_venv_collect "$src" venv-2
  unstub squeue
  [[ -d $builds/venv-1 ]] || fail "profile A's build was removed"
  # Back to profile A: its build is found ready, nothing to build.
  hpc_profile_venv_system_site_packages=false
  hpc_venv_find "$src" "$hpc_venv_stamp"
  assert_equal "$hpc_venv_build" "$builds/venv-1"
  hpc_profile_venv_system_site_packages=true
  hpc_venv_find "$src" "$hpc_venv_stamp"
  assert_equal "$hpc_venv_build" "$builds/venv-2"
}

@test "a profile with another Python keeps its build too; a superseded build of the same kind and builds for an older dependency file go; a build a live job names stays" {
  build 1 false 3.11
  build 2 false 3.12
  build 3 true 3.11 $'requirements.txt\nold\n'
  build 4 true 3.11
  build 5 true 3.11
  build 6 true 3.11
  ln -s .virtual_env_builds/venv-6 "$src/virtual_env"
  # Install job 4 still runs (its build is venv-4).
  stub squeue "-h --all -o %A|%F|%Z : printf '4|4|%s\\n' '$src'"
  stub scontrol "write batch_script 4 - : printf '#!/bin/bash\\n# Usage: sbatch install_venv.sh RUNNER_LIB SOURCE_DIR\\n'"
  hpc_venv_collect "$src" venv-6
  unstub squeue
  unstub scontrol
  assert_equal "$(find "$builds" -mindepth 1 -maxdepth 1 -printf '%f\n' | LC_ALL=C sort | tr '\n' ' ')" \
    "venv-1 venv-2 venv-4 venv-6 "
}
