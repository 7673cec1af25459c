#!/usr/bin/env bash
# Usage: bash hpc_files/local_cluster.sh [options] up|down|status|env
#
# A real two-node SLURM cluster on this machine, for trying the toolkit and for its tests.
# Every file it writes (config, munge key and socket, state, spool, logs, pids, devices,
# node-local scratch) lives under one folder. Three configurations, chosen at 'up':
#   default  nodes n1 and n2 (slurmd -N), each 4 CPUs, 8000 MB and gpu:2 (fake GPUs: character
#            devices), in one default partition 'debug'.
#   second   differs where real clusters differ: nodes named by their address, 127.0.0.1 and
#            127.0.0.2, each 4 CPUs, 4000 MB and typed GPUs gpu:a100:2, in a partition
#            'compute' that is not the default: jobs must name it (-p compute, or
#            SBATCH_PARTITION=compute).
#   site     the default's nodes as real sites run them: accounting in slurmdbd (port N+3) on a
#            MariaDB of the folder's own (socket in run/, no port; installed with slurmdbd and
#            its MySQL plugin when missing), so sacct answers with MaxRSS and TotalCPU after the
#            controller forgot the job (MinJobAge=5); an account 'lab' with root's (and
#            SUDO_USER's) association; preemption: the default partition 'debug' is preempted by
#            partition 'high' (PreemptMode=REQUEUE, GraceTime=30, the job's --signal sent at
#            once); a QOS 'limited' (MaxSubmitJobsPerUser=4, MaxJobsPerUser=2).
# Each can run beside the others, in its own folder on its own port base.
#
# Commands:
#   up       check that the cluster's ports are free (naming what holds one that is not), start
#            munged, slurmctld and both slurmd (installing slurm-wlm and munge with apt-get when
#            run as root and they are missing); wait until both nodes are idle; print the line
#            to use:  export SLURM_CONF=... HPC_CLUSTER=local   (the cluster's profile,
#            hpc_files/clusters/local.yaml). A failed 'up' stops what it started. A second 'up'
#            changes nothing but the SLURM_TMPDIR mode, and prints the line again.
#   down     stop the daemons this folder's cluster started, by their pids (site: MariaDB and
#            slurmdbd too; the database stays in the folder for the next 'up').
#   status   sinfo of the cluster and whether each daemon runs.
#   env      print the export line only:  eval "$(bash hpc_files/local_cluster.sh env)"
#
# Options (or the variables in brackets):
#   --dir DIR          the cluster's folder [HPC_CLUSTER_DIR]; default: .local_cluster in the
#                      repository. No whitespace (slurm.conf cannot quote it).
#   --port-base N      slurmctld listens on N, the first node on N+1, the second on N+2
#                      [HPC_CLUSTER_PORT_BASE]; default 17817.
#   --config NAME      default, second or site [HPC_CLUSTER_CONFIG]; default: the one the folder's
#                      cluster last ran, else default. Changing it needs a 'down' first.
#   --tmpdir MODE      provided: the cluster gives each job SLURM_TMPDIR (a TaskProlog exports
#                      a per-job folder that the Prolog makes and the Epilog removes), as on
#                      Alliance clusters; emulated: it does not, as on the PLAI cluster, and the
#                      toolkit must make it [HPC_CLUSTER_TMPDIR]; default provided.
#                      Either way jobs see HPC_LOCAL_SCRATCH, their node's local scratch root.
#   -h, --help         this text.
#
# The default node names n1 and n2 must resolve: 'up' adds '127.0.0.1 n1 n2' to /etc/hosts when
# they do not. All nodes share this host's name: tell them apart by SLURMD_NODENAME.
set -euo pipefail

hpc_files_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=hpc_files/lib/hpc_common.bash
source "$hpc_files_dir/lib/hpc_common.bash"
# shellcheck source=hpc_files/lib/hpc_cluster.bash
source "$hpc_files_dir/lib/hpc_cluster.bash"

cluster_dir=${HPC_CLUSTER_DIR:-$(dirname "$hpc_files_dir")/.local_cluster}
port_base=${HPC_CLUSTER_PORT_BASE:-17817}
tmpdir_mode=${HPC_CLUSTER_TMPDIR:-}
config=${HPC_CLUSTER_CONFIG:-}
command=
opt='' value='' have_value=0

while (($#)); do
  # --name=value means the same as --name value.
  hpc_split_option "$1"
  case $opt in
    --dir | --port-base | --tmpdir | --config)
      if ((! have_value)); then
        (($# >= 2)) || hpc_die_usage "$opt" "needs a value"
        value=$2
        shift
      fi
      case $opt in
        --dir) cluster_dir=$value ;;
        --port-base) port_base=$value ;;
        --tmpdir) tmpdir_mode=$value ;;
        --config) config=$value ;;
      esac
      shift
      ;;
    -h | --help)
      hpc_usage "${BASH_SOURCE[0]}"
      exit 0
      ;;
    up | down | status | env)
      [[ -z $command ]] || hpc_die_usage "$1" "only one command at a time (already: $command)"
      command=$1
      shift
      ;;
    *) hpc_die_usage "$1" "unknown; accepted: up, down, status, env, --dir, --port-base, --config, --tmpdir, --help" ;;
  esac
done

[[ -n $command ]] || hpc_die_usage "command" "missing; accepted: up, down, status, env"
if ! [[ $port_base =~ ^[0-9]+$ ]] || ((port_base < 1024 || port_base > 65000)); then
  hpc_die_usage "--port-base" "'$port_base' is not a port number between 1024 and 65000"
fi
[[ -z $tmpdir_mode || $tmpdir_mode == provided || $tmpdir_mode == emulated ]] ||
  hpc_die_usage "--tmpdir" "'$tmpdir_mode' is not accepted; accepted: provided, emulated"
if [[ -n $config ]] && ! hpc_cluster_configure "$config"; then
  hpc_die_usage "--config" "'$config' is not accepted; accepted: $(hpc_cluster_config_names)"
fi
[[ -n $cluster_dir ]] || hpc_die_usage "--dir" "empty; accepted: a folder name without whitespace"
[[ $cluster_dir != *[[:space:]]* ]] ||
  hpc_die_usage "--dir" "'$cluster_dir' contains whitespace, which slurm.conf cannot hold"
if [[ $command == up ]]; then
  mkdir -p -- "$cluster_dir" || hpc_die "cannot create the cluster folder $cluster_dir"
fi
[[ -d $cluster_dir ]] && cluster_dir=$(cd "$cluster_dir" && pwd)

hpc_cluster_init "$cluster_dir" "$port_base"
case $command in
  up) hpc_cluster_up "$tmpdir_mode" "$config" ;;
  down) hpc_cluster_down ;;
  status) hpc_cluster_status ;;
  env) hpc_cluster_print_env ;;
esac
