# shellcheck shell=bash
# hpc_map.bash: map + gather after submission: resubmit --failed, gather EXP, the status of a
# map's tasks, and the job's side (a task's variables and status, the gather's first step). The
# design, and what is done at submission: hpc_map_submit.bash, loaded here first. Loaded by the
# management commands, and by the job only for the modes 'map' and 'gather'.

# shellcheck source=hpc_files/lib/hpc_map_submit.bash
source "${BASH_SOURCE[0]%/*}/hpc_map_submit.bash"

# What this file reads, set by hpc_common.bash (hpc_trusted_read): declared here, not set.
declare -g hpc_trusted_problem hpc_trusted_text

# hpc_map_helpers ARGS...: python -m hpc_helpers.followup ARGS on the login node.
hpc_map_helpers() {
  local py
  py=$(hpc_python_for_helpers) || return 1
  PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$hpc_python_helpers_dir/src${PYTHONPATH:+:$PYTHONPATH}" "$py" -m hpc_helpers.followup "$@"
}

# hpc_map_lock DIR: locks the map folder DIR (flock, held until this shell exits; at most 60 s
# of waiting): resubmit --failed and gather EXP both read manifest.json's ids and write them
# back, and each must see the other's.
hpc_map_lock() {
  local lock_fd
  if ! { exec {lock_fd}<"$1"; } || ! flock -w 60 "$lock_fd"; then
    hpc_die "cannot lock the map folder ${1##*/} within 60 s: a resubmit --failed or gather of it still runs (or its file system has no locks)"
  fi
}

# hpc_map_jobs_live FILE ID...: true when one of the jobs ID (read from FILE) is pending or
# running. Exit 1 when an ID is not a job id (FILE edited by hand: squeue would refuse the whole
# list) or squeue fails otherwise than for ids that SLURM has all forgotten: neither is taken
# for "nothing runs".
hpc_map_jobs_live() {
  local file=$1 id out
  shift
  for id; do
    [[ $id =~ ^[0-9]+$ ]] || hpc_die "$file holds '$id', which is not a job id; nothing was submitted"
  done
  (($#)) || return 1
  if ! out=$(exec squeue -h -j "$(IFS=, && printf '%s' "$*")" -o %i 2>&1); then
    [[ $out == *'Invalid job id specified'* ]] && return 1
    hpc_die "squeue failed: ${out//$'\n'/ }; nothing was submitted"
  fi
  [[ -n $out ]]
}

# hpc_map_keep_attempt DIR N NAME...: before a task or run is submitted again, its DIR/NAME.json
# (each a file, not a link) become DIR/NAME.attempt<M>.json, M the first number from N at which
# none of these names exists: a planted name (a link to a folder, a FIFO, a file the toolkit did
# not make) is never moved into, followed or replaced.
hpc_map_keep_attempt() {
  local dir=$1 n=$2 name taken=1
  shift 2
  [[ -d $dir && ! -L $dir ]] || return 0
  while ((taken)); do
    taken=0
    for name; do
      [[ ! -e $dir/$name.attempt$n.json && ! -L $dir/$name.attempt$n.json ]] || taken=1
    done
    ((taken == 0)) || n=$((n + 1))
  done
  for name; do
    if [[ -f $dir/$name.json && ! -L $dir/$name.json ]]; then
      mv -fT -- "$dir/$name.json" "$dir/$name.attempt$n.json" || true
    fi
  done
}

# hpc_map_old_plan MANIFEST: (a resubmission that changes values) sets hpc_map_old_plan to the
# plan file that the manifest MANIFEST names, and hpc_map_old_plan_text to its text; loads
# hpc_plan.bash (its files) when it is not. Exit 1, having submitted nothing, when there is none
# (the job is then submitted again from the start), or it fails hpc_trusted_check.
hpc_map_old_plan() {
  hpc_map_old_plan='' hpc_map_old_plan_text=''
  ! hpc_manifest_read "$1" || hpc_map_old_plan=${hpc_mf[plan]-}
  if [[ -z $hpc_map_old_plan || ! -e $hpc_map_old_plan && ! -L $hpc_map_old_plan ]]; then
    hpc_die "the plan file '${hpc_map_old_plan:-(none recorded)}' of job ${hpc_mf[job_id]:-?} is gone; submit again with: bash job_submitter.sh$(printf ' %q' ${hpc_mf_argv[@]+"${hpc_mf_argv[@]}"})"
  fi
  # Its text goes into a new plan file of this user, which the job trusts: read as the job would.
  hpc_trusted_read "$hpc_map_old_plan" ||
    hpc_die "the plan file '$hpc_map_old_plan' of job ${hpc_mf[job_id]:-?} $hpc_trusted_problem: not read; nothing was submitted"
  hpc_map_old_plan_text=$hpc_trusted_text
  if ! declare -F hpc_plan_write_file >/dev/null; then
    # shellcheck source=hpc_files/lib/hpc_plan.bash
    source "${BASH_SOURCE[0]%/*}/hpc_plan.bash"
  fi
}

# hpc_map_resubmit_undo MESSAGE [ID...]: (resubmit --failed failed) cancels the jobs ID it
# submitted, removes the plan files it wrote, and exits 1 with MESSAGE.
hpc_map_resubmit_undo() {
  local message=$1
  shift
  hpc_submit_scancel "$@"
  hpc_plan_unwrite
  hpc_die "$message"
}

# hpc_map_resubmit_signalled ID...: (resubmit --failed, signals deferred) when a signal came, cancels
# the jobs ID it submitted (held), removes the plan files it wrote, and ends by the signal.
hpc_map_resubmit_signalled() {
  [[ -n ${hpc_submit_signal:-} ]] || return 0
  hpc_submit_scancel "$@"
  hpc_plan_unwrite
  hpc_submit_stop "stopped by SIG$hpc_submit_signal; the resubmission (jobs $*) was cancelled"
}

# hpc_map_resubmit_failed ROOT: (resubmit EXP --failed, ROOT the experiment's map folders) re-runs
# the indices of the newest map whose newest attempt did not succeed (FAILED, TIMEOUT, LOST,
# NODE_FAIL, CANCELLED...) as one held array with the frozen items and the same throttle, in the
# same folder (their old status.json kept as status.attempt<N>.json; other tasks' folders are not
# touched), then a new gather after it, and releases it. Exit 1 while the map still runs.
hpc_map_resubmit_failed() {
  local dir info line first='' throttle='' array_ids='' gather_ids='' failed='' attempt=2
  hpc_map_newest_dir "$1" "resubmit --failed"
  dir=$hpc_map_dir
  [[ ! -L $dir/tasks ]] || hpc_die "$dir/tasks is a symbolic link: a map's tasks are never followed; nothing was submitted"
  # One resubmission of a map at a time: two at once both read the same failed indices and ran
  # them twice.
  hpc_map_lock "$dir"
  # Its record names the jobs and the failed tasks: read only as the user's own.
  hpc_trusted_check "$dir/manifest.json" || hpc_die "the map's record $dir/manifest.json $hpc_trusted_problem: not read; nothing was submitted"
  info=$(hpc_map_helpers map-info --dir "$dir") || hpc_die "cannot read the map in $dir (see above)"
  while IFS= read -r line; do
    case $line in
      first=*) first=${line#*=} ;;
      throttle=*) throttle=${line#*=} ;;
      array_ids=*) array_ids=${line#*=} ;;
      gather_ids=*) gather_ids=${line#*=} ;;
      failed=*) failed=${line#*=} ;;
      attempt=*) attempt=${line#*=} ;;
    esac
  done <<<"$info"
  [[ -n $first ]] || hpc_die "cannot read the map in $dir"
  local -a ids indices
  read -ra ids <<<"$array_ids"
  read -ra indices <<<"$failed"
  if hpc_map_jobs_live "$dir/manifest.json" ${ids[@]+"${ids[@]}"}; then
    hpc_die "the map ${dir##*/} still has tasks pending or running; resubmit --failed once its array has ended"
  fi
  if ((${#indices[@]} == 0)); then
    printf 'Nothing to resubmit: every task of map %s succeeded.\n' "${dir##*/}"
    return 0
  fi
  local script i spec new_id gather_id='' out
  for i in "${indices[@]}"; do
    # A task may have replaced its folder by a link: its earlier status would be moved, and the
    # new attempt would write, through it.
    [[ ! -L $dir/tasks/$i ]] ||
      hpc_die "$dir/tasks/$i is a symbolic link: a task's folder is never followed; remove the link (task $i then runs again into a new folder) and resubmit; nothing was submitted"
  done
  [[ -e $dir/task.sh || -L $dir/task.sh ]] || hpc_die "the map's kept task script $dir/task.sh is gone"
  hpc_trusted_read "$dir/task.sh" || hpc_die "the map's kept task script $dir/task.sh $hpc_trusted_problem: not run; nothing was submitted"
  script=${hpc_trusted_text%$'\n'}
  local gather_text=''
  if [[ -e $dir/gather.sh || -L $dir/gather.sh ]]; then
    hpc_trusted_read "$dir/gather.sh" || hpc_die "the map's kept gather script $dir/gather.sh $hpc_trusted_problem: not run; nothing was submitted"
    gather_text=$hpc_trusted_text
  fi
  script=${script%$'\n'hpc_job_main *}
  # The array's plan, with this resubmission's values appended (the last assignment wins): one
  # new plan file per part, which its job script names.
  local plan plan_text
  hpc_map_old_plan "${hpc_manage_file[${ids[0]}]-}"
  plan=$hpc_map_old_plan plan_text=$hpc_map_old_plan_text
  printf -v plan_text '%s# resubmit --failed: the same map folder, attempt %s.\nhpc_plan_map_dir=%q\nhpc_plan_map_attempt=%q\n' \
    "$plan_text" "$attempt" "$dir" "$attempt"
  hpc_manifest_ranges "${indices[@]}"
  local ranges=$hpc_manifest_ranges max size start k text
  local -a chunk=() part_specs=() part_lists=() new_ids=() after=()
  hpc_manifest_check_array_size 0 0
  max=${hpc_manifest_max_array_size:-}
  # Parts of at most MaxArraySize indices, each after the one before (afterany, so that the
  # throttle holds for the whole resubmission), as the first submission split the map. An index
  # at or above MaxArraySize cannot be a task id: such a part has task ids 0..N-1, each mapped to
  # its index by the list in the script (hpc_map_task_index).
  size=${#indices[@]}
  [[ -z $max ]] || ((max <= 0 || max >= size)) || size=$max
  for ((start = 0; start < ${#indices[@]}; start += size)); do
    chunk=("${indices[@]:start:size}")
    if [[ -n $max ]] && ((chunk[-1] >= max)); then
      part_lists+=("${chunk[*]}") part_specs+=("0-$((${#chunk[@]} - 1))${throttle:+%$throttle}")
    else
      hpc_manifest_ranges "${chunk[@]}"
      part_lists+=('') part_specs+=("$hpc_manifest_ranges${throttle:+%$throttle}")
    fi
  done
  local -a plans=()
  # Until the resubmission is released, a signal cancels it whole once the sbatch it came during
  # has answered (hpc_map_resubmit_signalled): no held job is left behind.
  hpc_submit_defer_signals
  hpc_submit_pending_open "${hpc_manage_dir%/*}" "${1##*/}"
  for k in "${!part_specs[@]}"; do
    printf -v text '%shpc_plan_map_offset=0\nhpc_plan_map_indices=%q\n' "$plan_text" "${part_lists[k]}"
    hpc_plan_write_file "${plan%_*}" "$text" ||
      hpc_map_resubmit_undo "cannot write the resubmission's plan beside $plan${new_ids[*]:+; its parts ${new_ids[*]} were cancelled}" "${new_ids[@]}"
    plans+=("$hpc_plan_file")
    printf -v text '%s\nhpc_job_main %q\n' "$script" "$hpc_plan_file"
    after=()
    ((k == 0)) || after=(--dependency="afterany:${new_ids[-1]}")
    out=$(hpc_submit_sbatch --parsable --hold --array="${part_specs[k]}" ${after[@]+"${after[@]}"} 2>&1 <<<"$text") ||
      hpc_map_resubmit_undo "sbatch refused the resubmission: ${out//$'\n'/ }${new_ids[*]:+; its parts ${new_ids[*]} were cancelled}" "${new_ids[@]}"
    new_id=${out##*$'\n'}
    new_ids+=("${new_id%%;*}")
    hpc_map_resubmit_signalled "${new_ids[@]}"
  done
  new_id=${new_ids[0]} spec=${part_specs[0]}
  for i in "${indices[@]}"; do
    # The earlier attempt's status is kept; a link is never followed or moved.
    hpc_map_keep_attempt "$dir/tasks/$i" "$((attempt - 1))" status
  done
  if [[ -n $gather_text ]]; then
    printf -v text '%s:' "${new_ids[@]}"
    out=$(hpc_submit_sbatch --parsable --dependency="afterany:${text%:}" --kill-on-invalid-dep=yes 2>&1 <<<"$gather_text") ||
      hpc_map_resubmit_undo "sbatch refused the new gather job: ${out//$'\n'/ }; the resubmission ${new_ids[*]} was cancelled" "${new_ids[@]}"
    gather_id=${out##*$'\n'}
    gather_id=${gather_id%%;*}
    hpc_map_resubmit_signalled "${new_ids[@]}" "$gather_id"
  fi
  local -a record=()
  for new_id in "${new_ids[@]}"; do record+=(--array "$new_id"); done
  hpc_map_helpers map-record --dir "$dir" "${record[@]}" --gather "$gather_id" || hpc_say "cannot record jobs ${new_ids[*]} $gather_id in $dir/manifest.json"
  for k in "${!new_ids[@]}"; do
    [[ -z ${hpc_manage_file[${ids[0]}]-} ]] || hpc_manifest_copy "${hpc_manage_file[${ids[0]}]}" "${new_ids[k]}" "${part_specs[k]}" "resubmit --failed" '' "${plans[k]}" ||
      hpc_say "job ${new_ids[k]} was submitted, but its manifest could not be written"
  done
  read -ra ids <<<"$gather_ids"
  if [[ -n $gather_id && -n ${ids[0]-} && -n ${hpc_manage_file[${ids[0]}]-} ]]; then
    hpc_manifest_copy "${hpc_manage_file[${ids[0]}]}" "$gather_id" '' "resubmit --failed" || hpc_say "gather job $gather_id was submitted, but its manifest could not be written"
  fi
  hpc_map_resubmit_signalled "${new_ids[@]}" ${gather_id:+"$gather_id"}
  out=$(exec scontrol release "${new_ids[@]}" 2>&1) ||
    hpc_map_resubmit_undo "scontrol release ${new_ids[*]} failed: ${out//$'\n'/ }; the resubmission was cancelled" "${new_ids[@]}" ${gather_id:+"$gather_id"}
  hpc_pending_close
  # Released: a signal that came during the release ends the submitter now, the jobs submitted.
  hpc_submit_resume_signals "${1##*/}" "${new_ids[@]}" ${gather_id:+"$gather_id"}
  if ((${#new_ids[@]} > 1)); then
    printf 'Resubmitted task(s) %s of map %s as jobs %s (above MaxArraySize %s: %s arrays, one after the other)\n' \
      "$ranges" "${dir##*/}" "${new_ids[*]}" "$max" "${#new_ids[@]}"
    [[ -z $gather_id ]] || printf 'Gather job %s: after jobs %s end (afterany); output %s\n' "$gather_id" "${new_ids[*]}" "$dir/gather_$gather_id.out"
    return 0
  fi
  printf 'Resubmitted task(s) %s of map %s as job %s (array %s%s)\n' "$ranges" "${dir##*/}" "$new_id" "$spec" \
    "${part_lists[0]:+, task ids ${spec%\%*} are indices ${part_lists[0]}: above MaxArraySize $max}"
  [[ -z $gather_id ]] || printf 'Gather job %s: after job %s ends (afterany); output %s\n' "$gather_id" "$new_id" "$dir/gather_$gather_id.out"
}

# hpc_map_task_states ROOT ID...: (status) the state of each task of the map arrays among the
# recorded jobs ID (hpc_manage_mode map; ROOT the project's map folders), SLURM's and the status
# files its tasks wrote (any attempt, matched by array job id and task id) together, in
# hpc_st_state and hpc_st_exit. SLURM's word over a file's: a task SLURM has ended shows SLURM's
# state (the tasks of a map can write each other's files: one that says COMPLETED where SLURM
# says FAILED is not believed), except that it is never COMPLETED without a file of its own
# (SLURM's COMPLETED with a file left RUNNING, or none, is LOST). While SLURM runs it, a file
# still RUNNING is RUNNING; once SLURM has forgotten it, the file's state, else LOST.
hpc_map_task_states() {
  local root=$1 id key file text state slurm live ended
  local -A file_state=() file_exit=() scanned=()
  shift
  for id in "$@"; do
    [[ ${hpc_manage_mode[$id]-} == map ]] || continue
    if [[ -z ${scanned[${hpc_manage_exp[$id]}]-} ]]; then
      scanned[${hpc_manage_exp[$id]}]=1
      for file in "$root/${hpc_manage_exp[$id]}"/*/tasks/*/status*.json; do
        [[ -f $file && ! -L $file ]] || continue
        text=''
        IFS= read -r -d '' text <"$file" || true
        [[ $text =~ \"array_job_id\":[[:space:]]*\"([0-9]+)\" ]] || continue
        key=${BASH_REMATCH[1]}
        [[ $text =~ \"task_id\":[[:space:]]*\"([0-9]+)\" ]] || continue
        key+=_${BASH_REMATCH[1]}
        [[ $text =~ \"state\":[[:space:]]*\"([A-Z_]+)\" ]] || continue
        file_state[$key]=${BASH_REMATCH[1]} file_exit[$key]=-
        [[ ! $text =~ \"exit_code\":[[:space:]]*(-?[0-9]+) ]] || file_exit[$key]=${BASH_REMATCH[1]}
      done
    fi
    hpc_manage_keys "$id"
    for key in "${hpc_manage_keys[@]}"; do
      slurm=${hpc_st_state[$key]-}
      state=${file_state[$key]-}
      # SLURM still runs it (or will), or SLURM ended it (hpc_facts.bash).
      live=0 ended=0
      case $slurm in PENDING | CONFIGURING | RUNNING | COMPLETING | SUSPENDED | REQUEUED*) live=1 ;; esac
      hpc_facts_state_ended "$slurm" && ended=1
      if ((ended)); then
        if [[ $slurm == COMPLETED && (-z $state || $state == RUNNING) ]]; then state=LOST; else state=$slurm; fi
      elif ((live)); then
        [[ -n $state ]] || state=$slurm
      elif [[ -z $state || $state == RUNNING ]]; then
        state=LOST
      fi
      # shellcheck disable=SC2034 # hpc_st_exit: read by hpc_manage.bash
      if [[ $state != "$slurm" ]]; then
        hpc_st_state["$key"]=$state hpc_st_exit["$key"]=${file_exit[$key]:--}
        ((! ended)) || hpc_st_exit["$key"]=-
      elif [[ ${file_state[$key]-} == "$state" ]]; then
        # The file agrees: its exit code is the program's (SLURM's is the batch shell's).
        hpc_st_exit["$key"]=${file_exit[$key]}
      fi
    done
  done
}

# hpc_map_newest_dir ROOT COMMAND: sets hpc_map_dir to the newest map folder (with a
# manifest.json) under ROOT, the experiment's map folders; exit 2 naming COMMAND when none.
hpc_map_newest_dir() {
  local candidate
  hpc_map_dir=''
  for candidate in "$1"/*/; do
    [[ -f ${candidate}manifest.json && ! -L ${candidate%/} ]] && hpc_map_dir=${candidate%/}
  done
  [[ -n $hpc_map_dir ]] || hpc_die_usage "$2" "no map of this experiment under $1"
}

# hpc_map_gather_again ROOT: (job_submitter.sh gather EXP) submits the newest map's gather job
# again, now, without its dependency (the array has ended, and SLURM may have forgotten it).
hpc_map_gather_again() {
  local script line out id kept=''
  hpc_map_newest_dir "$1" gather
  [[ -e $hpc_map_dir/gather.sh || -L $hpc_map_dir/gather.sh ]] || hpc_die_usage "gather" "the map ${hpc_map_dir##*/} has no gather job (submitted without --gather)"
  hpc_map_lock "$hpc_map_dir"
  hpc_trusted_check "$hpc_map_dir/manifest.json" || hpc_die "the map's record $hpc_map_dir/manifest.json $hpc_trusted_problem: not read; nothing was submitted"
  hpc_trusted_read "$hpc_map_dir/gather.sh" || hpc_die "the map's kept gather script $hpc_map_dir/gather.sh $hpc_trusted_problem: not run; nothing was submitted"
  while IFS= read -r line || [[ -n $line ]]; do
    case $line in
      '#SBATCH --dependency='* | '#SBATCH --kill-on-invalid-dep='*) ;;
      *) kept+=$line$'\n' ;;
    esac
  done <<<"${hpc_trusted_text%$'\n'}"
  script=$kept
  hpc_submit_pending_open "${hpc_manage_dir%/*}" "${1##*/}"
  out=$(hpc_submit_sbatch --parsable 2>&1 <<<"$script") || {
    hpc_pending_close rm
    hpc_die "sbatch refused the gather job: ${out//$'\n'/ }"
  }
  id=${out##*$'\n'}
  id=${id%%;*}
  local -a ids=()
  mapfile -t ids < <(hpc_map_helpers map-info --dir "$hpc_map_dir" | sed -n 's/^gather_ids=//p' | tr ' ' '\n')
  hpc_map_helpers map-record --dir "$hpc_map_dir" --gather "$id" || hpc_say "cannot record gather job $id in $hpc_map_dir/manifest.json"
  if [[ -n ${ids[0]-} && -n ${hpc_manage_file[${ids[0]}]-} ]]; then
    hpc_manifest_copy "${hpc_manage_file[${ids[0]}]}" "$id" '' gather || hpc_say "gather job $id was submitted, but its manifest could not be written"
  fi
  hpc_pending_close
  printf 'Gather job %s of map %s: output %s\n' "$id" "${hpc_map_dir##*/}" "$hpc_map_dir/gather_$id.out"
}

# hpc_map_gather_here ROOT EXP: (job_submitter.sh gather EXP --here) runs the newest map's gather
# right here, as its job would: the tasks' status files read afresh into map_status.tsv/.json,
# the policy applied (not met: the verdict line, exit 1), the gather's variables and the job's
# (source_dir, project_name, scratch_dir, exp_name) exported, the command expanded from them and
# run in the project's venv from the project's folder; exits with its status.
hpc_map_gather_here() {
  local exp=$2 text first last policy kind rerun vars line rc=0
  local -a words=()
  hpc_map_newest_dir "$1" gather
  [[ -f $hpc_map_dir/gather.sh ]] || hpc_die_usage "gather" "the map ${hpc_map_dir##*/} has no gather job (submitted without --gather)"
  text=$(<"$hpc_map_dir/manifest.json")
  if ! { [[ $text =~ \"first\":\ ([0-9]+) ]] && first=${BASH_REMATCH[1]} &&
    [[ $text =~ \"last\":\ ([0-9]+) ]] && last=${BASH_REMATCH[1]} &&
    [[ $text =~ \"policy\":\ \"([a-z0-9=%-]+)\" ]] && policy=${BASH_REMATCH[1]} &&
    [[ $text =~ \"kind\":\ \"([a-z]+)- ]] && kind=${BASH_REMATCH[1]}; }; then
    hpc_die "cannot read the map in $hpc_map_dir/manifest.json"
  fi
  [[ $kind == venv ]] || hpc_die_usage "--here" "the map ${hpc_map_dir##*/} runs in a container; accepted for a venv map only: run its gather as a job (gather $exp)"
  mapfile -d '' words < <(hpc_map_helpers gather-command --dir "$hpc_map_dir")
  ((${#words[@]})) || hpc_die "cannot read the gather command in $hpc_map_dir/manifest.json"
  [[ " ${words[*]} " != *'(masked)'* ]] || hpc_die "the gather command holds a secret, masked in manifest.json: run it as a job (gather $exp)"
  printf -v rerun 'bash job_submitter.sh resubmit %q --failed' "$exp"
  vars=$(hpc_map_helpers read --dir "$hpc_map_dir/tasks" --keys "$first-$last" --policy "$policy" \
    --out "$hpc_map_dir/map_status" --rerun "$rerun") || rc=$?
  ((rc != 2)) || hpc_die "the tasks' status files could not be read (see above)"
  ((rc == 0)) || exit 1
  export map_dir=$hpc_map_dir map_count=$((last - first + 1))
  while IFS= read -r line; do
    case ${line%%=*} in
      ok) export map_ok=${line#*=} ;;
      failed) export map_failed=${line#*=} ;;
      n_ok) export map_n_ok=${line#*=} ;;
      n_failed) export map_n_failed=${line#*=} ;;
      status_file) export map_status_file=${line#*=} ;;
    esac
  done <<<"$vars"
  export source_dir=$hpc_source_dir project_name=$hpc_manage_project exp_name=$exp
  export scratch_dir=${hpc_manage_dir%/hpc_outputs/manifests}
  export PYTHONPATH=$hpc_python_helpers_dir/src${PYTHONPATH:+:$PYTHONPATH}
  if [[ -x $source_dir/virtual_env/bin/python ]]; then
    export VIRTUAL_ENV=$source_dir/virtual_env PATH=$source_dir/virtual_env/bin:$PATH
    unset PYTHONHOME
  fi
  hpc_configs_expand "${words[@]}" || hpc_die "the gather command refers to a variable that is not defined here"
  cd -- "$source_dir" || hpc_die "cannot enter $source_dir"
  "${hpc_configs_argv[@]}" || exit
}

# ---------------------------------------------------------------------------------------------
# In the job

# hpc_map_task_setup: (an array task's batch shell) exports the task's variables, makes its own
# folder and writes its status RUNNING.
hpc_map_task_setup() {
  local i line
  hpc_map_task_index || return 1
  i=$hpc_map_index
  export map_index=$i map_count=${hpc_plan_map_count:?}
  export map_dir=${hpc_plan_map_dir:-${hpc_plan_map_root:?}/${hpc_plan_map_stamp:?}-${SLURM_ARRAY_JOB_ID:?}}
  export task_dir=$map_dir/tasks/$i
  # The task's own folders are named by its index in the whole map (parts of a split array start at 0).
  # shellcheck disable=SC2034 # read by hpc_job.bash
  hpc_job_task_index=$i
  export map_item=$i
  if ((${hpc_plan_map_has_items:-0})); then
    local -a lines=()
    mapfile -t -s "$i" -n 1 lines <"$map_dir/items.txt" || hpc_job_fail "map" "cannot read $map_dir/items.txt"
    ((${#lines[@]})) || hpc_job_fail "map" "no item $i in $map_dir/items.txt"
    line=${lines[0]}
    map_item=$line
  fi
  if ((${hpc_plan_map_repeat:-0})); then
    # --repeat with a gather: what repeats get (hpc_job_own_folders makes checkpoints_dir/task_I).
    export seed=$i
  fi
  [[ ! -L $task_dir ]] || hpc_job_fail "map" "$task_dir is a symbolic link"
  mkdir -p -- "$task_dir" || hpc_job_fail "map" "cannot make $task_dir"
  hpc_followup_utc hpc_map_start_utc
  hpc_map_start_s=$EPOCHREALTIME
  hpc_map_status RUNNING '' '' || true
  hpc_job_log "map task $i of $map_count: $task_dir"
}

# hpc_map_task_index: sets hpc_map_index to this array task's index in the map: its task id,
# plus the part's first index (hpc_plan_map_offset, a map split above MaxArraySize), or the
# task id-th index of hpc_plan_map_indices (a resubmission of indices at or above MaxArraySize).
hpc_map_task_index() {
  local -a indices=()
  local task=${SLURM_ARRAY_TASK_ID:?}
  if [[ -n ${hpc_plan_map_indices:-} ]]; then
    read -ra indices <<<"$hpc_plan_map_indices"
    [[ -n ${indices[task]-} ]] || hpc_job_fail "map" "array task $task has no index in the resubmission's list ($hpc_plan_map_indices)" || return 1
    hpc_map_index=${indices[task]}
  else
    hpc_map_index=$((${hpc_plan_map_offset:-0} + task))
  fi
}

# hpc_map_status STATE EXIT_CODE END_UTC [END_S]: writes the task's status.json.
hpc_map_status() {
  local log=${hpc_plan_map_log:-}
  log=${log//%A/${SLURM_ARRAY_JOB_ID:-}}
  log=${log//%a/${SLURM_ARRAY_TASK_ID:-}}
  hpc_followup_status_write "$task_dir/status.json" "key=$map_index" "index:=$map_index" "item=$map_item" \
    "job_id=${SLURM_JOB_ID:-}" "array_job_id=${SLURM_ARRAY_JOB_ID:-}" "task_id=${SLURM_ARRAY_TASK_ID:-}" \
    "state=$1" "exit_code:=$2" "node=${SLURMD_NODENAME:-}" "start_utc=$hpc_map_start_utc" "end_utc=$3" \
    "start_s:=${hpc_map_start_s/,/.}" "end_s:=${4:-}" "attempt:=${hpc_plan_map_attempt:-1}" "log=$log" && return 0
  hpc_job_log "cannot write $task_dir/status.json"
  return 1
}

# hpc_map_task_end STATUS: (the batch shell, after the program) writes the task's final status.
# Returns STATUS, or 1 for a program that succeeded, when the file cannot be written: the gather
# would count the task LOST, so SLURM must not say COMPLETED.
hpc_map_task_end() {
  local end_utc end_s=${EPOCHREALTIME/,/.}
  hpc_followup_final_state "$1"
  hpc_followup_utc end_utc
  hpc_map_status "$hpc_followup_state" "$1" "$end_utc" "$end_s" && return 0
  hpc_job_log "FAILED at step 'map-status': the task's final status was not written"
  (($1 != 0)) || return 1
  return "$1"
}

# hpc_map_gather_setup: (the gather's batch shell) reads the tasks' status files into
# map_status.tsv/.json, exports the gather's variables, and ends the job FAILED, with the
# verdict line, when the policy is not met.
hpc_map_gather_setup() {
  local line name value
  export map_dir=${hpc_plan_map_dir:?} map_count=${hpc_plan_map_count:?}
  hpc_followup_read "$map_dir/tasks" "$hpc_plan_map_keys" "$hpc_plan_map_policy" "$map_dir/map_status" "$hpc_plan_map_rerun"
  ((hpc_followup_rc != 2)) || hpc_job_fail "gather" "the tasks' status files could not be read (see above)"
  while IFS= read -r line; do
    name=${line%%=*} value=${line#*=}
    case $name in
      ok) export map_ok=$value ;;
      failed) export map_failed=$value ;;
      n_ok) export map_n_ok=$value ;;
      n_failed) export map_n_failed=$value ;;
      status_file) export map_status_file=$value ;;
    esac
  done <<<"$hpc_followup_vars"
  ((hpc_followup_rc == 0)) || exit 1
}
