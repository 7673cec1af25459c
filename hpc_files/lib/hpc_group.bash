# shellcheck shell=bash
# hpc_group.bash: the one workflow of a map (hpc_map_submit.bash, hpc_map.bash) and a scaling study
# (hpc_scaling_submit.bash, hpc_scaling.bash): a group of jobs, submitted held, recorded in a folder
# of their own, released together, with one follow-up job after them (afterany: hpc_followup.bash);
# undone whole on a failure or a signal before the release; and later `resubmit EXP --failed`,
# which submits again, held, the members whose newest attempt did not succeed, keeps their earlier
# files as attempts, adds a new follow-up job and releases them. Loaded on the login node only.
#
# What differs between the two uses is a kind's hooks, called by name (as launchers and runners
# are), KIND being map or scaling:
#   hpc_KIND_group_cancelled        sets hpc_group_text: what undo says was cancelled (a
#                                   resubmission's says "the resubmission (jobs ...)")
#   hpc_KIND_group_facts            sets hpc_group_record (the folder's record file), hpc_group_members
#                                   (the folder holding one folder per member), hpc_group_member
#                                   (task, run), hpc_group_noun (map, study) and hpc_group_lockers
#                                   (the commands that lock its folder, for a message)
#   hpc_KIND_resubmit_read INFO DIR reads `python -m hpc_helpers.followup NOUN-info`'s lines: sets
#                                   hpc_group_live (the group's recorded job ids) and hpc_group_failed
#                                   (the keys of members to run again)
#   hpc_KIND_resubmit_members DIR   submits the failed members held (hpc_group_sbatch), keeps their
#                                   earlier files (hpc_group_keep_attempt), sets hpc_group_members_ids
#   hpc_KIND_resubmit_followup DIR  submits the new follow-up job after them; sets hpc_group_followup_id
#   hpc_KIND_resubmit_record DIR    (before the release) records the new ids in the folder's record
#                                   and sets hpc_group_summary: what is said once they are released

# What this file reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_common.bash (hpc_trusted_read); hpc_manage.bash: the manifests' folder.
declare -g hpc_private_dir_problem
# hpc_slurm.bash: sbatch's answer (hpc_slurm_sbatch).
declare -g hpc_slurm_id hpc_slurm_error
declare -g hpc_trusted_problem hpc_trusted_text hpc_manage_dir hpc_python_helpers_dir hpc_plan_file
declare -ga hpc_group_live hpc_group_failed hpc_group_members_ids
# A kind's hooks: its folder's facts, what an undo cancelled, what a resubmission said.
declare -g hpc_group_record hpc_group_members hpc_group_member hpc_group_noun hpc_group_lockers hpc_group_text \
  hpc_group_summary

# ---------------------------------------------------------------------------------------------
# Submitting a group

# hpc_group_begin KIND MESSAGE: (before a group's first held sbatch; the submission's record is
# open) no job yet; a failure, an unexpected exit (MESSAGE) or a signal from now until the release
# cancels every job of the group and removes the folder made for it (hpc_group_undo).
hpc_group_begin() {
  local undo
  hpc_group_kind=$1 hpc_group_ids=() hpc_group_held=() hpc_group_made='' hpc_group_resubmitting=0
  hpc_group_record_file='' hpc_group_record_text=''
  # Held until released: a cancel of a submission that stopped before removes what it made.
  hpc_pending_mark held
  printf -v undo 'hpc_group_undo %q' "$2"
  # shellcheck disable=SC2064 # MESSAGE is fixed now
  trap "$undo" EXIT
  # Until the release, a signal cancels the group whole once the sbatch it came during has
  # answered (hpc_group_signalled): no held job is left behind.
  hpc_submit_defer_signals
}

# hpc_group_undo MESSAGE: cancels the group's jobs submitted so far, removes the folder made for it
# (only that one, never through a link) and the plan files written, says MESSAGE and exits 1 (by a
# signal that came meanwhile, hpc_submit_stop).
hpc_group_undo() {
  local sig=${hpc_submit_signal:-} message=$1
  trap - EXIT
  hpc_submit_scancel ${hpc_group_ids[@]+"${hpc_group_ids[@]}"}
  if [[ -n ${hpc_group_made:-} && ! -L $hpc_group_made && -d $hpc_group_made ]]; then
    rm -rf -- "${hpc_group_made:?}"
  fi
  # The plan files of the group's jobs (hpc_plan.bash is loaded once one was written).
  ! declare -F hpc_plan_unwrite >/dev/null || hpc_plan_unwrite
  # A resubmission's record as it was: it must not name the jobs just cancelled (their plan files
  # are gone), or the next resubmit --failed would build on them.
  if [[ -n ${hpc_group_record_file:-} ]]; then
    hpc_private_write "$hpc_group_record_file" "$hpc_group_record_text" ||
      hpc_say "cannot restore $hpc_group_record_file: it names the cancelled jobs"
  fi
  # A signal that came meanwhile is the reason, whatever failed after it; the submitter ends by it.
  [[ -z $sig ]] || message="stopped by SIG$sig"
  if ((${#hpc_group_ids[@]} == 0)); then
    hpc_group_text="nothing was submitted"
  elif ((hpc_group_resubmitting)); then
    hpc_group_text="the resubmission (jobs ${hpc_group_ids[*]:-none}) was cancelled"
  else
    "hpc_${hpc_group_kind}_group_cancelled"
  fi
  hpc_submit_stop "$message; $hpc_group_text"
}

# hpc_group_signalled: (signals deferred, hpc_submit_defer_signals) undoes the group when one came.
hpc_group_signalled() {
  [[ -z ${hpc_submit_signal:-} ]] || hpc_group_undo "stopped"
}

# hpc_group_sbatch [--followup] WHAT SCRIPT ARGS...: submits SCRIPT with ARGS (WHAT names it in a
# message) as one of the group's jobs (an undo cancels it): held, and released with the group; with
# --followup, the job after the group (its dependency on the group's jobs holds it), whose id goes
# to hpc_group_followup_id. Sets hpc_group_id. Undoes the group when sbatch refuses it or answers
# without a job id (hpc_slurm_sbatch), or a signal came meanwhile.
hpc_group_sbatch() {
  local hold=--hold
  if [[ $1 == --followup ]]; then
    hold=''
    shift
  fi
  if ! hpc_slurm_sbatch "$1" "$2" ${hold:+"$hold"} "${@:3}"; then
    hpc_say "$hpc_slurm_error"
    hpc_group_undo "$1 was not submitted"
  fi
  [[ -n $hold ]] || hpc_group_followup_id=$hpc_slurm_id
  hpc_group_add "$hpc_slurm_id" ${hold:+held}
}

# hpc_group_add ID [held]: ID is the group's (cancelled by an undo), and held (released with it).
# shellcheck disable=SC2034 # hpc_group_id: read by the kinds' code
hpc_group_add() {
  hpc_group_id=$1 hpc_group_ids+=("$1")
  [[ -z ${2:-} ]] || hpc_group_held+=("$1")
  hpc_group_signalled
}

# hpc_group_make_dir ROOT DIR [SUB...]: makes the group's folder DIR under ROOT and its folders SUB
# (DIR/SUB, in order: runs before runs/1x1-r1), the user's alone (they hold the scripts and records
# that resubmit runs again); DIR is new (its name holds a new job id), so an undo removes it.
# Undoes the group on failure.
hpc_group_make_dir() {
  local root=$1 dir=$2
  shift 2
  if ! hpc_private_dir "${root%/*}" || ! hpc_private_dir "$root"; then hpc_group_undo "$hpc_private_dir_problem"; fi
  # One process, in order: nothing is made inside a folder of that name that was already there
  # (mkdir fails on DIR first, and it is not removed); a DIR that was not there before, and is a
  # folder now, is this submission's, whatever failed after it.
  if [[ -e $dir || -L $dir ]]; then hpc_group_undo "cannot make $dir: it exists"; fi
  hpc_pending_made "$dir"
  if ! mkdir -m 700 -- "$dir" "${@/#/$dir/}" 2>/dev/null; then
    [[ -L $dir || ! -d $dir ]] || hpc_group_made=$dir
    hpc_group_undo "cannot make $dir${1:+ and its folders}"
  fi
  hpc_group_made=$dir
}

# hpc_group_release EXP: releases the group's held jobs; from then on nothing is undone: the
# submission's record closes, and a signal that came meanwhile ends the submitter now, naming every
# job of the group.
hpc_group_release() {
  local out
  hpc_group_signalled
  hpc_pending_mark released
  out=$(hpc_slurm scontrol release "${hpc_group_held[@]}" 2>&1) ||
    hpc_group_undo "scontrol release ${hpc_group_held[*]} failed: ${out//$'\n'/ }"
  trap - EXIT
  hpc_pending_close
  hpc_submit_resume_signals "$1" "${hpc_group_ids[@]}"
}

# ---------------------------------------------------------------------------------------------
# resubmit EXP --failed, and the commands that read a group's folder

# hpc_group_helpers ARGS...: python -m hpc_helpers.followup ARGS on the login node.
hpc_group_helpers() {
  local py
  py=$(hpc_python_for_helpers) || return 1
  PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$hpc_python_helpers_dir/src${PYTHONPATH:+:$PYTHONPATH}" \
    "$py" -m hpc_helpers.followup "$@"
}

# hpc_group_newest_dir ROOT RECORD COMMAND NOUN: sets hpc_group_dir to the newest folder under ROOT
# (the experiment's maps or studies) that holds RECORD and is not a link; exit 2 naming COMMAND
# when none. Folders are named YYYYmmdd-HHMMSS-ID: the last in order is the newest.
hpc_group_newest_dir() {
  hpc_group_newest "$1" "$2" || hpc_die_usage "$3" "no $4 of this experiment under $1"
}

# hpc_group_newest ROOT RECORD: hpc_group_newest_dir's search (also for scaling-report, which says
# its own refusal); false when there is none.
hpc_group_newest() {
  local dir
  hpc_group_dir=''
  for dir in "$1"/*/; do
    [[ -f $dir$2 && ! -L ${dir%/} ]] && hpc_group_dir=${dir%/}
  done
  [[ -n $hpc_group_dir ]]
}

# hpc_group_lock DIR NOUN LOCKERS: locks the group's folder DIR (flock, held until this shell exits;
# at most 60 s of waiting): the commands LOCKERS (resubmit --failed, a map's gather EXP) read its
# record's ids and write them back, and each must see the other's (two resubmissions at once would
# run the same failed members twice).
hpc_group_lock() {
  local lock_fd
  if ! { exec {lock_fd}<"$1"; } || ! flock -w 60 "$lock_fd"; then
    hpc_die "cannot lock the $2 folder ${1##*/} within 60 s: $3 of it still runs (or its file system has no locks)"
  fi
}

# hpc_group_check_root ROOT WHOSE: (before anything is submitted) exit 1 when the group's folders'
# root ROOT (map/EXP, scaling/EXP) or the folder above it is a link: a group's folder is removed
# when its submission fails, and never one reached through a link; or when one of them, or the
# outputs folder, is there but may not be used as the user's private folder (hpc_private_dir).
hpc_group_check_root() {
  local x msg
  for x in "${1%/*}" "$1"; do
    [[ -L $x ]] || continue
    msg="$x is a symbolic link; the $2 folders are made in a folder of their own, never through a link:"
    hpc_die "$msg nothing was submitted"
  done
  for x in "${1%/*/*}" "${1%/*}" "$1"; do
    [[ ! -e $x ]] || hpc_private_dirs_or_die --submit "$x"
  done
}

# hpc_group_check_ids FILE ID...: exit 1, nothing submitted, when an ID read from the record FILE
# is not a job id (a record edited by hand): checked before any use, since an id indexes arrays
# (where bash would evaluate it) and goes to squeue and scancel.
hpc_group_check_ids() {
  local file=$1 id
  shift
  for id; do
    [[ $id =~ ^[0-9]+$ ]] || hpc_die "$file holds '$id', which is not a job id; nothing was submitted"
  done
}

# hpc_group_jobs_live FILE ID...: true when one of the jobs ID (read from FILE) is pending or
# running. Exit 1 when an ID is not a job id (FILE edited by hand: squeue would refuse the whole
# list) or squeue fails otherwise than for ids that SLURM has all forgotten: neither is taken for
# "nothing runs".
hpc_group_jobs_live() {
  local out
  hpc_group_check_ids "$@"
  shift
  (($#)) || return 1
  if ! out=$(hpc_slurm squeue -h -j "$(IFS=, && printf '%s' "$*")" -o %i 2>&1); then
    [[ $out == *'Invalid job id specified'* ]] && return 1
    hpc_die "squeue failed: ${out//$'\n'/ }; nothing was submitted"
  fi
  [[ -n $out ]]
}

# hpc_group_keep_attempt DIR N NAME...: before a member is submitted again, its DIR/NAME.json (each
# a file, not a link) become DIR/NAME.attempt<M>.json, M the first number from N at which none of
# these names exists: a planted name (a link to a folder, a FIFO, a file the toolkit did not make)
# is never moved into, followed or replaced; the new attempt's files are then the only ones read.
hpc_group_keep_attempt() {
  local dir=$1 n=$2 name taken=1
  shift 2
  [[ -d $dir && ! -L $dir ]] || return 0
  while ((taken)); do
    taken=0
    for name; do
      [[ ! -e $dir/$name.attempt$n.json && ! -L $dir/$name.attempt$n.json ]] || taken=1
    done
    ((taken == 0)) || n=$((n + 1))
  done
  for name; do
    if [[ -f $dir/$name.json && ! -L $dir/$name.json ]]; then
      mv -fT -- "$dir/$name.json" "$dir/$name.attempt$n.json" || true
    fi
  done
}

# hpc_group_kept_script FILE WHAT [OF]: sets hpc_group_script to the kept job script FILE (a map's
# task.sh or gather.sh, a run's job.sh, a study's report.sh), read only as the user's own; exit 1
# (the group undone once it has begun) otherwise, saying "the WHAT FILE OF ...".
hpc_group_kept_script() {
  [[ -e $1 || -L $1 ]] || hpc_group_fail "the $2 $1${3:+ $3} is gone"
  hpc_trusted_read "$1" || hpc_group_fail "the $2 $1${3:+ $3} $hpc_trusted_problem: not run"
  hpc_group_script=$hpc_trusted_text
}

# hpc_group_fail MESSAGE: before the resubmission has begun, exit 1 with MESSAGE, nothing
# submitted; after, the group is undone (hpc_group_undo).
hpc_group_fail() {
  [[ -n ${hpc_group_kind:-} ]] || hpc_die "$1; nothing was submitted"
  hpc_group_undo "$1"
}

# hpc_group_replan PLAN WHAT TEXT: writes a new plan file beside the kept plan PLAN (of WHAT), its
# text with TEXT appended (the last assignment wins); sets hpc_plan_file. Its text goes into a new
# plan file of this user, which the job trusts: read as the job would.
hpc_group_replan() {
  local plan=$1 text
  [[ -n $plan ]] && [[ -e $plan || -L $plan ]] ||
    hpc_group_fail "the plan file '${plan:-(none recorded)}' of $2 is gone; submit the $hpc_group_noun again"
  hpc_trusted_read "$plan" || hpc_group_fail "the plan file '$plan' of $2 $hpc_trusted_problem: not read"
  text=$hpc_trusted_text$3
  if ! declare -F hpc_plan_write_file >/dev/null; then
    # shellcheck source=hpc_files/lib/hpc_plan.bash
    source "${BASH_SOURCE[0]%/*}/hpc_plan.bash"
  fi
  hpc_plan_write_file "${plan%_*}" "$text" || hpc_group_fail "cannot write the new plan of $2 beside $plan"
}

# hpc_group_script_for SCRIPT PLAN: sets hpc_group_script to the job script SCRIPT made to run the
# plan file PLAN, just written (its last lines: the plan's token and the call naming it).
hpc_group_script_for() {
  local script=${1%$'\n'}
  script=${script%$'\n'hpc_job_main *}
  hpc_plan_script_tail "$2"
  # shellcheck disable=SC2034 # read by the kinds' hooks
  hpc_group_script=${script%$'\n'export HPC_JOB_PLAN_TOKEN=*}$'\n'$hpc_plan_script_tail
}

# hpc_group_resubmit_failed KIND ROOT: (resubmit EXP --failed on a map or a study; ROOT the
# experiment's maps or studies) submits again, held, the members of the newest group whose newest
# attempt did not succeed (FAILED, TIMEOUT, LOST, NODE_FAIL, CANCELLED...: read from their status
# files), then a new follow-up job after them; records the new ids and releases them. Exit 1 while
# a job of the group is pending or running.
hpc_group_resubmit_failed() {
  local kind=$1 root=$2 dir info
  "hpc_${kind}_group_facts"
  hpc_group_newest_dir "$root" "$hpc_group_record" "resubmit --failed" "$hpc_group_noun"
  dir=$hpc_group_dir
  if [[ -L $dir/$hpc_group_members ]]; then
    local msg="$dir/$hpc_group_members is a symbolic link: a $hpc_group_noun's"
    msg+=" ${hpc_group_member}s are never followed; nothing was submitted"
    hpc_die "$msg"
  fi
  hpc_group_lock "$dir" "$hpc_group_noun" "$hpc_group_lockers"
  # Its record names the jobs and the failed members: read only as the user's own.
  hpc_trusted_check "$dir/$hpc_group_record" ||
    hpc_die "the $hpc_group_noun's record $dir/$hpc_group_record $hpc_trusted_problem: not read; nothing was submitted"
  info=$(hpc_group_helpers "$hpc_group_noun-info" --dir "$dir") ||
    hpc_die "cannot read the $hpc_group_noun in $dir (see above)"
  hpc_group_live=() hpc_group_failed=()
  "hpc_${kind}_resubmit_read" "$info" "$dir"
  if hpc_group_jobs_live "$dir/$hpc_group_record" ${hpc_group_live[@]+"${hpc_group_live[@]}"}; then
    hpc_die "the $hpc_group_noun ${dir##*/} still has jobs pending or running; resubmit --failed once they have ended"
  fi
  if ((${#hpc_group_failed[@]} == 0)); then
    printf 'Nothing to resubmit: every %s of %s %s succeeded.\n' "$hpc_group_member" "$hpc_group_noun" "${dir##*/}"
    return 0
  fi
  hpc_submit_pending_open "${hpc_manage_dir%/*}" "${root##*/}"
  hpc_group_begin "$kind" "the resubmission stopped before its jobs were released"
  hpc_group_resubmitting=1
  # shellcheck disable=SC2034 # set by the kinds' hooks, read by the next ones
  hpc_group_members_ids=() hpc_group_followup_id=''
  "hpc_${kind}_resubmit_members" "$dir"
  "hpc_${kind}_resubmit_followup" "$dir"
  # The record as it is (read without a process), restored if the resubmission is undone from here.
  hpc_group_record_text=''
  IFS= read -r -d '' hpc_group_record_text <"$dir/$hpc_group_record" || true
  hpc_group_record_file=$dir/$hpc_group_record
  "hpc_${kind}_resubmit_record" "$dir"
  hpc_group_release "${root##*/}"
  printf '%s' "$hpc_group_summary"
}
