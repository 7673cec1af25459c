#!/usr/bin/env bats
# Compiled cluster profiles (hpc_profile.bash): the cache of each profile's shell file is used
# only when it was made from the same YAML by the same version of the Python helpers.

setup() {
  load '../helpers/common'
  hpc_files_dir=$HPC_ROOT/hpc_files hpc_python_helpers_dir=$HPC_ROOT/python_helpers
  # shellcheck source=hpc_files/lib/hpc_common.bash
  source "$hpc_files_dir/lib/hpc_common.bash"
  # shellcheck source=hpc_files/lib/hpc_profile.bash
  source "$hpc_files_dir/lib/hpc_profile.bash"
  export HPC_CACHE_DIR=$BATS_TEST_TMPDIR/cache PYTHONDONTWRITEBYTECODE=1
  cache=$HPC_CACHE_DIR/$hpc_profile_cache_sub/local.sh hpc_profile_description=
}

# mark_cache: changes the compiled description in the cache, so that its use shows.
mark_cache() {
  sed -i "s/^hpc_profile_description=.*/hpc_profile_description=from-the-cache/" "$cache"
  grep -qx 'hpc_profile_description=from-the-cache' "$cache"
}

@test "profile cache: used when made from the same YAML by the same helpers' version" {
  hpc_profile_load local
  [[ -f $cache ]]
  mark_cache
  hpc_profile_load local
  assert_equal "$hpc_profile_description" from-the-cache
}

@test "profile cache: a cache written by another version of the helpers is compiled again" {
  hpc_profile_load local
  mark_cache
  grep -q '^hpc_profile_source_version=' "$cache"
  sed -i 's/^hpc_profile_source_version=.*/hpc_profile_source_version=0.0.1/' "$cache"
  hpc_profile_load local
  [[ $hpc_profile_description != from-the-cache ]]
  run grep -c 'from-the-cache' "$cache"
  assert_output 0
  # A cache from before versions were recorded is compiled again too.
  mark_cache
  sed -i '/^hpc_profile_source_version=/d' "$cache"
  hpc_profile_load local
  [[ $hpc_profile_description != from-the-cache ]]
}

@test "profile cache: the helpers' version it is keyed by is the package's (__version__)" {
  hpc_profile_read_helpers_version
  [[ -n $hpc_profile_helpers_version ]]
  run env PYTHONPATH="$hpc_python_helpers_dir/src" python3 -c 'import hpc_helpers; print(hpc_helpers.__version__)'
  assert_output "$hpc_profile_helpers_version"
}
