# shellcheck shell=bash
# hpc_job.bash: what a job does on the compute nodes. Sourced by the generated job script (the
# batch shell, on the job's first node) and by job_step.sh (the tasks SLURM starts on every node).
#
# The batch shell (hpc_job_main):
#   phase 1  when the cluster gives jobs no SLURM_TMPDIR, one 'guard' task per node (one srun
#            step, --overlap) makes this job's folder there and stays until the end: after
#            scancel or the time limit no new step can start, so cleanup must come from a step
#            that is already running (it gets SIGTERM then, or SIGUSR2 from us at a normal end);
#   phase 2  the program: runner (lib/runners/) x launcher (lib/launchers/), started in the
#            background and waited for, so that signal traps run at once and are forwarded;
#   phase 3  the guards remove what phase 1 made; the job exits with the program's status.
# Every wait of the batch shell on the guards is bounded (hpc_job_start_guards, hpc_job_stop_guards).
# This file is the batch shell's order of phases; each phase's code is a file of its own:
# hpc_job_node.bash (phases 1 and 3 on every node), hpc_job_signals.bash (the warning, the
# traps, requeueing), hpc_job_task.bash (phase 2 in each task).

# The job's values are its plan (hpc_plan.bash's fields, hpc_plan_*): the job script names the
# plan file, hpc_job_main loads it (hpc_job_plan_load) and exports its path as HPC_JOB_PLAN, from
# which job_step.sh's tasks and guards and the scontrol shim load it too; nothing renames them.
# What this library reads, set by the plan file: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_job_guards_PID: set by bash for the coprocess hpc_job_guards; hpc_runner_argv: by the
# runner module's wrap (hpc_files/lib/runners/).
declare -g scratch_dir exp_name hpc_plan_launcher hpc_plan_runner hpc_plan_python_helpers \
  hpc_plan_tmpdir_provided hpc_plan_tmpdir_root hpc_plan_toolkit_dir hpc_plan_mode \
  hpc_plan_signal hpc_plan_requeue hpc_plan_workdir hpc_plan_data_archive \
  hpc_plan_nodes hpc_plan_gpus hpc_job_guards_PID hpc_plan_token hpc_plan_exp_name
# hpc_map.bash: a map task's count and folder.
declare -g map_count task_dir
# The runner module (hpc_files/lib/runners/): its Python and its folders.
declare -g hpc_runner_python hpc_runner_wandb_dir hpc_runner_wandb_host
declare -ga hpc_plan_modules hpc_plan_command hpc_plan_copy_back hpc_plan_sbatch_args \
  hpc_runner_argv

# shellcheck source=hpc_files/lib/hpc_common.bash
source "${BASH_SOURCE[0]%/*}/hpc_common.bash"
# shellcheck source=hpc_files/lib/hpc_configs.bash
source "${BASH_SOURCE[0]%/*}/hpc_configs.bash"
# A sweep's key (hpc_sweep.bash) and the data's staging (hpc_stage_node.bash) are loaded where
# they are used (hpc_job_task, hpc_job_guard): a job without them does not read them.
# The job's phases, one file each: every node's setup and end, signals and restarts, the tasks.
# shellcheck source=hpc_files/lib/hpc_job_node.bash
source "${BASH_SOURCE[0]%/*}/hpc_job_node.bash"
# shellcheck source=hpc_files/lib/hpc_job_signals.bash
source "${BASH_SOURCE[0]%/*}/hpc_job_signals.bash"
# shellcheck source=hpc_files/lib/hpc_job_task.bash
source "${BASH_SOURCE[0]%/*}/hpc_job_task.bash"

# hpc_launcher_srun: the launcher's srun options (hpc_launcher_NAME_srun); empty: no srun.
hpc_launcher_srun=()
# hpc_job_srun_detach: what starts the guards' and samplers' srun: (setsid) in an interactive
# session (hpc_interactive_setup), so that a hangup of its terminal's session, which srun answers
# by killing its step, never reaches them: they clean up at the job's end. Empty: srun itself.
hpc_job_srun_detach=()

# hpc_job_log MESSAGE...: one line to the job's output, marked as the toolkit's (hpc_log).
hpc_job_log() {
  hpc_log "$@"
}

# hpc_job_fail STEP MESSAGE...: the toolkit's step STEP failed: says so and exits 1, so the job
# ends FAILED before (or instead of) the program.
hpc_job_fail() {
  local step=$1
  shift
  hpc_job_log "FAILED at step '$step': $*"
  exit 1
}

# hpc_job_plan_load PATH: reads the job's plan file PATH (hpc_plan_record's text): only a regular
# file of this user that is not a link and that nobody else can write, read from the descriptor
# that was checked (hpc_trusted_open); anything else ends the job FAILED, naming it. It is
# then sourced: the toolkit's own text, every value quoted with printf %q, written once before
# sbatch with noclobber in the user's outputs folder, so sourcing it assigns values and runs
# nothing (no eval: bash reads the quoted words as it wrote them). Its token must be the one the
# job script carries (HPC_JOB_PLAN_TOKEN, set by the script, exported for the steps): another of
# the user's plans renamed into this one's name (in a folder others can write, or by mistake) ends
# the job FAILED, naming the experiment it was written for. A script from before tokens sets none.
hpc_job_plan_load() {
  local path=$1 fd
  # Read from the one descriptor that was checked (hpc_trusted_open), never by name again.
  hpc_trusted_open "$path" || hpc_job_fail "plan" "the plan file '$path' $hpc_trusted_problem: not read"
  fd=$hpc_trusted_fd
  hpc_plan_token=''
  # shellcheck source=/dev/null
  source "/dev/fd/$fd" || hpc_job_fail "plan" "cannot read the plan file $path"
  exec {fd}<&-
  [[ -z ${HPC_JOB_PLAN_TOKEN:-} || $hpc_plan_token == "$HPC_JOB_PLAN_TOKEN" ]] ||
    hpc_job_fail "plan" \
      "the plan file '$path' is not this job's (it was written for experiment '${hpc_plan_exp_name-}'): not run"
}

# hpc_job_runner_load: (the batch shell, each node's guard) loads the plan's runner
# (hpc_files/lib/runners/NAME.bash): what the job does with it, on every side, is its functions.
hpc_job_runner_load() {
  hpc_runner_load "$hpc_plan_runner" || hpc_job_fail "runner" "no runner '$hpc_plan_runner' in this toolkit"
}

# hpc_job_elapsed: seconds since the batch script started (HPC_JOB_T0), e.g. 0.042.
hpc_job_elapsed() {
  local now=${EPOCHREALTIME/[.,]/} start=${HPC_JOB_T0/[.,]/}
  local us=$((now - start))
  printf '%d.%03d\n' "$((us / 1000000))" "$(((us % 1000000) / 1000))"
}

# hpc_job_master: exports MASTER_ADDR (this, the first node) and MASTER_PORT (a preset one wins,
# else derived from the job id by the Python helpers' rule and checked free here).
hpc_job_master() {
  export MASTER_ADDR=${MASTER_ADDR:-$SLURMD_NODENAME}
  if [[ -z ${MASTER_PORT:-} ]]; then
    # The runner's Python for the toolkit's helpers (a venv job's venv, else the node's python3).
    "hpc_runner_${hpc_plan_runner}_python"
    MASTER_PORT=$(PYTHONPATH="$hpc_plan_python_helpers" "$hpc_runner_python" -m hpc_helpers port \
      --job-id "$SLURM_JOB_ID" --check-free) || hpc_job_fail "port" "no free port for the rendezvous"
    export MASTER_PORT
  fi
}

# hpc_job_load_modules: loads the profile's environment modules, if any.
hpc_job_load_modules() {
  [[ -n ${hpc_plan_modules[*]+x} ]] || return 0
  if ! declare -F module >/dev/null && [[ -r /etc/profile.d/modules.sh ]]; then
    # shellcheck source=/dev/null
    source /etc/profile.d/modules.sh
  fi
  declare -F module >/dev/null || command -v module >/dev/null ||
    hpc_job_fail "modules" "the cluster profile lists modules (${hpc_plan_modules[*]}) but there is no 'module' command"
  module load "${hpc_plan_modules[@]}" || hpc_job_fail "modules" "module load ${hpc_plan_modules[*]} failed"
}

# hpc_job_run_program: phase 2. Starts the program with its launcher in the background and
# waits for it; sets hpc_job_status to its exit status.
hpc_job_run_program() {
  local step=(bash "$hpc_plan_toolkit_dir/job_step.sh" task --) first_failure=''
  # srun returns the highest exit status of its tasks, and the tasks it stopped after the first
  # failure (--kill-on-bad-exit) count as 128+SIGTERM. The program's own status is the first
  # task's that "Exited with exit code N": srun says which on its stderr, which passes through
  # tee (to the job's output) and a grep that keeps that first line.
  # The launcher's srun options (hpc_launcher_NAME_srun, set in hpc_job_main); none: no srun.
  if ((${#hpc_launcher_srun[@]} == 0)); then
    # job_step.sh's task in a subshell of this shell, which has loaded the plan and the libraries
    # already: a new bash would read them again before the program (and per item of a chunk).
    (hpc_job_task "${hpc_job_command[@]}") &
  else
    first_failure=$(mktemp "${TMPDIR:-/tmp}/hpc_first_failure.XXXXXX")
    srun "${hpc_launcher_srun[@]}" "${step[@]}" "${hpc_job_command[@]}" \
      2> >(tee -p >(grep -m 1 -oE ': tasks? [0-9,-]+: Exited with exit code [0-9]+$' >"$first_failure") >&2) &
  fi
  hpc_job_program_pid=$!
  # The sampler of what the job uses starts beside the program once it is on its way: nothing of
  # it (its folder's checks, its srun) comes before the program's start.
  hpc_job_usage_start
  hpc_job_status=0
  while :; do
    wait "$hpc_job_program_pid" || hpc_job_status=$?
    # A trapped signal interrupts wait; the program may still be running.
    kill -0 "$hpc_job_program_pid" 2>/dev/null || break
    hpc_job_status=0
  done
  if ((hpc_job_status != 0 && ${#hpc_launcher_srun[@]} > 0)); then
    local i line
    # The pipeline may still be draining srun's last lines.
    for ((i = 0; i < 20; i++)); do
      [[ -s $first_failure ]] && break
      sleep 0.1
    done
    line=$(<"$first_failure")
    if [[ $line =~ Exited\ with\ exit\ code\ ([0-9]+)$ ]] && ((BASH_REMATCH[1] != hpc_job_status)); then
      local msg="srun exited with $hpc_job_status; the first task that failed${line%%: Exited*}"
      msg+=" exited with ${BASH_REMATCH[1]}: that is the job's status"
      hpc_job_log "$msg"
      hpc_job_status=${BASH_REMATCH[1]}
    fi
  fi
  [[ -z ${first_failure:-} ]] || rm -f -- "${first_failure:?}"
}

# hpc_job_array_setup: what the mode gives a job or task (its job_setup hook: a repeat's seed, a
# grid point's command, a map task's item...), the command the plan's unless it says otherwise;
# then its folders (job_folders: hpc_job_own_folders, and for array tasks the log of their own
# variables; a chunked map's task makes its items' one by one).
hpc_job_array_setup() {
  hpc_job_command=("${hpc_plan_command[@]}")
  hpc_mode job_setup
  hpc_mode job_folders
}

# hpc_mode_any_job_folders: (the job) its own folders (hpc_job_own_folders).
hpc_mode_any_job_folders() { hpc_job_own_folders; }

# hpc_job_task_variables_log: (an array task) one log line naming the variables that are this
# task's own, so that three repeats that ran alike show whether they had different seeds.
hpc_job_task_variables_log() {
  local text=''
  [[ -z ${seed+x} ]] || text+=" seed=$seed"
  [[ -z ${map_index+x} ]] || text+=" map_index=$map_index map_count=$map_count task_dir=$task_dir"
  text+=" checkpoints_dir=$checkpoints_dir WANDB_DIR=$WANDB_DIR${HPC_WORKDIR:+ HPC_WORKDIR=$HPC_WORKDIR}"
  hpc_job_log "task variables:$text"
}

# hpc_job_own_folders: (the batch shell) the folders of this experiment, each array task its own
# (task_N), so that runs of one experiment never share files: checkpoints_dir
# (${scratch_dir}/${exp_name}/checkpoints[/task_N]); WANDB_DIR (${scratch_dir}/${exp_name}[/task_N],
# where W&B writes wandb/), unless the submitting shell set one; and with --workdir, HPC_WORKDIR,
# where each task starts ([WORKDIR/task_N]); a scaling run always its own (hpc_scaling_workdir).
# Containers get /scratch_storage as WANDB_DIR (their own folder on scratch: the host's paths are
# not visible in them).
hpc_job_own_folders() {
  local task=''
  # Array tasks and scaling runs each their own (the mode's tasks hook); a single job, a gather or
  # a scaling report the experiment's.
  ! hpc_mode tasks || task=task_${hpc_job_task_index:-${SLURM_ARRAY_TASK_ID:?}}
  export checkpoints_dir=$scratch_dir/$exp_name/checkpoints${task:+/$task}
  # Not writable by others, whatever the umask, as the submission makes it (hpc_submit_make_folders).
  [[ -d $checkpoints_dir ]] || (umask go-w && mkdir -p -- "$checkpoints_dir") ||
    hpc_job_fail "folders" "cannot make $checkpoints_dir"
  if [[ -n ${WANDB_DIR:-} ]]; then
    hpc_job_log "WANDB_DIR=$WANDB_DIR from the submitting shell is kept"
  else
    # The runner's rule: the experiment's (or task's) folder on scratch; a container's own.
    "hpc_runner_${hpc_plan_runner}_folders" "$scratch_dir/$exp_name" "$task"
    export WANDB_DIR=$hpc_runner_wandb_dir
    # The submission made the experiment's folder: a process only for a task's or a missing one.
    [[ -z $hpc_runner_wandb_host || -d $hpc_runner_wandb_host ]] || mkdir -p -- "$hpc_runner_wandb_host" ||
      hpc_job_fail "folders" "cannot make $hpc_runner_wandb_host"
  fi
  hpc_mode job_workdir "$task"
}

# hpc_mode_any_job_run: (the job) the program (hpc_job_run_program).
hpc_mode_any_job_run() { hpc_job_run_program; }

# hpc_mode_any_job_workdir TASK: (the job's own folders) the folder the program starts in:
# --workdir's (TASK's own folder in it), HPC_WORKDIR; none without --workdir.
hpc_mode_any_job_workdir() {
  local task=$1
  if [[ -z ${hpc_plan_workdir:-} ]]; then
    # One in the submitting shell (sbatch passes it on) is not this job's.
    unset HPC_WORKDIR
    return 0
  fi
  # The submission made it; a folder removed since is not made again here.
  [[ -d $hpc_plan_workdir ]] || hpc_job_fail "workdir" "the working folder $hpc_plan_workdir (--workdir) is missing"
  export HPC_WORKDIR=$hpc_plan_workdir${task:+/$task}
  # Not writable by others, whatever the umask, as the submission makes --workdir.
  [[ -d $HPC_WORKDIR ]] || (umask go-w && mkdir -p -- "$HPC_WORKDIR") ||
    hpc_job_fail "workdir" "cannot make $HPC_WORKDIR"
}

# hpc_job_usage_start: starts the sampler of what the job uses (hpc_usage.bash), one per node in
# a step of its own beside the program (--overlap: it takes nothing the program needs), in the
# background: the program does not wait for it. Once per job, when hpc_job_main asked for it
# (hpc_job_usage_wanted: not in job_step.sh's steps, which also run hpc_job_run_program).
# HPC_JOB_USAGE=0 starts none.
hpc_job_usage_start() {
  ((${hpc_job_usage_wanted:-0})) || return 0
  hpc_job_usage_wanted=0
  hpc_job_usage_pid=''
  [[ ${HPC_JOB_USAGE:-1} != 0 && -n ${scratch_dir:-} ]] || return 0
  # shellcheck source=hpc_files/lib/hpc_usage.bash
  source "$hpc_lib_dir/hpc_usage.bash"
  hpc_job_usage_key=$(hpc_job_own_id)
  hpc_job_usage_dir=$(hpc_usage_dir "$scratch_dir" "$hpc_job_usage_key")
  if ! hpc_job_usage_folder "$hpc_job_usage_dir"; then
    hpc_job_log "usage: not measured (cannot make $hpc_job_usage_dir: $hpc_private_dir_problem)"
    return 0
  fi
  HPC_USAGE_STEP=1 ${hpc_job_srun_detach[@]+"${hpc_job_srun_detach[@]}"} srun --ntasks="$SLURM_JOB_NUM_NODES" \
    --ntasks-per-node=1 --overlap --cpus-per-task=1 --mem=0 --kill-on-bad-exit=0 --quiet \
    bash "$hpc_plan_toolkit_dir/job_step.sh" sample "$SLURM_JOB_ID" "$hpc_job_usage_dir" \
    </dev/null >/dev/null 2>&1 &
  hpc_job_usage_pid=$!
}

# hpc_job_usage_folder DIR: makes the usage folder DIR (OUTPUTS/usage/KEY) and usage/ the job's
# private folders, and checks OUTPUTS (hpc_private_dir): the sampler writes there for as long as
# the job runs. False, with hpc_private_dir_problem, when one may not be used.
hpc_job_usage_folder() {
  hpc_private_dir "${1%/*/*}" && hpc_private_dir "${1%/*}" && hpc_private_dir "$1"
}

# hpc_job_usage_stop: (the program ended) stops the samplers (SIGUSR2 through their srun, which
# they answer with a last sample; 10 s at most) and logs what each node used (hpc_usage_report).
hpc_job_usage_stop() {
  local pid=${hpc_job_usage_pid:-} i line
  [[ -n $pid ]] || return 0
  hpc_job_usage_pid=''
  kill -USR2 "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  ! kill -0 "$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  local -a files=("$hpc_job_usage_dir"/*)
  [[ -e ${files[0]} ]] || {
    hpc_job_log "usage: not measured (the sampler's step did not start)"
    return 0
  }
  while IFS= read -r line; do
    hpc_job_log "$line"
  done < <(hpc_usage_report "${files[@]}")
}

# hpc_job_log_fresh SCRIPT: (the batch shell, first) the first run of a job starts its log afresh,
# as SLURM did before every job's log was opened for appending (--open-mode=append, for the runs a
# requeue adds): a log of an earlier job of the same name and id (ids start again once the
# controller's state is reset) would run on into this job's, and 'logs' would show both. Only
# SLURM's one regular file for standard output and error, through the open file, never a path,
# and only one last written before SCRIPT (the batch script, which slurmd writes as it launches
# the job): what slurmstepd wrote after it, before the batch shell started (a --chdir it could not
# enter), is this job's. Compared by the shell itself: no process on the job's start.
hpc_job_log_fresh() {
  local out=/proc/$BASHPID/fd/1
  ((${SLURM_RESTART_COUNT:-0} == 0)) || return 0
  [[ -f $out && $out -ef /proc/$BASHPID/fd/2 && -f $1 && $out -ot $1 ]] || return 0
  truncate -s 0 /proc/self/fd/1 2>/dev/null || true
}

# hpc_job_log_end: logs how the program ended (hpc_job_status): a success, a stop at the warning,
# an end by SLURM or a failure, so that the log says why the job's state is what it is.
hpc_job_log_end() {
  local warning_code msg
  warning_code=$((128 + $(kill -l "$HPC_WARNING_SIGNAL" 2>/dev/null || echo 0)))
  if ((hpc_job_status == 0 && hpc_job_ended_by_slurm)); then
    msg="the program exited with status 0 after SLURM's SIGTERM, $(hpc_job_elapsed) s after the start"
  elif ((hpc_job_warned && hpc_job_status == warning_code)); then
    # The program ended of the warning (128+the signal's number): a stop, not a crash; only the
    # program knows whether it saved its work.
    printf -v msg '%s' "stopped at the time-limit warning (SIG$HPC_WARNING_SIGNAL):" \
      " the program exited with $hpc_job_status (128+SIG$HPC_WARNING_SIGNAL) after" \
      " $(hpc_job_elapsed) s; whether it saved its work, its own lines above say"
  elif ((hpc_job_warned && hpc_job_status == 0)); then
    # 0 after the warning: a program that stopped early as asked, or one that finished its work
    # in the time left (a refused requeue lets it go on); only its own lines tell which.
    printf -v msg '%s' "ended after the time-limit warning (SIG$HPC_WARNING_SIGNAL): the program exited with 0 after" \
      " $(hpc_job_elapsed) s; whether it stopped early and saved its work or finished, its own lines above say"
  elif ((hpc_job_status == 0)); then
    msg="the program finished successfully after $(hpc_job_elapsed) s"
  elif ((hpc_job_ended_by_slurm)); then
    # Not the program's failure: SLURM ended it (its state says CANCELLED or TIMEOUT).
    printf -v msg '%s' "the program was ended by SLURM (SIGTERM:" \
      " ${hpc_job_term_why:-scancel or the time limit}) after $(hpc_job_elapsed) s, exit status $hpc_job_status"
  else
    msg="the program failed with exit status $hpc_job_status after $(hpc_job_elapsed) s"
  fi
  hpc_job_log "$msg"
}

# hpc_job_main PLAN_FILE: the batch shell's whole job (the generated script's last line): loads
# the plan, exports its path for the tasks (HPC_JOB_PLAN) and what the program sees.
hpc_job_main() {
  local needs_guards=0 cleanup_rc=0
  hpc_job_log_fresh "$0"
  export HPC_JOB_T0=${HPC_JOB_T0:-$EPOCHREALTIME}
  hpc_job_plan_load "${1-}"
  hpc_job_runner_load
  # The tasks, the guards and the scontrol shim load the same file; nothing else is handed on.
  export HPC_JOB_PLAN=$1
  hpc_job_omp_kept=${OMP_NUM_THREADS:-}
  # Which lead the job got (the profile's may have been shortened to fit a short --time).
  hpc_job_warning_text='no time-limit warning signal'
  [[ " ${hpc_plan_sbatch_args[*]} " != *" --signal="* ]] ||
    hpc_job_warning_text="SIG$hpc_plan_signal ${hpc_plan_signal_lead:-?} s before the time limit"
  hpc_facts_program_env
  export "${hpc_facts_program_env[@]}"
  # The program learns which signal warns of the time limit (hpc_helpers.signals reads it).
  export HPC_WARNING_SIGNAL=${hpc_plan_signal:-USR1}
  export HPC_RESTART_COUNT=${SLURM_RESTART_COUNT:-0}
  hpc_job_warned=0 hpc_job_ended_by_slurm=0
  hpc_job_requeue_records_remove
  # An array task by its own name: its job id alone may be the array's (SLURM gives the array's
  # id to one of its tasks), which reads as another job's.
  local name="job ${SLURM_JOB_ID} ("
  [[ -z ${SLURM_ARRAY_TASK_ID:-} ]] || name="job ${SLURM_ARRAY_JOB_ID}_$SLURM_ARRAY_TASK_ID (job id $SLURM_JOB_ID; "
  local msg="$name$hpc_plan_runner, launcher $hpc_plan_launcher) on ${SLURM_JOB_NODELIST}: $hpc_plan_nodes node(s)"
  msg+=" x $hpc_plan_gpus GPU(s), restart $HPC_RESTART_COUNT,"
  msg+=" OMP_NUM_THREADS=$OMP_NUM_THREADS${hpc_job_omp_kept:+ (from the submitting shell)}, $hpc_job_warning_text"
  hpc_job_log "$msg"
  hpc_job_load_modules
  hpc_job_array_setup
  # The launcher (hpc_files/lib/launchers/NAME.bash): how its tasks are started.
  hpc_launcher_load "$hpc_plan_launcher" || hpc_job_fail "launcher" "no launcher '$hpc_plan_launcher' in this toolkit"
  "hpc_launcher_${hpc_plan_launcher}_srun"

  # Signals first: from here on, a warning or a TERM reaches the program, or is noted.
  trap 'hpc_job_forward TERM' TERM
  trap 'hpc_job_forward INT' INT
  # shellcheck disable=SC2064 # the signal's name is fixed for the job
  trap "hpc_job_forward $HPC_WARNING_SIGNAL" "$HPC_WARNING_SIGNAL"

  # SLURM_TMPDIR: the cluster's, or one this job makes on every node.
  hpc_job_tmpdir_choose "$hpc_plan_tmpdir_provided" ||
    hpc_job_fail "tmpdir" "the cluster profile says SLURM_TMPDIR is provided, but this job has none"
  [[ $HPC_JOB_TMPDIR_MODE != emulated ]] || needs_guards=1
  # Data to unpack, results to copy back, an image to copy: work for a guard on every node.
  [[ -z $hpc_plan_data_archive && -z ${hpc_plan_copy_back[*]+x} ]] || needs_guards=1
  ! "hpc_runner_${hpc_plan_runner}_node_work" || needs_guards=1
  if ((needs_guards)); then
    # However the batch shell ends, the guards are told to copy back and clean up.
    trap hpc_job_stop_guards EXIT
    hpc_job_start_guards
  fi

  if ((${#hpc_launcher_srun[@]})); then
    hpc_job_master
    hpc_job_log "rendezvous at $MASTER_ADDR:$MASTER_PORT"
  fi

  # The usage sampler: started by hpc_job_run_program, beside the program.
  hpc_job_usage_wanted=1 hpc_job_usage_pid=''
  # The program, as the mode runs it (a chunked map's items one after the other, a scaling run
  # timed, an interactive session's shell).
  hpc_mode job_run
  trap - TERM INT "$HPC_WARNING_SIGNAL"
  hpc_job_log_end
  hpc_job_usage_stop
  hpc_job_stop_guards || cleanup_rc=$?
  trap - EXIT
  if ((cleanup_rc != 0)); then
    hpc_job_log "FAILED at step 'copy-back': see above"
    ((hpc_job_status != 0)) || hpc_job_status=1
  fi
  # The mode's end (a map task's final status, for its gather; a scaling run's record).
  hpc_mode job_end "$hpc_job_status"
  hpc_job_maybe_requeue
  hpc_job_requeue_records_remove
  hpc_job_preempt_records_remove
  exit "$hpc_job_status"
}
