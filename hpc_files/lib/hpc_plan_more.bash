# shellcheck shell=bash
# hpc_plan_more.bash: what a plain submission does not run of hpc_plan.bash: the check of a
# launcher's command (GPUs and python, its module), the fields a mode adds to the plan, and the
# plan files of a failed submission removed again; loaded at the first call of one of them (their
# stubs in hpc_plan.bash, hpc_lib_load).

# What it reads, set by the others (declared, not set): the plan (hpc_plan.bash), the configs
# file's command (hpc_configs.bash).
declare -g hpc_plan_gpus hpc_plan_launcher
declare -ga hpc_configs_words

# hpc_plan_add_fields NAME...: (a mode's file, when loaded) adds the scalar fields NAME... to the
# plan's list, once each, so that they are recorded as the others are.
hpc_plan_add_fields() {
  local name
  for name; do
    [[ " ${hpc_plan_fields[*]} " == *" $name "* ]] || hpc_plan_fields+=("$name") hpc_plan_mode_fields+=("$name")
  done
  # shellcheck disable=SC2034 # read by hpc_plan.bash (hpc_plan_record)
  hpc_plan_field_vars=("${hpc_plan_fields[@]/#/hpc_plan_}")
}

# hpc_plan_is_python WORD: true for python, python3, python3.11, or such a name with a path.
hpc_plan_is_python() {
  [[ ${1##*/} =~ ^python([0-9]+(\.[0-9]+)?)?$ ]]
}

# hpc_plan_check_gpus_python: (a launcher's plan) exit 2 unless the job has GPUs (the launcher
# starts one process per GPU) and the configs file's command starts with python.
hpc_plan_check_gpus_python() {
  if ! ((hpc_plan_gpus > 0)); then
    local msg="0 GPUs cannot be used with -W $hpc_plan_launcher, which"
    msg+=" starts one process per GPU; accepted: 1 or more, or no -W"
    hpc_die_usage "-g/--gpus" "$msg"
  fi
  if ! hpc_plan_is_python "${hpc_configs_words[0]}"; then
    local msg="with -W $hpc_plan_launcher the command must start with"
    msg+=" python; the configs file's starts with '${hpc_configs_words[0]}'"
    hpc_die_usage "-W/--which-distributed" "$msg"
  fi
  # A launcher inside the launcher would start its own processes in every process, all at the
  # job's one rendezvous port: the job would hang to its time limit. Only the launchers: the
  # package's other modules (accelerate.test_utils.scripts.test_script) are programs.
  hpc_plan_python_module "${hpc_configs_words[@]:1}"
  case $hpc_plan_module in
    accelerate | accelerate.commands.launch | accelerate.commands.accelerate_cli | \
      torch.distributed.run | torch.distributed.launch)
      local msg="with -W $hpc_plan_launcher the command must not start a launcher itself (python -m"
      msg+=" $hpc_plan_module); -W $hpc_plan_launcher starts it: write the program's own command (python train.py)"
      hpc_die_usage "-W/--which-distributed" "$msg"
      ;;
  esac
}

# hpc_plan_python_module ARG...: sets hpc_plan_module to the module of python's -m among python's
# options ARG... (-m MOD, -mMOD, or last in a group of flags: -um MOD); empty when python runs a
# script or -c.
hpc_plan_python_module() {
  hpc_plan_module=''
  while (($#)); do
    case $1 in
      -m) hpc_plan_module=${2-} && return 0 ;;
      -c | -c*) return 0 ;;
      -W | -X) shift ;;
      -[bBdEiIOPqsSuvx]*m)
        hpc_plan_module=${2-} && return 0
        ;;
      -[bBdEiIOPqsSuvx]*m* | -m*) hpc_plan_module=${1#*m} && return 0 ;;
      -*) ;;
      *) return 0 ;;
    esac
    shift
  done
}

# hpc_plan_written_add PATH TEXT: (a plan file another process of this submission wrote, a map's
# gather) adds PATH to hpc_plan_written, with TEXT, the text that process wrote: not what PATH
# holds now, which may be a file put in its place since (while the gather's sbatch ran).
hpc_plan_written_add() {
  hpc_plan_written+=("$1") hpc_plan_written_texts+=("$2")
}

# hpc_plan_unwrite: removes the plan files this process wrote (hpc_plan_written), when the
# submission they were for failed: each only while it is a regular file, never through a link,
# that still holds the text it was written with (a file put in its place is someone else's).
hpc_plan_unwrite() {
  local i path text
  for i in "${!hpc_plan_written[@]}"; do
    path=${hpc_plan_written[i]} text=''
    [[ -f $path && ! -L $path ]] || continue
    IFS= read -r -d '' text 2>/dev/null <"$path" || true
    [[ $text != "${hpc_plan_written_texts[i]-}" ]] || rm -f -- "${path:?}"
  done
  hpc_plan_written=() hpc_plan_written_texts=()
}
