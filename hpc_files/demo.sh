#!/usr/bin/env bash
# Usage: bash hpc_files/demo.sh [--keep]
#        bash hpc_files/demo.sh --make-project DIR
#
# --make-project DIR only makes the demo project in DIR, as the demo makes demo_project/ (the
# toolkit installed, the demo program and its configs file, DIR/scratch for SCRATCH): no cluster,
# no job. The guides' examples run in this project (tests/integration/docs_examples.bats).
#
# The main job, on the embedded cluster: brings the local cluster up, installs the toolkit into a
# small demo project (demo_project/ in the repository, with a tiny PyTorch DDP program), submits
# it with  -W torchrun --gpus 2 --num-nodes 2 -y,  waits for it and prints every rank's line and
# the all-reduced result (0+1+2+3 = 6). The first run also builds the project's virtual
# environment with an install job. SCRATCH is demo_project/scratch. The cluster is the one of
# HPC_CLUSTER_DIR and HPC_CLUSTER_PORT_BASE when they are set (local_cluster.sh's variables).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=hpc_files/lib/hpc_common.bash
source "$repo/hpc_files/lib/hpc_common.bash"
[[ ${1-} != -h && ${1-} != --help ]] || {
  hpc_usage "${BASH_SOURCE[0]}"
  exit 0
}

# hpc_demo_project_make DIR: the demo project in DIR: its program and requirements, the toolkit
# installed, the demo's configs file, and DIR/scratch (the tour's SCRATCH).
hpc_demo_project_make() {
  local project=$1
  mkdir -p "$project/scratch"
  cp "$repo/tests/fixtures/demo_project/"{ddp_demo.py,requirements.txt} "$project/"
  bash "$repo/hpc_files/install.sh" "$project" >/dev/null
  cp "$repo/tests/fixtures/demo_project/experiment_configurations.txt" "$project/hpc_files/"
}

if [[ ${1-} == --make-project ]]; then
  [[ -n ${2-} && $# == 2 ]] || hpc_die_usage --make-project "needs one folder, the project to make"
  hpc_demo_project_make "$2"
  exit 0
fi

bash "$repo/hpc_files/local_cluster.sh" up
# The cluster local_cluster.sh brought up: the one in HPC_CLUSTER_DIR (its slurm.conf holds the
# ports of HPC_CLUSTER_PORT_BASE), else .local_cluster in the repository, as there.
cluster_dir=$(cd "${HPC_CLUSTER_DIR:-$repo/.local_cluster}" && pwd)
export SLURM_CONF=$cluster_dir/etc/slurm.conf HPC_CLUSTER=local
project=$repo/demo_project
hpc_demo_project_make "$project"
export SCRATCH=$project/scratch

out=$(bash "$project/hpc_files/job_submitter.sh" -W torchrun --gpus 2 --num-nodes 2 --exp-name demo -y)
printf '%s\n' "$out"
id=$(sed -n 's/^Submitted job \([0-9]*\).*/\1/p' <<<"$out")
log=$(sed -n 's/^Output: *//p' <<<"$out")
state=
for ((i = 0; i < 600; i++)); do
  state=$(scontrol show job "$id" | grep -oE 'JobState=[A-Z_]+' | cut -d= -f2)
  case $state in PENDING | RUNNING | COMPLETING | CONFIGURING) sleep 0.2 ;; *) break ;; esac
done
echo "== job $id: $state; its output ($log):"
cat "$log"
echo "== every rank's line:"
grep '^rank ' "$log" | sort
[[ $state == COMPLETED ]] || hpc_die "the demo job ended $state"
[[ $(grep -c 'all-reduce of ranks = 6' "$log") == 4 ]] || hpc_die "not every rank got 6"
echo "== demo: 4 ranks on 2 nodes, all-reduce = 6 on every rank"
