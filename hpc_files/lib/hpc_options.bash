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
#   'VARIABLE=DEFAULT|NAME|KIND|SCOPES| SPELLING...' (the columns: at the end of this file).
hpc_opt_table=(
  # Submitting (first: most submissions name them, and hpc_opt_find reads the rows in order).
  'dry_run=0|--dry-run|flag|action| --dry-run'
  'yes=0|-y/--yes|flag|action| -y --yes'
  'help=0|-h/--help|flag|action| -h --help'
  # The experiment's name (early: most submissions name it).
  'exp_name=|-e/--exp-name|value|file| -e --exp-name'
  # Resources.
  'gpus=|-g/--gpus|value|file,profile| -g --gpus'
  'cpus=|-c/--cpus|value|file,profile| -c --cpus --cpu'
  'num_nodes=1|-n/--num-nodes|value|file| -n --num-nodes --num_nodes'
  'mem_per_gpu=|-m/--mem-per-gpu|value|file,profile| -m --mem-per-gpu'
  'time=|-t/--time|value|file,profile| -t --time'
  'gpu_type=|-G/--gpu-type|value|file,profile| -G --gpu-type'
  'account=|-a/--account|value|file,profile| -a --account'
  'partition=|-p/--partition|value|file,profile| -p --partition'
  # How the program is started.
  'launcher=none|-W/--which-distributed|value|file| -W --which-distributed'
  'label_ranks=0|--label-ranks|flag|-| --label-ranks'
  'configs=|-C/--configs|value|-| -C --configs'
  # Names and places.
  'cluster=|--cluster|value|-| --cluster'
  # Data, results, runners.
  'data=()|-d/--data|multi|file| -d --data'
  'copy_back=()|--copy-back|multi|file| --copy-back'
  'runner=|--runner|value|file| --runner'
  'workdir=|--workdir|value|-| --workdir'
  # Arrays (one at a time).
  'wandb_sweepid=|-w/--wandb-sweepid|value|noint:-w/--wandb-sweepid| -w --wandb-sweepid'
  'num_sweeps=|--num-sweeps|value|-| --num-sweeps'
  'wandb_offline=0|--wandb-offline|flag|noint:--wandb-offline| --wandb-offline'
  'sweep_config=|--sweep-config|value|-| --sweep-config'
  'repeat=|--repeat|value|noint:--repeat| --repeat'
  'max_concurrent=|--max-concurrent|value|-| --max-concurrent'
  # Map and gather (hpc_map_check_options checks them together).
  'map_range=|--map-range|value|map,noint:--map-range| --map-range'
  'map_over=|--map-over|value|map,noint:--map-over| --map-over'
  'gather=|--gather|value|map,noint:--gather| --gather'
  'gather_configs=|--gather-configs|value|map,noint:--gather| --gather-configs'
  'gather_when=|--gather-when|value|map,noint:--gather| --gather-when'
  'gather_cpus=|--gather-cpus|value|map,noint:--gather| --gather-cpus'
  'gather_gpus=|--gather-gpus|value|map,noint:--gather| --gather-gpus'
  'gather_time=|--gather-time|value|map,noint:--gather| --gather-time'
  'chunk=|--chunk|value|map,noint:--chunk| --chunk'
  'chunk_stop_on_failure=0|--chunk-stop-on-failure|flag|map,noint:--chunk| --chunk-stop-on-failure'
  # Scaling test (hpc_scaling_check_options checks them together; --scaling-test first: the others
  # are refused without it).
  'scaling_test=0|--scaling-test|flag|scaling,noint:--scaling-test| --scaling-test'
  'scale_nodes=|--scale-nodes|value|scaling,noint:--scale-*| --scale-nodes'
  'scale_gpus=|--scale-gpus|value|scaling,noint:--scale-*| --scale-gpus'
  'repeats=|--repeats|value|scaling,noint:--scale-*| --repeats'
  'scaling_mode=|--scaling-mode|value|scaling,noint:--scale-*| --scaling-mode'
  'report_time=|--report-time|value|scaling,noint:--scale-*| --report-time'
  'scale_target_efficiency=|--scale-target-efficiency|value|scaling,noint:--scale-*| --scale-target-efficiency'
  'scale_serial=0|--scale-serial|flag|scaling,noint:--scale-*| --scale-serial'
  'scale_parallel=0|--scale-parallel|flag|scaling,noint:--scale-*| --scale-parallel'
  # Time limits.
  'signal_lead=|--signal-lead|value|file,profile| --signal-lead'
  'requeue=0|--requeue|value|file,noint:--requeue| --requeue'
  # Containers (after the rows above: interactive names them first).
  'singularity=|-s/--singularity-container|value|noint:-s/--singularity-container| -s --singularity-container'
)

# An unknown option, -W's and --runner's names, a mode's options outside it (hpc_options_more.bash,
# loaded at the first call: a plain submission runs none of them).
hpc_opt_refuse_outside() { hpc_lib_load hpc_options_more && hpc_opt_refuse_outside "$@"; }
hpc_opt_die_unknown() { hpc_lib_load hpc_options_more && hpc_opt_die_unknown "$@"; }
hpc_opt_launcher_check() { hpc_lib_load hpc_options_more && hpc_opt_launcher_check "$@"; }
hpc_opt_runners_text() { hpc_lib_load hpc_options_more && hpc_opt_runners_text "$@"; }
# What only -d/--data, --copy-back or interactive runs (hpc_options_more.bash too).
hpc_opt_set_multi() { hpc_lib_load hpc_options_more && hpc_opt_set_multi "$@"; }
hpc_opt_check_relative() { hpc_lib_load hpc_options_more && hpc_opt_check_relative "$@"; }
hpc_opt_f_is_set() { hpc_lib_load hpc_options_more && hpc_opt_f_is_set "$@"; }

# hpc_opt_fields ROW: sets hpc_opt_f_var, hpc_opt_f_default, hpc_opt_f_name, hpc_opt_f_kind and
# hpc_opt_f_scopes (with a comma at each end) to ROW's columns, and hpc_opt_f_row to ROW.
hpc_opt_fields() {
  local rest=${1#*|}
  hpc_opt_f_row=$1 hpc_opt_f_var=${1%%=*} hpc_opt_f_default=${1%%|*}
  hpc_opt_f_default=${hpc_opt_f_default#*=}
  hpc_opt_f_name=${rest%%|*} rest=${rest#*|}
  hpc_opt_f_kind=${rest%%|*} rest=${rest#*|}
  hpc_opt_f_scopes=,${rest%%|*},
}

# hpc_opt_find SPELLING: the columns (hpc_opt_fields) of the row that SPELLING names; false when
# none. Row by row, by index (a 'for row in' would copy the whole table first): a pattern over
# the table as one text costs more (Bash matches it at every position), and building an index
# would cost every submission.
hpc_opt_find() {
  local i
  for ((i = 0; i < ${#hpc_opt_table[@]}; i++)); do
    case "${hpc_opt_table[i]} " in
      *" $1 "*)
        hpc_opt_fields "${hpc_opt_table[i]}"
        return 0
        ;;
    esac
  done
  return 1
}

# Where each value came from, in the order the values were taken: hpc_opt_seen (NAME), with
# hpc_opt_seen_where ('command line', 'hpc_files/defaults line N'), hpc_opt_seen_value (a
# multi's one value; empty for the others, whose value is their variable's) and hpc_opt_seen_row
# (its row of the table); hpc_opt_seen_scopes: the SCOPES of them all, one after the other.
declare -ga hpc_opt_seen=() hpc_opt_seen_where=() hpc_opt_seen_value=() hpc_opt_seen_row=()
hpc_opt_seen_scopes=
# hpc_usage_origin (hpc_common.bash's hpc_die_usage names it): where a value that did not come
# from the command line came from, by NAME. Declared there, and here for the linter.
declare -gA hpc_usage_origin
# What this library reads, set by the others or through the table (printf -v): declared here, not
# set, so that the linter knows each name. job_submitter.sh: the toolkit's folder; hpc_common.bash:
# why a file is not trusted, and (hpc_facts.bash) letters and digits; hpc_opt_defaults: the options
# read by name below.
# The multi options' variables are arrays: hpc_opt_defaults empties them.
declare -ga hpc_opt_data hpc_opt_copy_back
declare -g hpc_facts_alnum hpc_facts_digits
declare -g hpc_files_dir hpc_trusted_problem hpc_opt_wandb_sweepid hpc_opt_repeat hpc_opt_wandb_offline \
  hpc_opt_num_sweeps hpc_opt_sweep_config hpc_opt_launcher hpc_opt_num_nodes hpc_opt_singularity \
  hpc_opt_runner hpc_opt_workdir hpc_plan_cluster hpc_plan_partition_option

# hpc_opt_defaults: sets every hpc_opt_* global to its built-in value (the table's DEFAULT: "not
# given" for most).
hpc_opt_defaults() {
  # The table's own words (a variable's name and its fixed default, '()' for the arrays declared
  # below), never a user's value: all in one declare.
  local -a set=("${hpc_opt_table[@]/|*/}")
  declare -g "${set[@]/#/hpc_opt_}"
  hpc_opt_cluster=${HPC_CLUSTER:-} hpc_opt_num_nodes_given=0
  hpc_opt_seen=() hpc_opt_seen_where=() hpc_opt_seen_value=() hpc_opt_seen_row=() hpc_opt_seen_scopes=''
  hpc_usage_origin=()
  # The variable names a profile as --cluster does: never a path.
  [[ -z $hpc_opt_cluster ]] || hpc_opt_is_profile_name "$hpc_opt_cluster" ||
    hpc_die_usage "HPC_CLUSTER" "'$hpc_opt_cluster' is not accepted; accepted: $hpc_opt_profile_accepted"
}

# hpc_opt_asks SCOPE: true when an option of SCOPE (map, scaling) was given: the submission is
# then that mode, whose library is loaded. (Their values are never the built-in one: '' is
# refused, a flag is 1.)
hpc_opt_asks() {
  [[ $hpc_opt_seen_scopes == *",$1,"* ]]
}

# hpc_opt_is_profile_name VALUE: true for the name of a cluster profile, never a path
# (hpc_opt_profile_accepted says so in a refusal).
hpc_opt_profile_accepted='the name of a profile in hpc_files/clusters/'
hpc_opt_is_profile_name() {
  [[ $1 == ["$hpc_facts_alnum"_]* && $1 != *[!"$hpc_facts_alnum"_.-]* ]]
}

# hpc_opt_count_max: the largest count an option takes (6 digits: far above any cluster's, and
# never near Bash's integers); the refusals name it.
hpc_opt_count_max=999999
# hpc_opt_is_count VALUE MIN: true when VALUE is a decimal integer from MIN to hpc_opt_count_max
# (no sign, no spaces).
hpc_opt_is_count() {
  [[ -n $1 && ${#1} -le 6 && $1 != *[!"$hpc_facts_digits"]* ]] && ((10#$1 >= $2 && 10#$1 <= hpc_opt_count_max))
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

# hpc_opt_parse ARGS...: parses job_submitter.sh's options into hpc_opt_* (after hpc_opt_defaults),
# each spelling found in the table (hpc_opt_row). An option with a value may be given once (-d/--data
# and --copy-back add up): the second of two would otherwise silently win.
hpc_opt_parse() {
  local opt name value have_value
  local -A given=()
  while (($#)); do
    hpc_split_option "$1"
    shift
    if ! hpc_opt_find "$opt"; then
      [[ $opt != -* ]] || hpc_opt_die_unknown "$opt"
      hpc_die_usage "$opt" "unexpected word (every value belongs to an option; see --help)"
    fi
    name=$hpc_opt_f_name
    case $hpc_opt_f_kind in
      flag)
        ((have_value == 0)) || hpc_die_usage "$opt" "takes no value"
        printf -v "hpc_opt_$hpc_opt_f_var" 1
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

# hpc_opt_seen_add NAME WHERE [VALUE]: (after hpc_opt_fields of NAME's row) records that NAME's
# value (a multi's VALUE) came from WHERE.
hpc_opt_seen_add() {
  hpc_opt_seen+=("$1") hpc_opt_seen_where+=("$2") hpc_opt_seen_value+=("${3-}") hpc_opt_seen_row+=("$hpc_opt_f_row")
  hpc_opt_seen_scopes+=$hpc_opt_f_scopes
}

# hpc_opt_set NAME VALUE: (after hpc_opt_find of its row) checks one option's value and stores it in
# the row's variable. A check that refuses sets accepted (the refusal is then "'VALUE' is not
# accepted; accepted: ACCEPTED") or problem (a refusal of its own words).
hpc_opt_set() {
  local name=$1 value=$2 accepted='' problem=''
  case $name in
    -a/--account)
      [[ $value =~ ^[A-Za-z0-9_.-]+$ ]] || problem="'$value' is not an account name (letters, digits, _ . -)"
      ;;
    -g/--gpus) hpc_opt_count_check 0 'a whole number of GPUs per node' ;;
    -c/--cpus) hpc_opt_count_check 1 'a whole number of CPUs per GPU process' ;;
    -W/--which-distributed) hpc_opt_launcher_check ;;
    -t/--time) hpc_opt_check_time "$value" || accepted=$hpc_opt_time_accepted ;;
    -m/--mem-per-gpu)
      hpc_opt_check_mem "$value" || accepted='a whole amount with a unit K, M, G or T, e.g. 10G or 512M'
      ;;
    -G/--gpu-type) [[ $value =~ ^[A-Za-z0-9_.-]+$ ]] || problem="'$value' is not a GPU type name" ;;
    -e/--exp-name)
      # Not starting with '-': status, logs and cancel take the name as a word. The same regular
      # expression as theirs (hpc_manage.bash), so that what the locale calls a letter is one here.
      [[ $value =~ ^[A-Za-z0-9_.+-]+$ && $value != [.-]* ]] ||
        accepted="letters, digits and _ . + - (it names folders and files), not starting with '.' or '-'"
      ;;
    -n/--num-nodes) hpc_opt_count_check 1 'a whole number of nodes' hpc_opt_num_nodes_given ;;
    # Empty would silently mean the default file.
    -C/--configs) [[ -n $value ]] || accepted='the path of a configs file' ;;
    -p/--partition)
      [[ $value =~ ^[A-Za-z0-9_.,-]+$ ]] ||
        problem="'$value' is not a partition name; accepted: letters, digits, _ . - (several: separated by commas)"
      ;;
    # A profile's name, never a path (empty would silently mean "match the hostname").
    --cluster) hpc_opt_is_profile_name "$value" || accepted=$hpc_opt_profile_accepted ;;
    --workdir)
      # Empty would silently mean the default; -s checks the container's path later.
      [[ -n $value && $value != *$'\n'* ]] || {
        accepted="a folder path (without -s: absolute or relative to the current folder; with -s: absolute in the"
        accepted+=" container)"
      }
      ;;
    --repeat | --num-sweeps | --max-concurrent) hpc_opt_count_check 1 'a whole number' ;;
    --sweep-config) [[ -n $value ]] || accepted='a sweep configuration file (sweeper.yml)' ;;
    # Items per array task; hpc_map_check_options checks it against the map.
    --chunk) [[ $value == auto ]] || hpc_opt_count_check 1 'auto or a whole number of items per task' ;;
    --requeue) hpc_opt_count_check 0 'how many times a warned job may requeue itself' ;;
    --signal-lead)
      # SLURM's --signal takes at most 65535 seconds; the plan checks it against the time limit.
      hpc_opt_count_check 0 ''
      [[ -z $accepted ]] && ((value <= 65535)) ||
        accepted='seconds before the time limit for the warning signal, 0 to 65535'
      ;;
    --runner)
      # The runners are the files in hpc_files/lib/runners/.
      [[ ", $(hpc_opt_runners_text), " == *", $value, "* && $value =~ ^[a-z][a-z0-9_]*$ ]] ||
        accepted=$(hpc_opt_runners_text)
      ;;
    # Empty would silently mean "not given".
    -w/--wandb-sweepid | -s/--singularity-container) [[ -n $value ]] || accepted='a non-empty value' ;;
    # Any other row of the table (the map's and the scaling test's options): stored as given; its
    # mode checks them together (hpc_map_check_options, hpc_scaling_check_options).
    *) [[ -n $value ]] || accepted='a non-empty value (see --help)' ;;
  esac
  [[ -z $accepted ]] || problem="'$value' is not accepted; accepted: $accepted"
  [[ -z $problem ]] || hpc_die_usage "$name" "$problem"
  printf -v "hpc_opt_$hpc_opt_f_var" '%s' "$value"
}

# hpc_opt_count_check MIN WHAT [FLAG]: (in hpc_opt_set) sets accepted to 'WHAT, MIN to the largest
# count' unless value is a count from MIN (hpc_opt_is_count); else writes value in decimal (08 is
# 8) and sets the variable FLAG to 1.
hpc_opt_count_check() {
  if hpc_opt_is_count "$value" "$1"; then
    value=$((10#$value))
    [[ -z ${3-} ]] || printf -v "$3" 1
  else
    accepted="$2, $1 to $hpc_opt_count_max"
  fi
}

# The project's defaults file (docs/options.md): hpc_files/defaults beside job_submitter.sh, one
# '--long-option=value' line per setting (the table's rows with scope file; -d/--data and
# --copy-back one path a line, adding up), '#' comments and blank lines. Its values come after
# the command line's and before the cluster profile's. At most hpc_opt_file_max bytes.
hpc_opt_file_max=16384

# hpc_opt_file_apply [interactive]: takes the defaults file's values (after hpc_opt_parse) for the
# options the command line did not give; a value the command line gave is still checked. With
# interactive, the file's options that interactive refuses are left out. Bad input: exit 2, one
# line naming the file, the line and the key; nothing is changed on disk.
hpc_opt_file_apply() {
  local path=$hpc_files_dir/defaults label=hpc_files/defaults
  [[ -e $path || -L $path ]] || return 0
  hpc_trusted_read "$path" own $((hpc_opt_file_max + 1)) ||
    hpc_die_usage "$label" "$hpc_trusted_problem; accepted: your own file of settings, or none"
  # shellcheck disable=SC2154 # hpc_trusted_text: set by hpc_trusted_read
  ((${#hpc_trusted_text} <= hpc_opt_file_max)) ||
    hpc_die_usage "$label" "larger than $hpc_opt_file_max bytes; accepted: a short file of settings"
  # Only comments and blank lines (the file install.sh writes): nothing to take.
  [[ $'\n'$hpc_trusted_text =~ $'\n'[[:blank:]]*[^#[:space:]] ]] || return 0
  # The file's lines: their own library, read only when there are some.
  # shellcheck source=hpc_files/lib/hpc_defaults_file.bash
  source "${BASH_SOURCE[0]%/*}/hpc_defaults_file.bash"
  hpc_opt_file_lines "$label" "${1-}"
}

# hpc_opt_settings: (after hpc_plan_make) sets hpc_opt_settings to one line per value that is not
# the built-in default, 'NAME=VALUE (WHERE)': the command line's and the defaults file's in the
# order taken, then what the cluster profile gave (SBATCH_PARTITION for a partition from it).
# --dry-run prints them, the manifest records them (setting).
hpc_opt_settings() {
  local i name row ref where
  local -A listed=()
  hpc_opt_settings=()
  for i in "${!hpc_opt_seen[@]}"; do
    # The row's VARIABLE, KIND and SCOPES, without hpc_opt_fields (as below).
    name=${hpc_opt_seen[i]} row=${hpc_opt_seen_row[i]}
    [[ $row != *[\|,]action[,\|]* ]] || continue
    listed[$name]=1 ref=hpc_opt_${row%%=*}
    case $row in
      *'|flag|'*) hpc_opt_settings+=("$name (${hpc_opt_seen_where[i]})") ;;
      *'|multi|'*) hpc_opt_settings+=("$name=${hpc_opt_seen_value[i]} (${hpc_opt_seen_where[i]})") ;;
      *) hpc_opt_settings+=("$name=${!ref} (${hpc_opt_seen_where[i]})") ;;
    esac
  done
  # Every row, once: 'for row in' (a loop by index costs twice as much over the whole table), the
  # rows of other scopes passed by one case (a third less than a test and a continue).
  for row in "${hpc_opt_table[@]}"; do
    case $row in
      *profile*)
        # The row's NAME and VARIABLE, without hpc_opt_fields (this runs for every job's manifest).
        name=${row#*|} name=${name%%|*}
        [[ ! -v listed[$name] ]] || continue
        ref=hpc_plan_${row%%=*}
        [[ -n ${!ref-} ]] || continue
        where="cluster profile ${hpc_plan_cluster-}"
        [[ $name != -p/--partition || ${hpc_plan_partition_option-} != SBATCH_PARTITION ]] || where=SBATCH_PARTITION
        hpc_opt_settings+=("$name=${!ref} ($where)")
        ;;
    esac
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

[[ ${BASH_SOURCE[0]} == "$0" ]] || return 0
# The long comments of this file, after its last command, where Bash never reads them (it parses
# every comment it reads, and every submission reads this file).

# The table of settings (hpc_opt_table): every option of a submission, once, as one row
#   'VARIABLE=DEFAULT|NAME|KIND|SCOPES| SPELLING...'
# VARIABLE: hpc_opt_VARIABLE holds its value; DEFAULT: its built-in value (the option is set when
# its variable differs from it; '()' for a multi's empty list); NAME: as messages write it
# (-t/--time; its long name is the defaults file's key); KIND: value (one value, checked by
# hpc_opt_set's case for NAME, or stored as given for its mode to check), flag (no value: 1 when
# given) or multi (paths up to the next option, adding up: -d, --copy-back); SCOPES, comma-separated
# ('-' for none): file (a key of the project's defaults file, hpc_opt_file_apply), profile (the
# cluster profile gives the value when nothing else does; the plan's field hpc_plan_VARIABLE holds
# what was used), map and scaling (set, it makes the submission that mode: hpc_opt_asks),
# noint:LABEL (interactive refuses it, naming LABEL; the first row in table order wins), action
# (what the submitter does, not a value of the job: not listed among the settings); SPELLING: the
# words the command line takes. The parser, the names the refusals offer (hpc_opt_names), the
# defaults file's keys, the mode triggers and refusals, interactive's refusals and the settings'
# origins are read from it. A new option is one row here, its check in hpc_opt_set when it has one
# of its own, and its lines in job_submitter.sh's usage. Plain text, read with string operations:
# nothing is built from it when it is loaded (every submission loads it).
