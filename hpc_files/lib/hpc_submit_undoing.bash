# shellcheck shell=bash
# hpc_submit_undoing.bash: the folders a first submission makes (and removes again when SLURM does
# not take its job), and the undoing of a submission that fails, is cancelled or is stopped by a
# signal: what a plain submission into existing folders does not run, loaded at the first call
# of one of them (their stubs in hpc_submit.bash, hpc_lib_load).

# What it reads, set by the others (declared, not set): the plan's folders (hpc_plan.bash).
declare -g hpc_plan_outputs_dir hpc_plan_checkpoints_dir

# hpc_submit_make_folders: makes the plan's outputs and checkpoints folders (and --workdir's), recording in
# hpc_submit_made the folders this submission created (none that existed before), and arms
# hpc_submit_unmake_folders for an exit before SLURM accepts the job.
hpc_submit_make_folders() {
  local top dir
  hpc_submit_made=()
  for top in "$hpc_plan_outputs_dir" "$hpc_plan_checkpoints_dir" ${hpc_plan_workdir:+"$hpc_plan_workdir"}; do
    dir=$top
    # Up to the first ancestor that exists (a symlink counts as existing: never made here).
    while [[ -n $dir && ! -e $dir && ! -L $dir ]]; do
      hpc_plan_in_list "$dir" "${hpc_submit_made[@]}" || hpc_submit_made+=("$dir")
      dir=${dir%/*}
    done
  done
  ((${#hpc_submit_made[@]})) || return 0
  trap hpc_submit_unmake_folders EXIT
  # The outputs folder private (hpc_private_dir), whatever the umask; one there already is checked
  # first (another user's is named as such, not as a folder that cannot be made).
  [[ ! -e $hpc_plan_outputs_dir && ! -L $hpc_plan_outputs_dir ]] ||
    hpc_private_dirs_or_die --submit "$hpc_plan_outputs_dir"
  # Not writable by others, whatever the umask (readable as it allows): a group member could plant
  # a checkpoint (which the program loads when it resumes: a pickle runs code) or a link named
  # like one (which it writes through) in a group-writable checkpoints folder.
  (umask go-w && mkdir -p -- "${hpc_plan_outputs_dir%/*}" "$hpc_plan_checkpoints_dir" \
    ${hpc_plan_workdir:+"$hpc_plan_workdir"}) ||
    hpc_die \
      "cannot create $hpc_plan_outputs_dir and $hpc_plan_checkpoints_dir${hpc_plan_workdir:+ and $hpc_plan_workdir}"
  hpc_private_dirs_or_die --submit "$hpc_plan_outputs_dir"
}

# hpc_submit_unmake_folders: removes the folders hpc_submit_make_folders created, deepest first,
# each only while it is still an empty real folder (rmdir; never through a symlink). Whatever a
# step put in them (an install job's log) keeps them.
hpc_submit_unmake_folders() {
  local top dir
  for top in "$hpc_plan_outputs_dir/submissions" "$hpc_plan_outputs_dir/manifests" \
    ${hpc_plan_workdir:+"$hpc_plan_workdir"} \
    "$hpc_plan_checkpoints_dir" "$hpc_plan_outputs_dir"; do
    dir=$top
    while hpc_plan_in_list "$dir" "${hpc_submit_made[@]}" && [[ -d $dir && ! -L $dir ]]; do
      rmdir -- "${dir:?}" 2>/dev/null || break
      dir=${dir%/*}
    done
  done
}

# hpc_submit_undo: (the EXIT trap from the plan file's writing until SLURM has the job) removes
# the plan files this submission wrote (hpc_plan_unwrite), then the folders it made.
hpc_submit_undo() {
  # sbatch refused the job, or was never reached: no job has the submission's tag (unless its
  # answer was lost: hpc_submit_forget).
  hpc_submit_forget
  hpc_plan_unwrite
  ((${#hpc_submit_made[@]} == 0)) || hpc_submit_unmake_folders
}

# hpc_submit_scancel [ID...]: (a map's or a study's undo, signals deferred) scancel ID... with
# INT, HUP and TERM ignored: a second Ctrl-C, sent while it cancels the held jobs, must not kill it
# (they would stay held, nobody knowing of them). Without an ID, nothing. Its errors are not
# shown; never false. Once scancel has succeeded, the submission's record goes (hpc_pending_close):
# where it failed, status and cancel still find the jobs by it.
hpc_submit_scancel() {
  (($#)) || {
    hpc_submit_forget
    return 0
  }
  if (
    trap '' INT HUP TERM
    hpc_slurm scancel "$@"
  ) 2>/dev/null; then
    hpc_submit_forget
  fi
  return 0
}

# hpc_submit_forget: (a submission undone: every job it knows of cancelled, or none submitted) its
# record goes (hpc_pending_close rm); but where an sbatch's answer was lost (hpc_slurm_sbatch) it
# stays as written: a job SLURM took all the same carries its tag, and status, cancel and the next
# submission find it by the record (hpc_pending.bash), which goes once SLURM holds none.
hpc_submit_forget() {
  if ((${hpc_submit_unsure:-0})); then
    [[ -z ${hpc_pending_file:-} ]] ||
      hpc_say "an sbatch's answer was lost: if SLURM took its job all the same, 'bash job_submitter.sh status' lists it"
    # shellcheck disable=SC2034 # read by hpc_pending.bash
    hpc_pending_file='' hpc_pending_token=''
    return 0
  fi
  hpc_pending_close rm
}

# hpc_submit_stop MESSAGE: (a map's or a study's undo, its jobs cancelled) ends the submitter: by
# the signal that came meanwhile (hpc_submit_signal), once MESSAGE is said; else exit 1 with it.
hpc_submit_stop() {
  local sig=${hpc_submit_signal:-}
  [[ -n $sig ]] || hpc_die "$1"
  hpc_say "$1"
  trap - INT TERM HUP
  kill -s "$sig" "$$"
  exit 1
}

# hpc_submit_interrupted STATUS WHEN: a step that a signal stopped (STATUS 128 or more: Ctrl-C
# 130) ends the submission by saying so, and what is left, with that status; other statuses
# return.
hpc_submit_interrupted() {
  (($1 >= 128)) || return 0
  hpc_say "interrupted $2: nothing was submitted${3:+; $3}"
  exit "$1"
}
