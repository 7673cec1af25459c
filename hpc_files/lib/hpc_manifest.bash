# shellcheck shell=bash
# hpc_manifest.bash: the record of each submission (the manifest), written on every submission;
# its reading back and the check of an array's size against the cluster's MaxArraySize are in
# hpc_manifest_read.bash (loaded when called). The commands that read manifests (status, logs,
# cancel, resubmit) are in hpc_manage.bash.
#
# The manifest's format: at the end of this file.

# What this library reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_plan.bash: the plan; hpc_submit.bash: argv; hpc_configs.bash: the configs file's command;
# hpc_options.bash: where the values came from.
declare -g hpc_plan_exp_name hpc_plan_output hpc_plan_scratch_dir hpc_plan_source_dir
declare -ga hpc_submit_argv hpc_plan_fields hpc_plan_field_vars hpc_plan_array_fields hpc_plan_command \
  hpc_plan_offline_commands hpc_configs_names hpc_opt_settings
declare -gA hpc_plan_manifest_keys hpc_plan_tokens
# hpc_common.bash: the environment the process started with (hpc_environ_load).
declare -ga hpc_environ
# The SLURM client: every command that reads manifests talks to SLURM through it.
# shellcheck source=hpc_files/lib/hpc_slurm.bash
source "${BASH_SOURCE[0]%/*}/hpc_slurm.bash"

# ---------------------------------------------------------------------------------------------
# Writing

# What a field of a line (a manifest's, the status index's) must not hold as it is: escaped by
# hpc_manifest_escape, read back with printf %b (hpc_manifest_read, hpc_manage_index_decode).
hpc_manifest_escapes=$'\\\n\t\r\x1f'

# hpc_manifest_escape NAME: escapes the value of the variable NAME in place: backslash, newline,
# tab, CR and the unit separator as \\ \n \t \r \x1f.
hpc_manifest_escape() {
  local _hpc_value=${!1}
  _hpc_value=${_hpc_value//\\/\\\\}
  _hpc_value=${_hpc_value//$'\n'/\\n}
  _hpc_value=${_hpc_value//$'\t'/\\t}
  _hpc_value=${_hpc_value//$'\r'/\\r}
  printf -v "$1" '%s' "${_hpc_value//$'\x1f'/\\x1f}"
}

# hpc_manifest_put KEY VALUE...: appends one escaped 'KEY<TAB>VALUE' line per VALUE to
# hpc_manifest_text.
hpc_manifest_put() {
  # One value that needs no escape (most of a manifest's lines): appended as it is.
  if (($# == 2)) && [[ $2 != *["$hpc_manifest_escapes"]* ]]; then
    hpc_manifest_text+=$1$'\t'$2$'\n'
    return 0
  fi
  local key=$1 value
  shift
  (($#)) || return 0
  # Most values need no escape: then one printf for all of them (the format is reused per value).
  printf -v value '%s' "$@"
  if [[ $value != *["$hpc_manifest_escapes"]* ]]; then
    printf -v value "${key//%/%%}\t%s\n" "$@"
    hpc_manifest_text+=$value
    return 0
  fi
  for value in "$@"; do
    [[ $value != *["$hpc_manifest_escapes"]* ]] || hpc_manifest_escape value
    hpc_manifest_text+=$key$'\t'$value$'\n'
  done
}

# hpc_manifest_put_output PATTERN JOB_ID ARRAY JOB_NAME: puts the output_path line: the file
# PATTERN names for the job JOB_ID (its tasks' with an ARRAY: an array task's %j is its own job
# id, known only once it starts: it stays, as %a does).
hpc_manifest_put_output() {
  if [[ -n $3 ]]; then
    hpc_manifest_output "$1" "$2" %a '' "$4"
  else
    hpc_manifest_output "$1" "$2" '' "$2" "$4"
  fi
  hpc_manifest_put output_path "$hpc_manifest_path"
}

# hpc_manifest_commit FILE: writes hpc_manifest_text to FILE (named by a job id, so new), with a
# last line 'end<TAB>1', the user's alone (hpc_private_write: resubmit runs what it names); false
# when it cannot. A reader that finds no such line is looking at a manifest still being written
# and skips it (hpc_manifest_read): complete or absent, without a temporary file and a rename,
# which would cost a process on every submission.
hpc_manifest_commit() {
  hpc_private_write "$1" "$hpc_manifest_text"$'end\t1\n'
}

# hpc_manifest_git DIR: sets hpc_manifest_git_commit and hpc_manifest_git_dirty (yes/no) for the
# git work tree that holds DIR, with one git process; both empty when DIR is in none (found
# without starting a process) or git cannot say. Dirty means changed tracked files. Asked once
# per DIR and process: a map's parts and gather, a study's runs and report are one submission of
# one commit.
hpc_manifest_git() {
  local dir=$1 out line
  [[ ${hpc_manifest_git_asked-} != "$1" ]] || return 0
  hpc_manifest_git_asked=$1
  hpc_manifest_git_commit='' hpc_manifest_git_dirty=''
  while [[ ! -e $dir/.git ]]; do
    [[ $dir == */* && -n $dir ]] || return 0
    dir=${dir%/*}
  done
  command -v git >/dev/null 2>&1 || return 0
  # One process for both: the commit (# branch.oid) and the changed tracked files.
  out=$(export GIT_OPTIONAL_LOCKS=0 &&
    exec git -C "$1" status --porcelain=v2 --branch --untracked-files=no 2>/dev/null) || return 0
  hpc_manifest_git_dirty=no
  while IFS= read -r line; do
    case $line in
      '# branch.oid '*) hpc_manifest_git_commit=${line#'# branch.oid '} ;;
      '#'*) ;;
      ?*) hpc_manifest_git_dirty=yes ;;
    esac
  done <<<"$out"
  [[ $hpc_manifest_git_commit != '(initial)' ]] || hpc_manifest_git_commit=
}

# hpc_manifest_exported NAME: true when the variable NAME is in the environment that sbatch passes
# on to the job; sets hpc_manifest_exported_value to its value there. A lowercase name may be the
# name of a local of the toolkit's functions (name, id, value...), which hides the user's variable
# from ${!NAME} and would be passed on in its place: such a name is read from the environment the
# process started with (hpc_slurm_sbatch_exec passes that on), where /proc has it.
hpc_manifest_exported() {
  local - _hpc_manifest_entry
  set +x
  if [[ $1 =~ ^[a-z][a-z0-9_]*$ ]] && hpc_environ_load; then
    for _hpc_manifest_entry in "${hpc_environ[@]}"; do
      [[ $_hpc_manifest_entry == "$1="* ]] || continue
      hpc_manifest_exported_value=${_hpc_manifest_entry#*=}
      return 0
    done
  fi
  [[ -v $1 ]] && [[ ${!1@a} == *x* ]] || return 1
  hpc_manifest_exported_value=${!1}
}

# hpc_manifest_env TEMPLATE...: (hpc_manifest_write) records, for resubmit, what each variable
# that the command's templates refer to (hpc_configs_reference_names) has in this environment:
# 'env NAME=VALUE' (exported here, so sbatch passes it on), 'env_unset NAME' (not: the job used
# its default, or SLURM's or the toolkit's own value), 'env_secret NAME' for a secret (a secret's
# name, or a value that holds a secret: hpc_mask_vars), whose value is never written. Only the
# variables the command names: no other variable of the environment is written.
hpc_manifest_env() {
  # Values that may hold a secret: no bash -x trace of them.
  local - name value masked
  set +x
  # The configs file's parser is loaded wherever a command was read (a test may write a manifest
  # without one).
  [[ "$*" == *\$* ]] && declare -F hpc_configs_reference_names >/dev/null || return 0
  hpc_configs_reference_names "$@" || return 0
  for name in ${hpc_configs_names[@]+"${hpc_configs_names[@]}"}; do
    name=${name%:-}
    if ! hpc_manifest_exported "$name"; then
      hpc_manifest_put env_unset "$name"
      continue
    fi
    if hpc_secret_name "$name"; then
      hpc_manifest_put env_secret "$name"
      continue
    fi
    value=$hpc_manifest_exported_value masked=$hpc_manifest_exported_value
    hpc_mask_vars masked
    if [[ $masked != "$value" ]]; then
      hpc_manifest_put env_secret "$name"
    else
      hpc_manifest_put env "$name=$value"
    fi
  done
}

# hpc_manifest_write JOB_ID SCRIPT PLAN: records the submission just made (the plan hpc_plan_*,
# whose file is PLAN, and the submitter's arguments hpc_submit_argv) as
# ${scratch_dir}/hpc_outputs/manifests/EXP_JOB_ID.manifest; SCRIPT is the kept job script.
# Writes nothing else: of the environment only the variables the command refers to
# (hpc_manifest_env), and no secret (hpc_mask_vars) in the submitter's words, the commands or
# those values. False when it cannot write.
hpc_manifest_write() {
  local id=$1 script=$2 plan=${3-} dir now name ref
  dir=$hpc_plan_scratch_dir/hpc_outputs/manifests
  hpc_private_dir "${dir%/*}" && hpc_private_dir "$dir" || return 1
  hpc_manifest_git "$hpc_plan_source_dir"
  printf -v now '%(%Y-%m-%dT%H:%M:%S%z)T' -1
  hpc_manifest_text=''
  hpc_manifest_put format 1
  hpc_manifest_put time "$now"
  hpc_manifest_put plan "$plan"
  # The plan's values, from its one list of fields (hpc_plan.bash): one command a field, one
  # printf for all the scalars, each value escaped only when it needs it (this runs on every
  # submission).
  local -a pairs=() values
  local value i format
  for ref in "${hpc_plan_field_vars[@]}"; do
    pairs+=("${!ref-}")
  done
  # A value that needs an escape is rare: looked for in all of them at once.
  printf -v value '%s' "${pairs[@]}"
  if [[ $value == *["$hpc_manifest_escapes"]* ]]; then
    for i in "${!pairs[@]}"; do
      hpc_manifest_escape "pairs[$i]"
    done
  fi
  # The format: a line 'KEY<TAB>%s' a field, KEY its name or its hpc_plan_manifest_keys name.
  printf -v format '\n%s\t%%s' "${hpc_plan_fields[@]}"
  for name in "${!hpc_plan_manifest_keys[@]}"; do
    format=${format/$'\n'"$name"$'\t'/$'\n'${hpc_plan_manifest_keys[$name]}$'\t'}
  done
  # shellcheck disable=SC2059 # the format is the fields' names (no %), made just above
  printf -v value "${format#$'\n'}"$'\n' "${pairs[@]}"
  hpc_manifest_text+=$value
  # The submitter's words and the commands are the user's text: a secret typed in them is
  # masked, all in one call (the sbatch options and paths are read back by resubmit and stay
  # exact).
  local -a words=(${hpc_submit_argv[@]+"${hpc_submit_argv[@]}"}) command=("${hpc_plan_command[@]}")
  local -a offline=(${hpc_plan_offline_commands[@]+"${hpc_plan_offline_commands[@]}"})
  hpc_mask_vars words command offline
  for name in "${hpc_plan_array_fields[@]}"; do
    case $name in
      command) values=(${command[@]+"${command[@]}"}) ;;
      offline_commands) values=(${offline[@]+"${offline[@]}"}) ;;
      *)
        ref="hpc_plan_${name}[@]"
        values=(${!ref+"${!ref}"})
        ;;
    esac
    hpc_manifest_put "${hpc_plan_manifest_keys[$name]:-$name}" ${values[@]+"${values[@]}"}
  done
  hpc_manifest_put job_id "$id"
  hpc_manifest_put origin "$id"
  hpc_manifest_put script "$script"
  hpc_manifest_put_output "$hpc_plan_output" "$id" "${hpc_plan_array:-}" "${hpc_plan_job_name:-}"
  hpc_manifest_put git_commit "$hpc_manifest_git_commit"
  hpc_manifest_put git_dirty "$hpc_manifest_git_dirty"
  hpc_manifest_put argv ${words[@]+"${words[@]}"}
  # Where each value came from: the command line, the defaults file's line, the profile (from
  # the submitter's table of settings, hpc_options.bash, when it is loaded).
  if declare -F hpc_opt_settings >/dev/null; then
    hpc_opt_settings
    hpc_mask_vars hpc_opt_settings
    hpc_manifest_put setting ${hpc_opt_settings[@]+"${hpc_opt_settings[@]}"}
  fi
  value=''
  [[ -z $plan ]] || value=${hpc_plan_tokens[$plan]-}
  hpc_manifest_put token "$value"
  local -a templates=("${hpc_plan_command[@]}") split
  for value in ${hpc_plan_offline_commands[@]+"${hpc_plan_offline_commands[@]}"}; do
    IFS=$'\x1f' read -r -a split <<<"$value"
    templates+=(${split[@]+"${split[@]}"})
  done
  hpc_manifest_env ${templates[@]+"${templates[@]}"}
  [[ -z ${hpc_pending_file:-} ]] || hpc_pending_made "$dir/${hpc_plan_exp_name}_$id.manifest"
  hpc_manifest_commit "$dir/${hpc_plan_exp_name}_$id.manifest"
}

# ---------------------------------------------------------------------------------------------
# Reading (hpc_manifest_read.bash, loaded at the first call: a plain submission reads no manifest)

hpc_manifest_read() { hpc_lib_load hpc_manifest_read && hpc_manifest_read "$@"; }
hpc_manifest_copy() { hpc_lib_load hpc_manifest_read && hpc_manifest_copy "$@"; }
hpc_manifest_expand_array() { hpc_lib_load hpc_manifest_read && hpc_manifest_expand_array "$@"; }
hpc_manifest_ranges() { hpc_lib_load hpc_manifest_read && hpc_manifest_ranges "$@"; }
hpc_manifest_check_array_size() { hpc_lib_load hpc_manifest_read && hpc_manifest_check_array_size "$@"; }
hpc_manifest_limits_recheck() { hpc_lib_load hpc_manifest_read && hpc_manifest_limits_recheck "$@"; }
hpc_manifest_limits_forget() { hpc_lib_load hpc_manifest_read && hpc_manifest_limits_forget "$@"; }

# hpc_manifest_output PATTERN ARRAY_JOB_ID TASK JOB_ID JOB_NAME: sets hpc_manifest_path to the
# output file PATTERN names for one job or array task, as sbatch does: %% %A %a %j %J %x %u.
# TASK empty: not an array task. JOB_ID empty (not known): %j stays.
hpc_manifest_output() {
  local rest=$1 c
  hpc_manifest_path=''
  while [[ $rest == *%* ]]; do
    hpc_manifest_path+=${rest%%\%*}
    rest=${rest#*%}
    c=${rest:0:1}
    rest=${rest:1}
    case $c in
      %) hpc_manifest_path+=% ;;
      A) hpc_manifest_path+=$2 ;;
      a) hpc_manifest_path+=${3:-4294967294} ;;
      j | J) hpc_manifest_path+=${4:-%$c} ;;
      x) hpc_manifest_path+=$5 ;;
      u) hpc_manifest_path+=${USER:-%u} ;;
      *) hpc_manifest_path+=%$c ;;
    esac
  done
  hpc_manifest_path+=$rest
}

# hpc_manifest_limits_file: sets hpc_manifest_limits_file to where what scontrol show config said
# of this cluster is kept (beside sinfo's answer: HPC_CACHE_DIR/slurm/NAME.limits); empty when
# no cluster profile is loaded.
hpc_manifest_limits_file() {
  hpc_manifest_limits_file=''
  [[ -n ${hpc_profile_name:-} && -n ${hpc_slurm_ttl:-} ]] || return 0
  hpc_manifest_limits_file=${HPC_CACHE_DIR:-$hpc_files_dir/.cache}/slurm/$hpc_profile_name.limits
}

# hpc_manifest_limits_save: keeps what scontrol show config has just said of MaxArraySize and
# MaxJobCount for the next submissions (written whole under a temporary name, then renamed).
# Called only once a submission goes ahead: a refused or dry run creates nothing. Nothing is kept
# when scontrol said neither.
hpc_manifest_limits_save() {
  ((${hpc_manifest_limits_fresh:-0})) || return 0
  [[ -n ${hpc_manifest_max_array_size:-}${hpc_manifest_max_job_count:-} ]] || return 0
  hpc_manifest_limits_file
  [[ -n $hpc_manifest_limits_file ]] || return 0
  local tmp=$hpc_manifest_limits_file.$$.tmp now
  printf -v now '%(%s)T' -1
  if { [[ -d ${hpc_manifest_limits_file%/*} ]] || mkdir -p -- "${hpc_manifest_limits_file%/*}" 2>/dev/null; } &&
    printf '%s\nSLURM_CONF=%s\n%s%s' "$now" "${SLURM_CONF:-}" \
      "${hpc_manifest_max_array_size:+MaxArraySize = $hpc_manifest_max_array_size$'\n'}" \
      "${hpc_manifest_max_job_count:+MaxJobCount = $hpc_manifest_max_job_count$'\n'}" 2>/dev/null >"$tmp" &&
    mv -fT -- "$tmp" "$hpc_manifest_limits_file" 2>/dev/null; then
    hpc_manifest_limits_fresh=0
    return 0
  fi
  [[ ! -f $tmp ]] || rm -f -- "${tmp:?}"
}

# ---------------------------------------------------------------------------------------------
# The project's manifests

[[ ${BASH_SOURCE[0]} == "$0" ]] || return 0
# The long comments of this file, after its last command, where Bash never reads them (it parses
# every comment it reads, and every submission reads this file).

# The manifest (see the top of this file).
# Manifest format (version 1): plain text, one 'KEY<TAB>VALUE' per line, read back without eval
# or source. In VALUE a backslash is written '\\', a newline '\n', a tab '\t', a carriage return
# '\r', and nothing else is changed (UTF-8 stays as it is); printf %b decodes it exactly, since
# every backslash of the text starts one of these pairs. A list is several lines with the same
# key, in order (argv, sbatch, command). Unknown keys are ignored when read. Keys:
#   format time plan job_id origin resubmit_of resubmit script output_path git_commit git_dirty
#   argv..., token (the plan file's identity, which its job script carries: hpc_plan_new_token),
#   env... / env_unset... / env_secret... (what the command's ${VARS} had at submission:
#   hpc_manifest_env), and one key per field of the plan (hpc_plan_fields, hpc_plan_array_fields: a list
#   per array field, sbatch... and command... among them), named as the field but for the few of
#   hpc_plan_manifest_keys (time_limit, project, sbatch). 'plan' is the job's plan file: the
#   plan's values here are copied from the same fields, in one loop.
# A manifest is written once, ends with the line 'end<TAB>1' (one not ending so is still being
# written, and is skipped), and is never changed. A resubmission writes a manifest of its own for the new job, a copy of
# the one it repeats with its own time, job_id, array, output_path, resubmit_of (the job it repeats) and
# resubmit (how); origin is the job id of the first submission of the chain in every manifest.
# status keeps the ended states it saw in EXP_JOBID.states beside the manifest (lines
# 'KEY<TAB>JOBID<TAB>STATE<TAB>EXIT', the last one wins; hpc_manage_states), so that ended jobs keep their state
# after SLURM forgets them on clusters without accounting.
