#!/usr/bin/env bash
# Usage: bash job_step.sh guard | task -- TEMPLATE... | stack JOBID [VENV]
#
# The per-node part of a job, started by srun from the job script (hpc_files/lib/hpc_job.bash);
# not for users. guard: make this node's SLURM_TMPDIR and remove it at the end; task: one
# program process in the runner's environment; stack: the Python stacks of the job JOBID's
# processes on this node (the command 'stack', in a step beside the job's).
set -euo pipefail
# shellcheck source=/dev/null # hpc_job.bash: linted on its own (see docs/architecture.md)
source "$(dirname "${BASH_SOURCE[0]}")/lib/hpc_job.bash"
# The job's plan, the file the batch shell loaded (its path is the one thing it hands on).
[[ ${1-} != guard && ${1-} != task ]] || hpc_job_plan_load "${HPC_JOB_PLAN:-}"
case ${1-} in
  guard) hpc_job_guard ;;
  task)
    shift
    [[ ${1-} != -- ]] || shift
    hpc_job_task "$@"
    ;;
  stack)
    # shellcheck source=hpc_files/lib/hpc_stack_node.bash
    source "$(dirname "${BASH_SOURCE[0]}")/lib/hpc_stack_node.bash"
    hpc_stack_node "${2:?}" "${3-}"
    ;;
  *) hpc_die_usage "${1-(nothing)}" "accepted: guard, task, stack" ;;
esac
