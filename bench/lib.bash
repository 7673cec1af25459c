# shellcheck shell=bash
# bench/lib.bash: what the benchmarks share (sourced by bench/submit, bench/map, bench/scaling):
# the clock, medians, the benchmark's project, and the comparison with another version of the
# toolkit in the same run.
#
# HPC_BENCH_OLD=DIR (a checkout of another version, e.g. `git worktree add /tmp/old COMMIT`): each
# round also times that version's submitter, in a project of its own, between the baseline and
# this version; the report adds its ratio and this version's time as a share of its time. Only
# same-run numbers compare: the machine is shared and noisy.

# bench_now_us: prints microseconds since the epoch.
bench_now_us() { printf '%s\n' "${EPOCHREALTIME/[.,]/}"; }

# bench_median NUMBER...: prints the median (the mean of the middle two for an even count).
bench_median() {
  printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : int((a[NR/2] + a[NR/2+1]) / 2)}'
}

# bench_project REPO DIR: installs the toolkit of REPO into the project DIR, whose command is
# `python -c pass`, and submits one warm-up job there (builds the venv, compiles the profile).
bench_project() {
  mkdir -p "$2"
  bash "$1/hpc_files/install.sh" "$2" >/dev/null
  printf 'python -c pass\n' >"$2/hpc_files/experiment_configurations.txt"
  bash "$2/hpc_files/job_submitter.sh" -y -g 0 -e warmup >/dev/null 2>&1
}

# bench_old_project WORK: with HPC_BENCH_OLD, sets bench_old to a project of that version (made
# under WORK); else to nothing.
bench_old_project() {
  bench_old=''
  [[ -n ${HPC_BENCH_OLD:-} ]] || return 0
  [[ -f $HPC_BENCH_OLD/hpc_files/job_submitter.sh ]] || {
    echo "bench: HPC_BENCH_OLD: '$HPC_BENCH_OLD' holds no hpc_files/job_submitter.sh" >&2
    exit 2
  }
  # The same project name as this version's, so that job names match (scancel by name); its
  # own scratch folder, so that outputs and manifests stay apart.
  bench_old="$1/old/bench project" bench_old_scratch=$1/old/scratch
  SCRATCH=$bench_old_scratch bench_project "$HPC_BENCH_OLD" "$bench_old"
}

# bench_old_submit ARGS...: the other version's submitter with ARGS, in its project and scratch
# folder (no process more than this version's submission starts: a plain assignment in front).
bench_old_submit() {
  SCRATCH=$bench_old_scratch bash "$bench_old/hpc_files/job_submitter.sh" "$@"
}

# bench_time ARRAY COMMAND...: runs COMMAND (output dropped) and appends its time in microseconds
# to the array named ARRAY.
bench_time() {
  local -n bench_times=$1
  local start
  shift
  start=$(bench_now_us)
  "$@" >/dev/null
  bench_times+=($(($(bench_now_us) - start)))
}

# bench_report_old BASE_US NEW_US OLD_SAMPLES...: with HPC_BENCH_OLD, prints the other version's
# median, its ratio to the baseline, and this version's time as a share of it.
bench_report_old() {
  local base=$1 new=$2 old
  shift 2
  (($#)) || return 0
  old=$(bench_median "$@")
  awk -v s="$base" -v t="$new" -v o="$old" -v d="$HPC_BENCH_OLD" 'BEGIN {
    printf "  other version (%s) %8.1f ms   %.2fx; this version takes %.2f of its time\n", d, o / 1000, o / s, t / o
  }'
}

# bench_floor_script FILE KIND: writes to FILE a Bash script that starts exactly the processes a
# submission of KIND (submit, map, scaling) starts (tests/unit/speed.bats counts them), with
# arguments of the same shape, and does nothing else: no library, no plan, no file but the
# folders. Run as `bash FILE WORK PROJECT`, it times the floor of the toolkit's design on this
# machine: what is left above it is the toolkit's own Bash work (mostly parsing its libraries).
# shellcheck disable=SC2016 # the script's lines, written as they are: expanded when it runs
bench_floor_script() {
  local common='--nodes=1 --ntasks-per-node=1 --cpus-per-task=1 --mem=1G --time=00-00:10:00 --partition=debug'
  common+=' --output=/dev/null --job-name=bench-floor'
  {
    printf '%s\n' '#!/usr/bin/env bash' 'set -euo pipefail' 'work=$1 project=$2' \
      'exec {lock}>>"$work/floor.lock"' 'flock -s "$lock"' "common=($common --chdir=\"\$project\")" \
      "script=\$'#!/bin/bash\\ntrue\\n'"
    case $2 in
      submit)
        printf '%s\n' 'out=$(exec sbatch --parsable "${common[@]}" 2>&1 <<<"$script")'
        ;;
      map)
        printf '%s\n' 'id=$(exec sbatch --parsable --hold "${common[@]}" --array=0-5%2 2>&1 <<<"$script")' \
          'mkdir -- "$work/map-$id" "$work/map-$id/tasks"' \
          'after=(--dependency="afterany:$id" --kill-on-invalid-dep=yes)' \
          'gather=$(exec sbatch --parsable "${common[@]}" "${after[@]}" 2>&1 <<<"$script")' \
          'out=$(exec scontrol release "$id" 2>&1)'
        ;;
      scaling)
        printf '%s\n' \
          'report=$(exec sbatch --parsable --hold "${common[@]}" --kill-on-invalid-dep=yes 2>&1 <<<"$script")' \
          'mkdir -- "$work/study-$report"' \
          'mkdir -- "$work/study-$report/runs" "$work/study-$report/runs/"{1x1,1x2,2x1,2x2}' \
          'ids=()' \
          'for shape in 1:1 1:2 2:1 2:2; do' \
          '  shaped=("${common[@]/--nodes=1/--nodes=${shape%:*}}" --gres="gpu:${shape#*:}")' \
          '  ids+=("$(exec sbatch --parsable --hold "${shaped[@]}" 2>&1 <<<"$script")")' \
          'done' \
          'deps=$(IFS=:; printf %s "${ids[*]}")' \
          'out=$(exec scontrol update JobId="$report" Dependency="afterany:$deps" 2>&1)' \
          'out=$(exec scontrol release "$report" "${ids[@]}" 2>&1)'
        ;;
    esac
  } >"$1"
}

# bench_report_floor BASE_US FLOOR_US NEW_US: prints the floor's median, its ratio to the baseline,
# and what this version adds above it.
bench_report_floor() {
  awk -v s="$1" -v f="$2" -v t="$3" 'BEGIN {
    printf "  floor: the same processes, no toolkit  %8.1f ms   %.2fx; the toolkit adds %.1f ms (%.2fx) above it\n",
      f / 1000, f / s, (t - f) / 1000, (t - f) / s
  }'
}
