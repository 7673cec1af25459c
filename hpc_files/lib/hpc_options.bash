# shellcheck shell=bash
# shellcheck disable=SC2034 # the hpc_opt_* globals are this library's output, read by hpc_plan.bash
# hpc_options.bash: job_submitter.sh's command line. Pure: reads its arguments, sets hpc_opt_*
# globals, and on bad input prints one line naming the option and what it accepts, then exits 2.
# Checks that need the cluster profile (accounts, GPU types, GPUs per node) are in hpc_plan.bash.

# The old names of launchers, each with its launcher and why: the one place that knows them (-W
# accepts them with a note; refusals list them).
declare -gA hpc_opt_launcher_aliases=([script]=torchrun)
declare -gA hpc_opt_launcher_alias_why=([script]="torch.distributed.launch became torchrun")

# The table of settings: every option of a submission, once, as one row
#   hpc_opt_row NAME VARIABLE DEFAULT KIND SCOPES SPELLING...
# NAME: as messages write it (-t/--time); VARIABLE: hpc_opt_VARIABLE holds its value; DEFAULT: the
# built-in value (the option is set when its variable differs from it); KIND: value (one value,
# checked by hpc_opt_set's case for NAME), flag (no value: 1 when given) or multi (paths up to the
# next option, adding up: -d, --copy-back); SCOPES, comma-separated ('-' for none): file (a key of
# the project's defaults file, hpc_opt_file_apply), profile (the cluster profile gives the value
# when nothing else does; the plan's field hpc_plan_VARIABLE holds what was used), map and scaling
# (set, it makes the submission that mode: hpc_opt_asks), noint:LABEL (interactive refuses it,
# naming LABEL; the first row in table order wins), action (what the submitter does, not a value
# of the job: not listed among the settings); SPELLING: the words the command line takes. The
# parser, the names the refusals offer (hpc_opt_names), the defaults file's keys, the mode
# triggers and refusals, interactive's refusals and the settings' origins are read from it. A new
# option is one row here, its check in hpc_opt_set and its lines in job_submitter.sh's usage.
declare -gA hpc_opt_spelled=() hpc_opt_var=() hpc_opt_default=() hpc_opt_kind=() hpc_opt_scopes=()
declare -ga hpc_opt_rows=()
# hpc_opt_row NAME VARIABLE DEFAULT KIND SCOPES SPELLING...: one row of the table (above).
hpc_opt_row() {
  local word
  hpc_opt_rows+=("$1")
  hpc_opt_var[$1]=$2 hpc_opt_default[$1]=$3 hpc_opt_kind[$1]=$4 hpc_opt_scopes[$1]=,$5,
  for word in "${@:6}"; do hpc_opt_spelled[$word]=$1; done
}
# Resources.
hpc_opt_row -g/--gpus gpus '' value file,profile -g --gpus
hpc_opt_row -c/--cpus cpus '' value file,profile -c --cpus --cpu
hpc_opt_row -n/--num-nodes num_nodes 1 value file -n --num-nodes --num_nodes
hpc_opt_row -m/--mem-per-gpu mem_per_gpu '' value file,profile -m --mem-per-gpu
hpc_opt_row -t/--time time '' value file,profile -t --time
hpc_opt_row -G/--gpu-type gpu_type '' value file,profile -G --gpu-type
hpc_opt_row -a/--account account '' value file,profile -a --account
hpc_opt_row -p/--partition partition '' value file,profile -p --partition
# How the program is started.
hpc_opt_row -W/--which-distributed launcher none value file -W --which-distributed
hpc_opt_row --label-ranks label_ranks 0 flag - --label-ranks
hpc_opt_row -C/--configs configs '' value - -C --configs
# Names and places.
hpc_opt_row -e/--exp-name exp_name '' value file -e --exp-name
hpc_opt_row --cluster cluster '' value - --cluster
# Data, results, runners.
hpc_opt_row -d/--data data '' multi file -d --data
hpc_opt_row --copy-back copy_back '' multi file --copy-back
hpc_opt_row --runner runner '' value file --runner
hpc_opt_row --workdir workdir '' value - --workdir
# Arrays (one at a time).
hpc_opt_row -w/--wandb-sweepid wandb_sweepid '' value noint:-w/--wandb-sweepid -w --wandb-sweepid
hpc_opt_row --num-sweeps num_sweeps '' value - --num-sweeps
hpc_opt_row --wandb-offline wandb_offline 0 flag noint:--wandb-offline --wandb-offline
hpc_opt_row --sweep-config sweep_config '' value - --sweep-config
hpc_opt_row --repeat repeat '' value noint:--repeat --repeat
hpc_opt_row --max-concurrent max_concurrent '' value - --max-concurrent
# Map and gather (hpc_map_check_options checks them together).
hpc_opt_row --map-range map_range '' value map,noint:--map-range --map-range
hpc_opt_row --map-over map_over '' value map,noint:--map-over --map-over
hpc_opt_row --gather gather '' value map,noint:--gather --gather
hpc_opt_row --gather-configs gather_configs '' value map,noint:--gather --gather-configs
hpc_opt_row --gather-when gather_when '' value map,noint:--gather --gather-when
hpc_opt_row --gather-cpus gather_cpus '' value map,noint:--gather --gather-cpus
hpc_opt_row --gather-gpus gather_gpus '' value map,noint:--gather --gather-gpus
hpc_opt_row --gather-time gather_time '' value map,noint:--gather --gather-time
# Scaling test (hpc_scaling_check_options checks them together; --scaling-test first: the others
# are refused without it).
hpc_opt_row --scaling-test scaling_test 0 flag scaling,noint:--scaling-test --scaling-test
hpc_opt_row --scale-nodes scale_nodes '' value 'scaling,noint:--scale-*' --scale-nodes
hpc_opt_row --scale-gpus scale_gpus '' value 'scaling,noint:--scale-*' --scale-gpus
hpc_opt_row --repeats repeats '' value 'scaling,noint:--scale-*' --repeats
hpc_opt_row --scaling-mode scaling_mode '' value 'scaling,noint:--scale-*' --scaling-mode
hpc_opt_row --report-time report_time '' value 'scaling,noint:--scale-*' --report-time
hpc_opt_row --scale-target-efficiency scale_target_efficiency '' value 'scaling,noint:--scale-*' \
  --scale-target-efficiency
hpc_opt_row --scale-serial scale_serial 0 flag 'scaling,noint:--scale-*' --scale-serial
hpc_opt_row --scale-parallel scale_parallel 0 flag 'scaling,noint:--scale-*' --scale-parallel
# Time limits.
hpc_opt_row --signal-lead signal_lead '' value file,profile --signal-lead
hpc_opt_row --requeue requeue 0 value file,noint:--requeue --requeue
# Containers (after the rows above: interactive names them first).
hpc_opt_row -s/--singularity-container singularity '' value noint:-s/--singularity-container \
  -s --singularity-container
# Submitting.
hpc_opt_row --dry-run dry_run 0 flag action --dry-run
hpc_opt_row -y/--yes yes 0 flag action -y --yes
hpc_opt_row -h/--help help 0 flag action -h --help

# Where each value came from, in the order the values were taken: hpc_opt_seen (NAME), with
# hpc_opt_seen_where ('command line', 'hpc_files/defaults line N') and hpc_opt_seen_value (a
# multi's one value; empty for the others, whose value is their variable's).
declare -ga hpc_opt_seen=() hpc_opt_seen_where=() hpc_opt_seen_value=()
# hpc_usage_origin (hpc_common.bash's hpc_die_usage names it): where a value that did not come
# from the command line came from, by NAME. Declared there, and here for the linter.
declare -gA hpc_usage_origin
# What this library reads, set by the others or through the table (printf -v): declared here, not
# set, so that the linter knows each name. job_submitter.sh: the toolkit's folder; hpc_common.bash:
# why a file is not trusted; hpc_opt_defaults: the options read by name below.
declare -g hpc_files_dir hpc_trusted_problem hpc_opt_wandb_sweepid hpc_opt_repeat hpc_opt_wandb_offline \
  hpc_opt_num_sweeps hpc_opt_sweep_config hpc_opt_launcher hpc_opt_num_nodes hpc_opt_singularity \
  hpc_opt_runner hpc_opt_workdir hpc_plan_cluster hpc_plan_partition_option

# hpc_opt_defaults: sets every hpc_opt_* global to its built-in value (the table's DEFAULT: "not
# given" for most).
hpc_opt_defaults() {
  local name
  for name in "${hpc_opt_rows[@]}"; do
    if [[ ${hpc_opt_kind[$name]} == multi ]]; then
      declare -ga "hpc_opt_${hpc_opt_var[$name]}=()"
    else
      printf -v "hpc_opt_${hpc_opt_var[$name]}" '%s' "${hpc_opt_default[$name]}"
    fi
  done
  hpc_opt_cluster=${HPC_CLUSTER:-} hpc_opt_num_nodes_given=0
  hpc_opt_seen=() hpc_opt_seen_where=() hpc_opt_seen_value=() hpc_usage_origin=()
  # The variable names a profile as --cluster does: never a path.
  [[ -z $hpc_opt_cluster ]] || hpc_opt_is_profile_name "$hpc_opt_cluster" ||
    hpc_die_usage "HPC_CLUSTER" \
      "'$hpc_opt_cluster' is not accepted; accepted: the name of a profile in hpc_files/clusters/"
}

# hpc_opt_is_set NAME: true when the option NAME's value is not its built-in one.
hpc_opt_is_set() {
  local ref=hpc_opt_${hpc_opt_var[$1]}
  [[ ${!ref} != "${hpc_opt_default[$1]}" ]]
}

# hpc_opt_asks SCOPE: true when an option of SCOPE (map, scaling) is set: the submission is then
# that mode, whose library is loaded.
hpc_opt_asks() {
  local name
  for name in "${hpc_opt_rows[@]}"; do
    [[ ${hpc_opt_scopes[$name]} == *",$1,"* ]] && hpc_opt_is_set "$name" && return 0
  done
  return 1
}

# hpc_opt_refuse_outside SCOPE MODE WITH: exit 2 naming the first option of SCOPE that is set,
# except WITH itself: it 'is for MODE; accepted with WITH'.
hpc_opt_refuse_outside() {
  local name
  for name in "${hpc_opt_rows[@]}"; do
    [[ $name != "$3" && ${hpc_opt_scopes[$name]} == *",$1,"* ]] || continue
    ! hpc_opt_is_set "$name" || hpc_die_usage "$name" "is for $2; accepted with $3"
  done
}

# hpc_opt_noint_given: sets hpc_opt_noint to the LABEL of the first option set that interactive
# refuses (noint:LABEL), or empty.
hpc_opt_noint_given() {
  local name scopes
  hpc_opt_noint=''
  for name in "${hpc_opt_rows[@]}"; do
    scopes=${hpc_opt_scopes[$name]}
    [[ $scopes == *,noint:* ]] || continue
    hpc_opt_is_set "$name" || continue
    scopes=${scopes#*,noint:}
    hpc_opt_noint=${scopes%%,*}
    return 0
  done
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

# hpc_opt_parse ARGS...: parses job_submitter.sh's options into hpc_opt_* (after hpc_opt_defaults),
# each spelling found in the table (hpc_opt_row). An option with a value may be given once (-d/--data
# and --copy-back add up): the second of two would otherwise silently win.
hpc_opt_parse() {
  local opt name value have_value
  local -A given=()
  while (($#)); do
    hpc_split_option "$1"
    shift
    name=${hpc_opt_spelled[$opt]-}
    if [[ -z $name ]]; then
      [[ $opt != -* ]] || hpc_opt_die_unknown "$opt"
      hpc_die_usage "$opt" "unexpected word (every value belongs to an option; see --help)"
    fi
    case ${hpc_opt_kind[$name]} in
      flag)
        ((have_value == 0)) || hpc_die_usage "$opt" "takes no value"
        printf -v "hpc_opt_${hpc_opt_var[$name]}" 1
        hpc_opt_seen_add "$name" 'command line'
        continue
        ;;
      multi)
        # The values of --data and --copy-back run until the next option.
        local -a values=()
        ((have_value == 0)) || values+=("$value")
        while (($#)) && [[ $1 != -* ]]; do
          values+=("$1")
          shift
        done
        hpc_opt_set_multi "$name" 'command line' ${values[@]+"${values[@]}"}
        continue
        ;;
    esac
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
    hpc_opt_seen_add "$name" 'command line'
  done
}

# hpc_opt_seen_add NAME WHERE [VALUE]: records that NAME's value (a multi's VALUE) came from WHERE.
hpc_opt_seen_add() {
  hpc_opt_seen+=("$1") hpc_opt_seen_where+=("$2") hpc_opt_seen_value+=("${3-}")
}

# hpc_opt_set_multi NAME WHERE VALUE...: checks and adds the paths of -d/--data or --copy-back,
# from WHERE.
hpc_opt_set_multi() {
  local name=$1 where=$2 value
  shift 2
  if [[ $name == -d/--data ]]; then
    (($#)) || hpc_die_usage "$name" "needs at least one path relative to \${SCRATCH}/\${project_name}"
  else
    (($#)) || hpc_die_usage "$name" "needs at least one path relative to \${SLURM_TMPDIR}"
    for value in "$@"; do hpc_opt_check_relative "$name" "$value" "\${SLURM_TMPDIR}"; done
  fi
  if [[ $name == -d/--data ]]; then hpc_opt_data+=("$@"); else hpc_opt_copy_back+=("$@"); fi
  for value in "$@"; do hpc_opt_seen_add "$name" "$where" "$value"; done
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

# hpc_opt_names: sets hpc_opt_names to every spelling hpc_opt_parse accepts, from the table.
hpc_opt_names() {
  hpc_opt_names=("${!hpc_opt_spelled[@]}")
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

# The project's defaults file (docs/options.md): hpc_files/defaults beside job_submitter.sh, one
# '--long-option=value' line per setting (the table's rows with scope file; -d/--data and
# --copy-back one path a line, adding up), '#' comments and blank lines. Its values come after
# the command line's and before the cluster profile's. At most hpc_opt_file_max bytes.
hpc_opt_file_max=65536

# hpc_opt_file_keys: prints the defaults file's keys (the long spellings of the rows with scope
# file), sorted, comma-separated, for the refusals.
hpc_opt_file_keys() {
  local word
  local -a keys=()
  for word in "${!hpc_opt_spelled[@]}"; do
    [[ $word == --* && ${hpc_opt_scopes[${hpc_opt_spelled[$word]}]} == *,file,* && $word != *_* ]] || continue
    [[ $word != --cpu ]] && keys+=("$word")
  done
  printf '%s\n' "${keys[@]}" | LC_ALL=C sort | paste -sd, - | sed 's/,/, /g'
}

# hpc_opt_file_apply [interactive]: takes the defaults file's values (after hpc_opt_parse) for the
# options the command line did not give; a value the command line gave is still checked. With
# interactive, the file's options that interactive refuses are left out. Bad input: exit 2, one
# line naming the file, the line and the key; nothing is changed on disk.
hpc_opt_file_apply() {
  local path=$hpc_files_dir/defaults label=hpc_files/defaults line key value name n=0 ref saved
  [[ -e $path || -L $path ]] || return 0
  hpc_trusted_read "$path" own $((hpc_opt_file_max + 1)) ||
    hpc_die_usage "$label" "$hpc_trusted_problem; accepted: your own file of settings, or none"
  # shellcheck disable=SC2154 # hpc_trusted_text: set by hpc_trusted_read
  ((${#hpc_trusted_text} <= hpc_opt_file_max)) ||
    hpc_die_usage "$label" "larger than $hpc_opt_file_max bytes; accepted: a short file of settings"
  local -a lines
  local -A from_line=() from_cli=()
  for name in ${hpc_opt_seen[@]+"${hpc_opt_seen[@]}"}; do from_cli[$name]=1; done
  mapfile -t lines <<<"$hpc_trusted_text"
  for line in "${lines[@]}"; do
    n=$((n + 1))
    line=${line%$'\r'}
    # Spaces around the line and around '=' are not part of the key or the value.
    [[ $line =~ ^[[:space:]]*(.*[^[:space:]])?[[:space:]]*$ ]] && line=${BASH_REMATCH[1]}
    [[ -n $line && $line != '#'* ]] || continue
    [[ $line =~ ^(--[A-Za-z0-9_-]+)[[:space:]]*=[[:space:]]*(.*)$ ]] ||
      hpc_die_usage "$label line $n" \
        "'$line' is not accepted; accepted: --long-option=value, a comment (#) or a blank line"
    key=${BASH_REMATCH[1]} value=${BASH_REMATCH[2]}
    name=${hpc_opt_spelled[$key]-}
    hpc_opt_file_check_key "$label line $n" "$key" "$name"
    if [[ ${hpc_opt_kind[$name]} != multi ]]; then
      if [[ -v from_line[$name] ]]; then
        value="$key given twice (line ${from_line[$name]}, then line $n); accepted: once (only --data and"
        hpc_die_usage "$label line $n" "$value --copy-back take several)"
      fi
      from_line[$name]=$n
    fi
    [[ ${1-} != interactive || ${hpc_opt_scopes[$name]} != *,noint:* ]] || continue
    hpc_usage_origin[$name]="$label line $n"
    if [[ ${hpc_opt_kind[$name]} == multi ]]; then
      if [[ -v from_cli[$name] ]]; then
        [[ $name != --copy-back ]] || hpc_opt_check_relative "$name" "$value" "\${SLURM_TMPDIR}"
      else
        hpc_opt_set_multi "$name" "$label line $n" "$value"
      fi
    elif [[ -v from_cli[$name] ]]; then
      # Checked all the same (a bad line is refused), then the command line's value back.
      ref=hpc_opt_${hpc_opt_var[$name]} saved=${!ref}
      hpc_opt_set "$name" "$value"
      printf -v "$ref" '%s' "$saved"
    else
      hpc_opt_set "$name" "$value"
      hpc_opt_seen_add "$name" "$label line $n"
    fi
    [[ ! -v from_cli[$name] ]] || unset "hpc_usage_origin[$name]"
  done
}

# hpc_opt_file_check_key WHERE KEY NAME: exit 2 unless KEY (the option NAME, empty when none) is a
# key of the defaults file; names the nearest key when one is near.
hpc_opt_file_check_key() {
  [[ -z $3 || ${hpc_opt_scopes[$3]} != *,file,* ]] || return 0
  local keys
  keys=$(hpc_opt_file_keys)
  [[ -z $3 ]] ||
    hpc_die_usage "$1" "$2 is not a setting of the defaults file (it is given on the command line); accepted: $keys"
  # shellcheck source=hpc_files/lib/hpc_help.bash
  source "${BASH_SOURCE[0]%/*}/hpc_help.bash"
  local -a candidates
  IFS=', ' read -r -a candidates <<<"$keys"
  hpc_nearest "$2" "${candidates[@]}"
  [[ -z $hpc_nearest ]] || hpc_die_usage "$1" "unknown key '$2'; did you mean $hpc_nearest?"
  hpc_die_usage "$1" "unknown key '$2'; accepted: $keys"
}

# hpc_opt_settings: (after hpc_plan_make) sets hpc_opt_settings to one line per value that is not
# the built-in default, 'NAME=VALUE (WHERE)': the command line's and the defaults file's in the
# order taken, then what the cluster profile gave (SBATCH_PARTITION for a partition from it).
# --dry-run prints them, the manifest records them (setting).
hpc_opt_settings() {
  local i name ref where
  local -A listed=()
  hpc_opt_settings=()
  for i in "${!hpc_opt_seen[@]}"; do
    name=${hpc_opt_seen[i]}
    [[ ${hpc_opt_scopes[$name]} != *,action,* ]] || continue
    listed[$name]=1 ref=hpc_opt_${hpc_opt_var[$name]}
    case ${hpc_opt_kind[$name]} in
      flag) hpc_opt_settings+=("$name (${hpc_opt_seen_where[i]})") ;;
      multi) hpc_opt_settings+=("$name=${hpc_opt_seen_value[i]} (${hpc_opt_seen_where[i]})") ;;
      *) hpc_opt_settings+=("$name=${!ref} (${hpc_opt_seen_where[i]})") ;;
    esac
  done
  for name in "${hpc_opt_rows[@]}"; do
    [[ ${hpc_opt_scopes[$name]} == *,profile,* && ! -v listed[$name] ]] || continue
    ref=hpc_plan_${hpc_opt_var[$name]}
    [[ -n ${!ref-} ]] || continue
    where="cluster profile ${hpc_plan_cluster-}"
    [[ $name != -p/--partition || ${hpc_plan_partition_option-} != SBATCH_PARTITION ]] || where=SBATCH_PARTITION
    hpc_opt_settings+=("$name=${!ref} ($where)")
  done
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
