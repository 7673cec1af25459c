# shellcheck shell=bash
# Summary: the Python stack of every rank of a running job (py-spy), for a job that hangs
# Usage: bash job_submitter.sh stack EXP|JOBID[_TASK]
#
#   stack TARGET        For each running job of experiment TARGET, or the job or array task
#                       TARGET: on every node of it, in a step beside the job's (srun
#                       --overlap), the Python stack of each program process (py-spy dump,
#                       native frames where py-spy can unwind them), labelled with its rank,
#                       local rank, node and pid, in rank order; for a job with no Python
#                       process, its processes. The job goes on. Secrets are masked as by
#                       'logs', and so are the values of the job's own variables named like
#                       secrets, whatever this shell exports.
#   -h, --help          This text.
#
# Needs py-spy (pip install py-spy) on the nodes: in the job's venv, on PATH, in ~/.local/bin,
# or where its package put it for the job's Python (a system's site-packages off PATH); where it
# is missing, the processes are shown and the line says how to get it. py-spy reads
# another process's memory: the same user, and ptrace allowed (kernel.yama.ptrace_scope 0, or
# CAP_SYS_PTRACE); where the kernel forbids it, the line says so.
#
# Exit status: 0 printed, 1 a step failed, 2 bad input: nothing of TARGET running, an unknown
# experiment or job (answered with the known ones; another user's job is not among them).

# stack.bash: the command 'stack' (bash job_submitter.sh stack EXP|JOBID[_TASK]): the Python
# stacks of a running job's ranks; the node's side is hpc_stack_node.bash (job_step.sh stack).

# What this file reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_common.bash: the library's folder; job_submitter.sh: its own; hpc_manage.bash: the states and
# manifests.
declare -g hpc_lib_dir hpc_files_dir hpc_manage_task

# shellcheck source=hpc_files/lib/hpc_manage.bash
source "$hpc_lib_dir/hpc_manage.bash"

# The longest a node's step may take: py-spy dumps each process in well under a second.
hpc_stack_timeout_s=60

# hpc_command_stack EXP|JOBID[_TASK]: the command 'stack'.
hpc_command_stack() {
  local word
  hpc_manage_begin
  for word in "$@"; do
    [[ $word != -* ]] || hpc_commands_die_unknown_option stack "$word"
  done
  (($# == 1)) || hpc_die_usage "stack" "needs one experiment, job id or JOBID_TASK; usage: stack EXP|JOBID[_TASK]"
  hpc_manage_target "$1"
  local id key raw nodes out rc=0 running=0 venv
  local -a ids=(${hpc_manage_ids[@]+"${hpc_manage_ids[@]}"})
  ((${#ids[@]} == 0)) || hpc_manage_states "${ids[@]}"
  for id in ${ids[@]+"${ids[@]}"}; do
    hpc_manage_task_keys "$id"
    for key in "${hpc_manage_keys[@]}"; do
      [[ ${hpc_st_state[$key]} == RUNNING ]] || continue
      raw=${hpc_st_raw[$key]:-}
      [[ $raw =~ ^[0-9]+$ ]] || continue
      running=1
      venv=''
      ! hpc_manifest_read "${hpc_manage_file[id]-}" 2>/dev/null || venv=${hpc_mf[venv]-}
      # Asked by its key: an array's own id names every task of it (one line each).
      nodes=$(hpc_slurm -t 60 squeue -h -j "$key" -o '%D' 2>/dev/null) || nodes=''
      nodes=${nodes%%$'\n'*}
      [[ $nodes =~ ^[0-9]+$ ]] || {
        hpc_say "job $key: squeue did not say its nodes; it may have just ended"
        rc=1
        continue
      }
      printf '=== job %s (%s), %s node(s)\n' "$key" "${hpc_manage_exp[$id]}" "$nodes"
      hpc_stack_job_nodes "$raw" "$nodes" "$venv" || rc=1
    done
  done
  ((running)) ||
    hpc_die_usage "stack" \
      "no recorded job of $1 is running; accepted: a running job or experiment (see 'bash job_submitter.sh status $1')"
  return "$rc"
}

# hpc_stack_job_nodes JOBID NODES VENV: one step of one task on each of the job's NODES nodes
# (beside the job's own: --overlap, no memory or CPU of its own to wait for), whose answers are
# printed in rank order; bounded by hpc_stack_timeout_s.
hpc_stack_job_nodes() {
  local out rc=0
  out=$(HPC_STACK_STEP=1 timeout "$hpc_stack_timeout_s" srun --jobid="$1" --overlap --nodes="$2" --ntasks="$2" \
    --ntasks-per-node=1 --cpus-per-task=1 --mem=0 --kill-on-bad-exit=0 --quiet \
    bash "$hpc_files_dir/job_step.sh" stack "$1" "$3" 2>&1) || rc=$?
  # Each node's lines carry their sort key (the rank, then the pid) and a tab: printed in rank
  # order, the key dropped; a line without one (srun's own) as it came, first.
  # Masked as 'logs' output is: a program's command line (py-spy's first line) may hold a
  # secret that the configs file expanded into it.
  LC_ALL=C sort -s -t $'\t' -k1,1 <<<"$out" | sed 's/^[^\t]*\t//' | hpc_mask_stream
  ((rc == 0)) || {
    hpc_say "the step on job $1's nodes failed (exit $rc${out:+; see above})"
    return 1
  }
}
