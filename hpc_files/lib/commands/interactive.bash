# shellcheck shell=bash
# Summary: a shell on the job's first node, inside the job's environment, for as long as you want
# Usage: bash job_submitter.sh interactive [options]
#
#   interactive [options]   The submission's options (-g, -c, -n, -m, -t, -G, -a, -p, -W, -C,
#                           -d/--data, --copy-back, --workdir, -e, --cluster, --label-ranks,
#                           --signal-lead) and its profile: an allocation (salloc) of the shape
#                           a batch job would get, the job's own start (SLURM_TMPDIR and the
#                           data staged on every node, MASTER_ADDR/MASTER_PORT), then a shell on
#                           the first node in the venv, with the job's variables (source_dir,
#                           scratch_dir, exp_name, checkpoints_dir, num_nodes, gpus_per_node,
#                           num_processes, OMP_NUM_THREADS). In it:
#                             hpc-run          runs the configs file's command across the
#                                              allocation, as the batch job's launcher does;
#                             hpc-run CMD...   runs CMD so instead (its words are read as the
#                                              configs file's: $NAME is the job's variable).
#                           Leaving the shell (exit, Ctrl-D, a hangup, the time limit) ends the
#                           job as a batch job ends: --copy-back, every node cleaned, the
#                           allocation released. So does a hangup, SIGINT or SIGTERM of this
#                           command. 'status' lists the session; 'cancel EXP' ends it.
#   --idle-limit MINUTES    End the session once no client (no terminal) has been attached for
#                           MINUTES, 1 to 1440 (or Ns: seconds); default 10. A watchdog on the
#                           first node ends the allocation; the job's end then runs as above.
#   --dry-run               Print the salloc line and the shell's environment; create nothing.
#   -h, --help              This text.
#
# Not with what makes no sense in one shell: -w, --wandb-offline, --repeat, --map-*, --gather*,
# --scaling-test and its options, --requeue, -s (a container: not yet). Needs a terminal.
# Exit status: the shell's last status; 1 refused or failed; 2 bad input.

# interactive.bash: the command 'interactive': the submission in mode interactive
# (modes/interactive.bash; the session's own code, both sides, is hpc_interactive.bash).

# A submission in mode interactive: the libraries of a submission (hpc_submit.bash).
hpc_submission_load

# hpc_command_interactive ARGS...: the command 'interactive'.
hpc_command_interactive() {
  hpc_submit_main interactive "$@"
}
