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

# bench_cpu_us VAR: sets VAR to the user + system CPU time, in microseconds, of this shell's
# waited-for children so far (the second line of `times`, written to a file: in a command
# substitution `times` would run in a child of its own, which has none).
bench_cpu_us() {
  local -n bench_cpu_out=$1
  local user sys m frac sec
  { times; } >"${bench_times_file:?}"
  { read -r _ _ && read -r user sys; } <"$bench_times_file"
  bench_cpu_out=0
  for m in "$user" "$sys"; do # each as 0m0.123s: minutes, seconds and a fraction
    m=${m%s} frac=${m#*.}000000
    sec=${m#*m}
    bench_cpu_out=$((bench_cpu_out + (10#${m%%m*} * 60 + 10#${sec%.*}) * 1000000 + 10#${frac:0:6}))
  done
}

# bench_time ARRAY COMMAND...: runs COMMAND (output dropped) and appends its time in microseconds
# to the array named ARRAY, and its CPU time (user + system, its processes and theirs) to ARRAY_cpu.
bench_time() {
  local -n bench_times=$1 bench_cpus=${1}_cpu
  local start cpu cpu_after
  shift
  bench_cpu_us cpu
  start=$(bench_now_us)
  "$@" >/dev/null
  bench_times+=($(($(bench_now_us) - start)))
  bench_cpu_us cpu_after
  bench_cpus+=($((cpu_after - cpu)))
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

# bench_report_cpu NEW_CPU_ARRAY [OLD_CPU_ARRAY]: prints the median CPU time (user + system) of one
# submission of this version, and with HPC_BENCH_OLD the other version's and this one's share of
# it: unlike the wall times, little moved by the machine's load.
bench_report_cpu() {
  local -n bench_new_cpu=$1
  local new old=''
  new=$(bench_median "${bench_new_cpu[@]}")
  if [[ -n ${2-} ]]; then
    local -n bench_old_cpu=$2
    ((${#bench_old_cpu[@]})) && old=$(bench_median "${bench_old_cpu[@]}")
  fi
  awk -v t="$new" -v o="$old" -v d="${HPC_BENCH_OLD-}" 'BEGIN {
    printf "  CPU (user + system) of one submission: this version %.1f ms", t / 1000
    if (o != "") printf ", other version (%s) %.1f ms: this version takes %.2f of its CPU", d, o / 1000, t / o
    printf "\n"
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
