# shellcheck shell=bash
# venv_runner.bash: the virtual-environment runner on the login side: is there a venv ready for
# the project's dependency file, and if not, an install job that builds one on a compute node
# (virtual_env_hpc_files/install_venv.sh), waited for with its progress shown.
# On the nodes the runner is hpc_job_task's 'venv' case (hpc_files/lib/hpc_job.bash).
#
# Builds never change in place: each install job N builds ${source_dir}/.virtual_env_builds/venv-N
# (a venv's scripts hold its absolute path, so it is built where it stays), and a job script names
# the build it runs from by its real path. ${source_dir}/virtual_env is a symbolic link to the
# newest build (a plain folder in projects of older versions of the toolkit), switched with one
# rename once no queued or running job names it. After a new build, the builds that no queued or
# running job of the project names (asked of SLURM) are removed; nothing is when SLURM cannot say.
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

# hpc_venv_is_ready VENV STAMP: true when VENV was built for exactly STAMP.
hpc_venv_is_ready() {
  [[ -r $1/bin/activate && -r $1/.hpc_deps ]] || return 1
  hpc_venv_read "$1/.hpc_deps"
  [[ $hpc_venv_text == "$2" ]]
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
# still lead to an older build that a job names). False when there is none.
hpc_venv_find() {
  local build
  hpc_venv_build=''
  if hpc_venv_is_ready "$1/virtual_env" "$2"; then
    hpc_venv_real_path "$1/virtual_env" || return 1
    return 0
  fi
  for build in "$1/.virtual_env_builds"/venv-*; do
    [[ ! -L $build ]] || continue
    hpc_venv_is_ready "$build" "$2" || continue
    hpc_venv_real_path "$build" || return 1
    return 0
  done
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

# hpc_venv_live_jobs SOURCE_DIR: asks SLURM about the queued and running jobs of the project
# (working directory SOURCE_DIR): sets hpc_venv_live_ids (their job ids, one per line) and
# hpc_venv_live_scripts (their job scripts, one after the other). False when SLURM cannot say.
hpc_venv_live_jobs() {
  local listing id array_id dir script
  local -A seen=()
  hpc_venv_live_ids='' hpc_venv_live_scripts=''
  listing=$(squeue -h --all -o '%A|%F|%Z' 2>/dev/null) || return 1
  while IFS='|' read -r id array_id dir; do
    [[ -n $id && $dir == "$1" ]] || continue
    hpc_venv_live_ids+=$id$'\n'
    # The tasks of an array share their array job's script.
    [[ -z ${seen[$array_id]:-} ]] || continue
    seen[$array_id]=1
    # scontrol exits 0 even when it found no script: a script starts with #!.
    script=$(scontrol write batch_script "$array_id" - 2>/dev/null) || return 1
    [[ $script == '#!'* ]] || return 1
    hpc_venv_live_scripts+=$script$'\n'
  done <<<"$listing"
}

# hpc_venv_link SOURCE_DIR BUILD_NAME: makes SOURCE_DIR/virtual_env a symbolic link to
# .virtual_env_builds/BUILD_NAME with one rename. A plain virtual_env that the toolkit built (it
# has .hpc_deps) is moved among the builds first, with the record that the toolkit put it there;
# anything else there is left alone.
hpc_venv_link() {
  local link=$1/virtual_env new=$1/.virtual_env.new.$$ legacy=$1/.virtual_env_builds/venv-legacy-$$
  if [[ -d $link && ! -L $link ]]; then
    [[ -f $link/.hpc_deps ]] || return 0
    mv -T -- "$link" "$legacy" || return 1
    hpc_venv_record "$legacy" || hpc_say "could not record that the toolkit moved $link to $legacy: it will not be removed"
  elif [[ -L $link ]]; then
    [[ $(readlink -- "$link") == .virtual_env_builds/venv-* ]] || return 0
  elif [[ -e $link ]]; then
    return 0
  fi
  ln -s -- ".virtual_env_builds/$2" "$new" || return 1
  mv -T -- "$new" "$link" || {
    rm -f -- "${new:?}"
    return 1
  }
}

# hpc_venv_collect SOURCE_DIR BUILD_NAME: after BUILD_NAME was built: points virtual_env to it
# unless a queued or running job names virtual_env itself, then removes every other build that
# none names, whose install job is over and that holds the toolkit's record (hpc_venv_recorded);
# those without it are named once. Call with .virtual_env.use.lock held exclusively.
# Removes nothing, and leaves virtual_env as it is, when SLURM cannot say.
hpc_venv_collect() {
  local builds=$1/.virtual_env_builds build name linked='' link_q others=0 unrecorded=''
  [[ -d $builds && ! -L $builds ]] || return 0
  for build in "$builds"/venv-*; do
    [[ ! -e $build || ${build##*/} == "$2" ]] || others=$((others + 1))
  done
  # The first build of a project: nothing to ask SLURM.
  if ((others == 0)) && [[ ! -e $1/virtual_env && ! -L $1/virtual_env ]]; then
    hpc_venv_link "$1" "$2" || hpc_say "could not make $1/virtual_env a link to $builds/$2"
    return 0
  fi
  if ! hpc_venv_live_jobs "$1"; then
    hpc_say "SLURM could not say which jobs use the project's virtual environments: none was removed, and $1/virtual_env was left as it is"
    return 0
  fi
  printf -v link_q '%q' "$1/virtual_env"
  if [[ $hpc_venv_live_scripts == *"$link_q"* ]]; then
    hpc_say "a queued or running job runs from $1/virtual_env: it stays as it is; new jobs use $builds/$2"
  else
    hpc_venv_link "$1" "$2" || hpc_say "could not make $1/virtual_env a link to $builds/$2"
  fi
  [[ ! -L $1/virtual_env ]] || linked=$(readlink -- "$1/virtual_env") || return 0
  for build in "$builds"/venv-*; do
    name=${build##*/}
    # Only the names the toolkit gives (venv-JOBID, and venv-legacy-PID for an older plain venv).
    [[ $name =~ ^venv-(legacy-)?[0-9]+$ && -d $build && ! -L $build ]] || continue
    [[ $name != "$2" && $linked != ".virtual_env_builds/$name" ]] || continue
    # A job script names its build by its path; an install job's build is named by its id.
    [[ $hpc_venv_live_scripts != *"/.virtual_env_builds/$name"* ]] || continue
    [[ $'\n'$hpc_venv_live_ids != *$'\n'"${name#venv-}"$'\n'* ]] || continue
    if ! hpc_venv_recorded "$build"; then
      unrecorded+=" $name"
      continue
    fi
    rm -rf --one-file-system -- "${build:?}" || hpc_say "could not remove the unused $build"
  done
  [[ -z $unrecorded ]] ||
    hpc_say "left in $builds, with no record that the toolkit made them:$unrecorded"
}

# shellcheck disable=SC2034 # hpc_plan_venv is read by hpc_plan_render
# hpc_venv_ensure: makes sure a venv built for the project's dependency file is ready, else
# submits the install job and waits; sets hpc_plan_venv to the real path of that build, which the
# job script names. Dies with the install log's path when the install fails.
hpc_venv_ensure() {
  local src=$hpc_plan_source_dir id log state last='' start=$SECONDS sbatch_args=() lock_fd build
  hpc_venv_expect "$src"
  if hpc_venv_use "$src" "$hpc_venv_stamp"; then
    hpc_plan_venv=$hpc_venv_build
    return 0
  fi
  hpc_venv_unuse

  # One install at a time per project: concurrent submissions wait for it, then find it ready.
  exec {lock_fd}>>"$src/.virtual_env.lock" || hpc_die "cannot open $src/.virtual_env.lock"
  if ! flock -n "$lock_fd"; then
    hpc_say "another submission is building the virtual environment; waiting for it"
    hpc_venv_lock "$lock_fd" -x || hpc_die "cannot lock $src/.virtual_env.lock (waited 90 minutes)"
  fi
  hpc_venv_expect "$src"
  if hpc_venv_use "$src" "$hpc_venv_stamp"; then
    exec {lock_fd}>&-
    hpc_plan_venv=$hpc_venv_build
    return 0
  fi
  hpc_venv_unuse

  if [[ -z $hpc_venv_deps ]]; then
    hpc_say "no Pipfile or requirements.txt in $src: the virtual environment will be empty"
  elif [[ -e $src/virtual_env ]]; then
    hpc_say "${hpc_venv_deps##*/} changed since $src/virtual_env was built: building it again"
  else
    hpc_say "no virtual environment yet: building $src/virtual_env from ${hpc_venv_deps##*/}"
  fi
  log=$hpc_plan_outputs_dir/venv_install_%j.out
  sbatch_args=(--parsable --job-name="$hpc_plan_project_name-venv-install" --nodes=1 --ntasks=1
    --cpus-per-task=1 --mem=2G --time=00-01:00:00
    --output="$log" --chdir="$src")
  [[ -z $hpc_plan_account ]] || sbatch_args+=(--account="$hpc_plan_account")
  [[ -z $hpc_plan_partition ]] || sbatch_args+=(--partition="$hpc_plan_partition")
  id=$(unset SLURM_TMPDIR && sbatch "${sbatch_args[@]}" "$hpc_venv_dir/install_venv.sh" "$hpc_venv_dir/venv_runner.bash" \
    "$src" "$hpc_profile_venv_system_site_packages") || hpc_die "sbatch refused the virtual environment's install job"
  id=${id%%;*}
  log=${log//%j/$id}
  hpc_say "install job $id submitted; its log: $log"
  while :; do
    state=$(squeue -h -j "$id" -o '%T' 2>/dev/null) || state=
    [[ -n $state ]] || break
    if [[ $state != "$last" ]]; then
      hpc_say "install job $id: $state ($((SECONDS - start)) s)"
      last=$state
    fi
    sleep 1
  done
  build=$src/.virtual_env_builds/venv-$id
  if ! hpc_venv_is_ready "$build" "$hpc_venv_stamp"; then
    exec {lock_fd}>&-
    if [[ -e $src/virtual_env ]]; then
      hpc_die "the virtual environment's install job $id failed; nothing was submitted, and jobs keep using $src/virtual_env as it was. Its log: $log"
    fi
    hpc_die "the virtual environment's install job $id failed; nothing was submitted. Its log: $log"
  fi
  # Old builds go only when no other submission is between choosing its build and sbatch.
  exec {hpc_venv_use_fd}>>"$src/.virtual_env.use.lock" || hpc_die "cannot open $src/.virtual_env.use.lock"
  if flock -w 5 -x "$hpc_venv_use_fd"; then
    hpc_venv_collect "$src" "venv-$id"
  else
    hpc_say "other submissions are under way: the project's old virtual environments are kept for now"
  fi
  hpc_venv_unuse
  hpc_venv_use "$src" "$hpc_venv_stamp" || hpc_die "the virtual environment $build went away after its install job $id"
  exec {lock_fd}>&-
  hpc_plan_venv=$hpc_venv_build
  hpc_say "install job $id: the virtual environment is ready ($((SECONDS - start)) s)"
}
