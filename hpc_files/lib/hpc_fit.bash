# shellcheck shell=bash
# shellcheck disable=SC2034 # hpc_plan_misfit* and hpc_slurm_text are read by hpc_submit.bash and hpc_profile.bash
# hpc_fit.bash: whether any node of the cluster could ever run the plan. A request for more
# nodes, CPUs, GPUs or memory than a partition has is accepted by SLURM and pends forever (or is
# refused with a vague message); it is refused here with the largest value the cluster offers.
# Loaded only when the quick check (hpc_plan_fits_quick) cannot tell: no cache yet, a request
# larger than the cache says, a list of partitions, or no partition known.
#
# What sinfo says is kept as a summary, one line per partition, for the profile's GRES name:
#   d DEFAULT_PARTITION          (d alone: the cluster has none)
#   p PARTITION NODES CPUS MB GPUS TYPES   (node count; the largest node's CPUs, memory, GPUs;
#                                TYPES: TYPE:N,... the most GPUs of each type on one node, or -
#                                when its GPUs have no type, as gpu:2)

# What this library reads, set by the others: the plan (hpc_plan.bash), the profile, and what
# sinfo said (hpc_profile_slurm_facts). Declared here, not set (values already there are kept),
# so that the linter knows each name and catches a misspelt one.
declare -g hpc_plan_nodes hpc_plan_cpus hpc_plan_cpus_per_task hpc_plan_gpus hpc_plan_gpu_type hpc_plan_mb \
  hpc_plan_mem_per_gpu hpc_plan_ntasks_per_node hpc_profile_gpu_gres_name hpc_profile_name \
  hpc_profile_partition_routed hpc_slurm_fresh hpc_slurm_raw hpc_plan_partition_option hpc_opt_gpu_type

# hpc_fit_summarize RAW: sets hpc_slurm_text to the summary of sinfo's lines
# 'PARTITION|NODES|CPUS|MEMORY_MB|GRES' (RAW: the default partition marked *, a partition on
# several lines when its nodes differ). Empty when RAW names no partition.
hpc_fit_summarize() {
  local rest=$1$'\n' line part nodes cpus mb gres entry count type types
  local -a listed
  local -A n=() c=() m=() g=() t=() of_type=() seen=() tl=()
  local order=() default=''
  while [[ -n $rest ]]; do
    line=${rest%%$'\n'*}
    rest=${rest#*$'\n'}
    line+='|||||'
    part=${line%%|*} line=${line#*|}
    nodes=${line%%|*} line=${line#*|}
    cpus=${line%%|*} line=${line#*|}
    mb=${line%%|*} line=${line#*|}
    gres=${line%%|*}
    if [[ $part == *\* ]]; then
      part=${part%\*}
      default=$part
    fi
    [[ $part =~ ^[A-Za-z0-9_.-]+$ ]] || continue
    if [[ ! -v n[$part] ]]; then
      order+=("$part")
      n[$part]=0 c[$part]=0 m[$part]=0 g[$part]=0
    fi
    # 4+ (nodes that differ, without sinfo -e) counts as its number.
    nodes=${nodes//[!0-9]/} cpus=${cpus//[!0-9]/} mb=${mb//[!0-9]/}
    n[$part]=$((n[$part] + 10#${nodes:-0}))
    ((10#${cpus:-0} <= c[$part])) || c[$part]=$((10#$cpus))
    ((10#${mb:-0} <= m[$part])) || m[$part]=$((10#$mb))
    # GRES: gpu:2, gpu:v100l:4(S:0-1),mps:100 or (null); what is in parentheses is dropped.
    count=0 of_type=()
    gres+=,
    while [[ -n $gres ]]; do
      entry=${gres%%,*}
      gres=${gres#*,}
      if [[ $entry == *\(* && $entry != *\)* && $gres == *\)* ]]; then
        # A socket list with commas, (S:0,1): skip to its end.
        gres=${gres#*\)}
        gres=${gres#*,}
      fi
      entry=${entry%%\(*}
      [[ $entry == "$hpc_profile_gpu_gres_name":* && ${entry##*:} == +([0-9]) ]] || continue
      count=$((count + 10#${entry##*:}))
      # gpu:TYPE:N: N GPUs of TYPE on each of these nodes.
      type=${entry#*:}
      type=${type%:*}
      [[ $type != *:* && $type != +([0-9]) ]] || continue
      of_type[$type]=$((${of_type[$type]:-0} + 10#${entry##*:}))
      # The partition's types in the order sinfo first names them.
      entry=$part/$type
      [[ -n ${seen[$entry]:-} ]] || {
        seen[$entry]=1
        tl[$part]+=" $type"
      }
    done
    ((count <= g[$part])) || g[$part]=$count
    for type in "${!of_type[@]}"; do
      entry=$part/$type
      count=${of_type[$type]}
      ((count <= ${t[$entry]:-0})) || t[$entry]=$count
    done
  done
  hpc_slurm_text=
  ((${#order[@]})) || return 0
  hpc_slurm_text="d${default:+ $default}"
  for part in "${order[@]}"; do
    types=''
    read -ra listed <<<"${tl[$part]:-}"
    for type in ${listed[@]+"${listed[@]}"}; do
      entry=$part/$type
      types+=,$type:${t[$entry]}
    done
    types=${types#,}
    hpc_slurm_text+=$'\n'"p $part ${n[$part]} ${c[$part]} ${m[$part]} ${g[$part]} ${types:--}"
  done
}

# hpc_fit_check SUMMARY: sets hpc_plan_misfit_option and hpc_plan_misfit (one line saying the
# largest value the cluster offers) for the first request no node of the plan's partitions could
# ever run; both empty when the plan fits.
hpc_fit_check() {
  local rest=$1$'\n' line part wanted=() all=() default='' where per_node factor
  local max_nodes=0 max_cpus=0 max_mb=0 max_gpus=0 nodes cpus mb gpus types
  local -a wanted_types=()
  local -A limits=()
  hpc_plan_misfit_option='' hpc_plan_misfit=''
  while [[ -n $rest ]]; do
    line=${rest%%$'\n'*}
    rest=${rest#*$'\n'}
    case $line in
      d) ;;
      'd '*) default=${line#d } ;;
      'p '*)
        line=${line#p }
        part=${line%% *}
        all+=("$part")
        limits[$part]=${line#* }
        ;;
    esac
  done
  ((${#all[@]})) || return 0
  # The plan's partition: -p, the profile's, or SBATCH_PARTITION (hpc_plan_make), as users set it.
  if [[ -n ${hpc_plan_partition:-} ]]; then
    IFS=, read -ra wanted <<<"$hpc_plan_partition"
  elif [[ $hpc_profile_partition_routed == true ]]; then
    # The cluster chooses a partition itself (its default too is only where a job starts out):
    # any of them may take the job.
    wanted=("${all[@]}")
  elif [[ -n $default ]]; then
    wanted=("$default")
  else
    hpc_plan_misfit_option=-p/--partition
    hpc_plan_misfit="the cluster has no default partition and none was given; accepted: ${all[*]}"
    return 0
  fi
  for part in "${wanted[@]}"; do
    if [[ ! -v limits[$part] ]]; then
      hpc_plan_misfit_option=${hpc_plan_partition_option:--p/--partition}
      hpc_plan_misfit="'$part' is not a partition of this cluster; accepted: ${all[*]}"
      return 0
    fi
    read -r nodes cpus mb gpus types <<<"${limits[$part]}"
    wanted_types+=("$types")
    ((nodes <= max_nodes)) || max_nodes=$nodes
    ((cpus <= max_cpus)) || max_cpus=$cpus
    ((mb <= max_mb)) || max_mb=$mb
    ((gpus <= max_gpus)) || max_gpus=$gpus
  done
  where="partition ${wanted[0]}"
  ((${#wanted[@]} == 1)) || where="any of the partitions ${wanted[*]}"
  if ((hpc_plan_nodes > max_nodes)); then
    hpc_plan_misfit_option=-n/--num-nodes
    hpc_plan_misfit="$hpc_plan_nodes nodes are more than $where has; accepted: 1 to $max_nodes"
    return 0
  fi
  if ((hpc_plan_gpus > max_gpus)); then
    hpc_plan_misfit_option=-g/--gpus
    hpc_plan_misfit="$hpc_plan_gpus GPUs per node is more than a node of $where has; accepted: "
    if ((max_gpus == 0)); then hpc_plan_misfit+="0 (it has no GPUs)"; else hpc_plan_misfit+="0 to $max_gpus"; fi
    return 0
  fi
  # -c is per process; a node runs factor of them (its GPUs, or one).
  per_node=$((hpc_plan_cpus_per_task * hpc_plan_ntasks_per_node))
  factor=$((per_node / hpc_plan_cpus))
  if ((max_cpus > 0 && per_node > max_cpus)); then
    hpc_plan_misfit_option=-c/--cpus
    hpc_plan_misfit="$hpc_plan_cpus CPUs per process (x $factor) is more than a node of $where has ($max_cpus);"
    hpc_plan_misfit+=" accepted: 1 to $((max_cpus / factor))"
    return 0
  fi
  # Nodes without a RealMemory show 1 MB: nothing to compare with then.
  if [[ -n $hpc_plan_mem ]] && ((max_mb > 1)); then
    hpc_plan_mem_mb "$hpc_plan_mem"
    if ((hpc_plan_mb > max_mb && hpc_plan_gpus > 0)); then
      hpc_plan_misfit_option=-m/--mem-per-gpu
      hpc_plan_misfit="$hpc_plan_mem_per_gpu x $hpc_plan_gpus GPU(s) is more memory than a node of $where has"
      hpc_plan_misfit+=" (${max_mb}M); accepted: at most $((max_mb / hpc_plan_gpus))M"
      return 0
    elif ((hpc_plan_mb > max_mb)); then
      hpc_plan_misfit_option=memory
      hpc_plan_misfit="the profile's defaults.mem_no_gpu $hpc_plan_mem is more than a node of $where has (${max_mb}M);"
      hpc_plan_misfit+=" accepted: at most ${max_mb}M in hpc_files/clusters/$hpc_profile_name.yaml"
      return 0
    fi
  fi
  # The GPU type last.
  hpc_fit_gpu_type "$hpc_plan_gpus" "$where" -g/--gpus "GPUs per node" "${wanted_types[@]}"
}

# hpc_fit_gpu_type GPUS WHERE COUNT_OPTION COUNT_WORDS TYPES...: judges GPUS GPUs per node of the
# plan's type (hpc_plan_gpu_type: -G, or the profile's gpu.default_type) against TYPES, the
# summary's types field of each partition WHERE names (TYPE:N,... or -). Sets
# hpc_plan_misfit_option and hpc_plan_misfit when no node there has that type, or fewer than GPUS
# of it (then naming COUNT_OPTION, COUNT_WORDS after the count); leaves them as they are when the
# type fits, when no type or no GPU is asked for, or when a TYPES is empty (a cache older than the
# types: not judged). For the tasks (hpc_fit_check) and a map's gather (hpc_map_check_gather_fit).
hpc_fit_gpu_type() {
  local gpus=$1 where=$2 count_option=$3 count_words=$4 types entry most=0 named='' text
  shift 4
  [[ -n ${hpc_plan_gpu_type:-} ]] && ((gpus > 0)) || return 0
  for types; do
    [[ -n $types ]] || return 0
    [[ $types != - ]] || continue
    for entry in ${types//,/ }; do
      [[ ,$named, == *,"${entry%:*}",* ]] || named+=,${entry%:*}
      [[ ${entry%:*} != "$hpc_plan_gpu_type" ]] || ((${entry##*:} <= most)) || most=${entry##*:}
    done
  done
  ((gpus > most)) || return 0
  text="'$hpc_plan_gpu_type'"
  [[ -n ${hpc_opt_gpu_type:-} ]] || text+=" (the profile's gpu.default_type)"
  if [[ -z $named ]]; then
    hpc_plan_misfit_option=-G/--gpu-type
    hpc_plan_misfit="$text: the GPUs of $where have no type; accepted: no -G (any GPU)"
  elif ((most == 0)); then
    hpc_plan_misfit_option=-G/--gpu-type
    named=${named#,}
    hpc_plan_misfit="$text is not a GPU type of $where; accepted: ${named//,/ }"
  else
    hpc_plan_misfit_option=$count_option
    hpc_plan_misfit="$gpus $hpc_plan_gpu_type $count_words is more than a node of $where has; accepted: 0 to $most"
  fi
}

# hpc_fit_judge: exit 2 with one line when no node could run the plan. Judged first on the cached
# summary; a refusal is confirmed with a fresh sinfo, so that an old cache never refuses what the
# cluster can now run. Nothing is judged when sinfo is missing or fails: SLURM decides then.
hpc_fit_judge() {
  ((hpc_slurm_fresh == 0)) || hpc_fit_summarize "$hpc_slurm_raw"
  [[ -n $hpc_slurm_text ]] || return 0
  hpc_fit_check "$hpc_slurm_text"
  [[ -n $hpc_plan_misfit ]] || return 0
  if ((hpc_slurm_fresh == 0)); then
    hpc_profile_slurm_facts 1
    hpc_fit_summarize "$hpc_slurm_raw"
    [[ -n $hpc_slurm_text ]] || return 0
    hpc_fit_check "$hpc_slurm_text"
    [[ -n $hpc_plan_misfit ]] || return 0
  fi
  hpc_die_usage "$hpc_plan_misfit_option" "$hpc_plan_misfit"
}
