# shellcheck shell=bash
# hpc_job_task.bash: a job's phase 2 in each of its tasks (sourced by hpc_job.bash): one program
# process in the runner's environment (hpc_job_task), its command resolved against the project
# (hpc_job_resolve_program), behind the rank-lines filter, supervised under srun
# (hpc_job_supervise: the warning's carrier, torchrun's first failed worker's exit code).

# What this file reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# The plan file (hpc_job_plan_load); hpc_job_node.bash: this node's SLURM_TMPDIR; hpc_job.bash:
# the launcher's srun options; hpc_runner_argv: by the runner module's wrap (lib/runners/).
declare -g hpc_plan_launcher hpc_plan_runner hpc_job_node_tmpdir
declare -ga hpc_launcher_srun hpc_runner_argv

# hpc_job_is_python WORD: true for python, python3, python3.11, or such a name with a path.
hpc_job_is_python() {
  [[ ${1##*/} =~ ^python([0-9]+(\.[0-9]+)?)?$ ]]
}

# hpc_job_resolve_program SOURCE_DIR: (--workdir) makes the project's files of the expanded
# command (hpc_configs_argv) absolute under SOURCE_DIR, so that the program, which starts in its
# working folder, still finds them: the program itself when it is a relative path with a '/'
# (./run.sh, scripts/train.sh: a bare name is looked up on PATH), and python's script (the first
# word after python's own options: python -u train.py). Everything else stays as written: a
# relative path among the arguments is the working folder's. Sets hpc_job_python_module when
# python runs a module (-m), which it imports from the working folder.
hpc_job_resolve_program() {
  local src=$1 word i=1 j n=${#hpc_configs_argv[@]}
  hpc_job_python_module=0
  word=${hpc_configs_argv[0]}
  [[ $word != */* || $word == /* ]] || hpc_configs_argv[0]=$src/$word
  hpc_job_is_python "$word" || return 0
  while ((i < n)); do
    word=${hpc_configs_argv[i]}
    case $word in
      --) i=$((i + 1)) && break ;;
      --check-hash-based-pycs) i=$((i + 2)) ;;
      -) return 0 ;;
      --*) i=$((i + 1)) ;;
      -*)
        # A cluster of one-letter options (-uB); c and m end it (code, module), W and X take
        # the rest of the word or the next word.
        i=$((i + 1))
        for ((j = 1; j < ${#word}; j++)); do
          case ${word:j:1} in
            c) return 0 ;;
            m)
              # shellcheck disable=SC2034 # read by the venv runner (lib/runners/venv.bash)
              hpc_job_python_module=1
              return 0
              ;;
            W | X)
              ((j < ${#word} - 1)) || i=$((i + 1))
              break
              ;;
          esac
        done
        ;;
      *) break ;;
    esac
  done
  ((i < n)) || return 0
  word=${hpc_configs_argv[i]}
  [[ $word == /* || $word == - ]] || hpc_configs_argv[i]=$src/$word
}

# hpc_job_rank_lines_code: the rank-lines wrapper, run as bash -c CODE hpc_rank_lines MODE ARGV...
# in front of each rank's command: MODE '-' (whole lines), 'rank' (labelled with the RANK that
# torchrun gives each worker) or 'rank=N'. The command's stdout and stderr go through one awk
# each that writes every line whole, in one write (up to 4 KiB: PIPE_BUF), with '[rank N] ' in
# front when labelled; then the wrapper becomes the command, so that the worker's pid and its
# signals stay the program's. The awks ignore the signals SLURM and torchrun send to the whole
# process tree and end when the program closes its output. Inline code, not a file: with a
# container it runs inside the image (which needs bash; without awk the lines pass unchanged).
IFS= read -r -d '' hpc_job_rank_lines_code <<'EOF' || true
label=
case $1 in
  rank) label="[rank ${RANK:-?}] " ;;
  rank=*) label="[rank ${1#rank=}] " ;;
esac
shift
if command -v awk >/dev/null 2>&1; then
  # mawk reads a pipe until 4 KiB or its end: -W interactive hands on each line as it comes
  # (its writes unbuffered: ORS empty, so that each line is one write).
  hpc_awk=(awk -v ORS=)
  case $(awk -W version 2>&1 </dev/null) in mawk*) hpc_awk+=(-W interactive) ;; esac
  exec {err}>&2
  exec 2> >(trap '' INT TERM HUP QUIT USR1 USR2 &&
    exec "${hpc_awk[@]}" -v p="$label" '{ print p $0 "\n"; fflush() }' >&"$err") {err}>&-
  exec > >(trap '' INT TERM HUP QUIT USR1 USR2 && exec "${hpc_awk[@]}" -v p="$label" '{ print p $0 "\n"; fflush() }')
fi
exec "$@"
EOF

# hpc_job_enter_venv VENV: what bin/activate does, without sourcing it: activate holds the
# venv's path inside double quotes, so a path with $(...) in it would run as code.
hpc_job_enter_venv() {
  export VIRTUAL_ENV=$1
  export PATH=$1/bin:$PATH
  unset PYTHONHOME
}

# hpc_job_task ARGV_TEMPLATES...: one program process of the job (job_step.sh task): enters the
# runner's environment, expands the command and becomes the launcher's command for this task
# (hpc_launcher_NAME_task: torchrun in front of it, if so), under hpc_job_supervise when srun
# started it.
hpc_job_task() {
  local path
  if [[ ${HPC_JOB_TMPDIR_MODE:-provided} == emulated ]]; then
    hpc_job_node_tmpdir || hpc_job_fail "tmpdir" "cannot work out SLURM_TMPDIR"
    path=$hpc_job_node_tmpdir
    [[ -d $path && ! -L $path ]] || hpc_job_fail "tmpdir" "SLURM_TMPDIR $path is missing on this node"
    export SLURM_TMPDIR=$path
  fi

  local -a argv
  # What the mode's task needs before its program (a W&B agent's key).
  hpc_mode job_task
  hpc_launcher_load "$hpc_plan_launcher" || hpc_job_fail "launcher" "no launcher '$hpc_plan_launcher' in this toolkit"
  hpc_runner_load "$hpc_plan_runner" || hpc_job_fail "runner" "no runner '$hpc_plan_runner' in this toolkit"
  # The runner's environment, and the command expanded in it (hpc_configs_argv).
  "hpc_runner_${hpc_plan_runner}_enter" "$@"
  # The launcher's command for this task, with the runner's wrap where the launcher puts it.
  "hpc_launcher_${hpc_plan_launcher}_task" "${hpc_configs_argv[@]}"
  argv=("${hpc_launcher_argv[@]}")
  # A chunked map's items after its first say only which item starts (hpc_map_chunk_run): the
  # masked command line costs tens of milliseconds per item.
  if [[ ${SLURM_LOCALID:-0} == 0 && ${hpc_job_say_start:-1} == 1 ]]; then
    local shown=("${argv[@]}") i code_name=hpc_launcher_${hpc_plan_launcher}_code
    for i in "${!shown[@]}"; do
      [[ ${shown[i]} != "$hpc_job_rank_lines_code" ]] || shown[i]=HPC_RANK_LINES_CODE
      # A launcher's own python code (hpc_launcher_NAME_code), named too: one short log line.
      [[ -z ${!code_name-} || ${shown[i]} != "${!code_name}" ]] || shown[i]=HPC_LAUNCHER_CODE
    done
    hpc_job_log "starting after $(hpc_job_elapsed) s: $(hpc_mask_quoted shown)"
  fi
  # Without srun (no launcher) the batch shell is the parent, and passes signals on itself.
  "hpc_launcher_${hpc_plan_launcher}_srun"
  ((${#hpc_launcher_srun[@]})) || exec "${argv[@]}"
  hpc_job_supervise "${argv[@]}"
}

# hpc_job_runner_wrap ARGV...: (a launcher's task) sets hpc_launcher_argv to ARGV run by the
# job's runner (hpc_runner_NAME_wrap): one call, one environment (one container per call: per
# node for torchrun, per GPU for lightning).
hpc_job_runner_wrap() {
  "hpc_runner_${hpc_plan_runner}_wrap" "$@"
  hpc_launcher_argv=("${hpc_runner_argv[@]}")
}

# hpc_job_supervise ARGV...: one srun task (lightning: a rank; torchrun: the agent) runs ARGV
# and stays its parent: the carrier signal URG (hpc_job_forward) becomes the time-limit warning
# for the processes below that catch it (a torchrun agent does not: its workers get it); TERM
# goes to the program. Exits with the program's status.
hpc_job_supervise() {
  local program status=0 root_cause=''
  # torchrun (a torch elastic agent: the launcher's _workers is true) exits 1 whatever its
  # workers' codes; its stderr names the first failed worker.
  if hpc_launcher_load "${hpc_plan_launcher:-none}" && "hpc_launcher_${hpc_plan_launcher:-none}_workers"; then
    root_cause=$(mktemp "${TMPDIR:-/tmp}/hpc_root_cause.XXXXXX") || root_cause=''
  fi
  if [[ -n $root_cause ]]; then
    # The tee and awk ignore the signals srun sends to every process of the step.
    "$@" 2> >(trap '' INT TERM HUP QUIT USR1 USR2 && tee -p >(trap '' INT TERM HUP QUIT USR1 USR2 &&
      exec awk "$hpc_job_root_cause_awk" >"$root_cause") >&2) &
  else
    "$@" &
  fi
  program=$!
  # shellcheck disable=SC2064 # the program's pid is fixed now
  trap "hpc_job_warn $program $HPC_WARNING_SIGNAL &" URG
  # shellcheck disable=SC2064
  trap "kill -TERM $program 2>/dev/null || true" TERM
  while :; do
    wait "$program" || status=$?
    kill -0 "$program" 2>/dev/null || break
    status=0
  done
  if [[ -n $root_cause ]]; then
    ((status == 0)) || hpc_job_worker_status "$root_cause" "$status"
    rm -f -- "${root_cause:?}"
  fi
  hpc_job_task_usage
  exit "$status"
}

# hpc_job_task_usage: (hpc_job_supervise, its program reaped) leaves what the task's tree used in
# the job's usage folder for its sampler (hpc_usage_task_record), where the job measures it.
hpc_job_task_usage() {
  [[ ${HPC_JOB_USAGE:-1} != 0 && -n ${scratch_dir:-} ]] || return 0
  # shellcheck source=hpc_files/lib/hpc_usage.bash
  source "${BASH_SOURCE[0]%/*}/hpc_usage.bash" || return 0
  hpc_usage_task_record "$(hpc_usage_dir "$scratch_dir" "$(hpc_job_own_id)")"
}

# The first failed worker in torchrun's summary (ChildFailedError: 'Root Cause (first observed
# failure):', then its host, rank and exitcode lines): prints 'EXITCODE RANK LOCAL_RANK HOST'.
# Reads to the end, so that the tee in front of it never writes into a closed pipe.
# shellcheck disable=SC2016 # awk's own $3, not the shell's
hpc_job_root_cause_awk='
/^Root Cause \(first observed failure\):/ { if (!done) cause = 1; next }
cause && $1 == "host" { host = $3 }
cause && $1 == "rank" { rank = $3; lrank = $5; sub(/\)$/, "", lrank) }
cause && $1 == "exitcode" { print $3, rank, lrank, host; cause = 0; done = 1 }
'

# hpc_job_worker_status FILE STATUS: (hpc_job_supervise, torchrun) sets the caller's status to
# the exit code of torchrun's first failed worker, read from FILE (hpc_job_root_cause_awk; 128+N
# for a worker killed by signal N), and says which rank on which node. Waits at most 2 s for the
# line: the awk ends when the last worker's output has drained. Keeps STATUS when torchrun named
# no worker.
hpc_job_worker_status() {
  local file=$1 i code rank local_rank host msg
  for ((i = 0; i < 20; i++)); do
    [[ -s $file ]] && break
    sleep 0.1
  done
  read -r code rank local_rank host 2>/dev/null <"$file" || return 0
  [[ $code =~ ^-?[0-9]+$ ]] || return 0
  ((code >= 0)) || code=$((128 - code))
  # Only an exit status a process can have: 'exit 256' would end the job COMPLETED.
  ((code > 0 && code <= 255 && code != $2)) || return 0
  msg="${hpc_plan_launcher:-torchrun} exited with $2: its first failed worker, rank $rank (local rank $local_rank)"
  msg+=" on ${SLURMD_NODENAME:-$host}, exited with $code: that is this node's status"
  hpc_job_log "$msg"
  status=$code
}
