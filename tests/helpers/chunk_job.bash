# shellcheck shell=bash
# Loaded by the unit tests of a chunked map's job side (chunked_map.bats, attack_issue39.bats).

# chunk_job TASK [real|folders]: sources the job's side of a map alone, for task TASK of array 40 of a map
# of 0-9 in chunks of 4; the program is the function 'program', run by a stand-in of
# hpc_job_run_program (with 'real': hpc_job.bash's own) and of hpc_job_own_folders.
# shellcheck disable=SC2329,SC2034 # stand-ins of the job's functions and its status, called and read
# by the sourced hpc_job.bash and hpc_map.bash (linted on their own)
chunk_job() {
  # shellcheck source=/dev/null # hpc_job.bash is linted on its own (tests/run.sh)
  source "$HPC_ROOT/hpc_files/lib/hpc_job.bash"
  # shellcheck source=/dev/null # hpc_map.bash is linted on its own (tests/run.sh)
  source "$HPC_ROOT/hpc_files/lib/hpc_map.bash"
  export SLURM_JOB_ID=41 SLURM_ARRAY_JOB_ID=40 SLURM_ARRAY_TASK_ID=$1
  map_root=$BATS_TEST_TMPDIR/map
  mkdir -p "$map_root/dir/tasks"
  # shellcheck disable=SC2034 # the job's variables, read by hpc_map.bash (the items' checkpoints)
  scratch_dir=$BATS_TEST_TMPDIR/scratch exp_name=exp
  # shellcheck disable=SC2034 # the plan's fields, read by hpc_map.bash
  hpc_plan_map_chunk=4 hpc_plan_map_count=10 hpc_plan_map_offset=0 hpc_plan_map_dir=$map_root/dir \
    hpc_plan_map_has_items=0 hpc_plan_map_chunk_stop=0 hpc_plan_mode=map hpc_job_warned=0 hpc_job_ended_by_slurm=0
  hpc_job_log() { printf '%s\n' "$*" >>"$BATS_TEST_TMPDIR/log"; }
  # With 'folders': hpc_job.bash's own.
  if [[ ${2-} != folders ]]; then hpc_job_own_folders() { :; }; fi
  hpc_job_task_variables_log() { :; }
  [[ ${2-} != real ]] || return 0
  hpc_job_run_program() {
    hpc_job_status=0
    program || hpc_job_status=$?
  }
}

# item_state INDEX: the state in item INDEX's status.json (none: -).
item_state() {
  python3 -c 'import json,sys
try: print(json.load(open(sys.argv[1]))["state"])
except OSError: print("-")' "$map_root/dir/tasks/$1/status.json"
}
