# shellcheck shell=bash
# venv_runner.bash: the virtual-environment runner on the login side: is there a venv ready for
# the project's dependency file, and if not, an install job that builds one on a compute node
# (virtual_env_hpc_files/install_venv.sh), waited for with its progress shown. Read by the venv
# runner module (hpc_files/lib/runners/venv.bash: its _prepare and _preview), which is also the
# runner on the nodes.
# The install job and the removal of old builds are in venv_build.bash, read only when a build is
# needed: most submissions find theirs ready.
#
# Builds never change in place: each install job N builds ${source_dir}/.virtual_env_builds/venv-N
# (a venv's scripts hold its absolute path, so it is built where it stays), and a job script names
# the build it runs from by its real path. ${source_dir}/virtual_env is a symbolic link to the
# newest build (a plain folder in projects of older versions of the toolkit), switched with one
# rename once no queued or running job names it. After a new build, the builds that no queued or
# running job of the project names (asked of SLURM) are removed; nothing is when SLURM cannot say.
# The newest build of each other kind (with or without the system's packages, another Python: what
# another cluster profile wants) for the same dependency file stays: switching profiles back
# finds its build ready (hpc_venv_find) instead of building again.
# Only a build that holds the toolkit's record that it made it (BUILD/.hpc_build, written by its
# install job before anything else, or when an older plain virtual_env is moved aside) is ever
# removed: a folder of the same name that anyone else made stays.
#
# Two locks in the project: .virtual_env.lock, held by the one submission that builds, and
# .virtual_env.use.lock, held shared by every submission from choosing its build until it has
# been submitted (then SLURM knows), and exclusively by the removal of old builds.

# What this library reads, set by the submitter's libraries: declared here, not set (values
# already there are kept), so that the linter knows each name and catches a misspelt one.
# hpc_submit_locate: hpc_venv_dir; hpc_plan.bash: the plan; the compiled profile.
declare -g hpc_venv_dir hpc_plan_outputs_dir hpc_plan_project_name hpc_plan_source_dir \
  hpc_profile_venv_system_site_packages

# hpc_venv_read FILE: sets hpc_venv_text to FILE's content byte for byte (up to a NUL byte),
# without starting a process.
hpc_venv_read() {
  hpc_venv_text=''
  IFS= read -r -d '' hpc_venv_text <"$1" || true
}

# hpc_venv_expect SOURCE_DIR: sets hpc_venv_deps, the dependency file (Pipfile wins over
# requirements.txt; empty when there is neither), and hpc_venv_stamp, what a venv's .hpc_deps
# holds when it was built from that file as it is now: its name, a newline and its content
# exactly (an empty file, one without a final newline, CRLF lines: each is its own stamp), or
# 'none' and a newline without one. Starts no process: it runs on every submission.
hpc_venv_expect() {
  local f
  hpc_venv_deps=''
  for f in "$1/Pipfile" "$1/requirements.txt"; do
    if [[ -f $f ]]; then
      hpc_venv_deps=$f
      break
    fi
  done
  hpc_venv_stamp=none$'\n'
  if [[ -n $hpc_venv_deps ]]; then
    hpc_venv_read "$hpc_venv_deps"
    hpc_venv_stamp=${hpc_venv_deps##*/}$'\n'$hpc_venv_text
  fi
}

# hpc_venv_is_ready VENV STAMP: true when VENV was built for exactly STAMP, as the cluster profile
# wants it (hpc_venv_built_as). Sets hpc_venv_stale to why not when VENV is a build for STAMP that
# must be built again ('' otherwise).
hpc_venv_is_ready() {
  hpc_venv_stale=''
  [[ -r $1/bin/activate && -r $1/.hpc_deps ]] || return 1
  hpc_venv_read "$1/.hpc_deps"
  [[ $hpc_venv_text == "$2" ]] || return 1
  hpc_venv_built_as "$1"
}

# hpc_venv_built_as VENV: true unless VENV's own pyvenv.cfg (python3 -m venv writes it) shows a
# build that no longer fits: one whose include-system-site-packages differs from the profile's
# choice (hpc_profile_venv_system_site_packages; not checked when that is unset), or whose Python
# is gone (its 'home' folder is here but holds no python<major>.<minor> of its 'version': upgraded
# or removed in place; a 'home' this machine does not have, as a compute node's own, says
# nothing). Sets hpc_venv_stale to why. Starts no process: it runs on every submission.
hpc_venv_built_as() {
  local value system home version want=${hpc_profile_venv_system_site_packages:-}
  [[ -f $1/pyvenv.cfg ]] || return 0
  hpc_venv_cfg "$1"
  system=$hpc_venv_cfg_system home=$hpc_venv_cfg_home version=$hpc_venv_cfg_version
  if [[ -n $want && -n $system && $system != "$want" ]]; then
    if [[ $want == true ]]; then
      hpc_venv_stale="$1 was built without the system's packages, which the cluster profile wants"
    else
      hpc_venv_stale="$1 was built with the system's packages, which the cluster profile does not want"
    fi
    return 1
  fi
  if [[ -n $home && -d $home && $version =~ ^([0-9]+)\.([0-9]+) ]]; then
    value=python${BASH_REMATCH[1]}.${BASH_REMATCH[2]}
    if [[ ! -x $home/$value ]]; then
      hpc_venv_stale="the Python $1 was built with ($home/$value) is gone"
      return 1
    fi
  fi
  return 0
}

# hpc_venv_cfg VENV: what VENV's pyvenv.cfg says (empty where it says nothing, or is missing):
# hpc_venv_cfg_system (include-system-site-packages), hpc_venv_cfg_home (the Python's folder) and
# hpc_venv_cfg_version (its version). Starts no process.
hpc_venv_cfg() {
  local line key value
  hpc_venv_cfg_system='' hpc_venv_cfg_home='' hpc_venv_cfg_version=''
  [[ -f $1/pyvenv.cfg ]] || return 0
  hpc_venv_read "$1/pyvenv.cfg"
  while IFS= read -r line; do
    [[ $line == *=* ]] || continue
    key=${line%%=*} value=${line#*=}
    key=${key//[[:space:]]/}
    value=${value#"${value%%[![:space:]]*}"}
    value=${value%"${value##*[![:space:]]}"}
    case $key in
      include-system-site-packages) hpc_venv_cfg_system=$value ;;
      home) hpc_venv_cfg_home=$value ;;
      version | version_info) hpc_venv_cfg_version=${hpc_venv_cfg_version:-$value} ;;
    esac
  done <<<"$hpc_venv_text"
}

# hpc_venv_real_path DIR: sets hpc_venv_build to DIR's real path, as cd -P and pwd say it; without
# starting a process (this runs at every submission) when DIR is absolute and clean and no folder
# above it is a symbolic link: DIR itself, or the build of .virtual_env_builds beside it that DIR
# links to (virtual_env). False when DIR cannot be entered.
hpc_venv_real_path() {
  local up=${1%/*} build
  if [[ $1 == /* && $1/ != *//* && $1/ != */./* && $1/ != */../* ]]; then
    while [[ -n $up && ! -L $up ]]; do
      up=${up%/*}
    done
    if [[ -z $up && -d $1 ]]; then
      if [[ ! -L $1 ]]; then
        hpc_venv_build=$1
        return 0
      fi
      for build in "${1%/*}/.virtual_env_builds"/venv-*; do
        if [[ ! -L $build && -d $build && $build -ef $1 ]]; then
          hpc_venv_build=$build
          return 0
        fi
      done
    fi
  fi
  hpc_venv_build=$(cd -P -- "$1" && pwd)
}

# hpc_venv_find SOURCE_DIR STAMP: sets hpc_venv_build to the real path of a venv of the project
# built for STAMP: the one virtual_env leads to, else one of .virtual_env_builds (virtual_env may
# still lead to an older build that a job names). False when there is none, hpc_venv_stale then
# saying why virtual_env must be built again when it is a build for STAMP.
hpc_venv_find() {
  local build stale
  hpc_venv_build=''
  if hpc_venv_is_ready "$1/virtual_env" "$2"; then
    hpc_venv_real_path "$1/virtual_env" || return 1
    return 0
  fi
  stale=$hpc_venv_stale
  for build in "$1/.virtual_env_builds"/venv-*; do
    [[ ! -L $build ]] || continue
    hpc_venv_is_ready "$build" "$2" || continue
    hpc_venv_real_path "$build" || return 1
    return 0
  done
  hpc_venv_stale=$stale
  return 1
}

# hpc_venv_record BUILD: writes BUILD/.hpc_build, the toolkit's record that it made BUILD: BUILD's
# name and a newline. False, writing nothing, when BUILD/.hpc_build is there already (any kind).
hpc_venv_record() {
  local record=$1/.hpc_build
  [[ ! -e $record && ! -L $record ]] || return 1
  (set -C && printf '%s\n' "${1##*/}" >"$record")
}

# hpc_venv_recorded BUILD: true when BUILD is a folder of the user's (not a link) holding the
# toolkit's record that it made BUILD: .hpc_build, a regular file of the user's (not a link)
# whose content is BUILD's name and a newline.
hpc_venv_recorded() {
  local record=$1/.hpc_build
  [[ -d $1 && ! -L $1 && -O $1 && -f $record && ! -L $record && -O $record ]] || return 1
  hpc_venv_read "$record"
  [[ $hpc_venv_text == "${1##*/}"$'\n' ]]
}

# hpc_venv_lock FD MODE: flock MODE (-s shared, -x exclusive) on FD, waiting at most an hour
# and a half (an install job's time limit and then some); false when that ran out.
hpc_venv_lock() {
  flock -w 5400 "$2" "$1"
}

# hpc_venv_use SOURCE_DIR STAMP: holds .virtual_env.use.lock shared (until the submitter exits,
# or hpc_venv_unuse), then hpc_venv_find; false when no build is ready.
hpc_venv_use() {
  exec {hpc_venv_use_fd}>>"$1/.virtual_env.use.lock" || hpc_die "cannot open $1/.virtual_env.use.lock"
  hpc_venv_lock "$hpc_venv_use_fd" -s || hpc_die "cannot lock $1/.virtual_env.use.lock (waited 90 minutes)"
  hpc_venv_find "$1" "$2"
}

# hpc_venv_unuse: lets go of .virtual_env.use.lock.
hpc_venv_unuse() {
  exec {hpc_venv_use_fd}>&-
}

# shellcheck disable=SC2034 # hpc_plan_venv is read by hpc_plan_render
# hpc_venv_ensure: makes sure a venv built for the project's dependency file is ready, else
# submits the install job and waits; sets hpc_plan_venv to the real path of that build, which the
# job script names. Dies with the install log's path when the install fails.
hpc_venv_ensure() {
  hpc_venv_expect "$hpc_plan_source_dir"
  if hpc_venv_use "$hpc_plan_source_dir" "$hpc_venv_stamp"; then
    hpc_plan_venv=$hpc_venv_build
    return 0
  fi
  hpc_venv_unuse
  # Building is rare: its code is read only then.
  # shellcheck source=virtual_env_hpc_files/venv_build.bash
  source "$hpc_venv_dir/venv_build.bash"
  hpc_venv_install
}
