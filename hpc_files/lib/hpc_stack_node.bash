# shellcheck shell=bash
# hpc_stack_node.bash: the node's side of the command 'stack' (commands/stack.bash), run by
# job_step.sh stack JOBID VENV in a step beside the job's (srun --overlap, one task per node).
# Finds the job's program processes on this node (SLURM's list of the job's processes here,
# hpc_usage_job_pids; this step's own left out), and prints the Python stack of each (py-spy dump,
# native frames where py-spy can), labelled with node, rank and local rank; the process tree
# when none is a Python program. Each line goes out prefixed by a sort key and a tab (the rank,
# then the process), so that the submitter prints the nodes' answers in rank order.

# shellcheck source=hpc_files/lib/hpc_usage.bash
source "$(dirname "${BASH_SOURCE[0]}")/hpc_usage.bash"

# The launcher modules whose python process is an agent, not a program process.
hpc_stack_agent_modules=' torch.distributed.run torch.distributed.launch '
hpc_stack_agent_modules+='accelerate.commands.launch accelerate.commands.accelerate_cli '

# hpc_stack_environ PID: sets hpc_stack_env (NAME -> VALUE) to PID's environment; false when it
# cannot be read (another user's, or gone).
hpc_stack_environ() {
  local -a vars=()
  local v
  declare -gA hpc_stack_env=()
  { mapfile -d '' vars <"/proc/$1/environ"; } 2>/dev/null || return 1
  for v in "${vars[@]}"; do
    [[ $v == *=* ]] || continue
    hpc_stack_env[${v%%=*}]=${v#*=}
  done
}

# hpc_stack_cmdline PID: sets hpc_stack_words to PID's command line; false when it cannot be
# read.
hpc_stack_cmdline() {
  hpc_stack_words=()
  { mapfile -d '' hpc_stack_words <"/proc/$1/cmdline"; } 2>/dev/null || return 1
  ((${#hpc_stack_words[@]}))
}

# hpc_stack_is_program: true when the command line read (hpc_stack_cmdline) is python running a
# program: not a launcher's agent (python .../torchrun or .../accelerate, python -m of a launcher
# module, the accelerate launcher's python -c that runs accelerate.commands.launch). Only the
# words before the program count: a program's own arguments may say anything.
hpc_stack_is_program() {
  local word i=1 n=${#hpc_stack_words[@]} code
  [[ ${hpc_stack_words[0]##*/} =~ ^python([0-9]+(\.[0-9]+)?)?$ ]] || return 1
  while ((i < n)); do
    word=${hpc_stack_words[i]}
    case $word in
      -m) [[ $hpc_stack_agent_modules != *" ${hpc_stack_words[i + 1]:-} "* ]] ;;
      -c)
        code=${hpc_stack_words[i + 1]:-}
        [[ $code != *accelerate.commands.launch* && $code != *torch.distributed.run* ]]
        ;;
      -[WX]) i=$((i + 2)) && continue ;;
      -*) i=$((i + 1)) && continue ;;
      *) [[ ${word##*/} != torchrun && ${word##*/} != accelerate ]] ;;
    esac
    return
  done
  return 0
}

# hpc_stack_secrets: adds to hpc_stack_secret_values the values of the process's variables that
# are named like secrets (hpc_secret_name), as read by hpc_stack_environ: masked in what this
# node prints, whatever the shell that asked for the stacks exported.
hpc_stack_secrets() {
  local name
  for name in "${!hpc_stack_env[@]}"; do
    hpc_secret_name "$name" || continue
    ((${#hpc_stack_env[$name]} >= ${hpc_secret_min_length:-4})) || continue
    hpc_stack_secret_values[${hpc_stack_env[$name]}]=1
  done
}

# hpc_stack_mask TEXT: sets hpc_stack_masked to TEXT with every value of hpc_stack_secret_values
# replaced by (masked).
hpc_stack_mask() {
  local value
  hpc_stack_masked=$1
  for value in "${!hpc_stack_secret_values[@]}"; do
    hpc_stack_masked=${hpc_stack_masked//"$value"/(masked)}
  done
}

# hpc_stack_find JOBID: sets hpc_stack_pids to this user's processes of job JOBID on this node
# (SLURM's own list: hpc_usage_job_pids, the steps of this command and the sampler left out), and
# hpc_stack_python to those of them that run a Python program (not a launcher's agent), each with
# its label in hpc_stack_label.
hpc_stack_find() {
  local job=$1 pid rank local_rank key
  hpc_stack_pids=() hpc_stack_python=()
  declare -gA hpc_stack_label=() hpc_stack_key=() hpc_stack_secret_values=()
  hpc_usage_job_pids "$job"
  for pid in "${!hpc_usage_job_pid[@]}"; do
    [[ -O /proc/$pid && $pid != "$$" && $pid != "$BASHPID" ]] || continue
    hpc_stack_environ "$pid" || continue
    hpc_stack_cmdline "$pid" || continue
    hpc_stack_pids+=("$pid")
    hpc_stack_secrets
    hpc_stack_is_program || continue
    rank=${hpc_stack_env[RANK]:-${hpc_stack_env[SLURM_PROCID]:-0}}
    local_rank=${hpc_stack_env[LOCAL_RANK]:-${hpc_stack_env[SLURM_LOCALID]:-0}}
    [[ $rank =~ ^[0-9]+$ ]] || rank=0
    [[ $local_rank =~ ^[0-9]+$ ]] || local_rank=0
    hpc_stack_python+=("$pid")
    hpc_stack_label[$pid]="rank $rank (local rank $local_rank) on ${SLURMD_NODENAME:-$HOSTNAME}, pid $pid"
    printf -v key '%09d-%09d' "$rank" "$pid"
    hpc_stack_key[$pid]=$key
  done
}

# What a Python says of the py-spy package it sees (hpc_stack_py_spy): program=PATH, the program
# its wheel installed (listed in its RECORD, or in the scripts folders of this Python and of its
# user scheme); else package=FOLDER where the package is without its program; else nothing.
hpc_stack_py_spy_code='
import importlib.metadata as m, os, sysconfig
try:
    d = m.distribution("py-spy")
except Exception:
    raise SystemExit
paths = [str(d.locate_file(f)) for f in d.files or () if f.name in ("py-spy", "py-spy.exe")]
for scheme in (None, os.name + "_user"):
    try:
        paths.append(os.path.join(sysconfig.get_path("scripts", *([scheme] if scheme else [])), "py-spy"))
    except Exception:
        pass
for p in paths:
    if os.path.isfile(p) and os.access(p, os.X_OK):
        print("program=" + os.path.normpath(p))
        raise SystemExit
print("package=" + os.path.normpath(str(d.locate_file(""))))
'

# hpc_stack_py_spy VENV [PYTHON...]: sets hpc_stack_py_spy to py-spy: the job's venv's, the one
# on PATH, ~/.local/bin's, else the program of the py-spy package that the venv's python, each
# PYTHON (the job's own interpreters) or python3 on PATH sees (a system's site-packages whose
# scripts folder is not on PATH: "pip install py-spy" says it is already there). False when there
# is none, with hpc_stack_py_spy_why: what to do (install it, or reinstall a package that lost
# its program).
hpc_stack_py_spy() {
  local venv=$1 candidate python out package='' owner=''
  shift
  hpc_stack_py_spy='' hpc_stack_py_spy_why=''
  for candidate in "${venv:+$venv/bin/py-spy}" "$(command -v py-spy 2>/dev/null || true)" "$HOME/.local/bin/py-spy"; do
    [[ -n $candidate && -x $candidate ]] || continue
    hpc_stack_py_spy=$candidate
    return 0
  done
  for python in "${venv:+$venv/bin/python}" "$@" "$(command -v python3 2>/dev/null || true)"; do
    [[ -n $python && -x $python ]] || continue
    # From / : the job's folder may hold modules that shadow the standard library's.
    out=$(cd / && timeout 20 "$python" -c "$hpc_stack_py_spy_code" 2>/dev/null) || continue
    case $out in
      program=*)
        [[ -x ${out#program=} ]] || continue
        hpc_stack_py_spy=${out#program=}
        return 0
        ;;
      package=*) [[ -n $package ]] || package=${out#package=} owner=$python ;;
    esac
  done
  if [[ -n $package ]]; then
    hpc_stack_py_spy_why="py-spy's package is in $package but its program is not: $owner -m pip install"
    hpc_stack_py_spy_why+=" --force-reinstall py-spy"
  else
    hpc_stack_py_spy_why="py-spy is not installed here: pip install py-spy (in the job's venv: ${venv:-VENV}/bin/pip"
    hpc_stack_py_spy_why+=" install py-spy, or pip install --user py-spy)"
  fi
  return 1
}

# hpc_stack_emit KEY TEXT: prints each line of TEXT prefixed by KEY and a tab, the job's
# secrets masked (hpc_stack_mask).
hpc_stack_emit() {
  local line
  hpc_stack_mask "$2"
  while IFS= read -r line; do printf '%s\t%s\n' "$1" "$line"; done <<<"$hpc_stack_masked"
}

# hpc_stack_tree KEY: prints the job's processes on this node (pid, parent, state, elapsed,
# command), this command's left out.
hpc_stack_tree() {
  local pids
  ((${#hpc_stack_pids[@]})) || {
    hpc_stack_emit "$1" "no process of job $hpc_stack_job on ${SLURMD_NODENAME:-$HOSTNAME}"
    return 0
  }
  printf -v pids '%s,' "${hpc_stack_pids[@]}"
  hpc_stack_emit "$1" "$(ps -o pid,ppid,stat,etime,args -p "${pids%,}" 2>&1 | cut -c1-240)"
}

# hpc_stack_node JOBID VENV: the step's whole work on this node.
hpc_stack_node() {
  local pid out rc key node=${SLURMD_NODENAME:-$HOSTNAME} scope='' msg
  hpc_stack_job=$1
  hpc_stack_find "$1"
  if ((${#hpc_stack_python[@]} == 0)); then
    hpc_stack_emit "~$node" "== $node: no Python program process of job $1; its processes:"
    hpc_stack_tree "~$node"
    return 0
  fi
  # The interpreters of the job's programs: py-spy may be in their site-packages alone.
  local -A pythons=()
  for pid in "${hpc_stack_python[@]}"; do
    out=$(readlink "/proc/$pid/exe" 2>/dev/null) && pythons[$out]=1
  done
  if ! hpc_stack_py_spy "${2:-}" "${!pythons[@]}"; then
    hpc_stack_emit "~$node" "== $node: $hpc_stack_py_spy_why; the processes instead:"
    hpc_stack_tree "~$node"
    return 0
  fi
  for pid in "${hpc_stack_python[@]}"; do
    key=${hpc_stack_key[$pid]}
    rc=0
    # Native frames where py-spy can unwind them; without them where it cannot.
    out=$(timeout 20 "$hpc_stack_py_spy" dump --native --pid "$pid" 2>&1) ||
      out=$(timeout 20 "$hpc_stack_py_spy" dump --pid "$pid" 2>&1) || rc=$?
    hpc_stack_emit "$key" "== ${hpc_stack_label[$pid]}"
    if ((rc)); then
      [[ ! -r /proc/sys/kernel/yama/ptrace_scope ]] || scope=$(</proc/sys/kernel/yama/ptrace_scope)
      case $out in
        *ermission* | *"not permitted"*)
          msg="py-spy may not read this process: it needs ptrace permission (the same user, and"
          msg+=" kernel.yama.ptrace_scope 0${scope:+, here $scope}, or CAP_SYS_PTRACE: ask the cluster's admins): $out"
          hpc_stack_emit "$key" "$msg"
          ;;
        *) hpc_stack_emit "$key" "py-spy failed (exit $rc): $out" ;;
      esac
      continue
    fi
    hpc_stack_emit "$key" "$out"
  done
}
