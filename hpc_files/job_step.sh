#!/usr/bin/env bash
# Usage: bash job_step.sh guard | task -- TEMPLATE... | stack JOBID [VENV] | shell | run [CMD...] | watchdog
#        | sample JOBID DIR
#
# The per-node part of a job, started by srun from the job script (hpc_files/lib/hpc_job.bash);
# not for users. guard: make this node's SLURM_TMPDIR and remove it at the end; task: one
# program process in the runner's environment; stack: the Python stacks of the job JOBID's
# processes on this node (the command 'stack', in a step beside the job's); sample: what this
# node's processes of job JOBID use, into DIR/NODE until SIGUSR2 (hpc_usage.bash); shell: an
# interactive session's shell on the first node; run: its hpc-run; watchdog: ends the session
# when no client is attached (lib/hpc_interactive.bash).
set -euo pipefail
# shellcheck source=/dev/null # hpc_job.bash: linted on its own (see docs/architecture.md)
source "${BASH_SOURCE[0]%/*}/lib/hpc_job.bash"
# The job's plan, the file the batch shell loaded (its path is the one thing it hands on).
[[ ${1-} != guard && ${1-} != task && ${1-} != sample ]] || hpc_job_plan_load "${HPC_JOB_PLAN:-}"
[[ ${1-} != shell && ${1-} != run && ${1-} != watchdog ]] || hpc_job_plan_load "${HPC_JOB_PLAN:-}"
case ${1-} in
  guard) hpc_job_guard ;;
  task)
    shift
    [[ ${1-} != -- ]] || shift
    hpc_job_task "$@"
    ;;
  stack)
    # shellcheck source=hpc_files/lib/hpc_stack_node.bash
    source "${BASH_SOURCE[0]%/*}/lib/hpc_stack_node.bash"
    hpc_stack_node "${2:?}" "${3-}"
    ;;
  sample)
    # shellcheck source=hpc_files/lib/hpc_usage.bash
    source "${BASH_SOURCE[0]%/*}/lib/hpc_usage.bash"
    hpc_usage_sample_loop "${2:?}" "${3:?}/${SLURMD_NODENAME:-$HOSTNAME}"
    ;;
  shell | run | watchdog)
    # shellcheck source=hpc_files/lib/hpc_interactive.bash
    source "${BASH_SOURCE[0]%/*}/lib/hpc_interactive.bash"
    case $1 in
      shell) hpc_interactive_node_shell ;;
      run) hpc_interactive_run "${@:2}" ;;
      watchdog) hpc_interactive_watchdog ;;
    esac
    ;;
  *) hpc_die_usage "${1-(nothing)}" "accepted: guard, task, stack, sample, shell, run, watchdog" ;;
esac
