# shellcheck shell=bash
# shellcheck disable=SC2034 # the hpc_opt_* globals are this library's output, read by hpc_plan.bash
# hpc_options.bash: job_submitter.sh's command line. Pure: reads its arguments, sets hpc_opt_*
# globals, and on bad input prints one line naming the option and what it accepts, then exits 2.
# Checks that need the cluster profile (accounts, GPU types, GPUs per node) are in hpc_plan.bash.

# The old names of launchers, each with its launcher and why: the one place that knows them (-W
# accepts them with a note; refusals list them).
declare -gA hpc_opt_launcher_aliases=([script]=torchrun)
declare -gA hpc_opt_launcher_alias_why=([script]="torch.distributed.launch became torchrun")

# hpc_opt_defaults: sets every hpc_opt_* global to "not given" (empty) or its fixed default.
hpc_opt_defaults() {
  hpc_opt_account='' hpc_opt_gpus='' hpc_opt_cpus='' hpc_opt_launcher=none hpc_opt_time=''
  hpc_opt_mem_per_gpu='' hpc_opt_gpu_type='' hpc_opt_exp_name='' hpc_opt_num_nodes=1
  hpc_opt_configs='' hpc_opt_partition='' hpc_opt_cluster=${HPC_CLUSTER:-} hpc_opt_dry_run=0
  hpc_opt_yes=0 hpc_opt_wandb_sweepid='' hpc_opt_singularity='' hpc_opt_help=0
  hpc_opt_requeue=0 hpc_opt_signal_lead='' hpc_opt_workdir='' hpc_opt_runner=''
  hpc_opt_repeat='' hpc_opt_num_sweeps='' hpc_opt_max_concurrent='' hpc_opt_wandb_offline=0
  hpc_opt_sweep_config='' hpc_opt_label_ranks=0
  # Map + gather (hpc_map.bash checks them).
  hpc_opt_map_range='' hpc_opt_map_over='' hpc_opt_gather='' hpc_opt_gather_configs=''
  hpc_opt_gather_when='' hpc_opt_gather_cpus='' hpc_opt_gather_gpus='' hpc_opt_gather_time=''
  hpc_opt_chunk='' hpc_opt_chunk_stop_on_failure=0
  hpc_opt_data=() hpc_opt_copy_back=()
  # Scaling test (hpc_scaling.bash checks them).
  hpc_opt_scaling_test=0 hpc_opt_scale_nodes='' hpc_opt_scale_gpus='' hpc_opt_repeats='' hpc_opt_scaling_mode=''
  hpc_opt_report_time=''
  hpc_opt_scale_serial=0 hpc_opt_scale_parallel=0 hpc_opt_scale_target_efficiency=''
  hpc_opt_num_nodes_given=0
  # The variable names a profile as --cluster does: never a path.
  [[ -z $hpc_opt_cluster ]] || hpc_opt_is_profile_name "$hpc_opt_cluster" ||
    hpc_die_usage "HPC_CLUSTER" \
      "'$hpc_opt_cluster' is not accepted; accepted: the name of a profile in hpc_files/clusters/"
}

# hpc_opt_is_profile_name VALUE: true for the name of a cluster profile, never a path.
hpc_opt_is_profile_name() {
  [[ $1 =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]*$ ]]
}

# hpc_opt_count_max: the largest count an option takes (6 digits: far above any cluster's, and
# never near Bash's integers); the refusals name it.
hpc_opt_count_max=999999
# hpc_opt_is_count VALUE MIN: true when VALUE is a decimal integer from MIN to hpc_opt_count_max
# (no sign, no spaces).
hpc_opt_is_count() {
  [[ $1 =~ ^[0-9]{1,6}$ ]] && ((10#$1 >= $2 && 10#$1 <= hpc_opt_count_max))
}

# One grammar for times and memory sizes, shared with the cluster profiles (is_slurm_time and
# is_slurm_mem in python_helpers' profile.py); both sides are tested on tests/fixtures/grammar/.

# hpc_opt_time_accepted: what hpc_opt_check_time accepts, for the messages of every time option.
hpc_opt_time_accepted='a SLURM time M, M:S, H:M:S, D-H, D-H:M or D-H:M:S (minutes and seconds < 60, hours < 24 after a'
hpc_opt_time_accepted+=' day count), e.g. 48:00:00 or 1-12:00:00'
# hpc_opt_check_time VALUE: true for a SLURM time: M, M:S, H:M:S, D-H, D-H:M or D-H:M:S, with
# minutes and seconds < 60 (a leading minutes or hours field is free: SLURM takes 48:00:00, which
# users type) and hours < 24 after a day count, not zero. No UNLIMITED: the warning signal is
# timed from the limit.
hpc_opt_check_time() {
  local d=0 h=0 m s=0
  if [[ $1 =~ ^([0-9]{1,6})(:([0-9]{1,2}))?$ ]]; then
    m=${BASH_REMATCH[1]} s=${BASH_REMATCH[3]:-0}
    ((10#$s < 60 && 10#$m + 10#$s > 0))
    return
  fi
  if [[ $1 =~ ^([0-9]{1,3})-([0-9]{1,2})(:([0-9]{1,2}))?(:([0-9]{1,2}))?$ ]]; then
    d=${BASH_REMATCH[1]} h=${BASH_REMATCH[2]} m=${BASH_REMATCH[4]:-0} s=${BASH_REMATCH[6]:-0}
  elif [[ $1 =~ ^([0-9]{1,5}):([0-9]{1,2}):([0-9]{1,2})$ ]]; then
    h=${BASH_REMATCH[1]} m=${BASH_REMATCH[2]} s=${BASH_REMATCH[3]}
    ((10#$m < 60 && 10#$s < 60 && 10#$h + 10#$m + 10#$s > 0))
    return
  else
    return 1
  fi
  ((10#$h < 24 && 10#$m < 60 && 10#$s < 60 && 10#$d + 10#$h + 10#$m + 10#$s > 0))
}

# hpc_opt_check_mem VALUE: true for a positive whole amount with a unit: 512M, 10G, 1T, 2048K (k,
# m, g, t too). No bare number: SLURM reads it as MB, too easily meant as GB.
hpc_opt_check_mem() {
  [[ $1 =~ ^[0-9]{1,7}[KMGTkmgt]$ ]] && ((10#${1%?} > 0))
}

# hpc_opt_check_relative NAME PATH BASE: PATH must be a relative path that stays inside BASE.
hpc_opt_check_relative() {
  case /$2/ in
    //) hpc_die_usage "$1" "'' is not accepted; accepted: a path relative to $3" ;;
    //*) hpc_die_usage "$1" "'$2' is absolute; accepted: a path relative to $3" ;;
    */../*) hpc_die_usage "$1" "'$2' leaves $3 (..); accepted: a path inside it" ;;
  esac
  # Only . and / (., ./, ./.): the folder itself, which is not something to copy into itself.
  [[ $2 == *[!./]* ]] || hpc_die_usage "$1" "'$2' is $3 itself; accepted: a path inside it"
  [[ $2 != *$'\n'* ]] || hpc_die_usage "$1" "a path with a newline is not accepted"
}

# hpc_opt_parse ARGS...: parses job_submitter.sh's options into hpc_opt_* (after hpc_opt_defaults).
# An option with a value may be given once (-d/--data and --copy-back add up): the second of two
# would otherwise silently win.
hpc_opt_parse() {
  local opt name value have_value
  local -A given=()
  while (($#)); do
    hpc_split_option "$1"
    shift
    case $opt in
      -a | --account) name=-a/--account ;;
      -g | --gpus) name=-g/--gpus ;;
      -c | --cpus | --cpu) name=-c/--cpus ;;
      -W | --which-distributed) name=-W/--which-distributed ;;
      -t | --time) name=-t/--time ;;
      -m | --mem-per-gpu) name=-m/--mem-per-gpu ;;
      -G | --gpu-type) name=-G/--gpu-type ;;
      -e | --exp-name) name=-e/--exp-name ;;
      -n | --num-nodes | --num_nodes) name=-n/--num-nodes ;;
      -C | --configs) name=-C/--configs ;;
      -p | --partition) name=-p/--partition ;;
      --cluster) name=--cluster ;;
      -w | --wandb-sweepid) name=-w/--wandb-sweepid ;;
      -s | --singularity-container) name=-s/--singularity-container ;;
      --runner) name=--runner ;;
      -d | --data) name=-d/--data ;;
      --copy-back) name=--copy-back ;;
      --workdir) name=--workdir ;;
      --repeat) name=--repeat ;;
      --num-sweeps) name=--num-sweeps ;;
      --max-concurrent) name=--max-concurrent ;;
      --sweep-config) name=--sweep-config ;;
      --map-range | --map-over | --gather | --gather-configs) name=$opt ;;
      --gather-when | --gather-cpus | --gather-gpus | --gather-time | --chunk) name=$opt ;;
      --chunk-stop-on-failure)
        ((have_value == 0)) || hpc_die_usage "$opt" "takes no value"
        hpc_opt_chunk_stop_on_failure=1
        continue
        ;;
      --scale-nodes | --scale-gpus | --repeats | --scaling-mode) name=$opt ;;
      --report-time | --scale-target-efficiency) name=$opt ;;
      --scaling-test | --scale-serial | --scale-parallel)
        ((have_value == 0)) || hpc_die_usage "$opt" "takes no value"
        case $opt in
          --scaling-test) hpc_opt_scaling_test=1 ;;
          --scale-serial) hpc_opt_scale_serial=1 ;;
          --scale-parallel) hpc_opt_scale_parallel=1 ;;
        esac
        continue
        ;;
      --wandb-offline)
        ((have_value == 0)) || hpc_die_usage "$opt" "takes no value"
        hpc_opt_wandb_offline=1
        continue
        ;;
      --requeue) name=--requeue ;;
      --signal-lead) name=--signal-lead ;;
      --dry-run | -y | --yes | -h | --help | --label-ranks)
        ((have_value == 0)) || hpc_die_usage "$opt" "takes no value"
        case $opt in
          --label-ranks) hpc_opt_label_ranks=1 ;;
          --dry-run) hpc_opt_dry_run=1 ;;
          -y | --yes) hpc_opt_yes=1 ;;
          -h | --help) hpc_opt_help=1 ;;
        esac
        continue
        ;;
      -*) hpc_opt_die_unknown "$opt" ;;
      *) hpc_die_usage "$opt" "unexpected word (every value belongs to an option; see --help)" ;;
    esac

    if [[ $name == -d/--data || $name == --copy-back ]]; then
      # The values of --data and --copy-back run until the next option.
      local -a values=()
      ((have_value == 0)) || values+=("$value")
      while (($#)) && [[ $1 != -* ]]; do
        values+=("$1")
        shift
      done
      if [[ $name == -d/--data ]]; then
        ((${#values[@]})) || hpc_die_usage "$name" "needs at least one path relative to \${SCRATCH}/\${project_name}"
        hpc_opt_data+=("${values[@]}")
      else
        ((${#values[@]})) || hpc_die_usage "$name" "needs at least one path relative to \${SLURM_TMPDIR}"
        for value in "${values[@]}"; do hpc_opt_check_relative "$name" "$value" "\${SLURM_TMPDIR}"; done
        hpc_opt_copy_back+=("${values[@]}")
      fi
      continue
    fi

    if ((have_value == 0)); then
      # A missing value, also as the last word: never take the next option as the value. A
      # negative number is a value, so that the option's own check says what it accepts.
      if (($# == 0)) || [[ $1 == -?* && ! $1 =~ ^-[0-9] ]]; then hpc_die_usage "$name" "needs a value"; fi
      value=$1
      shift
    fi
    [[ ! -v given[$name] ]] ||
      hpc_die_usage "$name" \
        "given twice ('${given[$name]}', then '$value'); accepted: once (only -d/--data and --copy-back take several)"
    given[$name]=$value
    hpc_opt_set "$name" "$value"
  done
}

# hpc_opt_die_unknown OPTION: bad input: OPTION is none of hpc_opt_parse's; names the nearest
# one (hpc_nearest, hpc_help.bash) when one is near. Exit 2.
hpc_opt_die_unknown() {
  # shellcheck source=hpc_files/lib/hpc_help.bash
  source "${BASH_SOURCE[0]%/*}/hpc_help.bash"
  hpc_opt_names
  hpc_nearest "$1" "${hpc_opt_names[@]}"
  [[ -z $hpc_nearest ]] || hpc_die_usage "$1" "unknown option; did you mean $hpc_nearest? (see --help)"
  hpc_die_usage "$1" "unknown option; see 'bash job_submitter.sh --help'"
}

# hpc_opt_names: sets hpc_opt_names to every option hpc_opt_parse accepts, read from its own case
# patterns (the lines '  -a | --account)' of its text in this file): one list, which no new
# option can miss.
hpc_opt_names() {
  local line word in_parse=0 pattern='^[[:space:]]+(-[-A-Za-z0-9_ |]*)\)'
  local -a words
  hpc_opt_names=()
  while IFS= read -r line; do
    if ((in_parse == 0)); then
      [[ $line != 'hpc_opt_parse() {' ]] || in_parse=1
      continue
    fi
    [[ $line != '}' ]] || break
    # A pattern of options only: -*) and the like are not names.
    [[ $line =~ $pattern ]] || continue
    read -ra words <<<"${BASH_REMATCH[1]//|/ }"
    for word in "${words[@]}"; do
      [[ " ${hpc_opt_names[*]} " == *" $word "* ]] || hpc_opt_names+=("$word")
    done
  done <"${BASH_SOURCE[0]}"
}

# hpc_opt_set NAME VALUE: checks one option's value and stores it.
hpc_opt_set() {
  local name=$1 value=$2
  case $name in
    -a/--account)
      [[ $value =~ ^[A-Za-z0-9_.-]+$ ]] ||
        hpc_die_usage "$name" "'$value' is not an account name (letters, digits, _ . -)"
      hpc_opt_account=$value
      ;;
    -g/--gpus)
      hpc_opt_is_count "$value" 0 ||
        hpc_die_usage "$name" \
          "'$value' is not accepted; accepted: a whole number of GPUs per node, 0 to $hpc_opt_count_max"
      hpc_opt_gpus=$((10#$value))
      ;;
    -c/--cpus)
      hpc_opt_is_count "$value" 1 ||
        hpc_die_usage "$name" \
          "'$value' is not accepted; accepted: a whole number of CPUs per GPU process, 1 to $hpc_opt_count_max"
      hpc_opt_cpus=$((10#$value))
      ;;
    -W/--which-distributed)
      if [[ -n ${hpc_opt_launcher_aliases[$value]+x} ]]; then
        local msg="note: -W $value is the old name of -W ${hpc_opt_launcher_aliases[$value]}"
        msg+=" (${hpc_opt_launcher_alias_why[$value]})"
        hpc_say "$msg"
        value=${hpc_opt_launcher_aliases[$value]}
      fi
      # The launchers are the files in hpc_files/lib/launchers/.
      hpc_launcher_list
      # shellcheck disable=SC2154 # hpc_launcher_names: set by hpc_launcher_list
      [[ " ${hpc_launcher_names[*]} " == *" $value "* && $value != *" "* ]] ||
        hpc_die_usage "$name" "'$value' is not accepted; accepted: $(hpc_opt_launchers_text)"
      hpc_opt_launcher=$value
      ;;
    -t/--time)
      hpc_opt_check_time "$value" || hpc_die_usage "$name" "'$value' is not accepted; accepted: $hpc_opt_time_accepted"
      hpc_opt_time=$value
      ;;
    -m/--mem-per-gpu)
      hpc_opt_check_mem "$value" ||
        hpc_die_usage "$name" \
          "'$value' is not accepted; accepted: a whole amount with a unit K, M, G or T, e.g. 10G or 512M"
      hpc_opt_mem_per_gpu=$value
      ;;
    -G/--gpu-type)
      [[ $value =~ ^[A-Za-z0-9_.-]+$ ]] || hpc_die_usage "$name" "'$value' is not a GPU type name"
      hpc_opt_gpu_type=$value
      ;;
    -e/--exp-name)
      # Not starting with '-': status, logs and cancel take the name as a word.
      [[ $value =~ ^[A-Za-z0-9_.+-]+$ && $value != [.-]* ]] || {
        local accepted="letters, digits and _ . + - (it names folders and files), not starting with '.' or '-'"
        hpc_die_usage "$name" "'$value' is not accepted; accepted: $accepted"
      }
      hpc_opt_exp_name=$value
      ;;
    -n/--num-nodes)
      hpc_opt_is_count "$value" 1 ||
        hpc_die_usage "$name" "'$value' is not accepted; accepted: a whole number of nodes, 1 to $hpc_opt_count_max"
      hpc_opt_num_nodes=$((10#$value)) hpc_opt_num_nodes_given=1
      ;;
    -C/--configs)
      # Empty would silently mean the default file.
      [[ -n $value ]] || hpc_die_usage "$name" "'' is not accepted; accepted: the path of a configs file"
      hpc_opt_configs=$value
      ;;
    -p/--partition)
      [[ $value =~ ^[A-Za-z0-9_.,-]+$ ]] ||
        hpc_die_usage "$name" \
          "'$value' is not a partition name; accepted: letters, digits, _ . - (several: separated by commas)"
      hpc_opt_partition=$value
      ;;
    --cluster)
      # A profile's name, never a path (empty would silently mean "match the hostname").
      hpc_opt_is_profile_name "$value" ||
        hpc_die_usage "$name" "'$value' is not accepted; accepted: the name of a profile in hpc_files/clusters/"
      hpc_opt_cluster=$value
      ;;
    --workdir)
      # Empty would silently mean the default; -s checks the container's path later.
      [[ -n $value && $value != *$'\n'* ]] || {
        local accepted="a folder path (without -s: absolute or relative to the current folder; with -s: absolute in the"
        accepted+=" container)"
        hpc_die_usage "$name" "'$value' is not accepted; accepted: $accepted"
      }
      hpc_opt_workdir=$value
      ;;
    --repeat | --num-sweeps | --max-concurrent)
      hpc_opt_is_count "$value" 1 ||
        hpc_die_usage "$name" "'$value' is not accepted; accepted: a whole number, 1 to $hpc_opt_count_max"
      case $name in
        --repeat) hpc_opt_repeat=$((10#$value)) ;;
        --num-sweeps) hpc_opt_num_sweeps=$((10#$value)) ;;
        --max-concurrent) hpc_opt_max_concurrent=$((10#$value)) ;;
      esac
      ;;
    --sweep-config)
      [[ -n $value ]] || hpc_die_usage "$name" "'' is not accepted; accepted: a sweep configuration file (sweeper.yml)"
      hpc_opt_sweep_config=$value
      ;;
    --map-range | --map-over | --gather | --gather-configs | --gather-when | --gather-cpus | --gather-gpus | \
      --gather-time)
      # Stored as given; hpc_map_check_options checks them together.
      [[ -n $value ]] || hpc_die_usage "$name" "'' is not accepted; accepted: a non-empty value (see --help)"
      name=${name#--}
      printf -v "hpc_opt_${name//-/_}" '%s' "$value"
      ;;
    --chunk)
      # Items per array task; hpc_map_check_options checks it against the map.
      [[ $value == auto ]] || hpc_opt_is_count "$value" 1 ||
        hpc_die_usage "$name" \
          "'$value' is not accepted; accepted: auto or a whole number of items per task, 1 to $hpc_opt_count_max"
      hpc_opt_chunk=$value
      [[ $value == auto ]] || hpc_opt_chunk=$((10#$value))
      ;;
    --scale-nodes | --scale-gpus | --repeats | --scaling-mode | --report-time | --scale-target-efficiency)
      # Stored as given; hpc_scaling_check_options checks them together.
      [[ -n $value ]] || hpc_die_usage "$name" "'' is not accepted; accepted: a non-empty value (see --help)"
      name=${name#--}
      printf -v "hpc_opt_${name//-/_}" '%s' "$value"
      ;;
    --requeue)
      hpc_opt_is_count "$value" 0 || {
        local accepted="how many times a warned job may requeue itself, 0 to $hpc_opt_count_max"
        hpc_die_usage "$name" "'$value' is not accepted; accepted: $accepted"
      }
      hpc_opt_requeue=$((10#$value))
      ;;
    --signal-lead)
      # SLURM's --signal takes at most 65535 seconds; the plan checks it against the time limit.
      { hpc_opt_is_count "$value" 0 && ((10#$value <= 65535)); } ||
        hpc_die_usage "$name" \
          "'$value' is not accepted; accepted: seconds before the time limit for the warning signal, 0 to 65535"
      hpc_opt_signal_lead=$((10#$value))
      ;;
    --runner)
      # The runners are the files in hpc_files/lib/runners/.
      [[ ", $(hpc_opt_runners_text), " == *", $value, "* && $value =~ ^[a-z][a-z0-9_]*$ ]] ||
        hpc_die_usage "$name" "'$value' is not accepted; accepted: $(hpc_opt_runners_text)"
      hpc_opt_runner=$value
      ;;
    -w/--wandb-sweepid | -s/--singularity-container)
      # Empty would silently mean "not given".
      [[ -n $value ]] || hpc_die_usage "$name" "'' is not accepted; accepted: a non-empty value"
      if [[ $name == -w/* ]]; then hpc_opt_wandb_sweepid=$value; else hpc_opt_singularity=$value; fi
      ;;
  esac
}

# hpc_opt_check_combinations: options that exclude or need one another (one array mode at a
# time; sweep options with a sweep; --workdir with a container); exit 2 naming them.
hpc_opt_check_combinations() {
  local modes=0
  [[ -z $hpc_opt_wandb_sweepid ]] || modes=$((modes + 1))
  [[ -z $hpc_opt_repeat ]] || modes=$((modes + 1))
  ((hpc_opt_wandb_offline == 0)) || modes=$((modes + 1))
  ((modes <= 1)) ||
    hpc_die_usage "-w/--repeat/--wandb-offline" \
      "choose one: a W&B sweep (-w), an offline grid sweep (--wandb-offline) or repeats (--repeat)"
  [[ -z $hpc_opt_num_sweeps || -n $hpc_opt_wandb_sweepid ]] ||
    hpc_die_usage "--num-sweeps" "is for W&B sweeps; accepted with -w/--wandb-sweepid"
  [[ -z $hpc_opt_sweep_config || -n $hpc_opt_wandb_sweepid || $hpc_opt_wandb_offline == 1 ]] ||
    hpc_die_usage "--sweep-config" "is for sweeps; accepted with -w/--wandb-sweepid or --wandb-offline"
  if [[ -n $hpc_opt_wandb_sweepid || $hpc_opt_wandb_offline == 1 ]]; then
    # One agent per task, on one node with one GPU.
    [[ $hpc_opt_launcher == none ]] ||
      hpc_die_usage "-W/--which-distributed" "sweeps run one agent per array task, on one node: accepted without -W"
    ((hpc_opt_num_nodes == 1)) ||
      hpc_die_usage "-n/--num-nodes" "sweeps run one agent per array task, on one node: accepted: 1"
  fi
  # -s chooses the container's runner itself (the runner's check then needs its image).
  [[ -z $hpc_opt_singularity || -z $hpc_opt_runner ]] ||
    hpc_die_usage "--runner" "-s/--singularity-container chooses the container's runner; accepted: one of the two"
  # A W&B agent runs the sweep's program (program: train.py) from its working folder.
  [[ -n $hpc_opt_singularity || -z $hpc_opt_workdir || -z $hpc_opt_wandb_sweepid ]] ||
    {
      local message="W&B agents (-w) start the sweep's program in the project folder; accepted without -w (or with"
      message+=" -s: the container's folder)"
      hpc_die_usage "--workdir" "$message"
    }
}

# hpc_opt_runners_text: prints the runners --runner accepts (the files in hpc_files/lib/runners/),
# comma-separated.
hpc_opt_runners_text() {
  local file name text=''
  for file in "${BASH_SOURCE[0]%/*}"/runners/*.bash; do
    name=${file##*/} name=${name%.bash}
    # Only names that can be part of a function's name.
    [[ -f $file && $name =~ ^[a-z][a-z0-9_]*$ ]] && text+="$name, "
  done
  printf '%s\n' "${text%, }"
}

# hpc_opt_launchers_text: prints the launchers -W accepts (the files in hpc_files/lib/launchers/),
# as a refusal lists them: 'lightning, none, torchrun (alias: script)'.
hpc_opt_launchers_text() {
  local name alias text=''
  hpc_launcher_list
  for name in "${hpc_launcher_names[@]}"; do
    text+="$name, "
    for alias in "${!hpc_opt_launcher_aliases[@]}"; do
      [[ ${hpc_opt_launcher_aliases[$alias]} != "$name" ]] || text="${text%, } (alias: $alias), "
    done
  done
  printf '%s\n' "${text%, }"
}

# hpc_opt_help FILE: prints the usage comment of FILE (--help), with each launcher's own lines
# (hpc_launcher_NAME_describe, from the files in hpc_files/lib/launchers/) after the line that
# introduces them, indented as the option's text.
hpc_opt_help() {
  local line name text
  while IFS= read -r line; do
    printf '%s\n' "$line"
    if [[ $line == 'Commands (one file each in hpc_files/lib/commands/):' ]]; then
      # Each command by its file's Summary line (hpc_help.bash).
      # shellcheck source=hpc_files/lib/hpc_help.bash
      source "${BASH_SOURCE[0]%/*}/hpc_help.bash"
      hpc_commands_summaries
      continue
    fi
    if [[ $line == *"one of the files in hpc_files/lib/runners/:" ]]; then
      printf '%29saccepted: %s\n' '' "$(hpc_opt_runners_text)"
      continue
    fi
    [[ $line == *"one of the files in hpc_files/lib/launchers/:" ]] || continue
    hpc_launcher_list
    for name in "${hpc_launcher_names[@]}"; do
      hpc_launcher_load "$name" || continue
      while IFS= read -r text; do
        printf '%29s%s\n' '' "$text"
      done < <("hpc_launcher_${name}_describe")
    done
  done < <(hpc_usage "$1")
}
