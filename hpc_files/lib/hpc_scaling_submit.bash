# shellcheck shell=bash
# shellcheck disable=SC2034 # hpc_plan_* and hpc_scaling_* set here are read by hpc_plan.bash, hpc_submit.bash
# and the job
# hpc_scaling_submit.bash: the scaling test (--scaling-test) at submission: its options, its runs'
# plans, the dry run, and the submission of a study (the group workflow, hpc_group.bash). The
# design, the job's side and resubmit --failed: hpc_scaling.bash, loaded here first. Loaded by the
# submitter only for these options.

# shellcheck source=hpc_files/lib/hpc_scaling.bash
source "${BASH_SOURCE[0]%/*}/hpc_scaling.bash"
# shellcheck source=hpc_files/lib/hpc_group.bash
source "${BASH_SOURCE[0]%/*}/hpc_group.bash"

# The most runs (configurations x repeats) one study submits.
hpc_scaling_max_runs=1000

# hpc_scaling_parse_list OPTION TEXT: sets hpc_scaling_list to the whole numbers of TEXT
# (comma-separated, each 1 or more, none twice); exit 2 naming OPTION otherwise.
hpc_scaling_parse_list() {
  local option=$1 text=$2 value \
    accepted='accepted: comma-separated whole numbers, each 1 or more and given once, e.g. 1,2,4'
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
  if ! ((hpc_opt_num_nodes == largest)); then
    local msg="$hpc_opt_num_nodes with --scale-nodes $hpc_opt_scale_nodes, whose largest is $largest;"
    msg+=" accepted: -n/--num-nodes equal to the largest of --scale-nodes, or one of the two alone"
    hpc_die_usage "-n/--num-nodes" "$msg"
  fi
}

# hpc_scaling_check_options: the scaling options on their own and with the others; exit 2 with
# one line on bad input. Sets hpc_scaling_nodes, hpc_scaling_gpus (empty: the plan's GPUs),
# hpc_scaling_repeats, hpc_scaling_mode, hpc_scaling_report_time and hpc_scaling_target (the
# efficiency, percent, the report's verdict asks for).
hpc_scaling_check_options() {
  local n
  # The table's scaling options (hpc_options.bash), the first one set named.
  ((hpc_opt_scaling_test)) || hpc_opt_refuse_outside scaling "a scaling test" --scaling-test
  if ! ((hpc_opt_scale_serial == 0 || hpc_opt_scale_parallel == 0)); then
    local msg="choose one: runs one after another (--scale-serial) or runs that may share"
    msg+=" nodes (--scale-parallel); without either, each run has its nodes to itself"
    hpc_die_usage "--scale-serial/--scale-parallel" "$msg"
  fi
  hpc_scaling_target=${hpc_opt_scale_target_efficiency:-70}
  { [[ $hpc_scaling_target =~ ^[0-9]{1,3}$ ]] && ((10#$hpc_scaling_target >= 1 && 10#$hpc_scaling_target <= 100)); } ||
    hpc_die_usage "--scale-target-efficiency" \
      "'$hpc_scaling_target' is not accepted; accepted: a whole percentage, 1 to 100 (default 70)"
  hpc_scaling_target=$((10#$hpc_scaling_target))
  if [[ -n $hpc_opt_wandb_sweepid$hpc_opt_repeat || $hpc_opt_wandb_offline == 1 ]] || hpc_opt_asks map; then
    local msg="submits its own jobs, one per configuration; accepted without"
    msg+=" -w, --wandb-offline, --repeat, --map-range, --map-over and --gather"
    hpc_die_usage "--scaling-test" "$msg"
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
    hpc_die_usage "--repeats" \
      "'$hpc_scaling_repeats' is not accepted; accepted: a whole number of repeats, 1 to $hpc_opt_count_max"
  hpc_scaling_repeats=$((10#$hpc_scaling_repeats))
  hpc_scaling_mode=${hpc_opt_scaling_mode:-strong}
  [[ $hpc_scaling_mode == strong || $hpc_scaling_mode == weak ]] ||
    hpc_die_usage "--scaling-mode" "'$hpc_scaling_mode' is not accepted; accepted: strong, weak"
  hpc_scaling_report_time=${hpc_opt_report_time:-00:15:00}
  hpc_opt_check_time "$hpc_scaling_report_time" ||
    hpc_die_usage "--report-time" "'$hpc_scaling_report_time' is not accepted; accepted: $hpc_opt_time_accepted"
  if [[ $hpc_opt_launcher == none ]]; then
    for n in "${hpc_scaling_nodes[@]}"; do
      ((n == 1)) ||
        hpc_die_usage "-W/--which-distributed" \
          "a scaling test over $n nodes needs a launcher; accepted: $(hpc_plan_distributed_text)"
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
  if ! ((total <= hpc_scaling_max_runs)); then
    local msg="${#hpc_scaling_nodes[@]} node count(s) x ${#hpc_scaling_gpus[@]} GPU count(s) x"
    msg+=" $hpc_scaling_repeats repeat(s) are $total runs; accepted: at most $hpc_scaling_max_runs runs"
    hpc_die_usage "--scale-nodes/--scale-gpus/--repeats" "$msg"
  fi
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
  if ! ((${#worlds[@]} >= 2)); then
    local msg="every configuration has world size ${!worlds[*]}; accepted:"
    msg+=" at least two different world sizes (nodes x GPUs per node)"
    hpc_die_usage "--scale-nodes/--scale-gpus" "$msg"
  fi
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
      --job-name=* | --nodes=* | --ntasks-per-node=* | --cpus-per-task=* | \
        --mem=* | --time=* | --output=* | --gres=* | --signal=*) ;;
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
  if ! [[ $stamp =~ ^[0-9]+$ && $conf == "SLURM_CONF=${SLURM_CONF:-}" &&
    $part == "partition=${hpc_plan_partition:-}" ]] ||
    ((now < stamp || now - stamp >= hpc_slurm_ttl)); then
    text=$(exec sinfo -h -N ${hpc_plan_partition:+-p "$hpc_plan_partition"} -o '%N %n' 2>/dev/null) || return 0
    # Written whole under a temporary name, then renamed; a cache that cannot be written only
    # costs a sinfo.
    tmp=$cache.$$.tmp
    if { [[ -d ${cache%/*} ]] || mkdir -p -- "${cache%/*}" 2>/dev/null; } &&
      printf '%s\nSLURM_CONF=%s\npartition=%s\n%s\n' \
        "$now" "${SLURM_CONF:-}" "${hpc_plan_partition:-}" "$text" 2>/dev/null >"$tmp" &&
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
  local x n g r total=0 wall=0 longest=0 out i=0 after_text='' report_s
  hpc_scaling_dir=$hpc_scaling_root/STAMP-FIRSTJOBID
  hpc_scaling_runs_text
  printf '== scaling test: %s run(s): %s; mode %s, folder %s\n' \
    "${#hpc_scaling_runs[@]}" "$hpc_scaling_runs_text" "$hpc_scaling_mode" "$hpc_scaling_dir"
  case $hpc_scaling_order in
    serial)
      printf 'Order: serial (%s): one run after another, ' "$hpc_scaling_order_why"
      printf 'each after the end of the one before (afterany), in this order:\n'
      ;;
    exclusive) printf 'Order: all released together, %s, in this order:\n' "$hpc_scaling_order_why" ;;
    parallel)
      printf 'Order: all released together (%s; the report says so), in this order:\n' "$hpc_scaling_order_why"
      ;;
  esac
  for x in "${hpc_scaling_runs[@]}"; do
    read -r n g r <<<"$x"
    hpc_scaling_plan "$n" "$g" "$r"
    hpc_facts_seconds "$hpc_plan_time" || hpc_facts_seconds=0
    total=$((total + n * hpc_facts_seconds)) wall=$((wall + hpc_facts_seconds))
    ((hpc_facts_seconds <= longest)) || longest=$hpc_facts_seconds
    i=$((i + 1))
    hpc_scaling_workdir "${hpc_plan_workdir:-}" "$hpc_scaling_run_dir" "$hpc_scaling_key"
    [[ $hpc_scaling_order != serial ]] || ((i == 1)) || after_text=", after run $((i - 1))"
    printf '%s. %s: %s node(s) x %s GPU(s), --time=%s%s, job name %s, output %s, working folder %s\n' \
      "$i" "$hpc_scaling_key" "$n" "$hpc_plan_gpus" \
      "$hpc_plan_time" "$after_text" "$hpc_plan_job_name" "$hpc_plan_output" "$hpc_scaling_workdir"
  done
  [[ $hpc_scaling_order == serial ]] || wall=$longest
  hpc_facts_seconds "$hpc_scaling_report_time" || hpc_facts_seconds=0
  report_s=$hpc_facts_seconds
  printf 'At most %s node-hours (sum of nodes x time limit); ' \
    "$(awk -v s="$total" 'BEGIN { printf "%.2f", s / 3600 }')"
  printf 'at most %s from the first run to the report'"'"'s end, once running (time limits%s)\n' \
    "$(hpc_facts_hms $((wall + report_s)))" \
    "$([[ $hpc_scaling_order == serial ]] && printf ', added up' || printf ': the longest run, then the report')"
  printf 'Report job: --dependency=afterany:<every run> --kill-on-invalid-dep=yes, 1 node, 1 task, 1 CPU, '
  printf 'no GPU, --time=%s; its verdict: the largest configuration at %s %% efficiency or more\n' \
    "$hpc_scaling_report_time" "$hpc_scaling_target"
  hpc_scaling_plan "${hpc_scaling_runs[-1]%% *}" "$(cut -d' ' -f2 <<<"${hpc_scaling_runs[-1]}")" 1
  hpc_plan_record
  hpc_plan_render "$hpc_plan_outputs_dir/${hpc_plan_exp_name}_${hpc_plan_kind}_STAMP.plan"
  if out=$(unset SLURM_TMPDIR && hpc_slurm sbatch --test-only \
    "${hpc_plan_sbatch_args[@]/#--output=*/--output=/dev/null}" 2>&1 <<<"$hpc_plan_script"); then
    printf 'sbatch --test-only (largest configuration): %s\n' "${out##*$'\n'}"
  else
    printf 'sbatch --test-only (largest configuration) refused it: %s\n' "${out##*$'\n'}"
    return 1
  fi
}

# hpc_scaling_submit_study: (modes/scaling.bash's submission, confirmed and prepared) the study
# in the group workflow (hpc_group.bash), each run through hpc_submit_job: the report job first,
# held (its id names the study's folder before any run's output does), then the folder, the runs,
# the report job's dependency on them, study.json, and the release.
hpc_scaling_submit_study() {
  local x n g r out report_plan report_text
  local -a run_after=()
  hpc_scaling_run_ids=() hpc_scaling_keys=() hpc_scaling_gpus_of=()
  hpc_submit_pending_open
  hpc_group_begin scaling "the submission stopped before the study was released"
  printf -v hpc_scaling_stamp '%(%Y%m%d-%H%M%S)T' -1
  hpc_scaling_report_plan
  hpc_plan_write || hpc_group_undo "cannot write the report job's plan in $hpc_plan_outputs_dir"
  report_plan=$hpc_plan_file report_text=$hpc_plan_text
  hpc_plan_render
  # What SLURM runs, kept as report.sh once the folder is made.
  hpc_scaling_report_script=$hpc_plan_script
  hpc_group_sbatch "the report job" "$hpc_plan_script" "${hpc_plan_sbatch_args[@]}"
  hpc_scaling_report_id=$hpc_group_id
  hpc_scaling_id_text=$hpc_scaling_stamp-$hpc_scaling_report_id
  hpc_scaling_dir=$hpc_scaling_root/$hpc_scaling_id_text
  # runs/ and every run's folder (named by its key): all inside the study's new folder.
  local -a run_dirs=(runs)
  for x in "${hpc_scaling_runs[@]}"; do
    read -r n g r <<<"$x"
    run_dirs+=("runs/${n}x$g-r$r")
  done
  hpc_group_make_dir "$hpc_scaling_root" "$hpc_scaling_dir" "${run_dirs[@]}"
  for x in "${hpc_scaling_runs[@]}"; do
    read -r n g r <<<"$x"
    hpc_scaling_plan "$n" "$g" "$r"
    # Serial: after the end of the run before, whatever its state; on the command line, not in
    # the plan: resubmit --failed chains its runs anew.
    run_after=()
    [[ $hpc_scaling_order != serial ]] || ((${#hpc_scaling_run_ids[@]} == 0)) ||
      run_after=(--dependency="afterany:${hpc_scaling_run_ids[-1]}")
    hpc_submit_job --hold ${run_after[@]+"${run_after[@]}"} || {
      hpc_say "${hpc_submit_error%; nothing was submitted}"
      hpc_group_undo "run $hpc_scaling_key was not submitted"
    }
    hpc_group_add "$hpc_submit_id" held
    hpc_scaling_run_ids+=("$hpc_submit_id") hpc_scaling_keys+=("$hpc_scaling_key")
    hpc_scaling_gpus_of+=("$hpc_plan_gpus") hpc_scaling_launcher=$hpc_plan_launcher hpc_scaling_time=$hpc_plan_time
    hpc_submit_keep "$hpc_scaling_run_dir/job.sh" || hpc_group_undo "cannot write $hpc_scaling_run_dir/job.sh"
  done
  printf -v x '%s:' "${hpc_scaling_run_ids[@]}"
  out=$(hpc_slurm scontrol update JobId="$hpc_scaling_report_id" Dependency="afterany:${x%:}" 2>&1) ||
    hpc_group_undo "cannot make the report job wait for the runs: $out"
  # The report job's plan again, as its file holds it (the toolkit's own %q text), for its
  # manifest: the runs' plans were made since. From the text this process wrote, kept in memory:
  # in an outputs folder others can write, the file's name could point at their code by now.
  # shellcheck source=/dev/null
  source /dev/stdin <<<"$report_text" || hpc_group_undo "cannot read the report job's plan $report_plan"
  hpc_private_write "$hpc_scaling_dir/report.sh" "$hpc_scaling_report_script" ||
    hpc_group_undo "cannot write $hpc_scaling_dir/report.sh"
  hpc_manifest_write "$hpc_scaling_report_id" "$hpc_scaling_dir/report.sh" "$report_plan" ||
    hpc_say "the report job was submitted, but its manifest could not be written"
  hpc_scaling_study_json || hpc_group_undo "cannot write $hpc_scaling_dir/study.json"
  hpc_group_release "$hpc_plan_exp_name"
  printf 'Scaling study %s: %s run(s) (jobs %s), report job %s after them (afterany)\nFolder: %s\n' \
    "$hpc_scaling_id_text" "${#hpc_scaling_run_ids[@]}" "${hpc_scaling_run_ids[*]}" "$hpc_scaling_report_id" \
    "$hpc_scaling_dir"
}
