# shellcheck shell=bash
# Summary: what a job used of what it asked for: CPUs, memory, GPUs, time (running or ended)
# Usage: bash job_submitter.sh usage EXP|JOBID[_TASK]
#
#   usage TARGET        For each recorded job of experiment TARGET, or the job or array task
#                       TARGET, running or ended, per node: CPUs used (on average) of CPUs
#                       allocated, peak memory of memory allocated, GPU use (where nvidia-smi
#                       exists), elapsed of the time limit; and a suggestion where a request was
#                       far off ("asked 8 CPUs, used 1.3: -c 2 would do"). The same lines end
#                       each job's log.
#   -h, --help          This text.
#
# Measured by the job itself: a sampler on each node reads the job's processes from /proc (every
# 2 s for the first minute, then every 15 s) into ${scratch_dir}/hpc_outputs/usage/JOB/NODE; no
# accounting database is needed. Where the cluster keeps one (sacct answers), an ended job also
# gets a line 'usage from sacct:' (TotalCPU of its steps, their largest MaxRSS), also when its
# sampler left no figures; a last line 'source:' says which of the two each job's figures are from.
#
# Exit status: 0 printed, 1 nothing recorded for any of them, 2 bad input (an unknown experiment
# or job is answered with the known ones).

# usage.bash: the command 'usage' (bash job_submitter.sh usage EXP|JOBID[_TASK]): what a job used,
# from the files its samplers wrote (hpc_usage.bash).

# What this file reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_common.bash: the library's folder; hpc_manage.bash: the manifests' folder and the target.
declare -g hpc_lib_dir hpc_manage_dir

# shellcheck source=hpc_files/lib/hpc_manage.bash
source "$hpc_lib_dir/hpc_manage.bash"
# shellcheck source=hpc_files/lib/hpc_usage.bash
source "$hpc_lib_dir/hpc_usage.bash"

# hpc_command_usage EXP|JOBID[_TASK]: the command 'usage'.
hpc_command_usage() {
  local word id key dir report acct any=0
  hpc_manage_begin
  for word in "$@"; do
    [[ $word != -* ]] || hpc_commands_die_unknown_option usage "$word"
  done
  (($# == 1)) || hpc_die_usage "usage" "needs one experiment, job id or JOBID_TASK; usage: usage EXP|JOBID[_TASK]"
  hpc_manage_target "$1"
  local -a ids=(${hpc_manage_ids[@]+"${hpc_manage_ids[@]}"}) files=()
  # What SLURM's accounting says of the ended ones, where the cluster keeps it (one sacct for all).
  hpc_usage_sacct_load ${ids[@]+"${ids[@]}"}
  for id in ${ids[@]+"${ids[@]}"}; do
    hpc_manage_task_keys "$id"
    for key in "${hpc_manage_keys[@]}"; do
      dir=$(hpc_usage_dir "${hpc_manage_dir%/*/*}" "$key")
      files=() report=''
      # Never through a link, and only the user's own files (hpc_usage_read).
      [[ -L ${dir%/*} || -L $dir || ! -d $dir ]] || files=("$dir"/*)
      [[ -z ${files[0]:-} || ! -e ${files[0]} ]] || report=$(hpc_usage_report "${files[@]}")
      acct=${hpc_usage_acct[$key]-}
      if [[ -z $report && -z $acct ]]; then
        printf '=== job %s (%s): no usage recorded (not started yet, or a job of an earlier toolkit)\n' "$key" \
          "${hpc_manage_exp[$id]}"
        continue
      fi
      any=1
      printf '=== job %s (%s)\n' "$key" "${hpc_manage_exp[$id]}"
      [[ -z $report ]] || printf '%s\n' "$report"
      [[ -z $acct ]] || printf 'usage from sacct: %s\n' "$acct"
      if [[ -z $acct ]]; then
        printf "source: the job's own sampler (usage NODE lines)\n"
      elif [[ -n $report ]]; then
        printf "source: the job's own sampler (usage NODE lines); SLURM's accounting (sacct) for the ended job\n"
      else
        printf "source: SLURM's accounting (sacct): the job's sampler left no figures\n"
      fi
    done
  done
  ((any)) || return 1
}
