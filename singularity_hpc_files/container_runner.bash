# shellcheck shell=bash
# container_runner.bash: the Singularity/Apptainer runner: the submit-time checks of
# -s/--singularity-container and --workdir, and, in the job, the per-node setup (the image
# copied once into SLURM_TMPDIR, the bind sources made there), the environment handed to the
# program (APPTAINERENV_/SINGULARITYENV_ variables, never its command line) and the runtime's
# command line. Needs hpc_files/lib/hpc_common.bash (hpc_say) sourced first, and
# hpc_files/lib/hpc_configs.bash for hpc_container_expand. Safe under set -euo pipefail; every
# path may hold spaces (but not ',' or ':', which Apptainer's --bind cannot carry).
#
# What the program sees in the container (hpc_container_argv, hpc_container_export_job_env):
#   /scratch_storage  <scratch_dir>/<exp_name>/singularity_<SLURM_JOB_ID>_<SLURM_ARRAY_TASK_ID:-0>
#                     on the shared scratch, made by hpc_container_argv and kept after the job
#   /checkpoints      the experiment's checkpoints_dir on scratch (each array task its own),
#                     made by the job and kept: checkpoints_dir=/checkpoints
#   /data             $SLURM_TMPDIR/data: staged data (--data data/x is /data/x)
#   $HOME /tmp /db    $SLURM_TMPDIR/home, tmp, db: node-local, removed with SLURM_TMPDIR
#   the workdir       $SLURM_TMPDIR/workdir at --workdir PATH (default /hpc_workdir): where the
#                     command starts (--pwd, and HPC_WORKDIR for the template's runscript)
#   /hpc_python_helpers  the toolkit's hpc_helpers package (read-only), when hpc_plan_python_helpers
#                     names a folder; the template's runscript puts it on PYTHONPATH
#   /map              a map task's or gather job's map_dir (hpc_map.bash), on scratch: map_dir=/map,
#                     task_dir=/map/tasks/<map_index>, map_status_file=/map/<its name>
#
# Multi-node: with -W torchrun the job starts one task per node and each runs ONE container in
# which torchrun starts the node's ranks: the argv given to hpc_container_argv is the torchrun
# command the job builds as for a venv (python -m torch.distributed.run --nnodes ... --no-python
# python train.py ...). With -W lightning every SLURM task (one per GPU, under srun) runs its own
# container, and Lightning reads the SLURM_* variables passed to it.

# hpc_container_image: the absolute path of the image checked by hpc_container_check_image.
hpc_container_image=''
# hpc_container_workdir: the workdir checked by hpc_container_check_workdir (no trailing /).
hpc_container_workdir=''
# hpc_container_default_workdir: the workdir when --workdir is not given (no image uses it).
hpc_container_default_workdir=/hpc_workdir
# hpc_container_cmd: the runtime's full command line, made by hpc_container_argv.
hpc_container_cmd=()
# hpc_container_scratch: the per-job folder on scratch bound at /scratch_storage.
hpc_container_scratch=''
# hpc_container_extra_binds: more SRC:DST[:ro] binds for hpc_container_argv (e.g. a profile's).
hpc_container_extra_binds=()

# The bind targets the runner owns: a workdir may not be one of them or inside one.
_hpc_container_reserved=(/scratch_storage /checkpoints /data /db /tmp /hpc_python_helpers /map /.singularity.d
  /proc /sys /dev)
# Folders of the image a workdir bind would hide as a whole.
_hpc_container_system=(/ /bin /boot /etc /home /lib /lib32 /lib64 /opt /root /run /sbin /srv
  /usr /usr/bin /usr/lib /usr/local /var)

# hpc_container_is_sif PATH: true when PATH starts like a SIF file (the magic at byte 32).
hpc_container_is_sif() {
  [[ $(head -c 41 -- "$1" 2>/dev/null | tail -c 9) == SIF_MAGIC ]]
}

# hpc_container_check_image PATH: submit time. PATH must be a readable SIF file whose name ends
# in .sif; sets hpc_container_image to its absolute path. Else one line
# "-s/--singularity-container: '<path>': <problem>" and status 2.
hpc_container_check_image() {
  local path=${1-} problem=''
  if [[ -z $path ]]; then
    problem='no image given: name a .sif file, built with apptainer build IMAGE.sif Singularity.def'
  elif [[ ! -e $path ]]; then
    problem='no such file'
  elif [[ -d $path ]]; then
    problem='is a folder; give the .sif image file (sandbox folders are not supported)'
  elif [[ $path != *.sif ]]; then
    problem='not a .sif file: build the image with apptainer build IMAGE.sif Singularity.def'
  elif [[ ! -r $path ]]; then
    problem='not readable'
  elif ! hpc_container_is_sif "$path"; then
    problem='not a SIF image (no SIF header): build it with apptainer build IMAGE.sif Singularity.def'
  fi
  if [[ -n $problem ]]; then
    hpc_say "-s/--singularity-container: '$path': $problem"
    return 2
  fi
  hpc_container_image=$(cd -- "$(dirname -- "$path")" && pwd)/${path##*/}
  if [[ $hpc_container_image == *[,:]* ]]; then
    local msg="-s/--singularity-container: '$path': a path with ',' or ':' cannot be bound by Apptainer;"
    msg+=" move or rename the image"
    hpc_say "$msg"
    return 2
  fi
}

# hpc_container_check_workdir PATH: submit time. PATH must be an absolute path inside the
# container, not a system folder or one of the runner's bind targets; sets
# hpc_container_workdir. Else one line "--workdir: '<path>': <problem>" and status 2.
hpc_container_check_workdir() {
  local path=${1-} problem='' clean target
  clean=$path
  while [[ $clean == */ && $clean != / ]]; do clean=${clean%/}; done
  if [[ -z $path ]]; then
    problem='empty: give an absolute path inside the container, e.g. /code'
  elif [[ $path != /* ]]; then
    problem='not an absolute path: give the folder inside the container, e.g. /code'
  elif [[ $path == *[,:]* ]]; then
    problem="',' and ':' cannot be used in a bind target"
  elif [[ $path == *//* ]]; then
    problem="'//' in the path: write it once, e.g. /code"
  elif [[ /$clean/ == */./* || /$clean/ == */../* ]]; then
    problem="'.' and '..' are not allowed: give the plain path, e.g. /code"
  fi
  # The first problem found is the one named.
  for target in "${_hpc_container_system[@]}"; do
    [[ -n $problem || $clean != "$target" ]] ||
      problem="the workdir bind would hide the image's $target: use a folder of its own, e.g. /code"
  done
  for target in "${_hpc_container_reserved[@]}"; do
    [[ -n $problem ]] || [[ $clean != "$target" && $clean != "$target"/* ]] ||
      problem="$target is bound by the job itself: use a folder of its own, e.g. /code"
  done
  if [[ -z $problem && -n ${HOME:-} && $clean == "${HOME%/}" ]]; then
    problem="that is \$HOME, which the job binds to a node-local home: use a folder of its own, e.g. /code"
  fi
  if [[ -n $problem ]]; then
    hpc_say "--workdir: '$path': $problem"
    return 2
  fi
  # shellcheck disable=SC2034 # a result for the submitter, which sources this file
  hpc_container_workdir=$clean
}

# hpc_container_check_data PATH...: submit time, container jobs only. In the container only what
# lands under SLURM_TMPDIR/data is visible (at /data): each PATH must be data or start with
# data/. Else one line "-d/--data: '<path>': <problem>" and status 2.
hpc_container_check_data() {
  local path
  for path in "$@"; do
    case ${path#./} in
      data | data/*) ;;
      *)
        local msg="-d/--data: '$path': a container job sees staged data only under /data: stage it from data/"
        msg+=" (data/x is /data/x in the container)"
        hpc_say "$msg"
        return 2
        ;;
    esac
  done
}

# hpc_container_runtime: prints the runtime to call on this node: apptainer when it is on PATH,
# else singularity; else one line naming both and status 1.
hpc_container_runtime() {
  if command -v apptainer >/dev/null 2>&1; then
    printf 'apptainer\n'
  elif command -v singularity >/dev/null 2>&1; then
    printf 'singularity\n'
  else
    hpc_say "neither apptainer nor singularity is on this node (load the module in the cluster profile)"
    return 1
  fi
}

# hpc_container_node_setup IMAGE TMPDIR: once per node, after SLURM_TMPDIR exists. Copies IMAGE
# to TMPDIR/image.sif unless a copy of the same size and time is there, and makes the bind
# sources TMPDIR/{data,home,tmp,db,workdir}. Safe to call from every task of a node at once (a
# lock on TMPDIR/.hpc_container.lock: the first copies, the others find the copy); status 1 with
# one line on failure.
hpc_container_node_setup() {
  local image=${1-} tmpdir=${2-}
  if [[ ! -f $image || ! -r $image ]]; then
    hpc_say "container: the image '$image' is missing or unreadable on this node"
    return 1
  fi
  if [[ ! -d $tmpdir ]]; then
    hpc_say "container: SLURM_TMPDIR '$tmpdir' is not a folder on this node"
    return 1
  fi
  if command -v flock >/dev/null 2>&1; then
    {
      flock -w 900 9 || {
        hpc_say "container: waited 900 s for another task's copy of the image into '$tmpdir'"
        return 1
      }
      _hpc_container_node_setup_locked "$image" "$tmpdir"
    } 9>>"$tmpdir/.hpc_container.lock"
  else
    _hpc_container_node_setup_locked "$image" "$tmpdir"
  fi
}

# _hpc_container_node_setup_locked IMAGE TMPDIR: hpc_container_node_setup's work, under its lock.
_hpc_container_node_setup_locked() {
  local image=$1 tmpdir=$2 copy=$2/image.sif partial
  if [[ ! -f $copy || $(stat -c '%s %Y' -- "$image") != "$(stat -c '%s %Y' -- "$copy")" ]]; then
    partial=$(mktemp "$tmpdir/.image.sif.XXXXXX") || {
      hpc_say "container: cannot write in '$tmpdir'"
      return 1
    }
    if ! cp --preserve=timestamps -- "$image" "$partial" || ! mv -f -- "$partial" "$copy"; then
      rm -f -- "$partial"
      hpc_say "container: copying the image '$image' to '$copy' failed (space on the node?)"
      return 1
    fi
  fi
  mkdir -p -- "$tmpdir/data" "$tmpdir/home" "$tmpdir/tmp" "$tmpdir/db" "$tmpdir/workdir" || {
    hpc_say "container: cannot make the bind folders in '$tmpdir'"
    return 1
  }
}

# hpc_container_helpers_bindable: true when the job's hpc_helpers folder (its plan's
# hpc_plan_python_helpers) is there and Apptainer's --bind can carry its path (no ',' or ':').
hpc_container_helpers_bindable() {
  local dir=${hpc_plan_python_helpers:-}
  [[ -n $dir && -d $dir && $dir != *[,:]* ]]
}

# hpc_container_argv RUNTIME TMPDIR SCRATCH_DIR EXP_NAME WORKDIR ARGV...: one task. Makes the
# per-job scratch folder SCRATCH_DIR/EXP_NAME/singularity_<SLURM_JOB_ID>_<SLURM_ARRAY_TASK_ID:-0>
# (kept after the job) and sets hpc_container_cmd to the runtime's command line that runs ARGV
# in TMPDIR/image.sif (WORKDIR empty: hpc_container_default_workdir). The binds are listed
# parents first, so that none hides another. Status 1 with one line on failure.
hpc_container_argv() {
  if (($# < 6)); then
    hpc_say "container: hpc_container_argv RUNTIME TMPDIR SCRATCH_DIR EXP_NAME WORKDIR ARGV... (got $# arguments)"
    return 1
  fi
  local runtime=$1 tmpdir=${2%/} scratch_dir=${3%/} exp_name=$4 workdir=${5:-$hpc_container_default_workdir}
  shift 5
  local home=${HOME:-} path bind helpers=() checkpoints=() ckpt='' map=()
  hpc_container_cmd=()
  if [[ ! -f $tmpdir/image.sif ]]; then
    hpc_say "container: no image in '$tmpdir' (hpc_container_node_setup was not run on this node)"
    return 1
  fi
  if [[ -z $scratch_dir || -z ${SLURM_JOB_ID:-} || $home != /* ]]; then
    local msg="container: scratch_dir, SLURM_JOB_ID and an absolute HOME are needed"
    msg+=" (got '$scratch_dir', '${SLURM_JOB_ID:-}', '$home')"
    hpc_say "$msg"
    return 1
  fi
  hpc_container_scratch=$scratch_dir${exp_name:+/$exp_name}/singularity_${SLURM_JOB_ID}_${SLURM_ARRAY_TASK_ID:-0}
  # The experiment's checkpoints_dir (made by the batch shell): kept on scratch, like the job's folder.
  [[ -z ${checkpoints_dir:-} || ! -d $checkpoints_dir ]] || ckpt=$checkpoints_dir
  [[ -z $ckpt ]] || checkpoints=(--bind "$ckpt:/checkpoints")
  # A map's folder (a map task or its gather): the tasks' status and results, on scratch.
  [[ -z ${map_dir:-} || ! -d $map_dir ]] || map=(--bind "$map_dir:/map")
  for path in "$tmpdir" "$hpc_container_scratch" "$home" "$workdir" ${ckpt:+"$ckpt"} ${map[1]:+"${map_dir:-}"}; do
    if [[ $path == *[,:]* ]]; then
      hpc_say "container: '$path' holds ',' or ':', which Apptainer's --bind cannot carry"
      return 1
    fi
  done
  mkdir -p -- "$hpc_container_scratch" || {
    hpc_say "container: cannot make the scratch folder '$hpc_container_scratch'"
    return 1
  }
  if hpc_container_helpers_bindable; then
    helpers=(--bind "$hpc_plan_python_helpers:/hpc_python_helpers:ro")
  fi
  hpc_container_cmd=("$runtime" run --nv --cleanenv --containall --no-home --writable-tmpfs
    --bind "$tmpdir/tmp:/tmp"
    --bind "$tmpdir/data:/data"
    --bind "$tmpdir/db:/db"
    --bind "$hpc_container_scratch:/scratch_storage"
    ${checkpoints[@]+"${checkpoints[@]}"}
    ${map[@]+"${map[@]}"}
    --bind "$tmpdir/home:$home"
    --bind "$tmpdir/workdir:$workdir")
  # (${a[@]+"${a[@]}"}: an empty array is an error under set -u before bash 4.4.)
  hpc_container_cmd+=(${helpers[@]+"${helpers[@]}"})
  for bind in ${hpc_container_extra_binds[@]+"${hpc_container_extra_binds[@]}"}; do
    hpc_container_cmd+=(--bind "$bind")
  done
  hpc_container_cmd+=(--pwd "$workdir" "$tmpdir/image.sif" "$@")
}

# hpc_container_export_env NAME|NAME=VALUE...: hands variables to the program: for each NAME set
# in the environment (or given a VALUE), exports APPTAINERENV_NAME and SINGULARITYENV_NAME (the
# prefixes of Apptainer and of Singularity; Apptainer is silent when both hold the same value).
# An unset NAME is skipped. Status 2 on a bad name.
hpc_container_export_env() {
  local item name value
  for item in "$@"; do
    name=${item%%=*}
    if [[ ! $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
      hpc_say "container: '$name' is not a variable name"
      return 2
    fi
    if [[ $item == *=* ]]; then
      value=${item#*=}
    elif [[ -n ${!name+x} ]]; then
      value=${!name}
    else
      continue
    fi
    export "APPTAINERENV_$name=$value" "SINGULARITYENV_$name=$value"
  done
}

# hpc_container_export_job_env WORKDIR: hands the program what it needs (see
# hpc_container_export_env), each when set: every SLURM_* and SLURMD_* variable (SLURM_TMPDIR
# as /tmp), CUDA_VISIBLE_DEVICES, GPU_DEVICE_ORDINAL, ROCR_VISIBLE_DEVICES, MASTER_ADDR,
# MASTER_PORT, NODE_RANK (default SLURM_NODEID), project_name, exp_name, num_nodes,
# gpus_per_node, num_processes, HPC_WARNING_SIGNAL, HPC_RESTART_COUNT, HPC_DIST_SOURCE, every WANDB_*
# (WANDB_API_KEY among them);
# and the container's own paths: source_dir and HPC_WORKDIR = WORKDIR (default
# hpc_container_default_workdir), scratch_dir=/scratch_storage, checkpoints_dir=/checkpoints
# (when the job has one: see hpc_container_argv), HPC_PYTHON_HELPERS (when the
# helpers are bound, see hpc_container_argv); a map's variables (map_index, map_item, map_count,
# map_ok, map_failed, map_n_ok, map_n_failed as they are; map_dir, task_dir, map_status_file as
# seen under /map: hpc_container_map_paths).
hpc_container_export_job_env() {
  local workdir=${1:-$hpc_container_default_workdir} name names=()
  for name in $(compgen -e); do
    case $name in
      SLURM_TMPDIR) ;;
      SLURM_* | SLURMD_* | WANDB_*) names+=("$name") ;;
    esac
  done
  names+=(CUDA_VISIBLE_DEVICES GPU_DEVICE_ORDINAL ROCR_VISIBLE_DEVICES MASTER_ADDR MASTER_PORT
    project_name exp_name num_nodes gpus_per_node num_processes HPC_WARNING_SIGNAL HPC_RESTART_COUNT HPC_DIST_SOURCE)
  if [[ -n ${NODE_RANK:-} ]]; then
    names+=(NODE_RANK)
  elif [[ -n ${SLURM_NODEID:-} ]]; then
    names+=("NODE_RANK=$SLURM_NODEID")
  fi
  names+=("SLURM_TMPDIR=/tmp" "scratch_dir=/scratch_storage" "source_dir=$workdir" "HPC_WORKDIR=$workdir")
  [[ -z ${checkpoints_dir:-} ]] || names+=("checkpoints_dir=/checkpoints")
  names+=(map_index map_item map_count map_ok map_failed map_n_ok map_n_failed)
  if [[ -n ${map_dir:-} ]]; then
    hpc_container_map_paths
    names+=("map_dir=/map")
    [[ -z ${task_dir:-} ]] || names+=("task_dir=$hpc_container_task_dir")
    [[ -z ${map_status_file:-} ]] || names+=("map_status_file=$hpc_container_map_status_file")
  fi
  if hpc_container_helpers_bindable; then
    names+=("HPC_PYTHON_HELPERS=/hpc_python_helpers")
  fi
  hpc_container_export_env "${names[@]}"
}

# hpc_container_expand WORKDIR TEMPLATE...: hpc_configs_expand of the configs templates as the
# program sees its paths: $scratch_dir is /scratch_storage, $SLURM_TMPDIR is /tmp,
# $checkpoints_dir is /checkpoints (when the job has one) and $source_dir and $HPC_WORKDIR are WORKDIR (default
# hpc_container_default_workdir) while it expands; sets hpc_configs_argv, returns its status. The caller's variables are
# unchanged afterwards.
hpc_container_expand() {
  # shellcheck disable=SC2034 # hpc_configs_expand reads them by name (${!NAME}), in this scope
  local scratch_dir=/scratch_storage SLURM_TMPDIR=/tmp source_dir=${1:-$hpc_container_default_workdir}
  # shellcheck disable=SC2034 # as above
  local HPC_WORKDIR=$source_dir
  [[ -z ${checkpoints_dir:-} ]] || local checkpoints_dir=/checkpoints
  if [[ -n ${map_dir:-} ]]; then
    hpc_container_map_paths
    # shellcheck disable=SC2034 # as above
    local map_dir=/map task_dir=$hpc_container_task_dir map_status_file=$hpc_container_map_status_file
  fi
  shift
  hpc_configs_expand "$@"
}

# hpc_container_map_paths: a map's task_dir and map_status_file as the program sees them, under
# /map (map_dir's bind): sets hpc_container_task_dir and hpc_container_map_status_file ('' when
# unset; a path outside map_dir is kept as it is).
hpc_container_map_paths() {
  hpc_container_task_dir=${task_dir:-} hpc_container_map_status_file=${map_status_file:-}
  [[ $hpc_container_task_dir != "$map_dir"/* ]] || hpc_container_task_dir=/map/${hpc_container_task_dir#"$map_dir"/}
  [[ $hpc_container_map_status_file != "$map_dir"/* ]] ||
    hpc_container_map_status_file=/map/${hpc_container_map_status_file#"$map_dir"/}
}
