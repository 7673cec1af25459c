# shellcheck shell=bash
# Loaded by the unit tests of job_submitter.sh (tests/unit/job_submitter.bats, bad_input.bats):
# a warm profile cache, a project installed in a temporary folder, PATH stubs of SLURM.

# Set by venv_runner.bash (hpc_venv_expect), which shellcheck does not follow here (nor
# hpc_common.bash and hpc_profile.bash: each is linted on its own, not again for each of the
# test files that source this one); declared for shellcheck.
declare -g hpc_venv_stamp
# Set by name by hpc_test_tmp_path (common.bash); declared for shellcheck (a value is kept).
declare -g tmp

# hpc_test_prepare DIR: what every submitter test starts from, made once into DIR (made): every
# cluster profile compiled with the toolkit's own code into "DIR/warm cache" (exported as
# HPC_WARM_CACHE; installed copies have the same content, so a submitter given a copy of it finds
# them compiled and runs no Python) and the toolkit installed with install.sh into "DIR/installed
# project" (exported as HPC_TEST_PROJECT), under umask 000: its files keep the repository's
# modes, so that a copy (cp -R applies the copier's umask) is what install.sh makes under the
# copier's umask. Called by hpc_test_warm_profiles, once for a whole bats run.
hpc_test_prepare() {
  local profile
  export HPC_WARM_CACHE="$1/warm cache" HPC_TEST_PROJECT="$1/installed project"
  for profile in "$HPC_ROOT"/hpc_files/clusters/*.yaml; do
    profile=${profile##*/}
    (
      hpc_files_dir=$HPC_ROOT/hpc_files
      # shellcheck source=/dev/null # linted on its own (above)
      source "$hpc_files_dir/lib/hpc_common.bash"
      hpc_facts_locate "$hpc_files_dir"
      # shellcheck source=/dev/null # linted on its own (above)
      source "$hpc_files_dir/lib/hpc_profile.bash"
      PYTHONDONTWRITEBYTECODE=1 HPC_CACHE_DIR=$HPC_WARM_CACHE hpc_profile_load "${profile%.yaml}"
    ) || return 1
  done
  (umask 000 && mkdir -p "$HPC_TEST_PROJECT" && bash "$HPC_ROOT/hpc_files/install.sh" "$HPC_TEST_PROJECT" >/dev/null)
}

# hpc_test_warm_profiles: for setup_file: HPC_WARM_CACHE and HPC_TEST_PROJECT (hpc_test_prepare)
# ready and exported: made once for a whole bats run, by the first file that asks, into the
# run's temporary folder (files side by side wait for it under a lock), so that a run of files
# that need none (style.bats alone) compiles no profile; without a bats run, into
# BATS_FILE_TMPDIR. Exports PYTHONDONTWRITEBYTECODE=1.
hpc_test_warm_profiles() {
  export PYTHONDONTWRITEBYTECODE=1
  local dir=${BATS_FILE_TMPDIR:?hpc_test_warm_profiles: for setup_file}
  # The run's, never a variable left in the environment by another run.
  [[ -z ${BATS_RUN_TMPDIR:-} || ! -d $BATS_RUN_TMPDIR ]] || dir=$BATS_RUN_TMPDIR/warm
  (
    flock 9
    [[ -e $dir/ready ]] || { mkdir -p "$dir" && hpc_test_prepare "$dir" && : >"$dir/ready"; }
  ) 9>>"$dir.lock" || return 1
  export HPC_WARM_CACHE="$dir/warm cache" HPC_TEST_PROJECT="$dir/installed project"
}

# hpc_test_submitter_project CACHE SCRATCH: for setup: a project installed in "$tmp/my project"
# ($tmp from hpc_test_tmp; a copy of HPC_TEST_PROJECT, see hpc_test_warm_profiles) with a
# one-line configs file, SCRATCH made and exported, a copy of the warm profile cache at CACHE
# (HPC_CACHE_DIR), the stubs of tests/fixtures/submitter/bin first on PATH recording into
# "$BATS_TEST_TMPDIR/stub log" (stub_log), and no stray variable of the caller's environment.
# Sets fixtures, tmp, project, submitter and stub_log.
hpc_test_submitter_project() {
  # shellcheck disable=SC2034 # fixtures and submitter: for the calling test
  fixtures=$HPC_ROOT/tests/fixtures/submitter
  hpc_test_tmp_path tmp
  project="$tmp/my project"
  # Outside $tmp, so that listings of $tmp do not see the stubs' records.
  stub_log="$BATS_TEST_TMPDIR/stub log"
  # One process for all three: this runs before each of hundreds of tests.
  mkdir -p "$tmp" "$2" "$stub_log"
  cp -R "$HPC_TEST_PROJECT" "$project"
  printf 'python main.py --lr 0.1\n' >"$project/hpc_files/experiment_configurations.txt"
  # shellcheck disable=SC2034
  submitter=$project/hpc_files/job_submitter.sh
  cp -R "$HPC_WARM_CACHE" "$1"
  unset HPC_PYTHON HPC_HOSTNAME MASTER_PORT HPC_STUB_SBATCH HPC_STUB_INSTALL HPC_STUB_SINFO \
    HPC_STUB_SINFO_TABLE HPC_STUB_SQUEUE_STATES HPC_STUB_SQUEUE_JOBS HPC_STUB_SCRIPTS \
    HPC_STUB_PYTHON HPC_STUB_JOB_ID HPC_STUB_MAX_ARRAY_SIZE WANDB_API_KEY WANDB_DIR
  export SCRATCH=$2 HPC_CLUSTER=local HPC_CACHE_DIR=$1 HPC_STUB_LOG=$stub_log
  export PATH=$fixtures/bin:$PATH
}

# hpc_test_submitter_setup SCRATCH [--venv] [--cache DIR]: a submitter unit test's setup in one
# call, after `load '../helpers/common'` and this file (its file's setup_file called
# hpc_test_warm_profiles): the project of hpc_test_submitter_project with SCRATCH there (a
# SCRATCH that does not start with / is under $tmp: 'scratch' is "$tmp/scratch") and its profile
# cache at DIR (default: "$tmp/cache"); with --venv, a venv the submitter takes as built. Sets
# what hpc_test_submitter_project sets, and outputs (the project's outputs folder under SCRATCH).
hpc_test_submitter_setup() {
  local scratch=$1 cache='' venv=0
  shift
  while (($#)); do
    case $1 in
      --venv) venv=1 ;;
      --cache) cache=$2 && shift ;;
      *)
        printf 'hpc_test_submitter_setup: unknown argument: %s\n' "$1" >&2
        return 1
        ;;
    esac
    shift
  done
  hpc_test_tmp_path tmp
  [[ $scratch == /* ]] || scratch=$tmp/$scratch
  hpc_test_submitter_project "${cache:-$tmp/cache}" "$scratch" || return 1
  # shellcheck disable=SC2034 # for the calling test
  outputs="$SCRATCH/my project/hpc_outputs"
  ((! venv)) || hpc_test_venv_built "$project"
}

# hpc_test_venv_built PROJECT: a venv in PROJECT that the submitter considers built (its stamp
# matches the project's dependencies), so that no install job is submitted.
hpc_test_venv_built() {
  mkdir -p "$1/virtual_env/bin"
  : >"$1/virtual_env/bin/activate"
  # Outside bats' DEBUG trap, which would run before each command of venv_runner.bash: this is in
  # the setup of hundreds of tests (a third of its CPU).
  hpc_test_untraced hpc_test_venv_stamp "$1"
}

# hpc_test_venv_stamp PROJECT: writes PROJECT's venv's record of the dependencies it was built
# from, as the toolkit's build leaves it (hpc_venv_expect's stamp).
hpc_test_venv_stamp() {
  (
    # shellcheck source=/dev/null # linted on its own (above)
    # Chained: run from hpc_test_untraced's 'cmd || rc=$?', set -e would not stop at a failure.
    source "$1/hpc_files/virtual_env_hpc_files/venv_runner.bash" &&
      hpc_venv_expect "$1" &&
      printf '%s' "$hpc_venv_stamp" >"$1/virtual_env/.hpc_deps"
  )
}

# hpc_test_squeue_like_slurm LIVE_IDS: a squeue before the stubs on PATH that answers
# `squeue -h -j LIST -o %i` as Slurm 22.05 does: the ids of LIST among LIVE_IDS (pending or
# running); an id that is not a number: "Invalid job id: X", exit 1; none of them known:
# "Invalid job id specified", exit 1. LIVE_IDS=fail: the controller does not answer, exit 1.
hpc_test_squeue_like_slurm() {
  mkdir -p "$BATS_TEST_TMPDIR/squeue_bin"
  cat >"$BATS_TEST_TMPDIR/squeue_bin/squeue" <<'STUB'
#!/usr/bin/env bash
live=" ${HPC_STUB_LIVE_IDS-} " list='' found=''
while (($#)); do
  [[ $1 != -j ]] || list=$2
  shift
done
if [[ $live == " fail " ]]; then
  echo "squeue: error: Unable to contact slurm controller (connect failure)" >&2
  exit 1
fi
IFS=, read -ra ids <<<"$list"
for id in "${ids[@]}"; do
  [[ $id =~ ^[0-9]+$ ]] || { echo "squeue: error: Invalid job id: $id" >&2; exit 1; }
done
for id in "${ids[@]}"; do [[ $live != *" $id "* ]] || found+="$id"$'\n'; done
[[ -n $found ]] || { echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1; }
printf '%s' "$found"
STUB
  chmod +x "$BATS_TEST_TMPDIR/squeue_bin/squeue"
  export PATH=$BATS_TEST_TMPDIR/squeue_bin:$PATH HPC_STUB_LIVE_IDS=$1
}

# hpc_test_slow_sbatch N: an sbatch before the stubs on PATH whose N-th call marks
# $BATS_TEST_TMPDIR/in-sbatch and takes a second before it answers (the stub's answer): a signal
# can reach the submitter then.
hpc_test_slow_sbatch() {
  mkdir -p "$BATS_TEST_TMPDIR/bin"
  cat >"$BATS_TEST_TMPDIR/bin/sbatch" <<STUB
#!/usr/bin/env bash
n=1
while [[ -e \$HPC_STUB_LOG/sbatch.\$n.args ]]; do n=\$((n + 1)); done
if ((n == $1)); then
  : >'$BATS_TEST_TMPDIR/in-sbatch'
  sleep 1
fi
exec '$fixtures/bin/sbatch' "\$@"
STUB
  chmod +x "$BATS_TEST_TMPDIR/bin/sbatch"
}

# hpc_test_signal_during_sbatch SIGNAL ARGS...: submits with ARGS in the background, sends SIGNAL
# once the slow sbatch call (hpc_test_slow_sbatch) has started, and sets hpc_test_rc to the
# submitter's exit status; its output and errors go to $tmp/out and $tmp/err. SIGNAL@group: the
# submitter runs in a process group of its own (setsid), and SIGNAL goes to the whole group, as
# a terminal's Ctrl-C (INT) or hangup (HUP) reaches every process of the foreground job, sbatch
# and the submitter's subshells too.
# shellcheck disable=SC2034 # hpc_test_rc: read by the calling test
hpc_test_signal_during_sbatch() {
  local sig=${1%@group} pid target
  local -a runner=()
  # A job started with & by a shell without job control (bats) ignores INT, and a shell cannot
  # trap what it ignored from its start: env puts the default back, as a terminal's job has it.
  [[ $1 != *@group ]] || runner=(setsid env --default-signal=INT)
  shift
  rm -f -- "$BATS_TEST_TMPDIR/in-sbatch"
  PATH=$BATS_TEST_TMPDIR/bin:$PATH ${runner[@]+"${runner[@]}"} bash "$submitter" "$@" </dev/null >"$tmp/out" \
    2>"$tmp/err" &
  pid=$!
  for _ in {1..200}; do
    [[ -e $BATS_TEST_TMPDIR/in-sbatch ]] && break
    sleep 0.05
  done
  [[ -e $BATS_TEST_TMPDIR/in-sbatch ]] || fail "the slow sbatch call never started: $(cat "$tmp/err")"
  target=$pid
  # setsid, run by a shell without job control, is not a group leader: it makes the group at once
  # and becomes (through env) the submitter, so the group's id is its pid.
  ((${#runner[@]} == 0)) || target=-$pid
  kill -s "$sig" -- "$target"
  hpc_test_rc=0
  wait "$pid" || hpc_test_rc=$?
}

# hpc_test_cancelled: the job ids the scancel stub was given, in order, one line.
hpc_test_cancelled() {
  local f
  for f in "$stub_log"/scancel.*.args; do
    [[ -e $f ]] || continue
    tr '\0' ' ' <"$f"
  done | xargs
}
