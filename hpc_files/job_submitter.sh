#!/usr/bin/env bash
# Usage: bash job_submitter.sh [options]
#        bash job_submitter.sh COMMAND ...   (its usage: bash job_submitter.sh COMMAND --help)
#+ The rest of the usage (--help) is at the end of the file, after its last command: Bash parses
#+ every comment it reads, and never reads that one on a run (hpc_usage joins the two).
set -euo pipefail

hpc_submitter=${BASH_SOURCE[0]}
# Run through a symlink (~/bin/submit -> the project's hpc_files/job_submitter.sh): the project
# is where the file itself lies. Resolved only then: readlink is a process.
if [[ -L $hpc_submitter ]]; then
  hpc_submitter=$(readlink -f -- "$hpc_submitter") || {
    echo "job_submitter.sh: cannot resolve the symlink ${BASH_SOURCE[0]}" >&2
    exit 1
  }
fi
[[ $hpc_submitter == /* ]] || hpc_submitter=$PWD/$hpc_submitter
hpc_files_dir=${hpc_submitter%/*}
# A clean absolute path without starting a process, unless it has . or .. in it.
case $hpc_files_dir/ in */./* | */../* | *//*) hpc_files_dir=$(cd "$hpc_files_dir" && pwd) ;; esac
# What every path runs; what only a submission runs (the options, the profile, the configs file,
# the plan) is loaded by the submission and by the commands that need it (hpc_submission_load):
# status, logs, cancel... parse 1,800 lines less.
for hpc_lib in hpc_common hpc_submit hpc_manifest; do
  # shellcheck source=/dev/null
  source "$hpc_files_dir/lib/$hpc_lib.bash"
done
unset hpc_lib
# Run as a script of its own (not sourced) and without BASH_ENV, no secret was exported after
# the start: the secrets' names come from /proc/self/environ (hpc_secret_values).
# shellcheck disable=SC2034 # read by hpc_common.bash (hpc_secret_values)
[[ ${BASH_SOURCE[0]} != "$0" || -n ${BASH_ENV:-} ]] || hpc_secret_names_environ=1
# shellcheck disable=SC2034 # read by hpc_common.bash (hpc_secret_values)
hpc_secrets_keep=1
# The environment it started with, read once here, before the subshells that would each read it.
hpc_environ_load || true
if [[ $- == *x* ]]; then
  # Under bash -x, the trace goes through the masking of secrets (hpc_common.bash).
  { set +x; } 2>/dev/null
  hpc_trace_through_mask "$hpc_submitter" "$@"
  set -x
fi
hpc_submit_locate

# A first word that names a file of lib/commands/ is that command (hpc_command_NAME, '-' as '_');
# only its file and what it sources are loaded. With -h or --help among its words, its file's
# usage block is printed instead, and nothing run (hpc_help.bash). Another first word that is
# not an option is a command misspelt, named so (hpc_commands_check_word). Anything else is a
# submission's options.
# shellcheck disable=SC2154 # hpc_facts_lower: hpc_common.bash (hpc_facts.bash)
if [[ ${1-} == ["$hpc_facts_lower"]* && $1 != *[!"$hpc_facts_lower"-]* &&
  -f $hpc_files_dir/lib/commands/$1.bash ]]; then
  # shellcheck source=hpc_files/lib/hpc_help.bash
  source "$hpc_files_dir/lib/hpc_help.bash"
  if hpc_commands_help_asked "${@:2}"; then
    hpc_commands_usage "$1"
    exit 0
  fi
  # shellcheck source=/dev/null
  source "$hpc_files_dir/lib/commands/$1.bash"
  hpc_command=${1//-/_}
  shift
  "hpc_command_$hpc_command" "$@"
else
  hpc_submission_load
  if [[ -n ${1-} && $1 != -* ]]; then
    # shellcheck source=hpc_files/lib/hpc_help.bash
    source "$hpc_files_dir/lib/hpc_help.bash"
    hpc_commands_check_word "$1"
  fi
  hpc_submit_main "" "$@"
fi
exit
#+ The usage, continued (see the top of the file).
#
# Submits the command of experiment_configurations.txt (beside this script) as a SLURM job that
# runs in the project's virtual environment (${source_dir}/virtual_env, built first by an install
# job when missing or when Pipfile / requirements.txt changed). The project (source_dir) is the
# folder that holds this hpc_files/ folder, wherever you run the command from.
#
# Commands (one file each in hpc_files/lib/commands/):
#
# Resources:
#   -g, --gpus N               GPUs per node, 0 or more. Default: the cluster's (1).
#   -c, --cpus N               CPUs for each GPU process (for each process when --gpus is 0):
#                              no launcher: the job's one task gets N x max(GPUs, 1) CPUs;
#                              lightning: each task (one per GPU) gets N CPUs;
#                              torchrun: each node's task gets N x GPUs CPUs for its GPU processes.
#                              Also --cpu. Default: the cluster's (2).
#   -n, --num-nodes N          Nodes, 1 or more; more than 1 needs -W. Also --num_nodes. Default: 1.
#   -m, --mem-per-gpu AMOUNT   Memory per GPU, with a unit: 10G, 512M. The job asks for
#                              AMOUNT x GPUs per node. Default: the cluster's; on a cluster
#                              without a profile none is asked for (SLURM's default applies).
#   -t, --time TIME            Time limit as SLURM writes it: M, M:S, H:M:S, D-H, D-H:M or
#                              D-H:M:S (e.g. 1-12:00:00). Default: the cluster's.
#   -G, --gpu-type TYPE        GPU type, one of the cluster's (e.g. v100l on Cedar).
#   -a, --account NAME         SLURM account, one of the cluster's. Default: the cluster's.
#   -p, --partition NAME       SLURM partition. Default: the profile's, else SBATCH_PARTITION
#                              (as sbatch reads it; written into the job, so that resubmit
#                              keeps it), else the cluster's default.
#
# How the program is started:
#   -W, --which-distributed L  The launcher L, one of the files in hpc_files/lib/launchers/:
#                              With -W the command must start with python.
#                              Each line a rank prints (up to 4 KiB) reaches the output whole,
#                              also when several ranks share a node and print without flushing.
#   --label-ranks              Start each line of the program's output with the rank that
#                              printed it, '[rank 3] ...' (stdout and stderr; like srun --label).
#                              With any -W but none.
#   -C, --configs FILE         The file holding the command. Default: experiment_configurations.txt.
#                              $NAME, ${NAME} and ${NAME:-default} in it are expanded in the job,
#                              on each node, from the job's environment; nothing else is
#                              interpreted. A name the job does not define fails the job.
#
# Data, results and containers:
#   -d, --data PATH...         Files or folders relative to ${SCRATCH}/${project_name}, packed once
#                              into an archive under ${scratch_dir}/.staging/ (rebuilt when they
#                              change) and unpacked into ${SLURM_TMPDIR} on every node, under the
#                              same relative paths; an absolute path elsewhere that you can read
#                              (a shared /datasets/NAME) under its own name (NAME). The values run
#                              until the next option.
#   --copy-back PATH...        Paths relative to ${SLURM_TMPDIR}, looked for on every node and
#                              copied to ${scratch_dir}/${exp_name}/ when the program ends, also
#                              after the time-limit warning: the first node's as PATH, another
#                              node's as PATH.NODE (snapshot.pt.n2), so copies never overwrite
#                              each other. A path found on no node is named in the log (copy-back
#                              WARNING); a failed copy fails the job.
#   -s, --singularity-container IMAGE.sif
#                              Run in this Apptainer/Singularity image instead of the venv, with
#                              binds for /scratch_storage, /data (staged data under data/), /tmp,
#                              /db, $HOME and the workdir.
#   --runner NAME              What runs the program: one of the files in hpc_files/lib/runners/:
#                              venv (the default: the project's virtual_env), singularity (what
#                              -s IMAGE.sif chooses), or a runner of your own (docs/architecture.md).
#   --workdir PATH             The folder the program starts in, where its relative paths
#                              (snapshot.pt, lightning_logs/, wandb/) land; HPC_WORKDIR names it.
#                              Without -s: a folder on the shared file system, absolute or
#                              relative to the current folder ('..' as cd reads it), made by the
#                              submission when missing (what exists of it must be folders,
#                              the deepest writable for you);
#                              array tasks start in PATH/task_N (made by the job). The command
#                              stays the project's: its program when a relative path with a '/'
#                              (./run.sh), and python's script (python -u train.py), are taken
#                              from source_dir; other relative arguments are PATH's. Not with -w
#                              (agents run the sweep's program from the project).
#                              Default: the project (source_dir).
#                              With -s: the container's working folder, an absolute path inside
#                              it. Default there: /hpc_workdir.
#
# Time limits:
#   --signal-lead SECONDS      The program gets SIGUSR1 (the profile's signal) this long before
#                              the time limit; HPC_WARNING_SIGNAL names it. 0 to 65535.
#                              SLURM may send it up to 60 s early, so --time (which SLURM rounds
#                              up to whole minutes) minus the lead must be 60 s or more.
#                              Only processes that catch the signal get it (a handler, as
#                              /proc/PID/status SigCgt shows): in each task's process tree the
#                              outermost one with a handler (not a torchrun agent: its workers;
#                              a container runtime is looked through). A program without one is
#                              not signalled and runs on to the time limit (TIMEOUT); one still
#                              starting gets it once its handler is installed.
#                              Default: the cluster's.
#   --requeue N                A warned job requeues itself up to N times (SLURM_RESTART_COUNT,
#                              HPC_RESTART_COUNT), appending to the same log, when the program
#                              ends by itself (not when SLURM ends it: time limit, scancel).
#                              Default: 0.
#                              The program's own 'scontrol requeue' of its job (Lightning's
#                              SLURM handler) counts against the same N: refused (status 1,
#                              the run goes on) once N restarts are done, or without --requeue.
#
# Arrays (one at a time):
#   -w, --wandb-sweepid ID     Run W&B sweep agents (ID or ENTITY/PROJECT/ID), one array task each,
#                              on one node with one GPU: wandb agent --count 1. The API key comes
#                              from WANDB_API_KEY or ~/wandb_credentials.txt (mode 600).
#   --num-sweeps N             How many agents (asked on a terminal when not given).
#   --wandb-offline            Run a grid sweep without a W&B server: one task per grid point of
#                              the sweep file, WANDB_MODE=offline; sync the runs afterwards.
#   --sweep-config FILE        The sweep file. Default: sweeper.yml beside this script.
#   --repeat K                 The same experiment K times; task i sees seed=i.
#                              Every array task has its own checkpoints_dir and WANDB_DIR
#                              (.../task_N, see below).
#   --max-concurrent K         At most K tasks at once (%K). Default: the cluster's throttle.
#
# Map and gather (one array, then one job that runs when it has ended):
#   --map-range A-B            One task per index A..B (whole numbers, A <= B).
#   --map-over FILE            One task per line of FILE (blank lines and lines starting with #
#                              dropped), frozen as items.txt at submission: editing FILE later
#                              changes nothing. Lines are data: spaces, quotes, $(...) are never run.
#                              Each task sees map_index, map_item (its line; with --map-range the
#                              index), map_count, map_dir and task_dir (its own folder) and runs the
#                              configs file's command. Folder: ${scratch_dir}/hpc_outputs/map/EXP/
#                              YYYYmmdd-HHMMSS-ARRAYID/ (manifest.json, items.txt, tasks/I/).
#                              With --repeat K, --gather makes the repeats such a map over 0..K-1.
#   --gather CMD               After the array (afterany), one job runs CMD (written as in the
#   --gather-configs FILE      configs file, or read from FILE) in the same venv or container, with
#                              map_dir, map_count, map_ok, map_failed, map_n_ok, map_n_failed and
#                              map_status_file; first it writes map_status.tsv/.json.
#   --gather-when POLICY       all-ok (default), always, min-ok=K or min-ok=P%: when it is not met
#                              the gather prints one line (failed indices, the resubmit command)
#                              and ends FAILED without running CMD.
#   --gather-cpus N, --gather-gpus N, --gather-time TIME
#                              The gather job's CPUs (1), GPUs (0) and time limit (00:30:00).
#   --chunk K|auto             K items per array task, one after the other in the task (each
#                              still its own map_index, map_item, task_dir, status and result).
#                              auto: as few tasks as keep the parallelism allowed (--max-concurrent
#                              or the cluster's throttle) and fit MaxArraySize: K = the larger of
#                              ceil(items / throttle) and ceil(items / MaxArraySize).
#   --chunk-stop-on-failure    A failed item ends its chunk (the rest recorded NOT_RUN).
#
# Scaling test (one job per configuration, then a report job that runs when all have ended):
#   --scaling-test             The same command on N nodes x G GPUs per node for every N of
#                              --scale-nodes and G of --scale-gpus, --repeats times each: one
#                              ordinary job per run, named EXP-scale-NxG-rK, then one report job
#                              (afterany; 1 node, 1 CPU, no GPU) that writes results.csv,
#                              summary.csv (median, speedup, ideal, efficiency), report.md and
#                              scaling.png/.svg in ${scratch_dir}/hpc_outputs/scaling/EXP/STUDY/.
#                              Runs see scaling_study_dir, scaling_run_dir, scaling_config (2x2)
#                              and scaling_repeat; the job times the launcher command (wall.json);
#                              hpc_helpers.scaling.Throughput in the loop measures samples/s.
#   --scale-nodes LIST         Node counts, e.g. 1,2,4. Default: powers of two up to --num-nodes.
#                              With both, --num-nodes must be the largest of LIST (else exit 2).
#   --scale-gpus LIST          GPUs per node, e.g. 1,2,4. Default: --gpus.
#   --repeats R                Runs per configuration (the median is reported). Default: 1. At most 1000 runs in all.
#   --scaling-mode MODE        strong (default) or weak: how wall time becomes efficiency (only
#                              when the program does not measure throughput).
#   --report-time TIME         The report job's time limit. Default: 00:15:00.
#   Runs never disturb each other by default: each has its nodes to itself (--exclusive), and
#   where the partition's nodes share one machine (the embedded cluster) they run one after
#   another (repeats interleaved). Each run starts in its own folder (runs/NxG-rK/work, or
#   --workdir's PATH/NxG-rK).
#   --scale-serial             Runs one after another (each after the end of the one before).
#   --scale-parallel           Runs released together and free to share nodes (the report says so).
#   --scale-target-efficiency P  The report's verdict: the largest configuration whose
#                              efficiency is P % or more. Default: 70.
#   Then: bash job_submitter.sh scaling-report EXP|PATH [--out DIR] draws a study's report again.
#
# Names and places:
#   -e, --exp-name NAME        The experiment: ${scratch_dir}/NAME/checkpoints is made for it,
#                              and its output files are named after it. Default: default.
#   --cluster NAME             The cluster profile (hpc_files/clusters/NAME.yaml). Default: the
#                              one whose hostname_pattern matches this host, else generic; the
#                              variable HPC_CLUSTER sets it too.
#
# Submitting:
#   --dry-run                  Print the sbatch invocation, the job script, the program's
#                              environment and a summary; ask SLURM to validate the request
#                              (sbatch --test-only). Submits and creates nothing.
#   -y, --yes                  Do not ask before submitting (never asked without a terminal).
#   -h, --help                 This text.
#
# Each option is given once, except -d/--data and --copy-back, whose paths add up.
# The project's usual settings can be written once in hpc_files/defaults, a line each as
# --time=2:00:00 (install.sh writes one, commented out; docs/options.md): the command line
# overrides them, the cluster profile fills what neither gives; --dry-run says where each
# value came from.
# Requests that no node of the partition could run (more nodes, CPUs, GPUs or memory than it
# has, a GPU type it lacks) are refused before anything is made, from what sinfo says (cached
# for 10 minutes); so are arrays above MaxArraySize (scontrol show config, cached the same way).
#
# The job's program sees source_dir, project_name, scratch_dir=${SCRATCH}/${project_name},
# exp_name, num_nodes, gpus_per_node, num_processes (the total of program processes: 1 without
# a launcher, else nodes x GPUs) and SLURM_TMPDIR (on every node). SCRATCH must be set.
# Its own folders, made by the job: checkpoints_dir=${scratch_dir}/${exp_name}/checkpoints and
# WANDB_DIR=${scratch_dir}/${exp_name} (W&B writes wandb/ in it; a WANDB_DIR of this shell is
# kept); an array task's are .../checkpoints/task_N and ${scratch_dir}/${exp_name}/task_N.
# Output: ${scratch_dir}/hpc_outputs/EXP_KIND_JOBID.out, with the job script beside it (.sh).
# HPC_CACHE_DIR: where the compiled profiles and what sinfo said are kept (default:
# hpc_files/.cache); a folder of your own (one another user made is refused).
# Exit status: 0 submitted (or dry run accepted), 1 refused or failed, 2 bad input.
# After submitting: bash job_submitter.sh status | logs EXP | cancel EXP | resubmit EXP --failed
