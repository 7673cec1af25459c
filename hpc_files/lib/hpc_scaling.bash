# shellcheck shell=bash
# shellcheck disable=SC2034 # hpc_plan_* and hpc_scaling_* set here are read by hpc_plan.bash and the job
# hpc_scaling.bash: the scaling test (--scaling-test) after submission: a run's and the report
# job's side, and resubmit --failed (a study's hooks of the group workflow, hpc_group.bash). What is
# done at submission: hpc_scaling_submit.bash, which loads this file. One ordinary job per (configuration,
# repeat), N nodes x G GPUs per node, named <exp>-scale-<N>x<G>-r<k>, and one report job after
# all of them (hpc_followup.bash: afterany, --kill-on-invalid-dep=yes; one node, one task, one
# CPU, no GPU, --report-time) that runs python -m hpc_helpers.scaling_report on the study.
# Loaded by the submitter only for these options (through hpc_scaling_submit.bash), by the job only
# for the modes 'scaling' (a run) and 'scaling-report', and by resubmit and scaling-report.
#
# The study's folder, study_dir = ${scratch_dir}/hpc_outputs/scaling/<exp_name>/<study_id> with
# study_id = YYYYmmdd-HHMMSS-<first job id> (the report job is submitted first, held: its id
# names the folder before any run is submitted; its --output names it with %j), holds
# study.json, report.sh, report_<id>.out and
# runs/<N>x<G>-r<k>/ (key: the follow-up interface's folder name) with job.sh, job_<id>.out,
# status.json (hpc_followup.bash), wall.json (the launcher command timed by the batch shell:
# wall_s, exit_code, job_id, node_list, start_utc, end_utc) and metrics.json when the program
# used hpc_helpers.scaling.Throughput. Every job is submitted held; the report job's dependency
# is set once every run is known, study.json written, then all are released. A failure in
# between cancels what was submitted and removes the folder made for it.
#
# A run's variables: scaling_study_dir, scaling_run_dir, scaling_config (2x2), scaling_repeat,
# beside num_nodes and gpus_per_node.

# What this library reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_submit_locate and job_submitter.sh: paths and argv; hpc_options.bash: the options.
declare -g hpc_opt_count_max hpc_files_dir hpc_opt_dry_run hpc_opt_launcher hpc_opt_scaling_test \
  hpc_opt_scale_serial hpc_opt_scale_parallel hpc_opt_scale_target_efficiency \
  hpc_opt_time_accepted hpc_opt_wandb_offline hpc_opt_yes
declare -ga hpc_submit_argv hpc_opt_data
# hpc_manifest_read: a manifest's sbatch options.
declare -ga hpc_mf_sbatch
# hpc_plan.bash: the plan; the compiled profile (hpc_slurm_ttl: how long SLURM's answers are
# kept); hpc_manage.bash: the manifests' folder; hpc_followup_utc: the start time.
declare -g hpc_slurm_ttl hpc_plan_checkpoints_dir hpc_plan_cluster hpc_plan_exp_name hpc_plan_outputs_dir \
  hpc_plan_runner hpc_plan_scratch_dir hpc_plan_script hpc_plan_source_dir \
  hpc_profile_defaults_mem_no_gpu hpc_manage_dir

# shellcheck source=hpc_files/lib/hpc_followup.bash
source "${BASH_SOURCE[0]%/*}/hpc_followup.bash"

# The scaling test's fields of the plan (hpc_plan.bash's list, where it is loaded): a run's
# scaling_dir, scaling_key, scaling_config, scaling_repeat; the report job's scaling_root, and
# scaling_study once a resubmission names its study.
! declare -F hpc_plan_add_fields >/dev/null ||
  hpc_plan_add_fields scaling_dir scaling_key scaling_config scaling_repeat scaling_root scaling_study

# resubmit --failed: each run's job id by its key.
declare -gA hpc_scaling_r_job_of
# hpc_common.bash (hpc_trusted_check); hpc_group.bash; hpc_plan.bash (hpc_plan_write_file); hpc_submit.bash.
declare -g hpc_trusted_problem hpc_group_script hpc_group_id hpc_group_followup_id hpc_plan_file hpc_submit_error \
  hpc_submit_id

# ---------------------------------------------------------------------------------------------
# In the job

# hpc_scaling_run_setup: (a run's batch shell) exports the run's variables, writes its status
# RUNNING; its own folders are named by its key (checkpoints_dir/task_1x2-r1).
hpc_scaling_run_setup() {
  export scaling_study_dir=${hpc_plan_scaling_dir:?} scaling_config=${hpc_plan_scaling_config:?} \
    scaling_repeat=${hpc_plan_scaling_repeat:?}
  export scaling_run_dir=$scaling_study_dir/runs/${hpc_plan_scaling_key:?}
  hpc_job_task_index=$hpc_plan_scaling_key
  [[ ! -L $scaling_run_dir ]] || hpc_job_fail "scaling" "$scaling_run_dir is a symbolic link"
  mkdir -p -- "$scaling_run_dir" || hpc_job_fail "scaling" "cannot make $scaling_run_dir"
  hpc_followup_member_start
  hpc_scaling_end_s='' hpc_scaling_end_utc=''
  hpc_scaling_status RUNNING ''
  hpc_job_log "scaling run $hpc_plan_scaling_key: $scaling_run_dir"
}

# hpc_scaling_workdir WORKDIR RUN_DIR KEY: sets hpc_scaling_workdir to the folder a run's
# program starts in: its own, so that relative files (a snapshot.pt) never pass between runs:
# WORKDIR/KEY with --workdir, else RUN_DIR/work. The job's rule (hpc_job_own_folders), shown by
# the dry run.
hpc_scaling_workdir() {
  if [[ -n $1 ]]; then hpc_scaling_workdir=$1/$3; else hpc_scaling_workdir=$2/work; fi
}

# hpc_scaling_status STATE EXIT_CODE: writes the run's status.json.
hpc_scaling_status() {
  hpc_followup_member_status "$scaling_run_dir/status.json" "$hpc_plan_scaling_key" "$1" "$2" "$hpc_scaling_end_utc" \
    "$hpc_scaling_end_s" "$scaling_run_dir/job_${SLURM_JOB_ID:-}.out" ||
    hpc_job_log "cannot write $scaling_run_dir/status.json"
}

# hpc_scaling_run_start: just before the launcher command: the clock starts.
hpc_scaling_run_start() {
  hpc_followup_member_start
}

# hpc_scaling_run_stop: just after the launcher command: the clock stops.
hpc_scaling_run_stop() {
  hpc_scaling_end_s=${EPOCHREALTIME/,/.}
  hpc_followup_utc hpc_scaling_end_utc
}

# hpc_scaling_run_end STATUS: (the batch shell, after the program) writes wall.json and the
# run's final status.
hpc_scaling_run_end() {
  local wall
  [[ -n $hpc_scaling_end_s ]] || hpc_scaling_run_stop
  wall=$(awk -v a="$hpc_followup_start_s" -v b="$hpc_scaling_end_s" 'BEGIN { printf "%.6f", b - a }')
  hpc_followup_status_write "$scaling_run_dir/wall.json" "wall_s:=$wall" "exit_code:=$1" "job_id=${SLURM_JOB_ID:-}" \
    "node_list=${SLURM_JOB_NODELIST:-}" "start_utc=$hpc_followup_start_utc" "end_utc=$hpc_scaling_end_utc" \
    "start_s:=$hpc_followup_start_s" "end_s:=$hpc_scaling_end_s" ||
    hpc_job_log "cannot write $scaling_run_dir/wall.json"
  hpc_followup_final_state "$1"
  hpc_scaling_status "$hpc_followup_state" "$1"
}

# hpc_scaling_report_run: (the report job's batch shell) writes the study's report and ends the
# job: FAILED when every run failed (after writing report.md), COMPLETED otherwise.
hpc_scaling_report_run() {
  local py rc=0 study
  # A resubmitted report job names its study (hpc_scaling_resubmit_followup); the first one's id
  # names the folder.
  if [[ -n ${hpc_plan_scaling_study:-} ]]; then
    study=$hpc_plan_scaling_study
    [[ -f $study/study.json && ! -L $study ]] || hpc_job_fail "scaling-report" "$study is not a study's folder"
  else
    study=$(hpc_scaling_newest_study "${hpc_plan_scaling_root:?}" "${SLURM_JOB_ID:?}") ||
      hpc_job_fail "scaling-report" "no study of report job $SLURM_JOB_ID under $hpc_plan_scaling_root"
  fi
  hpc_followup_python
  py=$hpc_followup_py
  # The plot needs matplotlib: the node's python3 when the job's Python lacks it.
  if ! "$py" -c 'import matplotlib' 2>/dev/null && python3 -c 'import matplotlib' 2>/dev/null; then py=python3; fi
  PYTHONPATH=${hpc_plan_python_helpers:?}${PYTHONPATH:+:$PYTHONPATH} "$py" -m hpc_helpers.scaling_report "$study" ||
    rc=$?
  ((rc != 2)) || hpc_job_fail "scaling-report" "$study could not be read (see above)"
  ((rc == 0)) || hpc_job_log "FAILED: every run of the study failed, or the report did (see above); $study/report.md"
  exit "$rc"
}

# hpc_scaling_newest_study ROOT REPORT_ID: prints the study folder under ROOT whose name ends
# with -REPORT_ID.
hpc_scaling_newest_study() {
  local dir
  for dir in "$1"/*-"$2"; do
    [[ -f $dir/study.json && ! -L $dir ]] && printf '%s\n' "$dir" && return 0
  done
  return 1
}

# ---------------------------------------------------------------------------------------------
# resubmit EXP --failed: a study's hooks of the group workflow (hpc_group_resubmit_failed). The runs
# of the newest study whose newest attempt did not succeed are submitted again, each from its kept
# job.sh with its recorded sbatch options (the same shape, the same runs/<key>/ folder; the earlier
# attempt's files kept as *.attempt<N>.json; a serial study's one after another again), then a new
# report job (afterany on them, --output in the study's folder) that names the study.

# hpc_scaling_group_facts: a study's folder holds study.json and runs/<key>/.
hpc_scaling_group_facts() {
  hpc_group_record=study.json hpc_group_members=runs hpc_group_member=run hpc_group_noun=study
  hpc_group_lockers="another resubmit --failed"
}

# hpc_scaling_group_cancelled: what an undo of the study says it cancelled.
hpc_scaling_group_cancelled() {
  hpc_group_text="the study's jobs (${hpc_group_ids[*]:-none}) were cancelled"
}

# hpc_scaling_resubmit_read INFO DIR: reads study-info's lines: the runs' and report jobs' ids
# (which must have ended), the failed runs' keys, the study's order.
hpc_scaling_resubmit_read() {
  local line key id
  local -a reports=()
  hpc_scaling_r_order=parallel hpc_scaling_r_reports='' hpc_scaling_r_job_of=()
  while IFS= read -r line; do
    case $line in
      order=*) hpc_scaling_r_order=${line#*=} ;;
      report_ids=*) hpc_scaling_r_reports=${line#*=} ;;
      run=*)
        read -r key id <<<"${line#run=}"
        hpc_scaling_r_job_of[$key]=$id hpc_group_live+=("$id")
        ;;
      failed=*) read -ra hpc_group_failed <<<"${line#*=}" ;;
    esac
  done <<<"$1"
  ((${#hpc_scaling_r_job_of[@]})) || hpc_die "cannot read the study in $2"
  read -ra reports <<<"$hpc_scaling_r_reports"
  # Its ids are used only once hpc_group_jobs_live has checked them, right after this hook.
  hpc_group_live+=(${reports[@]+"${reports[@]}"})
}

# hpc_scaling_resubmit_members DIR: each failed run again, held, from its kept job.sh and its
# manifest's sbatch options; its earlier files kept as attempts.
hpc_scaling_resubmit_members() {
  local dir=$1 key id script
  local -a after=()
  hpc_scaling_r_records=()
  for key in "${hpc_group_failed[@]}"; do
    id=${hpc_scaling_r_job_of[$key]}
    hpc_manifest_read "${hpc_manage_file[id]-}" ||
      hpc_group_undo "run $key (job $id) has no manifest in $hpc_manage_dir"
    script=${hpc_mf[script]-}
    [[ $script == "$dir/runs/$key/job.sh" && -f $script && ! -L $script && ! -L $dir/runs/$key ]] ||
      hpc_group_undo "the kept job script of run $key is not $dir/runs/$key/job.sh"
    hpc_group_kept_script "$script" "kept job script" "of run $key"
    [[ -n ${hpc_mf[plan]-} ]] && [[ -e ${hpc_mf[plan]} || -L ${hpc_mf[plan]} ]] ||
      hpc_group_undo "the plan file '${hpc_mf[plan]:-(none recorded)}' of run $key is gone; submit the study again"
    # The job would refuse it at its start: refused here, before anything is submitted.
    hpc_trusted_check "${hpc_mf[plan]}" ||
      hpc_group_undo "the plan file '${hpc_mf[plan]}' of run $key $hpc_trusted_problem: not read"
    # A serial study's runs again one after another.
    after=()
    [[ $hpc_scaling_r_order != serial ]] || ((${#hpc_group_members_ids[@]} == 0)) ||
      after=(--dependency="afterany:${hpc_group_members_ids[-1]}")
    hpc_group_sbatch "run $key" "$hpc_group_script" "${hpc_mf_sbatch[@]}" ${after[@]+"${after[@]}"}
    hpc_group_members_ids+=("$hpc_group_id") hpc_scaling_r_records+=(--run "$key=$hpc_group_id")
    hpc_manifest_copy "${hpc_manage_file[id]}" "$hpc_group_id" '' 'resubmit --failed' ||
      hpc_say "run $key (job $hpc_group_id) was submitted, but its manifest could not be written"
  done
  for key in "${hpc_group_failed[@]}"; do
    # status.json, wall.json and metrics.json, kept together (a linked file stays, and the new
    # attempt replaces it: hpc_followup_status_write).
    hpc_group_keep_attempt "$dir/runs/$key" 1 status wall metrics
  done
}

# hpc_scaling_resubmit_followup DIR: a new report job: report.sh naming its study (in a new plan
# file, the old one's text and the study), after the new runs, its log in the study.
hpc_scaling_resubmit_followup() {
  local dir=$1 id arg ids
  local -a reports=() args=()
  read -ra reports <<<"$hpc_scaling_r_reports"
  id=${reports[-1]-}
  hpc_manifest_read "${hpc_manage_file[id]-}" || hpc_group_undo "the report job $id has no manifest in $hpc_manage_dir"
  hpc_scaling_r_report_manifest=${hpc_manage_file[id]}
  hpc_group_kept_script "$dir/report.sh" "kept report script"
  hpc_group_replan "${hpc_mf[plan]-}" "the report job $id" \
    "$(printf '# resubmit --failed: the report of this study.\nhpc_plan_scaling_study=%q' "$dir")"$'\n'
  hpc_scaling_r_report_plan=$hpc_plan_file
  hpc_group_script_for "$hpc_group_script" "$hpc_plan_file"
  for arg in "${hpc_mf_sbatch[@]}"; do
    case $arg in
      --output=* | --dependency=*) ;;
      *) args+=("$arg") ;;
    esac
  done
  printf -v ids '%s:' "${hpc_group_members_ids[@]}"
  hpc_group_sbatch --followup "the report job" "$hpc_group_script" "${args[@]}" --output="$dir/report_%j.out" \
    --dependency="afterany:${ids%:}"
}

# hpc_scaling_resubmit_record DIR: the report job's manifest (the old one's, with its own output
# and plan), the new ids in study.json, and what is said once released.
hpc_scaling_resubmit_record() {
  local dir=$1 report=$hpc_group_followup_id ids=${hpc_group_members_ids[*]}
  (
    # A subshell: hpc_mf stays.
    hpc_manifest_copy "$hpc_scaling_r_report_manifest" "$report" '' 'resubmit --failed' "$dir/report_%j.out" \
      "$hpc_scaling_r_report_plan"
  ) || hpc_say "the report job $report was submitted, but its manifest could not be written"
  hpc_group_helpers study-record --dir "$dir" "${hpc_scaling_r_records[@]}" --report "$report" ||
    hpc_say "cannot record jobs $ids $report in $dir/study.json"
  printf -v hpc_group_summary 'Resubmitted run(s) %s of study %s as job(s) %s\n' \
    "${hpc_group_failed[*]}" "${dir##*/}" "$ids"
  printf -v hpc_group_summary '%sReport job %s: after job(s) %s (afterany); output %s\n' "$hpc_group_summary" \
    "$report" "$ids" "$dir/report_$report.out"
}
