# shellcheck shell=bash
# venv_build.bash: the part of venv_runner.bash that builds: the install job, submitted and
# waited for, and the switch of virtual_env to the new build and the removal of old builds
# (the design: venv_runner.bash). Loaded by hpc_venv_ensure only when no build is ready.

# What this library reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# venv_runner.bash: its results; hpc_submit_locate: hpc_venv_dir; the plan; the compiled profile; hpc_facts.bash: the
# plan file a job script names; hpc_slurm.bash: sbatch's answer.
declare -g hpc_facts_script_plan hpc_venv_build hpc_venv_deps hpc_venv_stale hpc_venv_stamp hpc_venv_dir \
  hpc_venv_text hpc_venv_cfg_system hpc_venv_cfg_home hpc_venv_cfg_version \
  hpc_plan_outputs_dir hpc_slurm_id hpc_slurm_error hpc_slurm_answer \
  hpc_plan_project_name hpc_plan_source_dir hpc_plan_account hpc_plan_partition \
  hpc_profile_venv_system_site_packages
# The SLURM client: the submitter has loaded it (hpc_manifest.bash), the install job (whose
# removal of old builds asks SLURM too) has not. It lies in lib/ beside this file's folder in an
# installed project, in hpc_files/lib/ in the repository.
if ! declare -F hpc_slurm >/dev/null; then
  hpc_venv_client=${BASH_SOURCE[0]%/*/*}/lib/hpc_slurm.bash
  [[ -f $hpc_venv_client ]] || hpc_venv_client=${BASH_SOURCE[0]%/*/*}/hpc_files/lib/hpc_slurm.bash
  # shellcheck source=hpc_files/lib/hpc_slurm.bash
  source "$hpc_venv_client"
fi

# shellcheck disable=SC2034 # hpc_plan_venv is read by hpc_plan_render
# hpc_venv_install: (hpc_venv_ensure, no build ready) builds the venv by an install job, one
# submission at a time per project, and sets hpc_plan_venv as hpc_venv_ensure does.
hpc_venv_install() {
  local src=$hpc_plan_source_dir id log state last='' start=$SECONDS sbatch_args=() lock_fd build msg
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

  hpc_venv_say_why "$src"
  log=$hpc_plan_outputs_dir/venv_install_%j.out
  sbatch_args=(--job-name="$hpc_plan_project_name-venv-install" --nodes=1 --ntasks=1
    --cpus-per-task=1 --mem=2G --time=00-01:00:00
    --output="$log" --chdir="$src")
  [[ -z $hpc_plan_account ]] || sbatch_args+=(--account="$hpc_plan_account")
  [[ -z $hpc_plan_partition ]] || sbatch_args+=(--partition="$hpc_plan_partition")
  if ! hpc_slurm_sbatch "the virtual environment's install job" '' "${sbatch_args[@]}" "$hpc_venv_dir/install_venv.sh" \
    "$hpc_venv_dir/venv_runner.bash" "$src" "$hpc_profile_venv_system_site_packages"; then
    # sbatch's own words, then what failed.
    printf '%s\n' "$hpc_slurm_answer" >&2
    hpc_die "${hpc_slurm_error%%: *}"
  fi
  id=$hpc_slurm_id
  log=${log//%j/$id}
  hpc_say "install job $id submitted; its log: $log"
  # Interrupted while waiting: the install job goes on, and the next submission uses its build.
  trap 'hpc_venv_interrupted "$id" "$log" 130' INT
  trap 'hpc_venv_interrupted "$id" "$log" 143' TERM
  trap 'hpc_venv_interrupted "$id" "$log" 129' HUP
  while :; do
    state=$(hpc_slurm squeue -h -j "$id" -o '%T' 2>/dev/null) || state=
    [[ -n $state ]] || break
    if [[ $state != "$last" ]]; then
      hpc_say "install job $id: $state ($((SECONDS - start)) s)"
      last=$state
    fi
    sleep 1
  done
  trap - INT TERM HUP
  build=$src/.virtual_env_builds/venv-$id
  if ! hpc_venv_is_ready "$build" "$hpc_venv_stamp"; then
    exec {lock_fd}>&-
    if [[ -e $src/virtual_env ]]; then
      msg="the virtual environment's install job $id failed; nothing was submitted, and jobs keep using"
      msg+=" $src/virtual_env as it was. Its log: $log"
      hpc_die "$msg"
    fi
    hpc_die "the virtual environment's install job $id failed; nothing was submitted. Its log: $log"
  fi
  # Old builds go only when no other submission is between choosing its build and sbatch. The
  # install job did it at its end (install_venv.sh) unless it found that lock held.
  exec {hpc_venv_use_fd}>>"$src/.virtual_env.use.lock" || hpc_die "cannot open $src/.virtual_env.use.lock"
  if [[ $(readlink -- "$src/virtual_env" 2>/dev/null) == ".virtual_env_builds/venv-$id" ]]; then
    :
  elif flock -w 5 -x "$hpc_venv_use_fd"; then
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

# hpc_venv_say_why SOURCE_DIR: (in hpc_venv_install, after hpc_venv_expect) says why the project's
# virtual environment is being built.
hpc_venv_say_why() {
  local msg
  if [[ -n $hpc_venv_stale ]]; then
    hpc_say "$hpc_venv_stale: building it again"
  elif [[ -z $hpc_venv_deps ]]; then
    msg="no Pipfile or requirements.txt in $1: the virtual environment "
    if [[ $hpc_profile_venv_system_site_packages == true ]]; then
      # Not a failure: a project whose packages the cluster provides (torch) needs no file.
      msg+="gets no packages of its own; it sees the system's (torch included where the cluster has it), as"
      msg+=" the cluster profile says"
    else
      msg+="will be empty (the cluster profile keeps the system's packages out of it)"
    fi
    hpc_say "$msg"
  elif [[ -e $1/virtual_env ]]; then
    hpc_say "${hpc_venv_deps##*/} changed since $1/virtual_env was built: building it again"
  else
    hpc_say "no virtual environment yet: building $1/virtual_env from ${hpc_venv_deps##*/}"
  fi
}

# hpc_venv_interrupted ID LOG STATUS: (a signal while waiting for install job ID) says that
# nothing was submitted and that the install job goes on, and exits STATUS.
hpc_venv_interrupted() {
  trap - INT TERM HUP
  local msg="interrupted while waiting for the virtual environment: nothing was submitted; install job $1 goes on"
  msg+=" (its log: $2) and points virtual_env to its build when it succeeds (cancel it with: scancel $1)"
  hpc_say "$msg"
  exit "$3"
}

# hpc_venv_live_jobs SOURCE_DIR: asks SLURM about the queued and running jobs of the project
# (working directory SOURCE_DIR): sets hpc_venv_live_ids (their job ids, one per line),
# hpc_venv_live_scripts (their job scripts, one after the other) and hpc_venv_live_foreign (the
# ids of those the toolkit did not write: neither a job script of its own nor an install job,
# whose use of virtual_env cannot be read from them: a relative 'source virtual_env/...' of the
# user's own). False when SLURM cannot say.
hpc_venv_live_jobs() {
  local listing id array_id dir script plan
  local -A seen=()
  hpc_venv_live_ids='' hpc_venv_live_scripts='' hpc_venv_live_foreign=''
  listing=$(hpc_slurm squeue -h --all -o '%A|%F|%Z' 2>/dev/null) || return 1
  while IFS='|' read -r id array_id dir; do
    [[ -n $id && $dir == "$1" ]] || continue
    hpc_venv_live_ids+=$id$'\n'
    # The tasks of an array share their array job's script.
    [[ -z ${seen[$array_id]:-} ]] || continue
    seen[$array_id]=1
    # scontrol exits 0 even when it found no script: a script starts with #!.
    script=$(hpc_slurm scontrol write batch_script "$array_id" - 2>/dev/null) || return 1
    [[ $script == '#!'* ]] || return 1
    hpc_venv_live_scripts+=$script$'\n'
    # A job of the toolkit names its venv in its plan file (hpc_plan_venv=...), which its script
    # names: read too; one that cannot be read, or a name that cannot be, leaves SLURM's answer
    # incomplete (its build would look unused).
    if [[ $script != *$'\n'"hpc_job_main "* && $script != *$'\n''# Usage: sbatch install_venv.sh '* ]]; then
      hpc_venv_live_foreign+=${hpc_venv_live_foreign:+ }$array_id
    fi
    if [[ $script == *$'\n'"hpc_job_main "* ]]; then
      hpc_facts_script_plan "$script" || return 1
      plan=''
      [[ -f $hpc_facts_script_plan ]] && { IFS= read -r -d '' plan <"$hpc_facts_script_plan" || [[ -n $plan ]]; } ||
        return 1
      hpc_venv_live_scripts+=$plan$'\n'
    fi
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
    hpc_venv_record "$legacy" ||
      hpc_say "could not record that the toolkit moved $link to $legacy: it will not be removed"
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

# hpc_venv_kind BUILD: sets hpc_venv_kind to what makes BUILD fit one cluster profile and not
# another (hpc_venv_built_as): with or without the system's packages, and its Python (folder and
# major.minor version), from its pyvenv.cfg.
hpc_venv_kind() {
  local version
  hpc_venv_cfg "$1"
  version=$hpc_venv_cfg_version
  [[ ! $version =~ ^([0-9]+)\.([0-9]+) ]] || version=${BASH_REMATCH[1]}.${BASH_REMATCH[2]}
  hpc_venv_kind="system=$hpc_venv_cfg_system python=$hpc_venv_cfg_home/$version"
}

# hpc_venv_collect SOURCE_DIR BUILD_NAME: after BUILD_NAME was built: points virtual_env to it
# unless a queued or running job names virtual_env itself, then removes every other build that
# none names, whose install job is over and that holds the toolkit's record (hpc_venv_recorded),
# but the newest of each other kind (hpc_venv_kind) built from the same dependency file: another
# cluster profile's; those without the record are named once. Call with .virtual_env.use.lock
# held exclusively.
# Removes nothing, and leaves virtual_env as it is, when SLURM cannot say.
hpc_venv_collect() {
  local builds=$1/.virtual_env_builds build name linked='' link_q others=0 unrecorded='' msg
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
    msg="SLURM could not say which jobs use the project's virtual environments: none was removed, and"
    msg+=" $1/virtual_env was left as it is"
    hpc_say "$msg"
    return 0
  fi
  # A job of the project that the toolkit did not write may use virtual_env by any path, at any
  # time: the link and every build stay while one is queued or running.
  if [[ -n $hpc_venv_live_foreign ]]; then
    msg="job(s) $hpc_venv_live_foreign of the project, not the toolkit's, are queued or running and may use"
    msg+=" $1/virtual_env: it and every build stay as they are (new jobs use $builds/$2)"
    hpc_say "$msg"
    return 0
  fi
  printf -v link_q '%q' "$1/virtual_env"
  if [[ $hpc_venv_live_scripts == *"$link_q"* ]]; then
    hpc_say "a queued or running job runs from $1/virtual_env: it stays as it is; new jobs use $builds/$2"
  else
    hpc_venv_link "$1" "$2" || hpc_say "could not make $1/virtual_env a link to $builds/$2"
  fi
  [[ ! -L $1/virtual_env ]] || linked=$(readlink -- "$1/virtual_env") || return 0
  # One build of each kind (hpc_venv_kind) for the dependency file BUILD_NAME was made from stays,
  # the newest: switching between two profiles that want different venvs (with or without the
  # system's packages, another Python) switches between their builds, never builds back and forth.
  local stamp='' order
  local -A kinds=()
  if [[ -f $builds/$2/.hpc_deps ]]; then
    hpc_venv_read "$builds/$2/.hpc_deps"
    stamp=$hpc_venv_text
  fi
  hpc_venv_kind "$builds/$2"
  kinds[$hpc_venv_kind]=1
  # Newest first: venv-JOBID by its job id (an older plain venv moved aside, venv-legacy-PID, last).
  mapfile -t order < <(for build in "$builds"/venv-*; do
    name=${build##*/}
    [[ $name =~ ^venv-[0-9]+$ ]] && printf '%s %s\n' "${name#venv-}" "$name" || printf '0 %s\n' "$name"
  done | LC_ALL=C sort -k1,1nr -k2 | cut -d' ' -f2-)
  for name in ${order[@]+"${order[@]}"}; do
    build=$builds/$name
    # Only the names the toolkit gives (venv-JOBID, and venv-legacy-PID for an older plain venv).
    [[ $name =~ ^venv-(legacy-)?[0-9]+$ && -d $build && ! -L $build ]] || continue
    if [[ -n $stamp && -r $build/.hpc_deps ]]; then
      hpc_venv_read "$build/.hpc_deps"
      if [[ $hpc_venv_text == "$stamp" ]]; then
        hpc_venv_kind "$build"
        [[ -n ${kinds[$hpc_venv_kind]-} ]] || {
          kinds[$hpc_venv_kind]=1
          continue
        }
      fi
    fi
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
