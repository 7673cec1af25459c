# shellcheck shell=bash
# Summary: a recorded submission again, or only what failed (--failed)
# Usage: bash job_submitter.sh resubmit EXP|JOBID [--failed]
#
#   resubmit TARGET     Submits the newest submission of experiment TARGET (or the submission of
#                       job TARGET) again: its kept job script, the same sbatch options, the same
#                       array. The new job gets its own manifest, linked to the submission.
#     --failed          Only the array tasks whose last run ended FAILED, TIMEOUT, NODE_FAIL or
#                       CANCELLED, with the array's throttle (%K); a job without an array only
#                       when it ended so. Nothing to resubmit: says so, exit 0.
#                       For a map (--map-range/--map-over): the indices whose newest attempt
#                       did not succeed, read from the tasks' status files (LOST included), in
#                       the same map folder, and a new gather after them.
#                       For a scaling study (--scaling-test): the runs of the newest study
#                       whose newest attempt did not succeed, each shaped as before, in its
#                       own runs/<N>x<G>-r<k>/, and a new report job after them.
#   -h, --help          This text.
#
# It reads the project's manifests (see 'status --help'); SCRATCH must be set as for submitting.
#
# Exit status: 0 done (also: nothing to resubmit), 1 SLURM refused or failed, 2 bad input (an
# unknown experiment or job is answered with the known ones).

# resubmit.bash: the command 'resubmit' (bash job_submitter.sh resubmit EXP|JOBID [--failed]): a
# recorded submission again, from its kept job script, in a linked manifest; with --failed only
# what did not succeed (a map's indices: hpc_map.bash; a scaling study's runs: hpc_scaling.bash).

# What this file reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_common.bash: the library's folder, and why a plan file is not read (hpc_trusted_check).
declare -g hpc_lib_dir hpc_trusted_problem hpc_trusted_text
# hpc_manifest_read.bash (loaded at the first call of one of its functions): a manifest's
# command, environment and sbatch options; an array's throttle and ranges.
declare -g hpc_mf_argv hpc_mf_env hpc_mf_env_unset hpc_mf_env_secret hpc_manifest_throttle hpc_manifest_ranges

# shellcheck source=hpc_files/lib/hpc_manage.bash
source "$hpc_lib_dir/hpc_manage.bash"
# It submits again (the plan's files, a map's or a study's group script, the fit of the request).
hpc_submission_load

# hpc_manage_resubmit_live KEY: (resubmit --failed) false when the run KEY (a job, or JOB_TASK)
# is still queued or running, as hpc_manage_states saw it, adding its job to live_jobs (the
# caller's); true when it has ended or its state is unknown.
hpc_manage_resubmit_live() {
  local state=${hpc_st_state[$1]-}
  [[ -n $state && $state != UNKNOWN* ]] || return 0
  ! hpc_facts_state_ended "$state" || return 0
  live_jobs[${1%_*}]=1
  return 1
}

# hpc_manage_resubmit_group_refuse TARGET NOUN WHAT: exit 2: a plain resubmit of a map or a study
# (NOUN), pointing to --failed (WHAT it resubmits) or a new submission.
hpc_manage_resubmit_group_refuse() {
  local msg="$1 is a $2: a plain resubmission would run its jobs into a new folder without its record; use"
  msg+=" 'resubmit $1 --failed' ($3, in the same folder), or submit the $2 again; nothing was submitted"
  hpc_die_usage resubmit "$msg"
}

# hpc_manage_resubmit_identity SCRIPT TEXT ID: exit 1, nothing submitted, when the kept job script
# SCRIPT (its text TEXT) of job ID is not the one its manifest (hpc_mf) names: it must name the
# manifest's plan file and carry its token (another job's script renamed into its name runs
# another experiment). A manifest from before tokens: the plan file alone.
hpc_manage_resubmit_identity() {
  local plan=${hpc_mf[plan]-} token=${hpc_mf[token]-} named
  [[ -n $plan ]] || return 0
  hpc_facts_script_plan "$2" || hpc_facts_script_plan='(none)'
  named=$hpc_facts_script_plan
  if [[ $named != "$plan" ]]; then
    hpc_die "the kept job script '$1' of job $3 is not this job's: it runs the plan '$named', not '$plan';" \
      "nothing was submitted"
  fi
  [[ -z $token || $2 == *$'\n'"export HPC_JOB_PLAN_TOKEN=$token"$'\n'* ]] ||
    hpc_die "the kept job script '$1' of job $3 is not this job's: it carries another plan's token;" \
      "nothing was submitted"
}

# hpc_manage_resubmit_env ID: (resubmit) the sbatch of the resubmission gets, for each variable the
# command refers to, what it had at submission (hpc_manifest_env's lines in the manifest of job
# ID; for a map or a study, of every manifest of the experiment, the newest's last): its recorded
# value, or unset (hpc_submit_env_set, hpc_submit_env_unset: hpc_slurm_sbatch). Says in one line
# each where this shell differs. A secret's value was never recorded: taken from this shell, exit 2
# when it is not set here.
hpc_manage_resubmit_env() {
  local - id name value now here msg
  set +x
  local -a ids=("$1")
  declare -gA hpc_submit_env_set=()
  local -A unset_names=() secret_names=()
  hpc_submit_env_unset=()
  hpc_manifest_read "${hpc_manage_file[$1]}" || return 0
  case ${hpc_mf[mode]-} in
    map | gather | scaling | scaling-report) ids=("${hpc_manage_ids[@]}") ;;
  esac
  for id in "${ids[@]}"; do
    hpc_manifest_read "${hpc_manage_file[$id]}" || continue
    for value in ${hpc_mf_env[@]+"${hpc_mf_env[@]}"}; do
      name=${value%%=*}
      hpc_submit_env_set[$name]=${value#*=}
      unset 'unset_names[$name]' 'secret_names[$name]'
    done
    for name in ${hpc_mf_env_unset[@]+"${hpc_mf_env_unset[@]}"}; do
      unset_names[$name]=1
      unset 'hpc_submit_env_set[$name]' 'secret_names[$name]'
    done
    for name in ${hpc_mf_env_secret[@]+"${hpc_mf_env_secret[@]}"}; do
      secret_names[$name]=1
      unset 'hpc_submit_env_set[$name]' 'unset_names[$name]'
    done
  done
  # hpc_mf is the newest manifest's again, as the caller read it.
  hpc_manifest_read "${hpc_manage_file[$1]}" || true
  for name in "${!hpc_submit_env_set[@]}" "${!unset_names[@]}" "${!secret_names[@]}"; do
    # Names as hpc_configs_reference_names reads them; never one of bash's own (read-only) or the toolkit's.
    if [[ ! $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ || $name == hpc_* || $name == _hpc_* ]] ||
      { [[ -v $name ]] && [[ ${!name@a} == *r* ]]; }; then
      unset 'hpc_submit_env_set[$name]' 'unset_names[$name]' 'secret_names[$name]'
    fi
  done
  for name in "${!secret_names[@]}"; do
    msg="is not set; the configs file's command uses it and a secret's value is never recorded: set it as at"
    hpc_manifest_exported "$name" || hpc_die_usage "$name" "$msg submission (nothing was submitted)"
  done
  for name in $(printf '%s\n' "${!hpc_submit_env_set[@]}" "${!unset_names[@]}" | sort); do
    now='' here=0
    ! hpc_manifest_exported "$name" || now=$hpc_manifest_exported_value here=1
    if [[ -v "hpc_submit_env_set[$name]" ]]; then
      value=${hpc_submit_env_set[$name]}
      if ((here == 0)); then
        msg="note: $name is not set in this shell; the job gets the value it had at submission, '$value'"
      elif [[ $now != "$value" ]]; then
        msg="note: $name is '$now' in this shell; the job gets the value it had at submission, '$value'"
      else
        continue
      fi
    else
      hpc_submit_env_unset+=("$name")
      ((here)) || continue
      msg="note: $name is '$now' in this shell but was not set at submission; the job gets it unset, as then"
    fi
    hpc_mask_vars msg
    hpc_say "$msg"
  done
}

# hpc_command_resubmit EXP|JOBID [--failed]: the command 'resubmit': submits the submission of the
# target again (only its failed tasks with --failed) and records the new job in a linked manifest.
hpc_command_resubmit() {
  hpc_manage_begin
  local target='' failed=0 word newest
  for word in "$@"; do
    case $word in
      --failed) failed=1 ;;
      -*) hpc_commands_die_unknown_option resubmit "$word" ;;
      *)
        [[ -z $target ]] || hpc_die_usage "resubmit" "unexpected word '$word'; usage: resubmit EXP|JOBID [--failed]"
        target=$word
        ;;
    esac
  done
  [[ -n $target ]] || hpc_die_usage "resubmit" "needs an experiment or a job id; $(hpc_manage_known)"
  hpc_manage_target "$target"
  [[ -z $hpc_manage_task ]] ||
    hpc_die_usage "$target" "resubmit takes an experiment or a job id, not an array task; use --failed"
  # The submission: the chain (first submission and its resubmissions) of the newest job named.
  newest=${hpc_manage_ids[${#hpc_manage_ids[@]} - 1]}
  # What the command's ${VARS} had at submission, given to the job again (hpc_manage_resubmit_env).
  hpc_manage_resubmit_env "$newest"
  ! hpc_manage_resubmit_group || return 0
  # The first submission's array (and throttle), when it still has its manifest; else the newest's.
  local spec throttle='' how=resubmit
  local -a chain=() indices=()
  hpc_manage_resubmit_chain
  local new_spec=$spec
  if ((failed)); then
    how='resubmit --failed'
    hpc_manage_resubmit_failed || return 0
  fi
  local script_text
  hpc_manage_resubmit_script
  hpc_manage_resubmit_submit
}

# hpc_manage_resubmit_group: (in hpc_command_resubmit) a map or a scaling study: with --failed,
# resubmits what did not succeed (true); without, refused: again whole it would run into a new
# folder without its record (gather, status and --failed read it). False for any other job.
hpc_manage_resubmit_group() {
  hpc_manifest_read "${hpc_manage_file[newest]}" || return 1
  case ${hpc_mf[mode]-} in
    map | gather)
      ((failed)) || hpc_manage_resubmit_group_refuse "$target" map "the indices that did not succeed"
      # The failed indices come from the tasks' status files (hpc_map.bash).
      # shellcheck source=/dev/null # hpc_map.bash: linted on its own (see docs/architecture.md)
      source "${hpc_manage_lib%/*}/hpc_map.bash"
      hpc_group_resubmit_failed map "${hpc_manage_dir%/*}/map/${hpc_manage_exp[$newest]}"
      ;;
    scaling | scaling-report)
      ((failed)) || hpc_manage_resubmit_group_refuse "$target" "scaling study" "the runs that did not succeed"
      # The failed runs from their status files (hpc_scaling.bash).
      # shellcheck source=/dev/null # hpc_scaling.bash: linted on its own (see docs/architecture.md)
      source "${hpc_manage_lib%/*}/hpc_scaling.bash"
      # shellcheck source=/dev/null # hpc_group.bash: linted on its own (see docs/architecture.md)
      source "${hpc_manage_lib%/*}/hpc_group.bash"
      hpc_group_resubmit_failed scaling "${hpc_manage_dir%/*}/scaling/${hpc_manage_exp[$newest]}"
      ;;
    *) return 1 ;;
  esac
}

# hpc_manage_resubmit_chain: (in hpc_command_resubmit) sets chain to the jobs of the newest's
# submission (same origin), spec to its first job's array, indices and throttle to that array's.
hpc_manage_resubmit_chain() {
  local id origin=${hpc_manage_origin[$newest]}
  for id in "${!hpc_manage_file[@]}"; do
    [[ ${hpc_manage_origin[$id]} != "$origin" ]] || chain+=("$id")
  done
  spec=${hpc_manage_array[${chain[0]}]}
  [[ -n $spec ]] || return 0
  hpc_manifest_expand_array "$spec" || hpc_die "the manifest of job ${chain[0]} has an unreadable array '$spec'"
  indices=("${hpc_manifest_indices[@]}") throttle=$hpc_manifest_throttle
}

# hpc_manage_resubmit_failed: (in hpc_command_resubmit --failed) sets new_spec to the array of the
# tasks whose last run failed; false, having said why, when there is nothing to resubmit.
hpc_manage_resubmit_failed() {
  local id key i
  local -A last=() live_jobs=()
  local -a redo=() unknown=() live=()
  hpc_manage_states "${chain[@]}"
  # Each task's last run: the newest job of the chain whose array holds it.
  for id in "${chain[@]}"; do
    hpc_manage_keys "$id"
    for key in "${hpc_manage_keys[@]}"; do
      if [[ $key == *_* ]]; then last[${key#*_}]=$key; else last[job]=$key; fi
    done
  done
  [[ -n $spec ]] || indices=(job) last[job]=${last[job]-$newest}
  for i in "${indices[@]}"; do
    key=${last[$i]-}
    [[ -n $key ]] || continue
    [[ $hpc_manifest_failed_states != *" ${hpc_st_state[$key]} "* ]] || redo+=("$i")
    [[ ${hpc_st_state[$key]} != UNKNOWN* ]] || unknown+=("$i")
    hpc_manage_resubmit_live "$key" || live+=("$i")
  done
  # The newest runs are judged: one still queued or running is named, with its state, and
  # nothing is resubmitted while nothing has failed (never an older, replaced run's id).
  if ((${#redo[@]} == 0 && ${#live[@]})); then
    local ids
    printf -v ids '%s, ' "${!live_jobs[@]}"
    if [[ -n $spec ]]; then
      printf 'Nothing to resubmit yet: task(s) %s of %s still pending or running (job %s); %s\n' \
        "${live[*]}" "${hpc_manage_exp[$newest]}" "${ids%, }" \
        "run 'resubmit $target --failed' again once they have ended."
    else
      printf 'Nothing to resubmit yet: the newest run of %s, job %s, is still %s; %s\n' \
        "${hpc_manage_exp[$newest]}" "$key" "${hpc_st_state[$key]}" \
        "run 'resubmit $target --failed' again once it has ended."
    fi
    return 1
  fi
  if ((${#redo[@]} == 0)); then
    printf 'Nothing to resubmit: no %s of %s (%s) ended FAILED, TIMEOUT, NODE_FAIL or CANCELLED.\n' \
      "$([[ -n $spec ]] && printf 'task' || printf 'run')" "${hpc_manage_exp[$newest]}" \
      "$([[ -n $spec ]] && printf 'newest job %s' "$newest" || printf 'job %s' "$key")"
    ((${#unknown[@]} == 0)) || printf 'The state of %s is unknown: SLURM has forgotten it.\n' \
      "$([[ -n $spec ]] && printf 'task(s) %s' "${unknown[*]}" || printf 'the job')"
    return 1
  fi
  [[ -n $spec ]] || return 0
  hpc_manifest_ranges "${redo[@]}"
  new_spec=$hpc_manifest_ranges${throttle:+%$throttle}
}

# hpc_manage_resubmit_script: (in hpc_command_resubmit) reads the newest manifest of the chain
# (it holds the options) and sets script_text to its kept job script's text, checked with the
# plan file it names; exits naming what is gone or not to be trusted.
hpc_manage_resubmit_script() {
  hpc_manifest_read "${hpc_manage_file[newest]}" || hpc_die "cannot read ${hpc_manage_file[newest]}"
  local script=${hpc_mf[script]-} plan=${hpc_mf[plan]-} token=${hpc_mf[token]-} other
  [[ -n $script ]] && [[ -e $script || -L $script ]] || hpc_manage_resubmit_gone "kept job script '$script'"
  # What sbatch runs is the text read from the one descriptor checked: the user's own file that
  # nobody else can change (on a group-writable scratch another member could have edited it).
  hpc_trusted_read "$script" ||
    hpc_die "the kept job script '$script' of job $newest $hpc_trusted_problem: not run; nothing was submitted"
  script_text=$hpc_trusted_text
  # The kept script names the job's plan file, which holds every value of the job.
  hpc_manage_resubmit_identity "$script" "$script_text" "$newest"
  [[ -z $plan ]] && return 0
  [[ -e $plan || -L $plan ]] || hpc_manage_resubmit_gone "plan file '$plan'"
  # One that the job would refuse at its start (a link, others can write it): refused now.
  hpc_trusted_read "$plan" ||
    hpc_die "the plan file '$plan' of job $newest $hpc_trusted_problem: not read; nothing was submitted"
  # One that is another job's (renamed into this one's name): the job would refuse it at its start.
  [[ -n $token && ${hpc_trusted_text%$'\n'} != *$'\n'"hpc_plan_token=$token" ]] || return 0
  other=${hpc_trusted_text##*$'\n'hpc_plan_exp_name=}
  [[ $hpc_trusted_text == *$'\n'hpc_plan_exp_name=* ]] || other='?'
  hpc_die "the plan file '$plan' of job $newest is not this job's (it was written for experiment" \
    "'${other%%$'\n'*}'); nothing was submitted"
}

# hpc_manage_resubmit_gone WHAT: (in hpc_command_resubmit_script) exits: WHAT of the newest job is
# gone, with the command line that submits it again.
hpc_manage_resubmit_gone() {
  local again
  printf -v again ' %q' ${hpc_mf_argv[@]+"${hpc_mf_argv[@]}"}
  hpc_die "the $1 of job $newest is gone; submit again with: bash job_submitter.sh$again"
}

# hpc_manage_resubmit_submit: (in hpc_command_resubmit) submits script_text with the manifest's
# sbatch options, its array replaced by new_spec, records the new job in a linked manifest (the
# newest's lines, with this job's own values) and says so.
hpc_manage_resubmit_submit() {
  local arg new_id skip=0
  local -a args=()
  for arg in ${hpc_mf_sbatch[@]+"${hpc_mf_sbatch[@]}"}; do
    if ((skip)); then skip=0 && continue; fi
    case $arg in
      --array=* | -a?*) continue ;;
      --array | -a) skip=1 && continue ;;
    esac
    args+=("$arg")
  done
  [[ -z $new_spec ]] || args+=(--array="$new_spec")
  # As at submission: a SLURM_TMPDIR of this shell must not reach the job (hpc_job_tmpdir_choose).
  hpc_submit_pending_open "${hpc_manage_dir%/*}" "${hpc_mf[exp_name]}"
  if ! hpc_slurm_sbatch "the resubmission" "$script_text" "${args[@]}"; then
    hpc_say "$hpc_slurm_error"
    hpc_submit_forget
    exit 1
  fi
  new_id=$hpc_slurm_id
  hpc_manifest_copy "${hpc_manage_file[newest]}" "$new_id" "$new_spec" "$how" ||
    hpc_say "job $new_id was submitted, but its manifest could not be written beside ${hpc_manage_file[newest]}"
  hpc_pending_close
  if [[ -n $new_spec ]]; then
    printf 'Resubmitted %s (array %s) of %s as job %s\n' \
      "$([[ $new_spec != "$spec" ]] && printf 'task(s) %s' "${new_spec%\%*}" || printf 'every task')" \
      "$new_spec" "${hpc_mf[exp_name]}" "$new_id"
  else
    printf 'Resubmitted job %s of %s as job %s\n' "$newest" "${hpc_mf[exp_name]}" "$new_id"
  fi
  printf 'Output: %s\n' "$hpc_manifest_path"
}
