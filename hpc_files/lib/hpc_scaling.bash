# shellcheck shell=bash
# shellcheck disable=SC2034 # hpc_plan_* and hpc_scaling_* set here are read by hpc_plan.bash, hpc_submit.bash and the job
# hpc_scaling.bash: the scaling test (--scaling-test). One ordinary job per (configuration,
# repeat), N nodes x G GPUs per node, named <exp>-scale-<N>x<G>-r<k>, and one report job after
# all of them (hpc_followup.bash: afterany, --kill-on-invalid-dep=yes; one node, one task, one
# CPU, no GPU, --report-time) that runs python -m hpc_helpers.scaling_report on the study.
# Loaded by the submitter only for these options, and by the job only for the modes 'scaling'
# (a run) and 'scaling-report'.
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
  hpc_profile_defaults_mem_no_gpu hpc_manage_dir hpc_scaling_start_utc

# shellcheck source=hpc_files/lib/hpc_followup.bash
source "${BASH_SOURCE[0]%/*}/hpc_followup.bash"

# The scaling test's fields of the plan (hpc_plan.bash's list, where it is loaded): a run's
# scaling_dir, scaling_key, scaling_config, scaling_repeat; the report job's scaling_root, and
# scaling_study once a resubmission names its study.
! declare -F hpc_plan_add_fields >/dev/null ||
  hpc_plan_add_fields scaling_dir scaling_key scaling_config scaling_repeat scaling_root scaling_study

# The most runs (configurations x repeats) one study submits.
hpc_scaling_max_runs=1000

# ---------------------------------------------------------------------------------------------
# Submission

# hpc_scaling_parse_list OPTION TEXT: sets hpc_scaling_list to the whole numbers of TEXT
# (comma-separated, each 1 or more, none twice); exit 2 naming OPTION otherwise.
hpc_scaling_parse_list() {
  local option=$1 text=$2 value accepted='accepted: comma-separated whole numbers, each 1 or more and given once, e.g. 1,2,4'
  local -a parts=()
  local -A seen=()
  hpc_scaling_list=()
  [[ $text =~ ^[0-9]{1,6}(,[0-9]{1,6})*$ ]] || hpc_die_usage "$option" "'$text' is not accepted; $accepted"
  IFS=, read -ra parts <<<"$text"
  for value in "${parts[@]}"; do
    value=$((10#$value))
    ((value >= 1)) || hpc_die_usage "$option" "'$text' holds $value; $accepted"
    [[ ! -v seen[$value] ]] || hpc_die_usage "$option" "'$text' holds $value twice; $accepted"
    seen[$value]=1
    hpc_scaling_list+=("$value")
  done
}

# hpc_scaling_check_num_nodes: -n/--num-nodes beside --scale-nodes must be the list's largest
# (the study's top, as without the list); any other value would be silently ignored: exit 2.
hpc_scaling_check_num_nodes() {
  local n largest=0
  ((${hpc_opt_num_nodes_given:-0})) || return 0
  for n in "${hpc_scaling_nodes[@]}"; do ((n <= largest)) || largest=$n; done
  ((hpc_opt_num_nodes == largest)) ||
    hpc_die_usage "-n/--num-nodes" "$hpc_opt_num_nodes with --scale-nodes $hpc_opt_scale_nodes, whose largest is $largest; accepted: -n/--num-nodes equal to the largest of --scale-nodes, or one of the two alone"
}

# hpc_scaling_check_options: the scaling options on their own and with the others; exit 2 with
# one line on bad input. Sets hpc_scaling_nodes, hpc_scaling_gpus (empty: the plan's GPUs),
# hpc_scaling_repeats, hpc_scaling_mode, hpc_scaling_report_time and hpc_scaling_target (the
# efficiency, percent, the report's verdict asks for).
hpc_scaling_check_options() {
  local name n
  if ((hpc_opt_scaling_test == 0)); then
    for name in scale-nodes scale-gpus repeats scaling-mode report-time scale-target-efficiency; do
      n=hpc_opt_${name//-/_}
      [[ -z ${!n} ]] || hpc_die_usage "--$name" "is for a scaling test; accepted with --scaling-test"
    done
    for name in scale-serial scale-parallel; do
      n=hpc_opt_${name//-/_}
      ((${!n} == 0)) || hpc_die_usage "--$name" "is for a scaling test; accepted with --scaling-test"
    done
  fi
  ((hpc_opt_scale_serial == 0 || hpc_opt_scale_parallel == 0)) ||
    hpc_die_usage "--scale-serial/--scale-parallel" "choose one: runs one after another (--scale-serial) or runs that may share nodes (--scale-parallel); without either, each run has its nodes to itself"
  hpc_scaling_target=${hpc_opt_scale_target_efficiency:-70}
  { [[ $hpc_scaling_target =~ ^[0-9]{1,3}$ ]] && ((10#$hpc_scaling_target >= 1 && 10#$hpc_scaling_target <= 100)); } ||
    hpc_die_usage "--scale-target-efficiency" "'$hpc_scaling_target' is not accepted; accepted: a whole percentage, 1 to 100 (default 70)"
  hpc_scaling_target=$((10#$hpc_scaling_target))
  if [[ -n $hpc_opt_wandb_sweepid$hpc_opt_repeat || $hpc_opt_wandb_offline == 1 ]] ||
    [[ -n $hpc_opt_map_range$hpc_opt_map_over$hpc_opt_gather$hpc_opt_gather_configs ]]; then
    hpc_die_usage "--scaling-test" "submits its own jobs, one per configuration; accepted without -w, --wandb-offline, --repeat, --map-range, --map-over and --gather"
  fi
  if [[ -n $hpc_opt_scale_nodes ]]; then
    hpc_scaling_parse_list --scale-nodes "$hpc_opt_scale_nodes"
    hpc_scaling_nodes=("${hpc_scaling_list[@]}")
    hpc_scaling_check_num_nodes
  else
    hpc_scaling_nodes=()
    for ((n = 1; n <= hpc_opt_num_nodes; n *= 2)); do hpc_scaling_nodes+=("$n"); done
  fi
  if [[ -n $hpc_opt_scale_gpus ]]; then
    hpc_scaling_parse_list --scale-gpus "$hpc_opt_scale_gpus"
    hpc_scaling_gpus=("${hpc_scaling_list[@]}")
  else
    hpc_scaling_gpus=("$hpc_opt_gpus")
  fi
  hpc_scaling_repeats=${hpc_opt_repeats:-1}
  hpc_opt_is_count "$hpc_scaling_repeats" 1 ||
    hpc_die_usage "--repeats" "'$hpc_scaling_repeats' is not accepted; accepted: a whole number of repeats, 1 to $hpc_opt_count_max"
  hpc_scaling_repeats=$((10#$hpc_scaling_repeats))
  hpc_scaling_mode=${hpc_opt_scaling_mode:-strong}
  [[ $hpc_scaling_mode == strong || $hpc_scaling_mode == weak ]] ||
    hpc_die_usage "--scaling-mode" "'$hpc_scaling_mode' is not accepted; accepted: strong, weak"
  hpc_scaling_report_time=${hpc_opt_report_time:-00:15:00}
  hpc_opt_check_time "$hpc_scaling_report_time" ||
    hpc_die_usage "--report-time" "'$hpc_scaling_report_time' is not accepted; accepted: $hpc_opt_time_accepted"
  if [[ $hpc_opt_launcher == none ]]; then
    for n in "${hpc_scaling_nodes[@]}"; do
      ((n == 1)) || hpc_die_usage "-W/--which-distributed" "a scaling test over $n nodes needs a launcher; accepted: $(hpc_plan_distributed_text)"
    done
  fi
}

# hpc_scaling_plan N G R: the plan of run R of configuration N x G (G empty: the plan's GPUs).
hpc_scaling_plan() {
  local n=$1 g=$2 r=$3 i
  hpc_opt_num_nodes=$n hpc_opt_gpus=$g
  hpc_plan_make
  hpc_plan_mode=scaling
  hpc_scaling_key=${n}x${hpc_plan_gpus}-r$r
  hpc_scaling_run_dir=$hpc_scaling_dir/runs/$hpc_scaling_key
  hpc_plan_job_name=$hpc_plan_exp_name-scale-${hpc_scaling_key}
  hpc_plan_output=$hpc_scaling_run_dir/job_%j.out
  for i in "${!hpc_plan_sbatch_args[@]}"; do
    case ${hpc_plan_sbatch_args[i]} in
      --job-name=*) hpc_plan_sbatch_args[i]=--job-name=$hpc_plan_job_name ;;
      --output=*) hpc_plan_sbatch_args[i]=--output=$hpc_plan_output ;;
    esac
  done
  # Its nodes to itself unless the study lets runs share them: kept in its manifest, so that
  # resubmit --failed asks the same.
  [[ ${hpc_scaling_order:-exclusive} == parallel ]] || hpc_plan_sbatch_args+=(--exclusive)
  hpc_plan_scaling_dir=$hpc_scaling_dir hpc_plan_scaling_key=$hpc_scaling_key
  hpc_plan_scaling_config=${n}x$hpc_plan_gpus hpc_plan_scaling_repeat=$r
}

# hpc_scaling_choose_order: sets hpc_scaling_order: parallel (--scale-parallel: released
# together, runs may share nodes), serial (--scale-serial, or nodes that share one machine, as
# the embedded cluster's: one run after another, each after the end of the one before) or
# exclusive (released together, each run with its nodes to itself). After hpc_scaling_shared.
hpc_scaling_choose_order() {
  if ((hpc_opt_scale_parallel)); then
    hpc_scaling_order=parallel hpc_scaling_order_why='--scale-parallel: runs may share nodes'
  elif ((hpc_opt_scale_serial)); then
    hpc_scaling_order=serial hpc_scaling_order_why='--scale-serial'
  elif [[ $hpc_scaling_shared_host == true ]]; then
    hpc_scaling_order=serial hpc_scaling_order_why="the partition's nodes share one machine"
  else
    hpc_scaling_order=exclusive hpc_scaling_order_why='each run has its nodes to itself (--exclusive)'
  fi
}

# hpc_scaling_configurations: sets hpc_scaling_configs to 'N G' per configuration (by world
# size, then nodes; the plan's GPUs resolved) and hpc_scaling_runs to 'N G R' per run, repeats
# interleaved (every configuration's first run, then every second: drift over the study's time
# favours none), and checks that there are two world sizes at least and at most
# hpc_scaling_max_runs runs (checked first: a huge study would otherwise loop for minutes).
hpc_scaling_configurations() {
  local n g r w line total fast=1
  local -A worlds=()
  local -a lines=() ordered=()
  total=$((${#hpc_scaling_nodes[@]} * ${#hpc_scaling_gpus[@]} * hpc_scaling_repeats))
  ((total <= hpc_scaling_max_runs)) ||
    hpc_die_usage "--scale-nodes/--scale-gpus/--repeats" "${#hpc_scaling_nodes[@]} node count(s) x ${#hpc_scaling_gpus[@]} GPU count(s) x $hpc_scaling_repeats repeat(s) are $total runs; accepted: at most $hpc_scaling_max_runs runs"
  for n in "${hpc_scaling_nodes[@]}"; do
    for g in "${hpc_scaling_gpus[@]}"; do
      if [[ -z $g ]]; then
        hpc_opt_num_nodes=$n hpc_opt_gpus=''
        hpc_plan_make
        g=$hpc_plan_gpus
      fi
      w=$((n * (g > 0 ? g : 1)))
      worlds[$w]=1
      # Small studies (all of them in practice) are ordered as sort orders the lines below, by
      # the index of a sparse array (Bash lists those in order), without three processes:
      # world size, nodes, then GPUs (0 before 1, the one pair of GPU counts that can share
      # both).
      ((w < 1000000 && n < 1000000)) || fast=0
      printf -v line '%09d %09d %s %s' "$w" "$n" "$n" "$g"
      lines+=("$line")
      ((fast == 0)) || ordered[(w * 1000000 + n) * 2 + (g > 0 ? 1 : 0)]="$n $g"
    done
  done
  ((${#worlds[@]} >= 2)) ||
    hpc_die_usage "--scale-nodes/--scale-gpus" "every configuration has world size ${!worlds[*]}; accepted: at least two different world sizes (nodes x GPUs per node)"
  if ((fast)); then
    hpc_scaling_configs=("${ordered[@]}")
  else
    mapfile -t hpc_scaling_configs < <(printf '%s\n' "${lines[@]}" | LC_ALL=C sort | cut -d' ' -f3-)
  fi
  hpc_scaling_runs=()
  for ((r = 1; r <= hpc_scaling_repeats; r++)); do
    for line in "${hpc_scaling_configs[@]}"; do hpc_scaling_runs+=("$line $r"); done
  done
}

# hpc_scaling_runs_text: sets hpc_scaling_runs_text to the configurations as a person reads
# them: '1x1, 1x2, 2x1, 2x2 (3 repeats each)'.
hpc_scaling_runs_text() {
  local x
  hpc_scaling_runs_text=''
  for x in "${hpc_scaling_configs[@]}"; do
    hpc_scaling_runs_text+=${hpc_scaling_runs_text:+, }${x% *}x${x#* }
  done
  ((hpc_scaling_repeats == 1)) || hpc_scaling_runs_text+=" ($hpc_scaling_repeats repeats each)"
}

# hpc_scaling_check_fit: the largest configuration must fit the partition (as
# hpc_submit_check_fit, in a subshell: its message is said again under the scaling options'
# names, but a partition missing or unknown under -p's own). What SLURM said is asked once, in
# this shell, and summarized here, so that hpc_profile_slurm_facts_save keeps it after
# submitting (the subshell's summary is lost).
hpc_scaling_check_fit() {
  local max_nodes=0 max_gpus=0 x out rc=0 a b largest option
  for x in "${hpc_scaling_runs[@]}"; do
    read -r a b _ <<<"$x"
    ((a > max_nodes)) && max_nodes=$a
    ((b > max_gpus)) && max_gpus=$b
  done
  largest=${max_nodes}x$max_gpus
  hpc_profile_slurm_facts 0
  if ((hpc_slurm_fresh)); then
    # shellcheck source=hpc_files/lib/hpc_fit.bash
    source "$hpc_files_dir/lib/hpc_fit.bash"
    hpc_fit_summarize "$hpc_slurm_raw"
  fi
  out=$(
    {
      hpc_scaling_plan "$max_nodes" "$max_gpus" 1
      if [[ -z $hpc_slurm_text ]] || ! hpc_plan_fits_quick "$hpc_slurm_text"; then
        # shellcheck source=hpc_files/lib/hpc_fit.bash
        source "$hpc_files_dir/lib/hpc_fit.bash"
        hpc_fit_judge >/dev/null
      fi
    } 2>&1
  ) || rc=$?
  ((rc == 0)) && return 0
  # Its line is 'job_submitter.sh: OPTION: WHAT; accepted: ...': OPTION, WHAT and what is accepted.
  out=${out%%$'\n'*} out=${out#*: } option=${out%%: *} out=${out#*: }
  # The partition (-p or SBATCH_PARTITION) and a GPU type the partition lacks (-G) are no size's fault.
  case $option in
    -p/--partition | SBATCH_PARTITION | -G/--gpu-type) hpc_die_usage "$option" "$out" ;;
  esac
  hpc_die_usage "--scale-nodes/--scale-gpus" "the largest configuration $largest does not fit: $out"
}

# hpc_scaling_report_plan: turns the plan into the report job's: one node, one task, one CPU, no
# GPU, --report-time, no launcher, output in the study's folder; held (its dependency is set
# once the runs are submitted).
hpc_scaling_report_plan() {
  local arg
  local -a keep=()
  hpc_plan_mode=scaling-report hpc_plan_launcher=none hpc_plan_nodes=1 hpc_plan_ntasks_per_node=1
  hpc_plan_cpus_per_task=1 hpc_plan_gpus=0 hpc_plan_gres='' hpc_plan_time=$hpc_scaling_report_time
  hpc_plan_kind=$hpc_plan_runner-scaling-report hpc_plan_mem=$hpc_profile_defaults_mem_no_gpu
  # In the study's folder, named by this job's id (%j) before the folder is known.
  hpc_plan_output=${hpc_scaling_dir:-$hpc_scaling_root/$hpc_scaling_stamp-%j}/report_%j.out
  hpc_plan_job_name=$hpc_plan_exp_name-scale-report
  for arg in "${hpc_plan_sbatch_args[@]}"; do
    case $arg in
      --job-name=* | --nodes=* | --ntasks-per-node=* | --cpus-per-task=* | --mem=* | --time=* | --output=* | --gres=* | --signal=*) ;;
      --requeue | --open-mode=* | --exclusive) ;;
      *) keep+=("$arg") ;;
    esac
  done
  hpc_plan_sbatch_args=("${keep[@]}" --job-name="$hpc_plan_job_name" --nodes=1 --ntasks-per-node=1 --cpus-per-task=1
    --time="$hpc_plan_time" --output="$hpc_plan_output" --kill-on-invalid-dep=yes)
  [[ -z $hpc_plan_mem ]] || hpc_plan_sbatch_args+=(--mem="$hpc_plan_mem")
  hpc_plan_clear_mode_fields
  hpc_plan_scaling_root=$hpc_scaling_root
}

# hpc_scaling_sbatch SCRIPT ARGS...: submits SCRIPT held; sets hpc_scaling_id.
hpc_scaling_sbatch() {
  local script=$1 out
  shift
  out=$(hpc_submit_sbatch --parsable --hold "$@" 2>&1 <<<"$script") || {
    hpc_say "sbatch refused the job: $out"
    return 1
  }
  hpc_scaling_id=${out##*$'\n'}
  hpc_scaling_id=${hpc_scaling_id%%;*}
}

# hpc_scaling_undo MESSAGE: cancels the study's jobs submitted so far, removes the folder made
# for it (only that one, never through a link), says MESSAGE and exits 1 (by a signal that came
# meanwhile, hpc_submit_stop).
hpc_scaling_undo() {
  local sig=${hpc_submit_signal:-} message=$1
  trap - EXIT
  hpc_submit_scancel "${hpc_scaling_ids[@]}"
  if [[ -n ${hpc_scaling_made:-} && ! -L $hpc_scaling_made && -d $hpc_scaling_made ]]; then rm -rf -- "${hpc_scaling_made:?}"; fi
  # The plan files of the study's jobs (hpc_plan.bash is loaded once one was written).
  ! declare -F hpc_plan_unwrite >/dev/null || hpc_plan_unwrite
  # A signal that came meanwhile is the reason, whatever failed after it; the submitter ends by it.
  [[ -z $sig ]] || message="stopped by SIG$sig"
  hpc_submit_stop "$message; the study's jobs (${hpc_scaling_ids[*]:-none}) were cancelled"
}

# hpc_scaling_signalled: (signals deferred, hpc_submit_defer_signals) cancels the study when one
# came.
hpc_scaling_signalled() {
  [[ -z ${hpc_submit_signal:-} ]] || hpc_scaling_undo "stopped"
}

# hpc_scaling_study_json: writes study_dir/study.json (before the study is released).
hpc_scaling_study_json() {
  local json configs='' sep='' x n g r id i=0 argv dirty
  local -a words=(${hpc_submit_argv[@]+"${hpc_submit_argv[@]}"})
  hpc_mask_vars words
  for x in "${hpc_scaling_runs[@]}"; do
    read -r n g r <<<"$x"
    id=${hpc_scaling_run_ids[i]}
    hpc_followup_json_object json "key=${hpc_scaling_keys[i]}" "config=${hpc_scaling_keys[i]%-r*}" "nodes:=$n" \
      "gpus_per_node:=${hpc_scaling_gpus_of[i]}" "repeat:=$r" "job_id=$id"
    configs+=$sep$json sep=', ' i=$((i + 1))
  done
  hpc_followup_json_list argv ${words[@]+"${words[@]}"}
  [[ -v hpc_manifest_git_commit ]] || hpc_manifest_git "$hpc_plan_source_dir"
  hpc_followup_json_object json "schema:=1" "experiment=$hpc_plan_exp_name" "study_id=$hpc_scaling_id_text" \
    "study_dir=$hpc_scaling_dir" "command=bash job_submitter.sh ${words[*]}" "cluster=$hpc_plan_cluster" \
    "git_commit=${hpc_manifest_git_commit:-}" "mode=$hpc_scaling_mode" "repeats:=$hpc_scaling_repeats" \
    "launcher=$hpc_scaling_launcher" "runner=$hpc_plan_runner" "time_limit=$hpc_scaling_time" \
    "report_time=$hpc_scaling_report_time" "report_job_id=$hpc_scaling_report_id" "order=$hpc_scaling_order" \
    "target_efficiency:=$hpc_scaling_target"
  json=${json%\}}
  dirty=false
  [[ ${hpc_manifest_git_dirty:-} != yes ]] || dirty=true
  json+=", \"git_dirty\": $dirty"
  json+=", \"shared_host\": $hpc_scaling_shared_host, \"argv\": $argv, \"configurations\": [$configs]}"
  # Written once, before any job of the study can start (all are still held), as the map's
  # manifest.json: no reader sees it half, and no rename (a process) is needed.
  hpc_private_write "$hpc_scaling_dir/study.json" "$json"$'\n'
}

# hpc_scaling_shared: sets hpc_scaling_shared_host to true when every node of the partition has
# the same NodeHostname (several slurmd on one machine, as the embedded cluster): speedups are
# then not physical. One sinfo, parsed here; what it said is kept per cluster, SLURM_CONF and
# partition for hpc_slurm_ttl seconds, as its answer about the partitions (hpc_profile.bash).
hpc_scaling_shared() {
  local text node host now stamp='' conf='' part='' cache tmp
  local -A nodes=() hosts=()
  hpc_scaling_shared_host=false
  cache=${HPC_CACHE_DIR:-$hpc_files_dir/.cache}/slurm/$hpc_profile_name.hosts
  printf -v now '%(%s)T' -1
  text=''
  if [[ -f $cache ]]; then
    {
      IFS= read -r stamp && IFS= read -r conf && IFS= read -r part && { IFS= read -r -d '' text || true; }
    } <"$cache" || stamp=''
  fi
  if ! [[ $stamp =~ ^[0-9]+$ && $conf == "SLURM_CONF=${SLURM_CONF:-}" && $part == "partition=${hpc_plan_partition:-}" ]] ||
    ((now < stamp || now - stamp >= hpc_slurm_ttl)); then
    text=$(exec sinfo -h -N ${hpc_plan_partition:+-p "$hpc_plan_partition"} -o '%N %n' 2>/dev/null) || return 0
    # Written whole under a temporary name, then renamed; a cache that cannot be written only
    # costs a sinfo.
    tmp=$cache.$$.tmp
    if { [[ -d ${cache%/*} ]] || mkdir -p -- "${cache%/*}" 2>/dev/null; } &&
      printf '%s\nSLURM_CONF=%s\npartition=%s\n%s\n' "$now" "${SLURM_CONF:-}" "${hpc_plan_partition:-}" "$text" 2>/dev/null >"$tmp" &&
      mv -f -- "$tmp" "$cache" 2>/dev/null; then
      :
    elif [[ -f $tmp ]]; then
      rm -f -- "${tmp:?}"
    fi
  fi
  while read -r node host; do
    [[ -n $node && -n $host ]] || continue
    nodes[$node]=1 hosts[$host]=1
  done <<<"$text"
  if ((${#nodes[@]} > 1 && ${#hosts[@]} == 1)); then hpc_scaling_shared_host=true; fi
}

# hpc_scaling_dry_run: prints every run in the order it runs, with its working folder, the
# node-hours the study costs at most and its worst-case wall time, the report job's dependency,
# and asks sbatch --test-only about the largest configuration.
hpc_scaling_dry_run() {
  local x n g r total=0 wall=0 longest=0 out i=0 after='' report_s
  hpc_scaling_dir=$hpc_scaling_root/STAMP-FIRSTJOBID
  hpc_scaling_runs_text
  printf '== scaling test: %s run(s): %s; mode %s, folder %s\n' "${#hpc_scaling_runs[@]}" "$hpc_scaling_runs_text" "$hpc_scaling_mode" "$hpc_scaling_dir"
  case $hpc_scaling_order in
    serial) printf 'Order: serial (%s): one run after another, each after the end of the one before (afterany), in this order:\n' "$hpc_scaling_order_why" ;;
    exclusive) printf 'Order: all released together, %s, in this order:\n' "$hpc_scaling_order_why" ;;
    parallel) printf 'Order: all released together (%s; the report says so), in this order:\n' "$hpc_scaling_order_why" ;;
  esac
  for x in "${hpc_scaling_runs[@]}"; do
    read -r n g r <<<"$x"
    hpc_scaling_plan "$n" "$g" "$r"
    hpc_plan_time_seconds "$hpc_plan_time"
    total=$((total + n * ${hpc_plan_seconds:-0})) wall=$((wall + ${hpc_plan_seconds:-0}))
    ((${hpc_plan_seconds:-0} <= longest)) || longest=${hpc_plan_seconds:-0}
    i=$((i + 1))
    hpc_scaling_workdir "${hpc_plan_workdir:-}" "$hpc_scaling_run_dir" "$hpc_scaling_key"
    [[ $hpc_scaling_order != serial ]] || ((i == 1)) || after=", after run $((i - 1))"
    printf '%s. %s: %s node(s) x %s GPU(s), --time=%s%s, job name %s, output %s, working folder %s\n' "$i" "$hpc_scaling_key" "$n" "$hpc_plan_gpus" \
      "$hpc_plan_time" "$after" "$hpc_plan_job_name" "$hpc_plan_output" "$hpc_scaling_workdir"
  done
  [[ $hpc_scaling_order == serial ]] || wall=$longest
  hpc_plan_time_seconds "$hpc_scaling_report_time"
  report_s=${hpc_plan_seconds:-0}
  printf 'At most %s node-hours (sum of nodes x time limit); at most %s from the first run to the report'"'"'s end, once running (time limits%s)\n' \
    "$(awk -v s="$total" 'BEGIN { printf "%.2f", s / 3600 }')" "$(hpc_scaling_hms $((wall + report_s)))" "$([[ $hpc_scaling_order == serial ]] && printf ', added up' || printf ': the longest run, then the report')"
  printf 'Report job: --dependency=afterany:<every run> --kill-on-invalid-dep=yes, 1 node, 1 task, 1 CPU, no GPU, --time=%s; its verdict: the largest configuration at %s %% efficiency or more\n' "$hpc_scaling_report_time" "$hpc_scaling_target"
  hpc_scaling_plan "${hpc_scaling_runs[-1]%% *}" "$(cut -d' ' -f2 <<<"${hpc_scaling_runs[-1]}")" 1
  hpc_plan_record
  hpc_plan_render "$hpc_plan_outputs_dir/${hpc_plan_exp_name}_${hpc_plan_kind}_STAMP.plan"
  if out=$(unset SLURM_TMPDIR && exec sbatch --test-only "${hpc_plan_sbatch_args[@]/#--output=*/--output=/dev/null}" 2>&1 <<<"$hpc_plan_script"); then
    printf 'sbatch --test-only (largest configuration): %s\n' "${out##*$'\n'}"
  else
    printf 'sbatch --test-only (largest configuration) refused it: %s\n' "${out##*$'\n'}"
    return 1
  fi
}

# hpc_scaling_hms SECONDS: prints SECONDS as H:MM:SS.
hpc_scaling_hms() {
  printf '%d:%02d:%02d' $(($1 / 3600)) $(($1 % 3600 / 60)) $(($1 % 60))
}

# hpc_scaling_main: the whole scaling submission (after the profile and the configs file are
# read); exits.
hpc_scaling_main() {
  local x n g r out report_plan report_text
  local -a after=()
  hpc_scaling_dir=''
  hpc_plan_make
  hpc_scaling_configurations
  if ((${#hpc_opt_data[@]})); then
    # --data as for any job: checked now, packed once after the confirmation, every run unpacks it.
    # shellcheck source=hpc_files/lib/hpc_stage_submit.bash
    source "$hpc_files_dir/lib/hpc_stage_submit.bash"
    hpc_stage_validate "$hpc_plan_scratch_dir" "${hpc_opt_data[@]}" || exit 2
  fi
  hpc_scaling_check_fit
  hpc_scaling_root=$hpc_plan_outputs_dir/scaling/${hpc_opt_exp_name:-default}
  hpc_scaling_shared
  hpc_scaling_choose_order
  if ((hpc_opt_dry_run)); then
    hpc_scaling_dry_run
    exit
  fi
  # Asked only on a terminal, as every submission (hpc_submit_confirm).
  if ((hpc_opt_yes == 0)) && [[ -t 0 ]]; then
    hpc_scaling_runs_text
    printf 'Scaling test: %s run(s): %s, %s; and one report job\nSubmit? [y/N] ' "${#hpc_scaling_runs[@]}" "$hpc_scaling_runs_text" \
      "$([[ $hpc_scaling_order == serial ]] && printf 'one after another' || printf 'released together')" >&2
    read -r out || out=
    [[ $out == [yY] || $out == [yY][eE][sS] ]] || {
      hpc_say "not submitted"
      exit 1
    }
  fi
  for x in "${hpc_scaling_root%/*}" "$hpc_scaling_root"; do
    # A study's folder is removed when its submission fails: never one reached through a link.
    [[ ! -L $x ]] || hpc_die "$x is a symbolic link; the scaling study's folders are made in a folder of their own, never through a link: nothing was submitted"
  done
  hpc_profile_slurm_facts_save
  hpc_submit_made=()
  hpc_plan_make
  [[ -d $hpc_plan_outputs_dir && -d $hpc_plan_checkpoints_dir ]] || hpc_submit_make_folders
  "hpc_runner_${hpc_plan_runner}_prepare"
  if ((${#hpc_opt_data[@]})); then
    local rc=0
    hpc_stage_prepare "$hpc_plan_scratch_dir" "${hpc_opt_data[@]}" || rc=$?
    ((rc != 2)) || exit 2
    hpc_submit_interrupted "$rc" "while packing the data (--data)"
    ((rc == 0)) || hpc_die "staging the data failed (see above); nothing was submitted"
    # Every run's plan (hpc_plan_adopt) names the archive.
    hpc_plan_data_archive=$hpc_stage_archive hpc_submit_data_archive=$hpc_stage_archive
  fi
  trap - EXIT
  hpc_scaling_ids=() hpc_scaling_run_ids=() hpc_scaling_keys=() hpc_scaling_gpus_of=() hpc_scaling_made=''
  trap 'hpc_scaling_undo "the submission stopped before the study was released"' EXIT
  # Until the study is released, a signal cancels it whole once the sbatch it came during has
  # answered (hpc_scaling_signalled): no held job is left behind.
  hpc_submit_defer_signals
  hpc_submit_pending_open
  # The report job first, held: its id names the study's folder before any run's output does.
  printf -v hpc_scaling_stamp '%(%Y%m%d-%H%M%S)T' -1
  hpc_scaling_report_plan
  hpc_plan_write || hpc_scaling_undo "cannot write the report job's plan in $hpc_plan_outputs_dir"
  report_plan=$hpc_plan_file report_text=$hpc_plan_text
  hpc_plan_render
  # What SLURM runs, kept as report.sh once the folder is made.
  hpc_scaling_report_script=$hpc_plan_script
  hpc_scaling_sbatch "$hpc_plan_script" "${hpc_plan_sbatch_args[@]}" || hpc_scaling_undo "the report job was not submitted"
  hpc_scaling_report_id=$hpc_scaling_id
  hpc_scaling_ids+=("$hpc_scaling_id")
  hpc_scaling_signalled
  hpc_scaling_id_text=$hpc_scaling_stamp-$hpc_scaling_report_id
  hpc_scaling_dir=$hpc_scaling_root/$hpc_scaling_id_text
  [[ -d $hpc_scaling_root ]] || mkdir -p -- "$hpc_scaling_root" || hpc_scaling_undo "cannot make $hpc_scaling_root"
  # One at a time: runs/ is never made inside a folder of that name that was already there.
  # The user's alone (0700): it holds the scripts and records that resubmit runs again.
  mkdir -m 700 -- "$hpc_scaling_dir" || hpc_scaling_undo "cannot make $hpc_scaling_dir"
  hpc_scaling_made=$hpc_scaling_dir
  # runs/ and every run's folder (named by its key) in one process: all inside the study's
  # folder, new and empty, so none of them was there before.
  local -a run_dirs=("$hpc_scaling_dir/runs")
  for x in "${hpc_scaling_runs[@]}"; do
    read -r n g r <<<"$x"
    run_dirs+=("$hpc_scaling_dir/runs/${n}x$g-r$r")
  done
  mkdir -- "${run_dirs[@]}" || hpc_scaling_undo "cannot make $hpc_scaling_dir/runs"
  # The report job's script knows the study's folder only now: it learns it from its manifest's
  # twin, report.sh; SLURM runs the script it was given, so the folder goes in by name below.
  for x in "${hpc_scaling_runs[@]}"; do
    read -r n g r <<<"$x"
    hpc_scaling_plan "$n" "$g" "$r"
    hpc_plan_write || hpc_scaling_undo "cannot write the plan of run $hpc_scaling_key in $hpc_plan_outputs_dir"
    hpc_plan_render
    # Serial: after the end of the run before, whatever its state; on the command line, not in
    # the plan: resubmit --failed chains its runs anew.
    after=()
    [[ $hpc_scaling_order != serial ]] || ((${#hpc_scaling_run_ids[@]} == 0)) || after=(--dependency="afterany:${hpc_scaling_run_ids[-1]}")
    hpc_scaling_sbatch "$hpc_plan_script" "${hpc_plan_sbatch_args[@]}" ${after[@]+"${after[@]}"} || hpc_scaling_undo "run $hpc_scaling_key was not submitted"
    hpc_scaling_ids+=("$hpc_scaling_id") hpc_scaling_run_ids+=("$hpc_scaling_id") hpc_scaling_keys+=("$hpc_scaling_key")
    hpc_scaling_signalled
    hpc_scaling_gpus_of+=("$hpc_plan_gpus") hpc_scaling_launcher=$hpc_plan_launcher hpc_scaling_time=$hpc_plan_time
    hpc_private_write "$hpc_scaling_run_dir/job.sh" "$hpc_plan_script" || hpc_scaling_undo "cannot write $hpc_scaling_run_dir/job.sh"
    hpc_manifest_write "$hpc_scaling_id" "$hpc_scaling_run_dir/job.sh" "$hpc_plan_file" || hpc_say "run $hpc_scaling_id was submitted, but its manifest could not be written"
  done
  printf -v x '%s:' "${hpc_scaling_run_ids[@]}"
  out=$(exec scontrol update JobId="$hpc_scaling_report_id" Dependency="afterany:${x%:}" 2>&1) ||
    hpc_scaling_undo "cannot make the report job wait for the runs: $out"
  # The report job's plan again, as its file holds it (the toolkit's own %q text), for its manifest:
  # the runs' plans were made since.
  # From the text this process wrote, kept in memory: in an outputs folder others can write, the
  # file's name could point at their code by now.
  # shellcheck source=/dev/null
  source /dev/stdin <<<"$report_text" || hpc_scaling_undo "cannot read the report job's plan $report_plan"
  hpc_private_write "$hpc_scaling_dir/report.sh" "$hpc_scaling_report_script" || hpc_scaling_undo "cannot write $hpc_scaling_dir/report.sh"
  hpc_manifest_write "$hpc_scaling_report_id" "$hpc_scaling_dir/report.sh" "$report_plan" || hpc_say "the report job was submitted, but its manifest could not be written"
  hpc_scaling_study_json || hpc_scaling_undo "cannot write $hpc_scaling_dir/study.json"
  hpc_scaling_signalled
  out=$(exec scontrol release "${hpc_scaling_ids[@]}" 2>&1) || hpc_scaling_undo "scontrol release failed: ${out//$'\n'/ }"
  trap - EXIT
  hpc_pending_close
  # Released: a signal that came during the release ends the submitter now, the study submitted.
  hpc_submit_resume_signals "$hpc_plan_exp_name" "${hpc_scaling_ids[@]}"
  printf 'Scaling study %s: %s run(s) (jobs %s), report job %s after them (afterany)\nFolder: %s\n' \
    "$hpc_scaling_id_text" "${#hpc_scaling_run_ids[@]}" "${hpc_scaling_run_ids[*]}" "$hpc_scaling_report_id" "$hpc_scaling_dir"
  exit 0
}

# ---------------------------------------------------------------------------------------------
# In the job

# hpc_scaling_run_setup: (a run's batch shell) exports the run's variables, writes its status
# RUNNING; its own folders are named by its key (checkpoints_dir/task_1x2-r1).
hpc_scaling_run_setup() {
  export scaling_study_dir=${hpc_plan_scaling_dir:?} scaling_config=${hpc_plan_scaling_config:?} scaling_repeat=${hpc_plan_scaling_repeat:?}
  export scaling_run_dir=$scaling_study_dir/runs/${hpc_plan_scaling_key:?}
  hpc_job_task_index=$hpc_plan_scaling_key
  [[ ! -L $scaling_run_dir ]] || hpc_job_fail "scaling" "$scaling_run_dir is a symbolic link"
  mkdir -p -- "$scaling_run_dir" || hpc_job_fail "scaling" "cannot make $scaling_run_dir"
  hpc_followup_utc hpc_scaling_start_utc
  hpc_scaling_start_s=${EPOCHREALTIME/,/.} hpc_scaling_end_s='' hpc_scaling_end_utc=''
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
  hpc_followup_status_write "$scaling_run_dir/status.json" "key=$hpc_plan_scaling_key" "job_id=${SLURM_JOB_ID:-}" \
    "state=$1" "exit_code:=$2" "node=${SLURMD_NODENAME:-}" "start_utc=$hpc_scaling_start_utc" "end_utc=$hpc_scaling_end_utc" \
    "start_s:=$hpc_scaling_start_s" "end_s:=$hpc_scaling_end_s" "log=$scaling_run_dir/job_${SLURM_JOB_ID:-}.out" ||
    hpc_job_log "cannot write $scaling_run_dir/status.json"
}

# hpc_scaling_run_start: just before the launcher command: the clock starts.
hpc_scaling_run_start() {
  hpc_followup_utc hpc_scaling_start_utc
  hpc_scaling_start_s=${EPOCHREALTIME/,/.}
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
  wall=$(awk -v a="$hpc_scaling_start_s" -v b="$hpc_scaling_end_s" 'BEGIN { printf "%.6f", b - a }')
  hpc_followup_status_write "$scaling_run_dir/wall.json" "wall_s:=$wall" "exit_code:=$1" "job_id=${SLURM_JOB_ID:-}" \
    "node_list=${SLURM_JOB_NODELIST:-}" "start_utc=$hpc_scaling_start_utc" "end_utc=$hpc_scaling_end_utc" \
    "start_s:=$hpc_scaling_start_s" "end_s:=$hpc_scaling_end_s" ||
    hpc_job_log "cannot write $scaling_run_dir/wall.json"
  hpc_followup_final_state "$1"
  hpc_scaling_status "$hpc_followup_state" "$1"
}

# hpc_scaling_report_run: (the report job's batch shell) writes the study's report and ends the
# job: FAILED when every run failed (after writing report.md), COMPLETED otherwise.
hpc_scaling_report_run() {
  local py rc=0 study
  # A resubmitted report job names its study (hpc_scaling_resubmit_failed); the first one's id
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
  PYTHONPATH=${hpc_plan_python_helpers:?}${PYTHONPATH:+:$PYTHONPATH} "$py" -m hpc_helpers.scaling_report "$study" || rc=$?
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
# resubmit EXP --failed

# hpc_scaling_newest_dir ROOT COMMAND: sets hpc_scaling_dir to the newest study folder (with a
# study.json, not a link) under ROOT, the experiment's study folders; exit 2 naming COMMAND when
# none. Study folders are named YYYYmmdd-HHMMSS-ID: the last in order is the newest.
hpc_scaling_newest_dir() {
  local dir
  hpc_scaling_dir=''
  for dir in "$1"/*/; do
    [[ -f ${dir}study.json && ! -L ${dir%/} ]] && hpc_scaling_dir=${dir%/}
  done
  [[ -n $hpc_scaling_dir ]] || hpc_die_usage "$2" "no scaling study of this experiment under $1"
}

# hpc_scaling_keep_attempt RUN_DIR: before a run is submitted again, its status.json, wall.json
# and metrics.json become NAME.attempt<N>.json (N: the first number free for all three), so that
# the new attempt's files are the only ones read; never through a link (a linked file stays, and
# the new attempt replaces it: hpc_followup_status_write).
hpc_scaling_keep_attempt() {
  hpc_map_keep_attempt "$1" 1 status wall metrics
}

# hpc_scaling_resubmit_failed ROOT: (resubmit EXP --failed on a scaling study, ROOT the
# experiment's study folders) submits again, held, exactly the runs of the newest study whose
# newest attempt did not succeed (FAILED, TIMEOUT, LOST, NODE_FAIL, CANCELLED...: read from the
# runs' status files), each from its kept job.sh with its recorded sbatch options (the same
# shape, the same runs/<key>/ folder; the earlier attempt's files kept as *.attempt<N>.json),
# then a new report job (afterany on them, --output in the study's folder) that names the
# study; records the new ids in study.json and in manifests linked to the old ones, and
# releases them. A serial study's runs run one after another again. Exit 1 while a run or report job of the study is pending or running.
hpc_scaling_resubmit_failed() {
  local dir info line report_ids='' failed='' key id out script new_report lock_fd study_order=parallel
  local -a keys=() ids=() redo=() new_ids=() records=() args=() after=()
  local -A job_of=()
  hpc_scaling_newest_dir "$1" "resubmit --failed"
  dir=$hpc_scaling_dir
  [[ ! -L $dir/runs ]] || hpc_die "$dir/runs is a symbolic link: a study's runs are never followed; nothing was submitted"
  # One resubmission of a study at a time (the lock is the study folder, held until exit).
  if ! { exec {lock_fd}<"$dir"; } || ! flock -w 60 "$lock_fd"; then
    hpc_die "cannot lock the study folder ${dir##*/} within 60 s: another resubmit --failed of it still runs (or its file system has no locks)"
  fi
  # shellcheck source=/dev/null # hpc_map.bash: linted on its own (see docs/architecture.md)
  source "${BASH_SOURCE[0]%/*}/hpc_map.bash"
  # Its record names the runs' jobs and the failed ones: read only as the user's own.
  hpc_trusted_check "$dir/study.json" || hpc_die "the study's record $dir/study.json $hpc_trusted_problem: not read; nothing was submitted"
  info=$(hpc_map_helpers study-info --dir "$dir") || hpc_die "cannot read the study in $dir (see above)"
  while IFS= read -r line; do
    case $line in
      order=*) study_order=${line#*=} ;;
      report_ids=*) report_ids=${line#*=} ;;
      run=*)
        read -r key id <<<"${line#run=}"
        keys+=("$key") ids+=("$id") job_of[$key]=$id
        ;;
      failed=*) failed=${line#*=} ;;
    esac
  done <<<"$info"
  ((${#keys[@]})) || hpc_die "cannot read the study in $dir"
  read -ra redo <<<"$failed"
  local -a live=("${ids[@]}")
  read -ra args <<<"$report_ids"
  live+=(${args[@]+"${args[@]}"})
  if hpc_map_jobs_live "$dir/study.json" "${live[@]}"; then
    hpc_die "the study ${dir##*/} still has jobs pending or running; resubmit --failed once its report job has ended"
  fi
  if ((${#redo[@]} == 0)); then
    printf 'Nothing to resubmit: every run of study %s succeeded.\n' "${dir##*/}"
    return 0
  fi
  hpc_scaling_ids=() hpc_scaling_made=''
  trap 'hpc_scaling_undo "the resubmission stopped before its jobs were released"' EXIT
  # Until released, a signal cancels the resubmission whole once the sbatch it came during has
  # answered (hpc_scaling_signalled).
  hpc_submit_defer_signals
  hpc_submit_pending_open "${hpc_manage_dir%/*}" "${1##*/}"
  for key in "${redo[@]}"; do
    id=${job_of[$key]}
    hpc_manifest_read "${hpc_manage_file[id]-}" || hpc_scaling_undo "run $key (job $id) has no manifest in $hpc_manage_dir"
    script=${hpc_mf[script]-}
    [[ $script == "$dir/runs/$key/job.sh" && -f $script && ! -L $script && ! -L $dir/runs/$key ]] ||
      hpc_scaling_undo "the kept job script of run $key is not $dir/runs/$key/job.sh"
    hpc_trusted_read "$script" || hpc_scaling_undo "the kept job script $script of run $key $hpc_trusted_problem: not run"
    [[ -n ${hpc_mf[plan]-} ]] && [[ -e ${hpc_mf[plan]} || -L ${hpc_mf[plan]} ]] ||
      hpc_scaling_undo "the plan file '${hpc_mf[plan]:-(none recorded)}' of run $key is gone; submit the study again"
    # The job would refuse it at its start: refused here, before anything is submitted.
    hpc_trusted_check "${hpc_mf[plan]}" || hpc_scaling_undo "the plan file '${hpc_mf[plan]}' of run $key $hpc_trusted_problem: not read"
    # A serial study's runs again one after another.
    after=()
    [[ $study_order != serial ]] || ((${#new_ids[@]} == 0)) || after=(--dependency="afterany:${new_ids[-1]}")
    out=$(hpc_submit_sbatch --parsable --hold "${hpc_mf_sbatch[@]}" ${after[@]+"${after[@]}"} 2>&1 <<<"$hpc_trusted_text") ||
      hpc_scaling_undo "sbatch refused run $key: ${out//$'\n'/ }"
    out=${out##*$'\n'} out=${out%%;*}
    [[ $out =~ ^[0-9]+$ ]] || hpc_scaling_undo "sbatch gave no job id for run $key"
    hpc_scaling_ids+=("$out") new_ids+=("$out") records+=(--run "$key=$out")
    hpc_scaling_signalled
    hpc_manifest_copy "${hpc_manage_file[id]}" "$out" '' 'resubmit --failed' ||
      hpc_say "run $key (job $out) was submitted, but its manifest could not be written"
  done
  # The report job: report.sh naming its study, after the new runs, its log in the study.
  read -ra args <<<"$report_ids"
  id=${args[-1]-}
  hpc_manifest_read "${hpc_manage_file[id]-}" || hpc_scaling_undo "the report job $id has no manifest in $hpc_manage_dir"
  [[ -e $dir/report.sh || -L $dir/report.sh ]] || hpc_scaling_undo "$dir/report.sh is missing"
  hpc_trusted_read "$dir/report.sh" || hpc_scaling_undo "the kept report script $dir/report.sh $hpc_trusted_problem: not run"
  script=${hpc_trusted_text%$'\n'}
  # The report job's plan, with its study appended (the last assignment wins), in a new file.
  local plan=${hpc_mf[plan]-} text=''
  [[ -n $plan ]] && [[ -e $plan || -L $plan ]] ||
    hpc_scaling_undo "the plan file '${plan:-(none recorded)}' of the report job $id is gone; submit the study again"
  # Its text goes into a new plan file of this user, which the job trusts: read as the job would.
  hpc_trusted_read "$plan" || hpc_scaling_undo "the plan file '$plan' of the report job $id $hpc_trusted_problem: not read"
  text=$hpc_trusted_text
  if ! declare -F hpc_plan_write_file >/dev/null; then
    # shellcheck source=hpc_files/lib/hpc_plan.bash
    source "${BASH_SOURCE[0]%/*}/hpc_plan.bash"
  fi
  printf -v text '%s# resubmit --failed: the report of this study.\nhpc_plan_scaling_study=%q\n' "$text" "$dir"
  hpc_plan_write_file "${plan%_*}" "$text" || hpc_scaling_undo "cannot write the report job's new plan beside $plan"
  plan=$hpc_plan_file
  printf -v script '%s\nhpc_job_main %q\n' "${script%$'\n'hpc_job_main *}" "$plan"
  args=()
  for line in "${hpc_mf_sbatch[@]}"; do
    case $line in
      --output=* | --dependency=*) ;;
      *) args+=("$line") ;;
    esac
  done
  printf -v line '%s:' "${new_ids[@]}"
  out=$(hpc_submit_sbatch --parsable "${args[@]}" --output="$dir/report_%j.out" \
    --dependency="afterany:${line%:}" 2>&1 <<<"$script") || hpc_scaling_undo "sbatch refused the report job: ${out//$'\n'/ }"
  new_report=${out##*$'\n'} new_report=${new_report%%;*}
  [[ $new_report =~ ^[0-9]+$ ]] || hpc_scaling_undo "sbatch gave no job id for the report job"
  hpc_scaling_ids+=("$new_report")
  hpc_scaling_signalled
  (
    # Its manifest: the old report's, with its own output (a subshell: hpc_mf stays).
    hpc_manifest_copy "${hpc_manage_file[id]}" "$new_report" '' 'resubmit --failed' "$dir/report_%j.out" "$plan"
  ) || hpc_say "the report job $new_report was submitted, but its manifest could not be written"
  for key in "${redo[@]}"; do hpc_scaling_keep_attempt "$dir/runs/$key"; done
  hpc_map_helpers study-record --dir "$dir" "${records[@]}" --report "$new_report" ||
    hpc_say "cannot record jobs ${new_ids[*]} $new_report in $dir/study.json"
  hpc_scaling_signalled
  out=$(exec scontrol release "${new_ids[@]}" 2>&1) || hpc_scaling_undo "scontrol release ${new_ids[*]} failed: ${out//$'\n'/ }"
  trap - EXIT
  hpc_pending_close
  hpc_submit_resume_signals "${1##*/}" "${new_ids[@]}" "$new_report"
  printf 'Resubmitted run(s) %s of study %s as job(s) %s\n' "${redo[*]}" "${dir##*/}" "${new_ids[*]}"
  printf 'Report job %s: after job(s) %s (afterany); output %s\n' "$new_report" "${new_ids[*]}" "$dir/report_$new_report.out"
}

# ---------------------------------------------------------------------------------------------
# By hand

# hpc_scaling_report_command EXP|PATH [--out DIR]: (scaling-report) writes the report of
# experiment EXP's newest study, or of the study folder PATH (a copied one too), into the study
# or DIR. Exit 2 on a folder without study.json or an experiment without a study.
hpc_scaling_report_command() {
  local target='' out='' root py dir study=''
  local usage='usage: scaling-report EXP|PATH [--out DIR]'
  while (($#)); do
    case $1 in
      --out)
        (($# >= 2)) && [[ -n $2 ]] || hpc_die_usage "--out" "needs a folder; $usage"
        out=$2
        shift 2
        ;;
      -*) hpc_commands_die_unknown_option scaling-report "$1" ;;
      *)
        [[ -z $target ]] || hpc_die_usage "scaling-report" "takes one experiment or study folder; $usage"
        target=$1
        shift
        ;;
    esac
  done
  [[ -n $target ]] || hpc_die_usage "scaling-report" "needs an experiment or a study folder; $usage"
  if [[ $target == */* || $target == . || $target == .. ]]; then
    [[ -f $target/study.json ]] ||
      hpc_die_usage "scaling-report" "'$target' has no study.json; accepted: a scaling study's folder, or an experiment with a study"
    study=$target
  else
    [[ $target =~ ^[A-Za-z0-9_.+-]+$ && $target != [.-]* ]] ||
      hpc_die_usage "scaling-report" "'$target' is not an experiment name; accepted: an experiment (-e) or a study folder (a path with a /)"
    hpc_manage_locate
    root=${hpc_manage_dir%/*}/scaling/$target
    # Study folders are named YYYYmmdd-HHMMSS-ID: the last in order is the newest.
    for dir in "$root"/*/; do
      [[ -f $dir/study.json && ! -L ${dir%/} ]] && study=${dir%/}
    done
    [[ -n $study ]] || hpc_die_usage "scaling-report" "experiment '$target' has no scaling study under $root; accepted: an experiment submitted with --scaling-test, or a study folder"
  fi
  # The report is built from what the study's record says: read only as the user's own.
  hpc_trusted_check "$study/study.json" || hpc_die "the study's record $study/study.json $hpc_trusted_problem: not read"
  py=$(hpc_python_for_helpers) || exit 1
  PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$hpc_python_helpers_dir/src${PYTHONPATH:+:$PYTHONPATH}" \
    "$py" -m hpc_helpers.scaling_report "$study" ${out:+--out "$out"}
}
