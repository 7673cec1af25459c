# shellcheck shell=bash
# shellcheck disable=SC2034 # hpc_plan_* set here are read by hpc_plan.bash and hpc_submit.bash
# hpc_sweep.bash: array jobs: W&B sweep agents (-w), offline grid sweeps (--wandb-offline) and
# repeats (--repeat). One array task per agent, grid point or repeat; a throttle (%K) always.
#
# The W&B API key never passes through the submitter: it checks that the key exists (the
# variable WANDB_API_KEY, which SLURM hands on to the job as part of the submitting environment,
# or ~/wandb_credentials.txt, mode 600), and the job's task reads it on the compute node and
# gives it to the agent through the environment only (hpc_sweep_load_key). Checks use
# ${#WANDB_API_KEY} and [[ -v ]], so not even a `bash -x` trace shows the value.

# What this library reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_files_dir: hpc_submit_locate; hpc_opt_wandb_offline: hpc_options.bash.
declare -g hpc_files_dir hpc_opt_wandb_offline hpc_opt_count_max

# hpc_sweep_credentials: the credentials file the key is read from when WANDB_API_KEY is unset.
hpc_sweep_credentials() {
  printf '%s\n' "${HOME:?}/wandb_credentials.txt"
}

# hpc_sweep_check_key: exit 2 unless a W&B API key is available: WANDB_API_KEY set and
# non-empty, or a credentials file owned by the user and readable by nobody else.
hpc_sweep_check_key() {
  local file mode
  if [[ -v WANDB_API_KEY ]] && ((${#WANDB_API_KEY} > 0)); then
    return 0
  fi
  file=$(hpc_sweep_credentials)
  [[ -f $file ]] ||
    hpc_die_usage "-w/--wandb-sweepid" "no W&B API key: set WANDB_API_KEY, or put the key in $file (chmod 600)"
  [[ -O $file ]] || hpc_die_usage "-w/--wandb-sweepid" "$file belongs to someone else; it must be yours, mode 600"
  mode=$(stat -c %a -- "$file") || hpc_die "cannot read the mode of $file"
  if ((8#$mode & 8#077)); then
    hpc_die_usage "-w/--wandb-sweepid" "$file can be read by others (mode $mode); run: chmod 600 $file"
  fi
  [[ -s $file ]] || hpc_die_usage "-w/--wandb-sweepid" "$file is empty; put your W&B API key in it"
  return 0
}

# hpc_sweep_load_key: in the job: exports WANDB_API_KEY from the credentials file when the job's
# environment has none. Prints nothing of the key, not even to a bash -x trace.
hpc_sweep_load_key() {
  local file key='' -
  set +x
  if [[ -v WANDB_API_KEY ]] && ((${#WANDB_API_KEY} > 0)); then
    return 0
  fi
  file=$(hpc_sweep_credentials)
  [[ -r $file ]] || return 1
  IFS=$' \t\r\n' read -r key <"$file" || [[ -n $key ]] || return 1
  [[ -n $key ]] || return 1
  export WANDB_API_KEY=$key
}

# hpc_sweep_info FILE: reads method, grid size, entity and project of a sweep file into
# hpc_sweep_method, hpc_sweep_count, hpc_sweep_entity, hpc_sweep_project (Python, once).
hpc_sweep_info() {
  local out line
  out=$(hpc_helpers_cli sweep-info "$1") ||
    hpc_die_usage "--sweep-config" "'$1' is not a usable sweep configuration (see above)"
  hpc_sweep_method='' hpc_sweep_count='' hpc_sweep_entity='' hpc_sweep_project=''
  while IFS= read -r line; do
    case $line in
      method=*) hpc_sweep_method=${line#method=} ;;
      count=*) hpc_sweep_count=${line#count=} ;;
      entity=*) hpc_sweep_entity=${line#entity=} ;;
      project=*) hpc_sweep_project=${line#project=} ;;
    esac
  done <<<"$out"
}

# hpc_sweep_config_file: the sweep configuration: --sweep-config, else sweeper.yml beside the
# submitter; prints nothing when neither is given and the default is missing.
hpc_sweep_config_file() {
  if [[ -n $hpc_opt_sweep_config ]]; then
    [[ -f $hpc_opt_sweep_config ]] || hpc_die_usage "--sweep-config" "'$hpc_opt_sweep_config': no such file"
    printf '%s\n' "$hpc_opt_sweep_config"
  elif [[ -f $hpc_files_dir/sweeper.yml ]]; then
    printf '%s\n' "$hpc_files_dir/sweeper.yml"
  fi
}

# hpc_sweep_agent_path: sets hpc_sweep_path (entity/project/id) from -w, the configs file's own
# 'wandb agent' line (which wins, with a warning, when it names another sweep) and the sweep file.
hpc_sweep_agent_path() {
  local given=$hpc_opt_wandb_sweepid configs_path='' word file
  if [[ ${hpc_configs_words[0]:-} == wandb && ${hpc_configs_words[1]:-} == agent ]]; then
    for word in "${hpc_configs_words[@]:2}"; do
      [[ $word == -* || $word =~ ^[0-9]+$ ]] || configs_path=$word
    done
  fi
  [[ $given =~ ^([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/)?[A-Za-z0-9]+$ ]] ||
    hpc_die_usage "-w/--wandb-sweepid" "'$given' is not accepted; accepted: ID or ENTITY/PROJECT/ID"
  if [[ -n $configs_path && ${configs_path##*/} != "${given##*/}" ]]; then
    local msg="warning: the configs file runs sweep '$configs_path' but -w says '$given': using the configs file's,"
    msg+=" which states the experiment"
    hpc_say "$msg"
    given=$configs_path
  elif [[ $configs_path == */*/* && $given != */*/* ]]; then
    given=$configs_path
  fi
  if [[ $given != */*/* ]]; then
    file=$(hpc_sweep_config_file)
    [[ -z $file ]] || hpc_sweep_info "$file"
    [[ -n ${hpc_sweep_entity:-} && -n ${hpc_sweep_project:-} ]] ||
      hpc_die_usage "-w/--wandb-sweepid" \
        "'$given' names no entity and project; give ENTITY/PROJECT/ID, or entity: and project: in sweeper.yml"
    given=$hpc_sweep_entity/$hpc_sweep_project/$given
  fi
  hpc_sweep_path=$given
}

# hpc_sweep_ask_count DEFAULT: the number of agents: --num-sweeps, else asked on a terminal
# (DEFAULT offered), else exit 2: never waits without a terminal.
hpc_sweep_ask_count() {
  local answer
  if [[ -n $hpc_opt_num_sweeps ]]; then
    hpc_sweep_agents=$hpc_opt_num_sweeps
    return 0
  fi
  [[ -t 0 ]] || hpc_die_usage "--num-sweeps" "how many agents? Give --num-sweeps N (there is no terminal to ask on)"
  printf 'How many sweep agents (array tasks)?%s ' "${1:+ [$1]}" >&2
  read -r answer || answer=
  answer=${answer:-$1}
  hpc_opt_is_count "$answer" 1 ||
    hpc_die_usage "--num-sweeps" "'$answer' is not accepted; accepted: a whole number, 1 to $hpc_opt_count_max"
  hpc_sweep_agents=$((10#$answer))
}

# hpc_sweep_before_plan: forces what array modes need before the plan: one GPU per agent.
hpc_sweep_before_plan() {
  if [[ -n $hpc_opt_wandb_sweepid || $hpc_opt_wandb_offline == 1 ]]; then
    [[ -z $hpc_opt_gpus || $hpc_opt_gpus -le 1 ]] ||
      hpc_die_usage "-g/--gpus" "a sweep agent gets one GPU; accepted: 0 or 1"
    hpc_opt_gpus=${hpc_opt_gpus:-1}
  fi
}

# hpc_sweep_plan: after hpc_plan_make: the array mode, its size and spec, the command (agents)
# or the commands (offline grid points); adds --array to the sbatch options.
hpc_sweep_plan() {
  local count=0 file throttle line out
  hpc_plan_mode=single hpc_plan_array='' hpc_plan_offline_commands=()
  if [[ -n $hpc_opt_wandb_sweepid ]]; then
    hpc_plan_mode=sweep
    hpc_sweep_check_key
    hpc_sweep_agent_path
    file=$(hpc_sweep_config_file)
    if [[ -n $file && -z $hpc_opt_num_sweeps && -z ${hpc_sweep_method:-} ]]; then hpc_sweep_info "$file"; fi
    hpc_sweep_ask_count "${hpc_sweep_count:-}"
    count=$hpc_sweep_agents
    hpc_configs_words=(wandb agent --count 1 "$hpc_sweep_path")
  elif ((hpc_opt_wandb_offline)); then
    hpc_plan_mode=offline
    file=$(hpc_sweep_config_file)
    [[ -n $file ]] ||
      hpc_die_usage "--wandb-offline" \
        "needs a sweep configuration: --sweep-config FILE, or sweeper.yml beside job_submitter.sh"
    hpc_sweep_info "$file"
    [[ $hpc_sweep_method == grid ]] ||
      hpc_die_usage "--wandb-offline" \
        "method '$hpc_sweep_method' samples from a server; offline sweeps need method: grid"
    out=$(hpc_helpers_cli sweep-commands "$file") ||
      hpc_die_usage "--wandb-offline" "cannot expand the grid of $file (see above)"
    while IFS= read -r line; do
      # Literal words: \ and $ are escaped so the job expands nothing in them.
      line=${line//\\/\\\\}
      hpc_plan_offline_commands+=("${line//\$/\\\$}")
    done <<<"$out"
    count=${#hpc_plan_offline_commands[@]}
    ((count == hpc_sweep_count)) ||
      hpc_die "the grid of $file has $hpc_sweep_count points but $count commands came back"
    IFS=$'\x1f' read -r -a hpc_configs_words <<<"${hpc_plan_offline_commands[0]}"
  elif [[ -n $hpc_opt_repeat ]]; then
    hpc_plan_mode=repeat
    count=$hpc_opt_repeat
  else
    return 0
  fi
  throttle=${hpc_opt_max_concurrent:-${hpc_profile_array_throttle:-10}}
  hpc_plan_array_count=$count
  if [[ -n $hpc_opt_wandb_sweepid ]]; then
    # Agents are numbered from 1, as the original toolkit did; everything else from 0.
    hpc_manifest_check_array_size "$count" 1
    hpc_plan_array=1-$count%$throttle
  else
    hpc_manifest_check_array_size "$count" 0
    hpc_plan_array=0-$((count - 1))%$throttle
  fi
  # Each task its own output: job id _ task.
  hpc_plan_output=${hpc_plan_output%_%j.out}_%A_%a.out
  local i
  for i in "${!hpc_plan_sbatch_args[@]}"; do
    [[ ${hpc_plan_sbatch_args[i]} != --output=* ]] || hpc_plan_sbatch_args[i]=--output=$hpc_plan_output
  done
  hpc_plan_sbatch_args+=(--array="$hpc_plan_array")
  # The agents' command, or the first grid point's (each task takes its own from the list).
  hpc_plan_command=("${hpc_configs_words[@]}")
}
