# shellcheck shell=bash
# hpc_facts.bash: the facts every side of the toolkit shares, each defined once: where the
# toolkit's parts lie, which SLURM job states have ended or failed, and the name and record of an
# emulated SLURM_TMPDIR, and the format of a job's log lines. Sourced by hpc_common.bash, so the
# submitter, the job, the management commands and plai_cleanups all read the same ones, and by
# the venv's install job. No process; only hpc_log prints.

# SLURM job states (squeue %T, scontrol JobState) of a job that has ended for good, and of those
# the ones `resubmit --failed` runs again. Space-separated, with a space at both ends.
hpc_facts_ended_states=' COMPLETED CANCELLED FAILED TIMEOUT NODE_FAIL BOOT_FAIL DEADLINE OUT_OF_MEMORY PREEMPTED '
# shellcheck disable=SC2034 # read by hpc_manage.bash
hpc_facts_failed_states=' FAILED TIMEOUT NODE_FAIL CANCELLED '

# Lowercase letters, digits, letters and digits, spelt out for [...] patterns (quoted there: ASCII
# in every locale). Hot paths test words with globs: Bash compiles a regular expression at every
# use (about 0.2 million instructions).
hpc_facts_lower=abcdefghijklmnopqrstuvwxyz hpc_facts_digits=0123456789
# shellcheck disable=SC2034 # read by hpc_options.bash
hpc_facts_alnum=ABCDEFGHIJKLMNOPQRSTUVWXYZ$hpc_facts_lower$hpc_facts_digits

# hpc_facts_job_id WORD: true when WORD is a SLURM job id as the toolkit takes one (sbatch's answer,
# a manifest's, a row of the manifests' index): digits without a leading zero (bash's arithmetic
# reads one as octal: 0089 an error, 0042 another job) and at most 18 of them (beyond, its
# arithmetic overflows). Globs: it runs at every submission.
hpc_facts_job_id() {
  [[ $1 == [123456789]* && ${#1} -le 18 && $1 != *[!"$hpc_facts_digits"]* ]]
}

# hpc_facts_state_ended STATE: true when a job in STATE has ended (nothing of it runs or will).
hpc_facts_state_ended() {
  [[ -n $1 && $1 != *' '* && $hpc_facts_ended_states == *" $1 "* ]]
}

# An emulated SLURM_TMPDIR (made by hpc_job.bash where the cluster gives jobs none) is named
# <prefix>.<user>.<job id>.<16 hex digits> and holds the record file naming its job id; cleanup
# tools remove only folders with both.
hpc_facts_tmpdir_prefix=hpc_tmpdir
hpc_facts_tmpdir_record=.hpc_tmpdir

# hpc_facts_tmpdir_name USER JOB_ID DIGITS: sets hpc_facts_tmpdir_name to the folder's name.
hpc_facts_tmpdir_name() {
  # shellcheck disable=SC2034 # the result, read by the caller
  hpc_facts_tmpdir_name=$hpc_facts_tmpdir_prefix.$1.$2.$3
}

# hpc_facts_tmpdir_name_id USER NAME: true when NAME is a folder name the toolkit gives USER's
# jobs (or, from earlier versions, the name without the digits); sets hpc_facts_tmpdir_id to the
# job id (digits without a leading zero, as SLURM writes it), else to ''. USER is compared as a
# string, never as a pattern.
hpc_facts_tmpdir_name_id() {
  local prefix=$hpc_facts_tmpdir_prefix.$1.
  hpc_facts_tmpdir_id=''
  [[ ${2:0:${#prefix}} == "$prefix" && ${2:${#prefix}} =~ ^([1-9][0-9]*)(\.[0-9a-f]{16})?$ ]] || return 1
  # shellcheck disable=SC2034 # the result, read by the caller
  hpc_facts_tmpdir_id=${BASH_REMATCH[1]}
}

# hpc_facts_tmpdir_record_write DIR JOB_ID: writes DIR's record naming JOB_ID.
hpc_facts_tmpdir_record_write() {
  printf '%s\n' "$2" >"$1/$hpc_facts_tmpdir_record"
}

# hpc_facts_tmpdir_record_matches DIR JOB_ID: true when DIR's record is a regular file (not a
# link) whose first line is JOB_ID.
hpc_facts_tmpdir_record_matches() {
  local record='' file=$1/$hpc_facts_tmpdir_record
  [[ -f $file && ! -L $file ]] || return 1
  IFS= read -r -n 32 record <"$file" 2>/dev/null || [[ -n $record ]] || return 1
  [[ -n $2 && $record == "$2" ]]
}

# hpc_facts_locate HPC_FILES_DIR: where the toolkit's parts lie, given its hpc_files/ folder:
# sets hpc_toolkit_dir (the folder that holds the runners and the Python helpers: hpc_files/'s
# parent in the toolkit's repository, hpc_files/ itself in an installed project), hpc_venv_dir,
# hpc_container_lib and hpc_python_helpers_dir.
hpc_facts_locate() {
  hpc_toolkit_dir=${1%/*}
  [[ ! -d $1/virtual_env_hpc_files ]] || hpc_toolkit_dir=$1
  hpc_toolkit_dir=${hpc_toolkit_dir:-/}
  # shellcheck disable=SC2034 # read by the submitter, venv_runner.bash and plai_cleanups
  hpc_venv_dir=$hpc_toolkit_dir/virtual_env_hpc_files \
    hpc_container_lib=$hpc_toolkit_dir/singularity_hpc_files/container_runner.bash \
    hpc_python_helpers_dir=$hpc_toolkit_dir/python_helpers
}

# hpc_facts_program_env: sets hpc_facts_program_env to NAME=VALUE for each variable a job's
# program sees from its plan (hpc_plan_*): their one home. The job exports them (hpc_job_main),
# the dry run lists them (hpc_submit_environment). OMP_NUM_THREADS is the CPUs of each program
# process (a node's CPUs over its processes, 1 at least), so that the intra-op threads of a
# node's ranks do not fight over its CPUs; one this shell exported (sbatch passes it on) wins,
# and is left out here (hpc_facts_omp_threads says which).
hpc_facts_program_env() {
  # shellcheck disable=SC2154,SC2034 # reads the plan's fields (hpc_plan.bash, or the job's plan file); the result
  # is read by the caller
  hpc_facts_program_env=("source_dir=$hpc_plan_source_dir" "project_name=$hpc_plan_project_name"
    "scratch_dir=$hpc_plan_scratch_dir" "exp_name=$hpc_plan_exp_name" "num_nodes=$hpc_plan_nodes"
    "gpus_per_node=$hpc_plan_gpus" "num_processes=$hpc_plan_num_processes")
  hpc_facts_omp_threads
  [[ -n ${OMP_NUM_THREADS:-} ]] || hpc_facts_program_env+=("OMP_NUM_THREADS=$hpc_facts_omp_threads")
}

# hpc_facts_omp_threads: sets hpc_facts_omp_threads to the CPUs of each program process of the
# plan: a node's CPUs (its tasks x their CPUs) over its program processes, 1 at least.
hpc_facts_omp_threads() {
  # shellcheck disable=SC2154 # the plan's fields (hpc_plan.bash, or the job's plan file)
  local nodes=${hpc_plan_nodes:-1} per_node
  ((nodes >= 1)) || nodes=1
  per_node=$((${hpc_plan_num_processes:-1} / nodes))
  ((per_node >= 1)) || per_node=1
  hpc_facts_omp_threads=$((${hpc_plan_cpus_per_task:-1} * ${hpc_plan_ntasks_per_node:-1} / per_node))
  ((hpc_facts_omp_threads >= 1)) || hpc_facts_omp_threads=1
}

# hpc_facts_script_plan TEXT: sets hpc_facts_script_plan to the plan file that the job script TEXT
# names (its line 'hpc_job_main PATH', PATH quoted with printf %q: backslashes undone here, no
# eval); false when TEXT names none, or names it in a form this cannot read ($'...').
hpc_facts_script_plan() {
  local rest part
  hpc_facts_script_plan=''
  [[ $1 == *$'\n'"hpc_job_main "* ]] || return 1
  rest=${1##*$'\n'hpc_job_main }
  rest=${rest%%$'\n'*}
  [[ -n $rest && $rest != *\$\'* ]] || return 1
  # A quote that %q escaped (\' in a path like /scratch/o'brien) is a character like any other;
  # only an unescaped one (a form %q did not write) cannot be read here.
  while [[ $rest == *\\* ]]; do
    part=${rest%%\\*}
    [[ $part != *[\'\"]* ]] || return 1
    hpc_facts_script_plan+=$part
    rest=${rest#*\\}
    hpc_facts_script_plan+=${rest:0:1}
    rest=${rest:1}
  done
  [[ $rest != *[\'\"]* ]] || return 1
  hpc_facts_script_plan+=$rest
}

# hpc_log MESSAGE...: one line of the toolkit to a job's log (standard error), in the one format
# of every job-side line, the batch shell's, a node's step's (MESSAGE 'staging: ...') and the
# venv install job's ('venv: ...'): '[hpc NODE] MESSAGE'. The submitter talks to a terminal
# instead, as 'job_submitter.sh: MESSAGE' (hpc_say). NODE without a process: SLURM's name of the
# node, else the host's short name.
hpc_log() {
  printf '[hpc %s] %s\n' "${SLURMD_NODENAME:-${HOSTNAME%%.*}}" "$*" >&2
}

# hpc_facts_seconds TIME: sets hpc_facts_seconds to SLURM's time TIME in seconds: a time limit
# (--time, scontrol's TimeLimit: D-H:M:S, D-H:M, D-H, H:M:S, M:S or M) or squeue's time left (%L,
# the same forms); false for anything else (UNLIMITED, INVALID). The one reader of SLURM's times.
hpc_facts_seconds() {
  local d=0 rest=$1 h=0 m=0 sec=0 days=0
  local -a fields=()
  # DIGITS- first; then 1 to 3 fields of digits, ':' between them (globs: see hpc_facts_digits).
  if [[ $rest == ["$hpc_facts_digits"]*-* && ${rest%%-*} != *[!"$hpc_facts_digits"]* ]]; then
    d=$((10#${rest%%-*})) rest=${rest#*-} days=1
  fi
  [[ -n $rest && $rest != *[!"$hpc_facts_digits":]* && $rest != :* && $rest != *: && $rest != *::* &&
    $rest != *:*:*:* ]] || return 1
  IFS=: read -ra fields <<<"$rest"
  if ((days)); then
    h=$((10#${fields[0]})) m=$((10#${fields[1]:-0})) sec=$((10#${fields[2]:-0}))
  else
    case ${#fields[@]} in
      1) m=$((10#${fields[0]})) ;;
      2) m=$((10#${fields[0]})) sec=$((10#${fields[1]})) ;;
      3) h=$((10#${fields[0]})) m=$((10#${fields[1]})) sec=$((10#${fields[2]})) ;;
    esac
  fi
  # shellcheck disable=SC2034 # read by the callers
  hpc_facts_seconds=$((((d * 24 + h) * 60 + m) * 60 + sec))
}

# hpc_facts_hms SECONDS: prints SECONDS as H:MM:SS (hours beyond 24 as they are). The one writer
# of durations for people.
hpc_facts_hms() {
  printf '%d:%02d:%02d' $(($1 / 3600)) $(($1 % 3600 / 60)) $(($1 % 60))
}
