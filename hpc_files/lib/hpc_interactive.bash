# shellcheck shell=bash
# hpc_interactive.bash: an interactive session (bash job_submitter.sh interactive), both sides.
# The submitter's side (the hooks of modes/interactive.bash in the one submission, hpc_submit_main)
# makes the plan as a submission does, in mode 'interactive', writes the plan file and job script,
# and runs the job script under salloc in the foreground. The job's own code (hpc_job_main) then
# runs as for a batch job: guards, staging, SLURM_TMPDIR, the rendezvous; where a batch job starts
# its program, this mode starts a shell on the first node (hpc_interactive_shell -> job_step.sh
# shell), whose hpc-run runs the program through the batch job's own hpc_job_run_program
# (job_step.sh run). When the shell ends, hpc_job_main goes on to its end: the guards copy back and
# clean every node, and salloc releases the allocation. So interactive and batch jobs share every step but one.
#
# A session ends with its terminal. It is recorded as a submission is (hpc_pending.bash: the
# record names its plan file and script, salloc's job carries its --comment tag), so that
# 'status' and 'cancel EXP' find it whatever killed its submitter. A hangup, SIGINT or SIGTERM of
# the submitter ends the allocation (scancel) before its EXIT trap removes the plan file and
# script. And beside the shell, a watchdog step on the first node (job_step.sh watchdog) ends the
# allocation itself once no client has been attached for --idle-limit: the batch shell, while its
# terminal is there, touches the session's '.alive' file (hpc_interactive_heartbeat); the
# watchdog, at the job's end whatever ended it, removes the plan file, script and record.

# What this library reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
declare -g hpc_opt_f_scopes hpc_plan_runner hpc_plan_outputs_dir hpc_plan_exp_name \
  hpc_plan_script hpc_plan_file hpc_plan_toolkit_dir hpc_plan_source_dir hpc_plan_launcher \
  hpc_job_status hpc_lib_dir exp_name hpc_job_node_tmpdir hpc_job_term_why hpc_pending_file hpc_pending_tag \
  hpc_pending_token
declare -gA hpc_pending_job_token
declare -ga hpc_opt_table hpc_plan_sbatch_args hpc_plan_command \
  hpc_submit_made hpc_pending_ids

# The salloc options taken from the plan's sbatch arguments: the allocation's shape. The rest
# (--output, --signal=B:, --no-requeue, --open-mode) are a batch script's.
hpc_interactive_salloc_options=(--job-name --nodes --ntasks-per-node --cpus-per-task --mem
  --time --gres --gpus --constraint --account --partition --chdir)

# Seconds without a client (no terminal attached to the session) before the watchdog ends the
# session: --idle-limit's default, 10 minutes.
hpc_interactive_idle_default_s=600

# hpc_interactive_options ARGS...: takes interactive's own option, --idle-limit MINUTES (or Ns,
# seconds), out of ARGS: sets hpc_interactive_idle_s, and hpc_interactive_args to the other words
# (the submission's options). Bad value: exit 2, one line.
hpc_interactive_options() {
  local value given=''
  hpc_interactive_idle_s=$hpc_interactive_idle_default_s
  hpc_interactive_args=()
  while (($#)); do
    case $1 in
      --idle-limit | --idle-limit=*)
        if [[ $1 == *=* ]]; then
          value=${1#*=}
        else
          (($# > 1)) || hpc_die_usage --idle-limit "needs a value"
          shift
          value=$1
        fi
        [[ -z $given ]] || hpc_die_usage --idle-limit "given twice ('$given', then '$value'); accepted: once"
        given=$value
        if [[ $value =~ ^0*([1-9][0-9]{0,3})$ ]] && ((BASH_REMATCH[1] <= 1440)); then
          hpc_interactive_idle_s=$((BASH_REMATCH[1] * 60))
        elif [[ $value =~ ^0*([1-9][0-9]{0,4})s$ ]] && ((BASH_REMATCH[1] <= 86400)); then
          hpc_interactive_idle_s=${BASH_REMATCH[1]}
        else
          local msg="'$value' is not accepted; accepted: minutes without a client before the session ends,"
          hpc_die_usage --idle-limit "$msg 1 to 1440, or seconds as Ns (1s to 86400s)"
        fi
        ;;
      *) hpc_interactive_args+=("$1") ;;
    esac
    shift
  done
}

# hpc_interactive_refuse: exit 2, one line, for the options that make no sense in one shell: the
# first row of the table of settings (hpc_options.bash) with scope noint:LABEL whose option is
# set, named by its LABEL.
hpc_interactive_refuse() {
  local row label
  for row in "${hpc_opt_table[@]}"; do
    [[ $row == *noint:* ]] || continue
    hpc_opt_fields "$row"
    hpc_opt_f_is_set || continue
    label=${hpc_opt_f_scopes#*,noint:}
    hpc_die_usage "${label%%,*}" \
      "not with interactive; accepted there: the options of one job (see 'bash job_submitter.sh interactive --help')"
  done
}

# hpc_interactive_salloc_args: sets hpc_interactive_salloc to salloc's options: those of the
# plan's sbatch arguments that shape the allocation (hpc_interactive_salloc_options).
hpc_interactive_salloc_args() {
  local arg
  hpc_interactive_salloc=()
  for arg in "${hpc_plan_sbatch_args[@]}"; do
    hpc_plan_in_list "${arg%%=*}" "${hpc_interactive_salloc_options[@]}" || continue
    hpc_interactive_salloc+=("$arg")
  done
}

# hpc_interactive_dry_run: prints the salloc line, the shell's environment and the summary;
# creates nothing.
hpc_interactive_dry_run() {
  "hpc_runner_${hpc_plan_runner}_preview"
  printf '== salloc invocation\nsalloc'
  printf ' %q' "${hpc_interactive_salloc[@]}"
  printf ' -- bash JOB_SCRIPT\n\n== environment of the shell (and of hpc-run'"'"'s program)\n'
  # The session's folders are those of one job (hpc_job_own_folders).
  hpc_submit_environment
  printf '\n== summary\n%s\n' "$(hpc_plan_summary)"
  [[ -z ${hpc_runner_preview:-} ]] || printf '%s\n' "$hpc_runner_preview"
  printf '\nDry run: nothing was allocated or created.\n'
}

# hpc_interactive_session: (prepared as a submission is: hpc_submit_prepare) the submission's
# record, the plan file, the job script, then salloc runs the job script here, on this terminal,
# tagged with the record's token; the submitter waits for it in the background (so that its traps
# run at once): a hangup, SIGINT or SIGTERM ends the allocation (hpc_interactive_end). The plan
# file, script and record go when salloc has returned and the allocation has ended.
hpc_interactive_session() {
  local rc=0 script stdin
  trap hpc_interactive_undo EXIT
  # Recorded before anything of it exists, so that whatever kills this process, 'status' and
  # 'cancel' find what it left.
  hpc_pending_open "$hpc_plan_outputs_dir" "$hpc_plan_exp_name" ||
    hpc_die "cannot record the session in $hpc_plan_outputs_dir/submissions; no session was started"
  hpc_plan_write || hpc_die "cannot write the session's plan in $hpc_plan_outputs_dir"
  script=${hpc_plan_file%.plan}.sh
  hpc_interactive_script=$script
  hpc_interactive_alive=${hpc_plan_file%.plan}.alive
  hpc_pending_stopped_load
  hpc_pending_files "$hpc_plan_file" "$script" "$hpc_interactive_alive" ||
    hpc_die "cannot record the session in $hpc_pending_file"
  hpc_plan_render
  hpc_private_write "$script" "$hpc_plan_script" || hpc_die "cannot write the session's job script $script"
  hpc_private_write "$hpc_interactive_alive" '' || hpc_die "cannot write $hpc_interactive_alive"
  hpc_interactive_signal=''
  trap 'hpc_interactive_signal=HUP' HUP
  trap 'hpc_interactive_signal=INT' INT
  trap 'hpc_interactive_signal=TERM' TERM
  hpc_pending_sbatch_starts
  # In the background, with the terminal as its input (a background command's would be /dev/null).
  exec {stdin}<&0
  (
    unset SLURM_TMPDIR
    exec env "HPC_INTERACTIVE_ALIVE=$hpc_interactive_alive" "HPC_INTERACTIVE_IDLE_S=$hpc_interactive_idle_s" \
      "HPC_INTERACTIVE_RECORD=$hpc_pending_file" salloc "--comment=$hpc_pending_tag$hpc_pending_token" \
      "${hpc_interactive_salloc[@]}" -- bash "$script" <&"$stdin" {stdin}<&-
  ) &
  hpc_interactive_salloc_pid=$!
  exec {stdin}<&-
  rc=0
  while :; do
    wait "$hpc_interactive_salloc_pid" && rc=0 || rc=$?
    kill -0 "$hpc_interactive_salloc_pid" 2>/dev/null || break
    [[ -z $hpc_interactive_signal ]] || break
  done
  if [[ -n $hpc_interactive_signal ]]; then
    # The terminal is gone, or someone asked the session to end: no more lines to it.
    exec >/dev/null 2>&1
    hpc_interactive_end
    rc=$((128 + $(kill -l "$hpc_interactive_signal")))
  elif ((rc >= 128)); then
    # salloc killed: its allocation may live on without it.
    hpc_interactive_end
  else
    hpc_pending_close rm
  fi
  exit "$rc"
}

# hpc_interactive_end: ends the session's allocation, found in squeue by the record's tag
# (scancel), or salloc's request while no allocation is granted; waits (bounded) for salloc; the
# record goes once no job of it is left (else it stays, for 'status' and 'cancel').
hpc_interactive_end() {
  local id i left=0 out
  local -a ids=()
  hpc_pending_scan "$hpc_plan_outputs_dir" "$hpc_plan_exp_name"
  hpc_pending_stopped_load
  if hpc_pending_jobs; then
    for id in ${hpc_pending_ids[@]+"${hpc_pending_ids[@]}"}; do
      [[ ${hpc_pending_job_token[$id]} != "$hpc_pending_token" ]] || ids+=("$id")
    done
    if ((${#ids[@]})); then
      out=$(hpc_slurm -t 60 scancel "${ids[@]}" 2>&1) || {
        left=1
        hpc_say "scancel ${ids[*]} failed: ${out//$'\n'/ }"
      }
    fi
  else
    left=1
  fi
  # salloc returns once its job's end has run; still waiting for an allocation, it gives up its
  # request at SIGTERM.
  ((${#ids[@]})) || kill -TERM "$hpc_interactive_salloc_pid" 2>/dev/null || true
  for ((i = 0; i < 600; i++)); do
    kill -0 "$hpc_interactive_salloc_pid" 2>/dev/null || break
    ((i != 300)) || kill -TERM "$hpc_interactive_salloc_pid" 2>/dev/null || true
    sleep 0.1
  done
  kill -KILL "$hpc_interactive_salloc_pid" 2>/dev/null || true
  ((left)) || hpc_pending_close rm
}

# hpc_interactive_undo: (EXIT trap of the session) removes its plan file, job script and '.alive'
# file, and the folders it made that stayed empty.
hpc_interactive_undo() {
  hpc_plan_unwrite
  [[ -z ${hpc_interactive_script:-} ]] || rm -f -- "$hpc_interactive_script"
  [[ -z ${hpc_interactive_alive:-} ]] || rm -f -- "$hpc_interactive_alive"
  ((${#hpc_submit_made[@]} == 0)) || hpc_submit_unmake_folders
}

# --- The job's side (sourced by modes/interactive.bash, and by job_step.sh). ---

# hpc_interactive_setup: (the batch shell, which salloc runs on the submitting host) behaves as on
# the first node: SLURMD_NODENAME names it (MASTER_ADDR, the guards' records); and keeps the
# allocation's SLURM variables for hpc-run, whose srun starts from inside the shell's step.
hpc_interactive_setup() {
  local first name saved=''
  if [[ -z ${SLURMD_NODENAME:-} ]]; then
    first=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1) || first=''
    [[ -n $first ]] || hpc_job_fail "interactive" "cannot read the first node of $SLURM_JOB_NODELIST"
    export SLURMD_NODENAME=$first
  fi
  for name in "${!SLURM_@}"; do
    saved+=$name=${!name}$'\x1f'
  done
  export HPC_INTERACTIVE_SLURM_ENV=$saved
  # shellcheck disable=SC2034 # read by hpc_job_start_guards and hpc_job_usage_start
  hpc_job_srun_detach=(setsid)
}

# hpc_interactive_shell: (the batch shell, in place of the program) the shell on the first node,
# a step beside the guards (--overlap); sets hpc_job_status to its status. That step runs in a
# process group of its own, the terminal's foreground one (set -m): a hangup of the terminal
# (SIGHUP to its foreground group) ends the shell's step alone, never the guards' srun or this
# shell, which goes on to the job's end (the guards' cleanup), writing no more to the terminal
# that is gone.
hpc_interactive_shell() {
  hpc_job_status=0
  trap 'exec >/dev/null 2>&1; hpc_interactive_hangup=1' HUP
  local msg="interactive session of $exp_name on $SLURMD_NODENAME: hpc-run starts the configs file's command across"
  msg+=" the allocation; exit ends the session"
  hpc_job_log "$msg"
  local beat=''
  if [[ -n ${HPC_INTERACTIVE_ALIVE:-} ]]; then
    hpc_interactive_heartbeat "$BASHPID" "$HPC_INTERACTIVE_ALIVE" "${HPC_INTERACTIVE_IDLE_S:-600}" </dev/null &
    beat=$!
    setsid srun --overlap --nodes=1 --ntasks=1 --nodelist="$SLURMD_NODENAME" --cpus-per-task=1 --mem=0 --quiet \
      bash "$hpc_plan_toolkit_dir/job_step.sh" watchdog </dev/null >/dev/null 2>&1 &
  fi
  [[ ! -t 0 ]] || set -m
  srun --pty --overlap --nodes=1 --ntasks=1 --nodelist="$SLURMD_NODENAME" \
    bash "$hpc_plan_toolkit_dir/job_step.sh" shell || hpc_job_status=$?
  set +m
  # The watchdog stays: at the allocation's end (salloc's release, or its own scancel when salloc
  # is gone) SLURM's SIGTERM makes it remove the session's files.
  [[ -z $beat ]] || kill "$beat" 2>/dev/null || true
  # The shell's step killed at the allocation's time limit (SIGKILL: it never saw a SIGTERM): the
  # session's end is SLURM's, not a failure of what ran in it.
  if ((hpc_job_status != 0)); then
    hpc_job_term_reason
    # shellcheck disable=SC2034 # read by hpc_job_main's last lines (hpc_job.bash)
    [[ $hpc_job_term_why != 'the time limit' ]] || hpc_job_ended_by_slurm=1
  fi
  # A terminal that hung up is no longer this session's controlling terminal.
  if [[ -n ${hpc_interactive_hangup:-} ]] || ! { : >/dev/tty; } 2>/dev/null; then
    exec >/dev/null 2>&1
    hpc_job_status=129
  fi
  trap - HUP
}

# hpc_interactive_interval LIMIT_S: sets hpc_interactive_interval to how often the heartbeat
# touches the '.alive' file and the watchdog looks at it: a quarter of the idle limit, 1 to 30 s.
hpc_interactive_interval() {
  hpc_interactive_interval=$(($1 / 4))
  ((hpc_interactive_interval >= 1)) || hpc_interactive_interval=1
  ((hpc_interactive_interval <= 30)) || hpc_interactive_interval=30
}

# hpc_interactive_heartbeat SHELL_PID FILE LIMIT_S: (in the background of the batch shell) while
# the batch shell SHELL_PID runs and its terminal is there (a client is attached), touches FILE
# (never through a link) every hpc_interactive_interval seconds; stops when either is gone.
hpc_interactive_heartbeat() {
  trap - HUP
  exec >/dev/null 2>&1
  hpc_interactive_interval "$3"
  while kill -0 "$1" 2>/dev/null && { : >/dev/tty; } 2>/dev/null; do
    touch -h -c -- "$2" 2>/dev/null || return 0
    sleep "$hpc_interactive_interval"
  done
}

# hpc_interactive_watchdog: (job_step.sh watchdog, a step on the first node for as long as the
# session) ends the allocation (scancel of its own job) once the session's '.alive' file
# (HPC_INTERACTIVE_ALIVE) has not been touched for HPC_INTERACTIVE_IDLE_S seconds: no client
# attached. It compares the file's times with each other, never with this node's clock. At the
# job's end, whatever ended it (SIGTERM from SLURM, or the batch shell's srun), it removes the
# session's plan file, job script, '.alive' file and record (hpc_interactive_forget).
hpc_interactive_watchdog() {
  local limit=${HPC_INTERACTIVE_IDLE_S:-600} file=${HPC_INTERACTIVE_ALIVE:-} seen now idle=0
  [[ $limit =~ ^[0-9]{1,6}$ && -n $file ]] || hpc_job_fail "watchdog" "no idle limit or '.alive' file"
  trap 'hpc_interactive_forget; exit 0' TERM INT HUP USR2
  hpc_interactive_interval "$limit"
  seen=$(stat -c %Y -- "$file" 2>/dev/null) || seen=''
  while ((idle < limit)); do
    sleep "$hpc_interactive_interval" &
    wait $! || true
    now=$(stat -c %Y -- "$file" 2>/dev/null) || now=''
    if [[ -n $now && $now != "$seen" ]]; then
      seen=$now idle=0
    else
      idle=$((idle + hpc_interactive_interval))
    fi
  done
  hpc_job_log "interactive session of $exp_name: no client attached for $limit s (--idle-limit): ending it"
  scancel "$SLURM_JOB_ID" 2>/dev/null || true
  # SLURM's SIGTERM comes next (the trap); should it not, this is the end all the same.
  sleep 60 &
  wait $! || true
  hpc_interactive_forget
}

# hpc_interactive_forget: (the watchdog, at the job's end) removes the session's plan file
# (HPC_JOB_PLAN), job script, '.alive' file and record (HPC_INTERACTIVE_RECORD): each only the
# user's own regular file, never through a link.
hpc_interactive_forget() {
  local plan=${HPC_JOB_PLAN:-} path
  trap '' TERM INT HUP USR2
  for path in "$plan" "${plan%.plan}.sh" "${HPC_INTERACTIVE_ALIVE:-}" "${HPC_INTERACTIVE_RECORD:-}"; do
    [[ -n $path && -f $path && ! -L $path && -O $path ]] || continue
    rm -f -- "${path:?}"
  done
}

# hpc_interactive_node_shell: (job_step.sh shell, on the first node) this node's SLURM_TMPDIR, the
# runner's environment, then an interactive bash whose rcfile (hpc_interactive_rc.bash) defines
# hpc-run and the prompt.
hpc_interactive_node_shell() {
  if [[ ${HPC_JOB_TMPDIR_MODE:-provided} == emulated ]]; then
    hpc_job_node_tmpdir || hpc_job_fail "tmpdir" "cannot work out SLURM_TMPDIR"
    export SLURM_TMPDIR=$hpc_job_node_tmpdir
  fi
  hpc_runner_load "$hpc_plan_runner" || hpc_job_fail "runner" "no runner '$hpc_plan_runner' in this toolkit"
  # The runner's environment (the venv), as a task gets it; the command is expanded when run.
  "hpc_runner_${hpc_plan_runner}_enter" true
  export HPC_INTERACTIVE_STEP=$hpc_plan_toolkit_dir/job_step.sh
  exec bash --rcfile "$hpc_lib_dir/hpc_interactive_rc.bash" -i
}

# hpc_interactive_run [CMD...]: (job_step.sh run, from hpc-run in the shell) the configs file's
# command, or CMD, started across the allocation by the batch job's own hpc_job_run_program, with
# the allocation's SLURM variables (those of the shell's one-task step replaced); exits with the
# program's status.
hpc_interactive_run() {
  local entry name
  local -a saved
  for name in "${!SLURM_@}"; do
    unset "$name"
  done
  IFS=$'\x1f' read -r -a saved <<<"${HPC_INTERACTIVE_SLURM_ENV:-}"
  for entry in ${saved[@]+"${saved[@]}"}; do
    [[ $entry == SLURM_*=* ]] && export "${entry?}"
  done
  unset SLURM_TMPDIR
  if (($#)); then
    # shellcheck disable=SC2034 # read by hpc_job_run_program (hpc_job.bash)
    hpc_job_command=("$@")
  else
    # shellcheck disable=SC2034 # read by hpc_job_run_program (hpc_job.bash)
    hpc_job_command=("${hpc_plan_command[@]}")
  fi
  # The program starts where a batch job's starts (the project, or --workdir's folder that the
  # runner enters), whatever folder the shell is in.
  cd -- "$hpc_plan_source_dir" || hpc_job_fail "interactive" "cannot enter $hpc_plan_source_dir"
  hpc_launcher_load "$hpc_plan_launcher" || hpc_job_fail "launcher" "no launcher '$hpc_plan_launcher' in this toolkit"
  "hpc_launcher_${hpc_plan_launcher}_srun"
  hpc_job_run_program
  exit "$hpc_job_status"
}
