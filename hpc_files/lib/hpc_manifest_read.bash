# shellcheck shell=bash
# hpc_manifest_read.bash: manifests read back (resubmit, status, logs, a study's report) and copied
# for a resubmission, array specs and ranges, and an array's check against the cluster's
# MaxArraySize: what a plain submission does not run, loaded at the first call of one of them
# (their stubs in hpc_manifest.bash, hpc_lib_load). The format is described in hpc_manifest.bash.

# What it reads, set by the others (declared, not set): hpc_common.bash: the descriptor
# hpc_trusted_open opened; hpc_profile.bash: how long SLURM's answers are kept.
declare -g hpc_trusted_fd hpc_slurm_ttl

# hpc_manifest_copy OLD_FILE NEW_ID ARRAY HOW [OUTPUT [PLAN]]: (resubmit) records job NEW_ID,
# submitted again from the manifest OLD_FILE, in a manifest of its own beside it: OLD_FILE's lines
# with this job's time, id, array (ARRAY, empty for none), output path, origin (the chain's first
# job), resubmit_of (OLD_FILE's job) and resubmit (HOW); OUTPUT, when given, is its new --output
# pattern, PLAN its new plan file (a resubmission that changed values wrote one). Sets hpc_manifest_path (the output
# file) and leaves OLD_FILE in hpc_mf; false when OLD_FILE cannot be read or the new one written.
hpc_manifest_copy() {
  local old=$1 id=$2 array=$3 how=$4 output=${5-} plan=${6-} now line name=''
  hpc_manifest_read "$old" || return 1
  [[ -z $output ]] || hpc_mf[output]=$output
  for line in ${hpc_mf_sbatch[@]+"${hpc_mf_sbatch[@]}"}; do
    [[ $line != --job-name=* ]] || name=${line#*=}
  done
  printf -v now '%(%Y-%m-%dT%H:%M:%S%z)T' -1
  hpc_manifest_text=''
  hpc_manifest_put format 1
  hpc_manifest_put time "$now"
  hpc_manifest_put array "$array"
  hpc_manifest_put job_id "$id"
  hpc_manifest_put origin "${hpc_mf[origin]:-${hpc_mf[job_id]}}"
  hpc_manifest_put resubmit_of "${hpc_mf[job_id]}"
  hpc_manifest_put resubmit "$how"
  hpc_manifest_put_output "${hpc_mf[output]-}" "$id" "$array" "$name"
  [[ -z $plan ]] || hpc_manifest_put plan "$plan"
  for line in "${hpc_mf_lines[@]}"; do
    case ${line%%$'\t'*} in
      format | time | array | job_id | origin | resubmit_of | resubmit | output_path) ;;
      plan) [[ -n $plan ]] || hpc_manifest_text+=$line$'\n' ;;
      # A new plan file has its own token.
      token) [[ -n $plan ]] && hpc_manifest_put token "${hpc_plan_tokens[$plan]-}" || hpc_manifest_text+=$line$'\n' ;;
      output) [[ -n $output ]] && hpc_manifest_put output "$output" || hpc_manifest_text+=$line$'\n' ;;
      sbatch) [[ -n $output && $line == $'sbatch\t--output='* ]] && hpc_manifest_put sbatch "--output=$output" ||
        hpc_manifest_text+=$line$'\n' ;;
      *) hpc_manifest_text+=$line$'\n' ;;
    esac
  done
  [[ -z ${hpc_pending_file:-} ]] || hpc_pending_made "${old%/*}/${hpc_mf[exp_name]}_$id.manifest"
  hpc_manifest_commit "${old%/*}/${hpc_mf[exp_name]}_$id.manifest"
}

# hpc_manifest_read FILE: reads a manifest into hpc_mf (KEY -> VALUE), the lists hpc_mf_argv,
# hpc_mf_sbatch, hpc_mf_command, hpc_mf_env, hpc_mf_env_unset and hpc_mf_env_secret, and
# hpc_mf_lines (its lines as written). False when FILE is
# not a manifest of this format.
hpc_manifest_read() {
  local line key value complete=0 fd
  declare -gA hpc_mf=()
  hpc_mf_argv=() hpc_mf_sbatch=() hpc_mf_command=() hpc_mf_lines=() hpc_mf_env=() hpc_mf_env_unset=()
  hpc_mf_env_secret=()
  # The user's own regular file, opened once and never through a link (hpc_trusted_open).
  hpc_trusted_open "$1" own || return 1
  fd=$hpc_trusted_fd
  while IFS= read -r line || [[ -n $line ]]; do
    [[ $line == *$'\t'* ]] || continue
    if [[ $line == $'end\t1' ]]; then
      complete=1
      continue
    fi
    hpc_mf_lines+=("$line")
    key=${line%%$'\t'*}
    value=${line#*$'\t'}
    [[ $value != *\\* ]] || printf -v value '%b' "$value"
    case $key in
      argv) hpc_mf_argv+=("$value") ;;
      sbatch) hpc_mf_sbatch+=("$value") ;;
      command) hpc_mf_command+=("$value") ;;
      env) hpc_mf_env+=("$value") ;;
      env_unset) hpc_mf_env_unset+=("$value") ;;
      env_secret) hpc_mf_env_secret+=("$value") ;;
      *) hpc_mf[$key]=$value ;;
    esac
  done <&"$fd"
  exec {fd}<&-
  ((complete)) && [[ ${hpc_mf[format]-} == 1 ]] && hpc_facts_job_id "${hpc_mf[job_id]-}"
}

# hpc_manifest_expand_array SPEC: sets hpc_manifest_indices to the indices of the array SPEC
# (1-4, 1,3,7-9, 0-15:4, each with an optional %THROTTLE), ascending and without repeats, and
# hpc_manifest_throttle to THROTTLE (or empty). False when SPEC is not an array spec.
hpc_manifest_expand_array() {
  local spec=$1 item first last step i
  local -a seen=() items=()
  hpc_manifest_indices=() hpc_manifest_throttle=''
  if [[ $spec == *%* ]]; then
    hpc_manifest_throttle=${spec##*%}
    spec=${spec%\%*}
    [[ $hpc_manifest_throttle =~ ^[0-9]+$ ]] || return 1
  fi
  [[ -n $spec ]] || return 1
  IFS=, read -ra items <<<"$spec"
  for item in "${items[@]}"; do
    [[ $item =~ ^([0-9]{1,9})(-([0-9]{1,9})(:([0-9]{1,9}))?)?$ ]] || return 1
    first=$((10#${BASH_REMATCH[1]}))
    last=$((10#${BASH_REMATCH[3]:-$first}))
    step=$((10#${BASH_REMATCH[5]:-1}))
    ((step > 0 && last >= first && (last - first) / step < 1000000)) || return 1
    if ((${#items[@]} == 1 && (last - first) / step >= 256)); then
      # One long range (a map's array of 10^4 tasks): one seq, not a Bash step per task.
      mapfile -t hpc_manifest_indices < <(seq "$first" "$step" "$last")
      return 0
    fi
    for ((i = first; i <= last; i += step)); do seen[i]=1; done
  done
  # shellcheck disable=SC2034 # read by hpc_manage.bash
  hpc_manifest_indices=("${!seen[@]}")
}

# hpc_manifest_ranges INDEX...: sets hpc_manifest_ranges to the ascending INDEXes as an array
# spec: 1 2 3 5 -> 1-3,5.
hpc_manifest_ranges() {
  local i first='' last=''
  hpc_manifest_ranges=''
  for i in "$@" ''; do
    if [[ -n $first && -n $i && $i -eq $((last + 1)) ]]; then
      last=$i
      continue
    fi
    if [[ -n $first ]]; then
      hpc_manifest_ranges+=${hpc_manifest_ranges:+,}$first
      ((last == first)) || hpc_manifest_ranges+=-$last
    fi
    first=$i last=$i
  done
}

# hpc_manifest_check_array_size COUNT [FIRST]: exit 2 when an array of COUNT tasks, indices FIRST
# (0) to FIRST+COUNT-1, has an index at or above this cluster's MaxArraySize (scontrol show
# config, asked once; its MaxJobCount is kept in hpc_manifest_max_job_count). Without SLURM (no
# scontrol answer) there is nothing to check against. What scontrol said is kept for the next
# submissions as sinfo's answer is (hpc_manifest_limits_read, hpc_manifest_limits_save).
hpc_manifest_check_array_size() {
  local count=$1 first=${2:-0} config
  if [[ -z ${hpc_manifest_max_array_size+x} ]]; then
    hpc_manifest_max_array_size='' hpc_manifest_max_job_count=''
    if ((${hpc_manifest_limits_ask:-0})) || ! hpc_manifest_limits_read config; then
      config=$(hpc_slurm scontrol show config 2>/dev/null) || config=''
      hpc_manifest_limits_fresh=1
    fi
    if [[ $config =~ (^|$'\n')MaxArraySize[[:space:]]*=[[:space:]]*([0-9]+) ]]; then
      hpc_manifest_max_array_size=${BASH_REMATCH[2]}
    fi
    if [[ $config =~ (^|$'\n')MaxJobCount[[:space:]]*=[[:space:]]*([0-9]+) ]]; then
      # shellcheck disable=SC2034 # read by hpc_map.bash
      hpc_manifest_max_job_count=${BASH_REMATCH[2]}
    fi
  fi
  [[ -n $hpc_manifest_max_array_size ]] || return 0
  local max=$hpc_manifest_max_array_size
  if ((first + count - 1 >= max)); then
    if hpc_manifest_limits_recheck; then
      hpc_manifest_check_array_size "$@"
      return
    fi
    hpc_die_usage "--repeat/--num-sweeps" \
      "$count tasks exceed this cluster's MaxArraySize $max (indices 0..$((max - 1)))"
  fi
}

# hpc_manifest_limits_recheck: when the limits in use are the kept ones (not asked in this run),
# forgets them, so that hpc_manifest_check_array_size asks scontrol again: a refusal is never
# made on a kept answer alone (the cluster may have been reconfigured since). False when they
# were asked in this run.
hpc_manifest_limits_recheck() {
  ((${hpc_manifest_limits_kept:-0})) || return 1
  unset hpc_manifest_max_array_size
  hpc_manifest_limits_ask=1 hpc_manifest_limits_kept=0
}

# hpc_manifest_limits_read VAR: sets VAR to the MaxArraySize and MaxJobCount lines kept by
# hpc_manifest_limits_save, when they are younger than hpc_slurm_ttl (as sinfo's answer) and
# were said for the same SLURM_CONF; false otherwise (then scontrol is asked). No process.
hpc_manifest_limits_read() {
  local -n _hpc_limits_out=$1
  local stamp conf rest='' now
  # shellcheck disable=SC2034 # read by hpc_manifest_limits_save (hpc_manifest.bash)
  hpc_manifest_limits_fresh=0
  hpc_manifest_limits_file
  # Only this user's own file, never through a link: another's could say any limits.
  [[ -n $hpc_manifest_limits_file && -f $hpc_manifest_limits_file ]] &&
    [[ -O $hpc_manifest_limits_file && ! -L $hpc_manifest_limits_file ]] || return 1
  {
    IFS= read -r stamp && IFS= read -r conf && { IFS= read -r -d '' rest || true; }
  } <"$hpc_manifest_limits_file" || return 1
  printf -v now '%(%s)T' -1
  [[ $stamp =~ ^[0-9]+$ && $conf == "SLURM_CONF=${SLURM_CONF:-}" ]] &&
    ((now >= stamp && now - stamp < hpc_slurm_ttl)) || return 1
  _hpc_limits_out=$rest
  hpc_manifest_limits_kept=1
}

# hpc_manifest_limits_forget: after sbatch refused an array, removes the kept MaxArraySize and
# MaxJobCount of this cluster (this user's own file, not a link), so that the next submission
# asks scontrol; true when the MaxArraySize in use was a kept one.
hpc_manifest_limits_forget() {
  hpc_manifest_limits_file
  [[ -n $hpc_manifest_limits_file && -f $hpc_manifest_limits_file ]] &&
    [[ -O $hpc_manifest_limits_file && ! -L $hpc_manifest_limits_file ]] || return 1
  rm -f -- "${hpc_manifest_limits_file:?}"
  ((${hpc_manifest_limits_kept:-0})) && [[ -n ${hpc_manifest_max_array_size:-} ]]
}
