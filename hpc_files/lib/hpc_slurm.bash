# shellcheck shell=bash
# hpc_slurm.bash: the SLURM client, loaded with hpc_manifest.bash (every command of job_submitter.sh),
# by plai_cleanups and the venv's build. On the login side, the only place that runs sbatch,
# scontrol, squeue, scancel and sacct, and the only reader of sbatch's answer; what the other
# answers mean stays with their readers. The job's side runs them itself (the exempt files and
# functions, each with its reason: tests/unit/slurm_client.bats).

# What this library reads, set by the others: declared here, not set. hpc_submit.bash: a
# resubmission's values of the command's variables, and whether an sbatch's answer was lost;
# hpc_pending.bash: the submission's tag; hpc_common.bash: the environment the process started with.
declare -gA hpc_submit_env_set
declare -ga hpc_submit_env_unset hpc_environ
declare -g hpc_submit_unsure hpc_pending_tag hpc_pending_token

# hpc_slurm [-t SECONDS] COMMAND ARGS...: runs SLURM's COMMAND with ARGS, at most SECONDS with -t
# (a controller that does not answer must not hang the caller); in a command substitution or a
# subshell it becomes COMMAND (exec: no second process). Its status is COMMAND's.
hpc_slurm() {
  [[ $1 != -t ]] || set -- timeout "$2" "${@:3}"
  ((BASH_SUBSHELL == 0)) || exec "$@"
  "$@"
}

# hpc_slurm_sbatch WHAT SCRIPT ARGS...: submits the job script whose text is SCRIPT (given on
# sbatch's standard input; empty: ARGS name the script file) with --parsable and ARGS (--hold, a
# dependency, ...); sets hpc_slurm_id to its job id. False when sbatch refused it or answered
# without a job id (what a broken sbatch prints is never taken for one: it would name files and
# go to scancel), hpc_slurm_error then saying so in one line that names WHAT ('the job' when
# empty) and hpc_slurm_answer holding what sbatch said; an answer lost on the way back (a socket
# timeout, no job id) is no refusal: hpc_submit_unsure says SLURM may hold the job all the same
# (hpc_submit_forget keeps the submission's record then).
# shellcheck disable=SC2034 # the results, read by the callers; hpc_submit_unsure by hpc_submit_forget
hpc_slurm_sbatch() {
  # The script's text is not copied into a local (a bash -x trace would print it again).
  local what=$1
  hpc_slurm_id=''
  if [[ -n $2 ]]; then
    hpc_slurm_answer=$(hpc_slurm_sbatch_exec --parsable "${@:3}" 2>&1 <<<"$2")
  else
    hpc_slurm_answer=$(hpc_slurm_sbatch_exec --parsable "${@:3}" 2>&1 </dev/null)
  fi || {
    # One line: sbatch may give a reason over several (a limit's name, then the refusal).
    hpc_slurm_error="sbatch refused ${what:-the job}: ${hpc_slurm_answer//$'\n'/; }"
    # A limit of the site's QOS or association on the jobs submitted at once (each array task
    # counts): what SLURM says, and where the limits are shown.
    [[ $hpc_slurm_answer != *MaxSubmitJob* ]] || {
      hpc_slurm_error+=" (a limit on the jobs a user may have submitted at once, each array task counting as one:"
      hpc_slurm_error+=" 'sacctmgr show qos' and 'sacctmgr show assoc user=${USER:-$(id -un)}' show it;"
      hpc_slurm_error+=" submit fewer at a time (a map: --chunk auto runs its items several per task, within"
      hpc_slurm_error+=" the limit), or once earlier jobs have ended)"
    }
    [[ ${hpc_slurm_answer,,} != *'timed out'* && ${hpc_slurm_answer,,} != *'zero bytes were transmitted'* ]] ||
      hpc_submit_unsure=1
    return 1
  }
  hpc_slurm_id=${hpc_slurm_answer##*$'\n'}
  hpc_slurm_id=${hpc_slurm_id%%;*}
  ! hpc_facts_job_id "$hpc_slurm_id" || return 0
  hpc_slurm_id='' hpc_slurm_error="sbatch gave no job id${what:+ for $what}: ${hpc_slurm_answer//$'\n'/ }"
  hpc_submit_unsure=1
  return 1
}

# hpc_slurm_sbatch_exec ARGS...: (hpc_slurm_sbatch's command substitution, while
# hpc_submit_defer_signals holds the signals) becomes sbatch ARGS, without the submitting shell's
# SLURM_TMPDIR (sbatch passes the environment on to the job) and with INT, HUP and TERM ignored: a
# terminal's Ctrl-C or hangup reaches every process of the foreground job (and timeout(1)'s or a
# service manager's TERM every process of its group), and an sbatch killed after SLURM accepted
# the job would leave one that nobody knows of (held, for a map or a study). The submitter acts on
# the signal once sbatch has answered, which sbatch's own timeouts bound: without SBATCH_WAIT,
# which would make it wait, deaf to Ctrl-C, for the job's end (for a held job, for ever). The job
# carries the tag of the submission's record (hpc_pending.bash): a submitter killed before it has
# recorded the job leaves it findable.
hpc_slurm_sbatch_exec() {
  # Names of the toolkit's own: a local shadowing a variable of the user's environment is what
  # sbatch passes on (a command's ${name} or ${sbatch} got the loop's or the program's word).
  local hpc_slurm_var hpc_slurm_key hpc_slurm_prog=sbatch hpc_slurm_x=${-//[^x]/}
  # The callers' locals too (lowercase names, as the user's may be): the user's value of each
  # lowercase variable the process started with is passed on (hpc_manifest_exported reads it so),
  # without a trace (a value may be a secret).
  if hpc_environ_load; then
    set +x
    for hpc_slurm_var in "${hpc_environ[@]}"; do
      hpc_slurm_key=${hpc_slurm_var%%=*}
      [[ $hpc_slurm_key =~ ^[a-z][a-z0-9_]*$ && $hpc_slurm_key != hpc_* ]] || continue
      [[ ${!hpc_slurm_key-} == "${hpc_slurm_var#*=}" ]] || export "$hpc_slurm_key=${hpc_slurm_var#*=}"
    done
    [[ -z $hpc_slurm_x ]] || set -x
  fi
  unset SLURM_TMPDIR SBATCH_WAIT
  trap '' INT HUP TERM
  # A resubmission: the values the command's variables had at submission (hpc_manage_resubmit_env),
  # in the environment sbatch passes on to the job; sbatch itself found with this shell's PATH
  # (hash: no process).
  if [[ -n ${hpc_submit_env_set[*]+x}${hpc_submit_env_unset[*]+x} ]] && hash sbatch 2>/dev/null; then
    hpc_slurm_prog=${BASH_CMDS[sbatch]:-sbatch}
  fi
  for hpc_slurm_var in ${hpc_submit_env_set[@]+"${!hpc_submit_env_set[@]}"}; do
    export "$hpc_slurm_var=${hpc_submit_env_set[$hpc_slurm_var]}"
  done
  for hpc_slurm_var in ${hpc_submit_env_unset[@]+"${hpc_submit_env_unset[@]}"}; do
    # At every scope: unset removes the nearest, and a caller's local would hide the user's own.
    for hpc_slurm_key in "${FUNCNAME[@]}" global; do unset -v "$hpc_slurm_var"; done
  done
  if [[ -n ${hpc_pending_token:-} ]]; then
    set -- "$@" "--comment=$hpc_pending_tag$hpc_pending_token"
    hpc_pending_sbatch_starts
  fi
  exec "$hpc_slurm_prog" "$@"
}
