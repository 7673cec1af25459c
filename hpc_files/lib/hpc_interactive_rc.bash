# shellcheck shell=bash
# hpc_interactive_rc.bash: the rcfile of an interactive session's shell (job_step.sh shell, on the
# job's first node): the prompt names the session, and hpc-run starts the program across the
# allocation as the batch job's launcher does (job_step.sh run; see hpc_interactive.bash).
# The user's ~/.bashrc is not read: it may change PATH away from the job's venv.

# hpc-run [CMD...]: the configs file's command, or CMD, on every node of the allocation.
hpc-run() {
  bash "$HPC_INTERACTIVE_STEP" run "$@"
}

PS1="(interactive ${exp_name:-?} on ${SLURMD_NODENAME:-\\h}) \\w\\$ "
