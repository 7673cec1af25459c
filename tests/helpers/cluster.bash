# shellcheck shell=bash
# Helpers for integration tests on the local cluster (hpc_files/local_cluster.sh): submit, wait
# for the end with a timeout that fails the test, read the final state and exit code.
# tests/run.sh brings the cluster up; a test file that runs alone calls hpc_cluster_require.

# The cluster is the one in HPC_CLUSTER_DIR; hpc_cluster_use points a test file at another.
# tests/run.sh runs integration files side by side, each on the cluster of its GNU parallel job
# slot: HPC_TEST_CLUSTER_LIST holds "DIR PORT_BASE" a line, slot 1's first. The choice is made
# once per file (setup_file), before hpc_cluster_use may change it.
if [[ -z ${HPC_TEST_CLUSTER_CHOSEN:-} ]]; then
  export HPC_TEST_CLUSTER_CHOSEN=1
  if [[ -n ${HPC_TEST_CLUSTER_LIST:-} ]]; then
    read -r HPC_CLUSTER_DIR HPC_CLUSTER_PORT_BASE < <(sed -n "${PARALLEL_JOBSLOT:-1}p" <<<"$HPC_TEST_CLUSTER_LIST")
    export HPC_CLUSTER_DIR HPC_CLUSTER_PORT_BASE
  fi
fi
HPC_CLUSTER_DIR=${HPC_CLUSTER_DIR:-$HPC_ROOT/.local_cluster}
export SLURM_CONF=$HPC_CLUSTER_DIR/etc/slurm.conf

# hpc_cluster_use DIR PORT_BASE: from setup_file, points SLURM, these helpers and local_cluster.sh
# (hpc_cluster_mode) at the cluster in DIR for the whole test file.
hpc_cluster_use() {
  export HPC_CLUSTER_DIR=$1 HPC_CLUSTER_PORT_BASE=$2
  export SLURM_CONF=$1/etc/slurm.conf
}

# hpc_cluster_require: fails the test file when the local cluster is not up.
hpc_cluster_require() {
  sinfo -h >/dev/null 2>&1 ||
    fail "the local cluster is not up: run 'bash hpc_files/local_cluster.sh up' (or tests/run.sh)"
}

# hpc_cluster_mode MODE: sets how the running cluster gives jobs SLURM_TMPDIR (provided|emulated).
hpc_cluster_mode() {
  bash "$HPC_ROOT/hpc_files/local_cluster.sh" --tmpdir "$1" up >/dev/null
}

# hpc_job_field ID FIELD: one field of `scontrol show job ID` (e.g. JobState, ExitCode, NumTasks).
hpc_job_field() {
  scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}

# hpc_wait_job ID [TIMEOUT_S]: waits until job ID (every task of an array) has ended; on timeout
# cancels it and fails the test. Polls scontrol itself: sbatch --wait polls only every 2-8 s.
hpc_wait_job() {
  local id=$1 timeout=${2:-120} start=$SECONDS states polls=0
  local live='JobState=(PENDING|RUNNING|COMPLETING|CONFIGURING|SUSPENDED|REQUEUED)'
  while :; do
    states=$(squeue -h -j "$id" -o '%T' 2>/dev/null) || states=
    if [[ -z $states ]]; then
      # squeue forgets finished jobs at once; scontrol keeps them for MinJobAge.
      states=$(scontrol show job "$id" 2>/dev/null | grep -oE "$live" || true)
      [[ -z $states ]] && return 0
    fi
    if ((SECONDS - start > timeout)); then
      scancel "$id" 2>/dev/null || true
      fail "job $id did not end within ${timeout}s (states: ${states//$'\n'/ })"
    fi
    hpc_poll_pause "$((++polls))"
  done
}

# hpc_poll_pause N: the pause before a wait's poll N+1: 0.2 s for the first 2 s (a short job, a
# line soon), then 1 s. Each poll costs CPU (an squeue is 5 ms, with slurmctld's share), and the
# suite is bound by its 2 cores: at 0.2 s, a test's minutes of waiting cost CPU-s of polls.
hpc_poll_pause() {
  if (($1 <= 10)); then sleep 0.2; else sleep 1; fi
}

# hpc_job_state ID: prints "STATE EXIT:SIGNAL" of a finished job, from scontrol, else from the
# jobcomp text file (one line per finished job, kept after MinJobAge).
hpc_job_state() {
  local state exit_code line
  state=$(hpc_job_field "$1" JobState)
  exit_code=$(hpc_job_field "$1" ExitCode)
  if [[ -z $state ]]; then
    line=$(grep -E "^JobId=$1 " "$HPC_CLUSTER_DIR/log/jobcomp.log" | tail -n 1)
    state=$(tr ' ' '\n' <<<"$line" | sed -n 's/^JobState=//p')
    exit_code=$(tr ' ' '\n' <<<"$line" | sed -n 's/^ExitCode=//p')
  fi
  printf '%s %s\n' "$state" "$exit_code"
}

# hpc_sbatch ARGS...: sbatch --parsable; prints the job id (fails the test when sbatch fails).
hpc_sbatch() {
  local out
  out=$(sbatch --parsable "$@") || fail "sbatch $* failed: $out"
  printf '%s\n' "${out%%;*}"
}

# hpc_test_project NAME [SCRATCH]: setup_file of an integration test: needs the cluster, and
# makes the project "$BATS_FILE_TMPDIR/NAME" (exported as PROJECT) with its own SCRATCH
# (default "$BATS_FILE_TMPDIR/scratch dir": a space on purpose), profile local.
hpc_test_project() {
  hpc_cluster_require
  export HPC_CLUSTER=local
  export SCRATCH=${2:-"$BATS_FILE_TMPDIR/scratch dir"}
  export PROJECT=$BATS_FILE_TMPDIR/$1
  mkdir -p "$SCRATCH"
  hpc_project_make "$PROJECT"
}

# hpc_project_make DIR: a project at DIR (made, toolkit installed) with the test programs of
# tests/fixtures/project; SCRATCH must be set by the caller.
hpc_project_make() {
  mkdir -p "$1"
  bash "$HPC_ROOT/hpc_files/install.sh" "$1" >/dev/null
  local fixtures=$HPC_ROOT/tests/fixtures/project
  cp "$fixtures/"{probe.py,lightning_train.py,ckpt.py,sweep_train.py,tree_sums.py,requirements.txt} "$1/"
}

# hpc_configs PROJECT LINE...: writes the project's experiment_configurations.txt.
hpc_configs() {
  local project=$1
  shift
  printf '%s\n' "$@" >"$project/hpc_files/experiment_configurations.txt"
}

# hpc_submit_job PROJECT ARGS...: runs the project's job_submitter.sh -y ARGS and sets job_id
# and job_out (the output file); fails the test when it does not submit.
hpc_submit_job() {
  local project=$1 out
  shift
  out=$(bash "$project/hpc_files/job_submitter.sh" -y "$@" 2>&1) || fail "job_submitter.sh $* failed: $out"
  job_id=$(sed -n 's/^Submitted job \([0-9][0-9]*\).*/\1/p' <<<"$out")
  job_out=$(sed -n 's/^Output: *//p' <<<"$out")
  [[ -n $job_id && -n $job_out ]] || fail "no job id in: $out"
}

# hpc_run_job PROJECT ARGS...: hpc_submit_job, then waits for the end (timeout 180 s) and sets
# job_state ("STATE EXIT:SIGNAL").
hpc_run_job() {
  hpc_submit_job "$@"
  hpc_wait_job "$job_id" 180
  # shellcheck disable=SC2034 # for the calling test
  job_state=$(hpc_job_state "$job_id")
}

# hpc_cancel_submitted OUTPUT: cancels the job that a submission's OUTPUT names ('Submitted job
# N'): a test that asserts only what the submission said does not pay for its job's run.
hpc_cancel_submitted() {
  local id
  id=$(sed -n 's/^Submitted job \([0-9][0-9]*\).*/\1/p' <<<"$1")
  [[ -n $id ]] || fail "no job id in: $1"
  scancel "$id"
}

# hpc_warm_venv PROJECT COMMAND [ARGS...]: for setup_file: the first submission of PROJECT (the
# configs file COMMAND, -g 0 ARGS), from a venv that later jobs reuse; fails unless it ends
# COMPLETED 0:0, with its output. The venv is a copy of the one built once per bats run
# (hpc_venv_seed), which the submission must take as it is (no install job); a file about the
# venv's build (HPC_TEST_OWN_VENV=1) has its install job build it, as a user's first submission
# does. The site configuration's files (a bats run of their own) share one build too.
hpc_warm_venv() {
  local project=$1 command=$2 seeded=0 builds
  shift 2
  hpc_configs "$project" "$command"
  if [[ ${HPC_TEST_OWN_VENV:-0} != 1 ]]; then
    hpc_venv_seed "$project"
    seeded=1
  fi
  hpc_run_job "$project" -g 0 "$@"
  [[ $job_state == "COMPLETED 0:0" ]] || fail "warm-up job: $job_state: $(cat "$job_out")"
  if ((seeded)); then
    # The toolkit accepted the copy: no install job built another (virtual_env would lead to it).
    builds=("$project"/.virtual_env_builds/*)
    [[ $(readlink -- "$project/virtual_env") == .virtual_env_builds/venv-0 && ${builds[*]} == */venv-0 ]] ||
      fail "the warm-up job did not run from the copied venv: $(ls -la "$project" "$project/.virtual_env_builds")"
  fi
}

# hpc_venv_seed PROJECT: gives PROJECT, which has no venv yet, the build of it that the toolkit
# would make: a copy of the one that an install job built once per bats run (the files of a run
# share $BATS_RUN_TMPDIR) for the same dependency file and cluster profile, in a project of its
# own (the first file that needs it builds it, the others wait on its lock). The copy is
# PROJECT/.virtual_env_builds/venv-0 (0: never an install job's id, so no later install job of
# PROJECT finds its name taken), the user's own under the current umask, holding the
# toolkit's record of its name; the absolute path that the venv's scripts name (bin/activate*,
# pip's, pyvenv.cfg) is the copy's; virtual_env is a link to it, as install_venv.sh leaves it;
# fails unless the toolkit's test of a ready build takes it (hpc_warm_venv: and a job runs from it).
# Dependency files that differ only in comment lines and blank lines (the demo project's and the
# test project's requirements.txt) install the same packages: they share one build, whose copy
# gets the stamp (.hpc_deps) of PROJECT's own file, as its install job would have written it.
hpc_venv_seed() {
  local project=$1 deps=none f key dir fd seed copy text job_id job_out
  for f in Pipfile requirements.txt; do
    if [[ -f $project/$f ]]; then
      deps=$f
      break
    fi
  done
  key=$({
    printf '%s\n%s\n' "${HPC_CLUSTER:-}" "$deps"
    [[ $deps == none ]] || grep -v -E '^[[:space:]]*(#|$)' -- "$project/$deps" || true
  } | sha256sum)
  dir=$BATS_RUN_TMPDIR/venv_seeds/${key:0:16}
  mkdir -p -- "$BATS_RUN_TMPDIR/venv_seeds"
  exec {fd}>>"$BATS_RUN_TMPDIR/venv_seeds/lock"
  # An install job on a loaded machine takes minutes; another file's may be under way.
  flock -w 900 "$fd" || fail "the shared venv's lock ($BATS_RUN_TMPDIR/venv_seeds/lock) was held for 900 s"
  if [[ ! -f $dir/ready ]]; then
    rm -rf -- "${dir:?}"
    mkdir -p -- "$dir/scratch"
    SCRATCH=$dir/scratch hpc_project_make "$dir/seed project"
    rm -f -- "$dir/seed project/requirements.txt"
    [[ $deps == none ]] || cp -- "$project/$deps" "$dir/seed project/"
    hpc_configs "$dir/seed project" 'python probe.py exit 0'
    # A space in its path: pip's scripts then start their Python by a quoted path (as in a build
    # under a path with a space), which stays right in a copy whatever its path.
    # The submitter waits for the install job; its job then runs (waited for: no stray job).
    # job_id and job_out are this function's own: the caller's are left as they were.
    SCRATCH=$dir/scratch hpc_submit_job "$dir/seed project" -g 0 -e seed
    hpc_wait_job "$job_id" 180
    seed=$(readlink -- "$dir/seed project/virtual_env") ||
      fail "the shared venv's project has no virtual_env: $(cat "$job_out")"
    printf '%s\n' "$dir/seed project/$seed" >"$dir/ready"
  fi
  IFS= read -r seed <"$dir/ready"
  exec {fd}>&-
  copy=$project/.virtual_env_builds/venv-0
  mkdir -p -- "$project/.virtual_env_builds"
  # Not cp -a: the modes of the build under this umask, as the install job makes them.
  cp -R --preserve=timestamps,links -- "$seed" "$copy"
  printf 'venv-0\n' >"$copy/.hpc_build"
  # What pip compiled names the seed's files: Python compiles them again for the copy.
  grep -rlFZ --include='*.pyc' -- "$seed" "$copy" | xargs -0 -r rm -f --
  for f in "$copy"/bin/* "$copy/pyvenv.cfg"; do
    [[ -f $f && ! -L $f ]] || continue
    text=''
    IFS= read -r -d '' text <"$f" || true
    [[ $text == *"$seed"* ]] || continue
    printf '%s' "${text//"$seed"/"$copy"}" >"$f"
  done
  ln -s -- .virtual_env_builds/venv-0 "$project/virtual_env"
  # PROJECT's stamp, written as install_venv.sh writes it; then the toolkit's own test of a ready
  # build (its dependency file's stamp, its kind) takes it.
  # shellcheck source=virtual_env_hpc_files/venv_runner.bash
  (source "$project/hpc_files/virtual_env_hpc_files/venv_runner.bash" && hpc_venv_expect "$project" &&
    printf '%s' "$hpc_venv_stamp" >"$copy/.hpc_deps" &&
    hpc_venv_find "$project" "$hpc_venv_stamp" && [[ $hpc_venv_build == "$copy" ]]) ||
    fail "the toolkit does not take the copy of the shared venv in $copy"
}

# hpc_wait_requeued ID RESTARTS TIMEOUT: waits until job ID has been restarted RESTARTS times and has
# ended (between restarts a job can read as ended for seconds: the count tells them apart). A
# requeued job's 120 s wait before it may start again (Slurm's BeginTime after a requeue) is cut
# short, so the test takes minutes less. A job that stays ended with fewer restarts for 30 s
# fails the test then, with its output (job_out, when hpc_submit_job set it). With READY, a
# command, each run is sent the time-limit warning (hpc_send_warning) once 'READY RESTART'
# succeeds for it (the run has started and done what the test needs before the warning), instead
# of waiting minutes for its time limit.
hpc_wait_requeued() {
  local id=$1 restarts=$2 timeout=$3 ready=${4:-} warned=-1 start=$SECONDS state pending_since='' ended_since='' \
    done_restarts

  while :; do
    if [[ -n $ready ]] && ((warned < restarts)) && "$ready" "$((warned + 1))"; then
      hpc_send_warning "$id"
      warned=$((warned + 1))
    fi
    state=$(squeue -h -j "$id" -o '%T %r' 2>/dev/null) || state=
    # Only once the last run is wholly gone from the nodes (its Epilog done): a rerun launched
    # while the node still cleans up the same job id fails to start.
    if [[ $state == "PENDING BeginTime" ]] && ! sinfo -h -N -o %T | grep -q 'completing' &&
      ! pgrep -f "slurmstepd: \[$id\." >/dev/null; then
      pending_since=${pending_since:-$SECONDS}
      if ((SECONDS - pending_since >= 3)); then
        scontrol update JobId="$id" StartTime=now || true
        pending_since=''
      fi
    fi
    if [[ -z $state ]]; then
      # Read only once squeue no longer has the job: an scontrol a second costs CPU.
      done_restarts=$(hpc_job_field "$id" Restarts)
      case $(hpc_job_field "$id" JobState) in
        COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY)
          [[ $done_restarts != "$restarts" ]] || return 0
          ended_since=${ended_since:-$SECONDS}
          ((SECONDS - ended_since < 30)) ||
            fail "job $id ended after $done_restarts of $restarts restarts:" \
              "$(scontrol show job "$id" | grep -E 'JobState|Restarts');" \
              "its output: $(cat "${job_out:-/dev/null}" 2>&1)"
          ;;
        *) ended_since='' ;;
      esac
    else
      ended_since=''
    fi
    ((SECONDS - start < timeout)) ||
      fail "job $id did not end after $restarts restarts within ${timeout}s:" \
        "$(scontrol show job "$id" | grep -E 'JobState|Restarts')"
    sleep 1
  done
}

# hpc_wait_output FILE REGEX [TIMEOUT_S]: waits until a line of FILE matches REGEX (grep -E);
# fails the test after TIMEOUT_S (default 60) seconds.
hpc_wait_output() {
  local file=$1 regex=$2 timeout=${3:-60} start=$SECONDS polls=0
  until grep -qE -- "$regex" "$file" 2>/dev/null; do
    ((SECONDS - start <= timeout)) || fail "no line matching '$regex' in $file within ${timeout}s"
    hpc_poll_pause "$((++polls))"
  done
}

# hpc_slurmd_kill NODE: SIGKILLs NODE's slurmd, found by its pid file; its job steps live on
# (each is its own slurmstepd), as when a node's daemon crashes. local_cluster.sh up restarts it.
hpc_slurmd_kill() {
  local pid
  read -r pid <"$HPC_CLUSTER_DIR/run/slurmd-$1.pid" || fail "no pid file for the slurmd of $1"
  [[ $(cat "/proc/$pid/comm" 2>/dev/null) == slurmd ]] || fail "pid $pid is not the slurmd of $1"
  kill -KILL "$pid"
}

# hpc_send_warning ID: sends job ID's batch shell the time-limit warning (SIGUSR1, as
# --signal=B:USR1@lead does), instead of waiting minutes for the time limit to send it. The tests
# that wait for SLURM's own warning are one per launcher and one requeue.
hpc_send_warning() {
  scancel --batch --signal=USR1 "$1" || fail "scancel --batch --signal=USR1 $1 failed"
}

# hpc_warn_job ID FILE REGEX [TIMEOUT_S]: sends job ID the warning (hpc_send_warning) once a line
# of FILE (the job's output) matches REGEX: the program is running, its handler installed.
hpc_warn_job() {
  hpc_wait_output "$2" "$3" "${4:-120}"
  hpc_send_warning "$1"
}

# hpc_submit_held PROJECT ARGS...: hpc_submit_job, the job submitted held (sbatch --hold, added by
# an sbatch on PATH in front of the real one: Slurm 22.05's sbatch reads no SBATCH_HOLD, so a
# job "held" that way could start before the test changed its files), so that the test can change
# them before it starts; scontrol release starts it.
hpc_submit_held() {
  local dir=$BATS_TEST_TMPDIR/held_sbatch real
  real=$(command -v sbatch) || fail "no sbatch on PATH"
  mkdir -p "$dir"
  printf '#!/usr/bin/env bash\nexec %q --hold "$@"\n' "$real" >"$dir/sbatch"
  chmod +x "$dir/sbatch"
  PATH=$dir:$PATH hpc_submit_job "$@"
  [[ $(squeue -h -j "$job_id" -o %r) == JobHeldUser ]] ||
    fail "job $job_id is not held: $(squeue -h -j "$job_id" -o '%T %r')"
}

# hpc_keep_max_array_size N: the project's submissions take this cluster's MaxArraySize to be N
# (the kept answer of scontrol show config, fresh), so that a small map is split into parts.
hpc_keep_max_array_size() {
  local dir=${HPC_CACHE_DIR:-$PROJECT/hpc_files/.cache}/slurm
  mkdir -p "$dir"
  printf '%s\nSLURM_CONF=%s\nMaxArraySize = %s\nMaxJobCount = 10000\n' "$(date +%s)" "$SLURM_CONF" "$1" \
    >"$dir/$HPC_CLUSTER.limits"
}

# hpc_kill_loop N PREFIX ARGS...: one submission (job_submitter.sh -y ARGS -e PREFIX00x; a PREFIX
# of its own per run: no job of an earlier run has its names) left to
# end, timed, then N more (PREFIX01x...), each killed with SIGKILL at a random moment within that
# time; sets hpc_kill_exps to the N+1 experiments.
hpc_kill_loop() {
  local n=$1 prefix=$2 k pid start took delay exp
  shift 2
  hpc_kill_exps=("${prefix}00x")
  start=${EPOCHREALTIME/./}
  bash "$PROJECT/hpc_files/job_submitter.sh" -y "$@" -e "${prefix}00x" >/dev/null 2>&1 ||
    fail "the submission left to end failed"
  took=$(((${EPOCHREALTIME/./} - start) / 1000 + 1))
  for ((k = 1; k <= n; k++)); do
    printf -v exp '%s%02dx' "$prefix" "$k"
    hpc_kill_exps+=("$exp")
    bash "$PROJECT/hpc_files/job_submitter.sh" -y "$@" -e "$exp" >/dev/null 2>&1 &
    pid=$!
    delay=$((RANDOM * 32768 + RANDOM))
    delay=$((delay % took))
    sleep "$((delay / 1000)).$(printf '%03d' $((delay % 1000)))"
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}

# hpc_kill_loop_check: with only the toolkit's commands: 'status EXP' names every job that SLURM
# has of each experiment of hpc_kill_exps (by its job name), then 'cancel EXP' of each leaves none
# of them in the queue (within 60 s) and no record of a submission in the project's outputs. At
# least one kill must have left a held job (else the loop tested nothing).
hpc_kill_loop_check() {
  local exp id name reason out left='' i held=0 pid
  # An sbatch goes on after its submitter is killed: wait until the test's have answered (found by
  # the SCRATCH they carry); then no job can come any more, and the records of stopped
  # submissions may go at once (hpc_pending_settle_s).
  for ((i = 0; i < 60; i++)); do
    left=''
    for pid in $(pgrep -x sbatch); do
      ! tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qxF "SCRATCH=$SCRATCH" || left+=" $pid"
    done
    [[ -n $left ]] || break
    sleep 1
  done
  [[ -z $left ]] || fail "sbatch still running after 60 s:$left"
  local -x hpc_pending_settle_s=0
  for exp in "${hpc_kill_exps[@]}"; do
    # Exit 2 where nothing of the submission reached SLURM (an unknown experiment).
    out=$(bash "$PROJECT/hpc_files/job_submitter.sh" status "$exp" 2>&1) || true
    while IFS='|' read -r id name reason; do
      [[ $name == *"$exp"* ]] || continue
      [[ $reason != JobHeldUser ]] || held=$((held + 1))
      grep -qE "(^| )${id}([_ ]|$)" <<<"$out" || fail "status $exp does not name its job $id ($name): $out"
    done < <(squeue -h -u "$EUID" -o '%F|%j|%r')
    bash "$PROJECT/hpc_files/job_submitter.sh" cancel "$exp" >/dev/null 2>&1 || true
  done
  for ((i = 0; i < 60; i++)); do
    left=''
    while IFS='|' read -r id name; do
      for exp in "${hpc_kill_exps[@]}"; do [[ $name != *"$exp"* ]] || left+=" $id ($name)"; done
    done < <(squeue -h -u "$EUID" -o '%F|%j')
    [[ -n $left ]] || break
    sleep 1
  done
  [[ -z $left ]] || fail "left in the queue after cancel:$left"
  ((held)) || fail "no kill left a held job: the kills missed the submissions' sbatch calls"
  left=$(find "$SCRATCH" -path '*/submissions/*' -type f -size +0 -exec grep -Lx ended {} +)
  [[ -z $left ]] || fail "records left: $left"
}
