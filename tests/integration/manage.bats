#!/usr/bin/env bats
# status, logs, cancel and resubmit on the local cluster, for jobs submitted through the real
# submitter: a single job, a 2-node job, arrays (--repeat), and resubmit --failed of a 4-task
# array whose tasks 2 and 4 failed. The local cluster has no accounting (sacct fails): states come
# from squeue and scontrol.
# shellcheck disable=SC2016 # configs lines are single-quoted on purpose: the job expands them
# Set by hpc_run_job or hpc_submit_job (helpers/cluster.bash); declared for shellcheck.
declare -g job_id job_out

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/cluster'
  hpc_test_project "manage project"
  cp "$HPC_ROOT/tests/fixtures/manage/tasks.py" "$PROJECT/"
  # The venv: a copy of the one built once per bats run, which the toolkit's own test of a ready
  # build takes (hpc_venv_seed): no warm-up job.
  hpc_venv_seed "$PROJECT"
}

setup() {
  load '../helpers/common'
  load '../helpers/cluster'
  submitter=$PROJECT/hpc_files/job_submitter.sh
  outputs="$SCRATCH/manage project/hpc_outputs"
  manifests=$outputs/manifests
}

# manage ARGS...: runs a command of the submitter, stdout and stderr apart.
manage() {
  run --separate-stderr bash "$submitter" "$@" </dev/null
}

# row KEY: the status line of KEY (a job id or ARRAYID_TASK), its spaces squeezed.
row() {
  grep -E "^$1 " <<<"$output" | tr -s ' '
}

# wait_running ID [TIMEOUT_S]: waits until a task of job ID runs (fails the test on timeout).
wait_running() {
  local start=$SECONDS
  until squeue -h -r -j "$1" -o '%T' 2>/dev/null | grep -qx RUNNING; do
    ((SECONDS - start < ${2:-60})) || fail "job $1 did not start within ${2:-60}s"
    sleep 0.2
  done
}

@test "a single job: status, logs of the experiment and of the job id, nothing to cancel" {
  hpc_configs "$PROJECT" 'python probe.py exit 0'
  hpc_submit_job "$PROJECT" -g 0 -e single
  hpc_wait_job "$job_id" 60
  manage status single
  assert_equal "$status" 0
  assert_equal "${#lines[@]}" 2
  assert_equal "$(row "$job_id")" "$job_id single venv-none COMPLETED 0:0 $job_out"
  manage logs single
  assert_equal "$status" 0
  assert_line "EXIT rank=0 code=0"
  assert_equal "$output" "$(cat "$job_out")"
  manage logs "$job_id"
  assert_line "EXIT rank=0 code=0"
  manage cancel single
  assert_equal "$status" 0
  assert_output "Nothing to cancel: no recorded job of single is pending or running."
  # The manifest holds what was submitted.
  grep -qx "job_id	$job_id" "$manifests/single_$job_id.manifest"
  grep -qx "script	$outputs/single_venv-none_$job_id.sh" "$manifests/single_$job_id.manifest"
}

@test "a 2-node job: status and logs of both nodes; cancel while it runs ends it CANCELLED" {
  hpc_configs "$PROJECT" 'python probe.py env'
  hpc_submit_job "$PROJECT" -W lightning --gpus 1 --num-nodes 2 -e multi
  hpc_wait_job "$job_id" 60
  manage status multi
  assert_equal "$(row "$job_id")" "$job_id multi venv-lightning COMPLETED 0:0 $job_out"
  manage logs multi
  assert_equal "$(grep -c '^PROBE ' <<<"$output")" 2
  assert_output --partial '"SLURMD_NODENAME": "n1"'
  assert_output --partial '"SLURMD_NODENAME": "n2"'

  hpc_configs "$PROJECT" 'python tasks.py sleep 300'
  hpc_submit_job "$PROJECT" -W lightning --gpus 1 --num-nodes 2 -e multi-sleep
  wait_running "$job_id"
  manage status multi-sleep
  assert_equal "$(row "$job_id")" "$job_id multi-sleep venv-lightning RUNNING - $job_out"
  manage cancel multi-sleep
  assert_equal "$status" 0
  assert_output "cancelled $job_id (multi-sleep, was RUNNING)"
  hpc_wait_job "$job_id" 60
  manage status multi-sleep
  assert_equal "$(row "$job_id" | cut -d' ' -f1-4)" "$job_id multi-sleep venv-lightning CANCELLED"
  # The earlier experiment's job was left alone.
  manage status multi
  assert_line --partial " COMPLETED "
}

@test "an array (--repeat 4, tasks 1 and 3 fail): one status line per task, logs per task, resubmit --failed redoes 1 and 3" {
  grep -q -- '--repeat)' "$HPC_ROOT/hpc_files/lib/hpc_options.bash" || skip "--repeat is not in this version"
  hpc_configs "$PROJECT" 'python tasks.py fail 1,3 3'
  hpc_submit_job "$PROJECT" -g 0 --repeat 4 -e rep
  hpc_wait_job "$job_id" 90
  local id=$job_id
  manage status rep
  assert_equal "$status" 0
  assert_equal "${#lines[@]}" 5
  for task in 0 1 2 3; do
    want="COMPLETED 0:0"
    [[ $task != [13] ]] || want="FAILED 3:0"
    assert_equal "$(row "${id}_$task")" "${id}_$task rep venv-none $want $outputs/rep_venv-none_${id}_$task.out"
  done
  manage logs "${id}_1"
  assert_line --regexp '^TASK id=1 job=[0-9]+ code=3$'
  manage logs rep
  assert_equal "$(grep -c '^==> .* <==$' <<<"$output")" 4
  assert_equal "$(grep -c '^TASK id=' <<<"$output")" 4

  manage resubmit rep --failed
  assert_equal "$status" 0
  new=$(sed -n 's/.* as job \([0-9][0-9]*\)$/\1/p' <<<"${lines[0]}")
  [[ -n $new ]] || fail "no new job id in: $output"
  # The array's throttle (from the profile) is kept.
  assert_line --index 0 --regexp "^Resubmitted task\(s\) 1,3 \(array 1,3%[0-9]+\) of rep as job $new$"
  hpc_wait_job "$new" 60
  run bash -c "scontrol -o show job $new | grep -o 'ArrayTaskId=[^ ]*' | sort"
  assert_output "ArrayTaskId=1
ArrayTaskId=3"
}

@test "logs of an array: JOBID_TASK prints that task's file, whose header names that task; JOBID every task; an unknown task or job exit 2" {
  grep -q -- '--repeat)' "$HPC_ROOT/hpc_files/lib/hpc_options.bash" || skip "--repeat is not in this version"
  hpc_configs "$PROJECT" 'python tasks.py fail 9 3'
  hpc_submit_job "$PROJECT" -g 0 --repeat 2 -e rep-logs
  hpc_wait_job "$job_id" 90
  local id=$job_id task raw file
  for task in 0 1; do
    file=$outputs/rep-logs_venv-none_${id}_$task.out
    raw=$(scontrol -o show job "${id}_$task" | grep -o 'JobId=[0-9]*' | head -1)
    raw=${raw#JobId=}
    manage logs "${id}_$task"
    assert_equal "$status" 0
    assert_equal "$output" "$(<"$file")"
    assert_line --index 0 --regexp "^\[hpc n[12]\] job ${id}_$task \(job id $raw; venv, launcher none\) on n[12]: 1 node\(s\) x 0 GPU\(s\), restart 0, OMP_NUM_THREADS=[0-9]+, SIGUSR1 [0-9]+ s before the time limit$"
    assert_line "TASK id=$task job=$raw code=0"
  done
  manage logs "$id"
  assert_equal "$status" 0
  assert_equal "$output" "==> $outputs/rep-logs_venv-none_${id}_0.out <==
$(<"$outputs/rep-logs_venv-none_${id}_0.out")
==> $outputs/rep-logs_venv-none_${id}_1.out <==
$(<"$outputs/rep-logs_venv-none_${id}_1.out")"
  manage logs "${id}_2"
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: ${id}_2: job $id has no array task 2 (its array: 0-1%$(sed -n 's/^array\t0-1%//p' "$manifests/rep-logs_$id.manifest"))"
  manage logs 999999
  assert_equal "$status" 2
  assert_output ''
  [[ $stderr == "job_submitter.sh: 999999: not a job or an experiment recorded for project manage project (see 'bash job_submitter.sh status'); known: "* ]]
}

@test "a requeued job, during SLURM's requeue delay: status says requeued and when it restarts, as scontrol does" {
  hpc_configs "$PROJECT" 'python tasks.py sleep 300'
  hpc_submit_job "$PROJECT" -g 0 --requeue 1 -e requeue-status
  wait_running "$job_id"
  local id=$job_id when
  scontrol requeue "$id"
  # SLURM holds a requeued job back (BeginTime) until its restart.
  for _ in $(seq 50); do
    [[ $(squeue -h -j "$id" -o '%T|%r') == PENDING\|BeginTime ]] && break
    sleep 0.2
  done
  when=$(scontrol -o show job "$id" | grep -o 'StartTime=[^ ]*')
  when=${when#StartTime=}
  [[ $when =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T ]] || fail "no start time: $(scontrol -o show job "$id")"
  manage status requeue-status
  scancel "$id"
  assert_equal "$status" 0
  assert_equal "$(row "$id")" "$id requeue-status venv-none PENDING (requeued, restarts at $when) - $job_out"
}

@test "an array being run: cancel cancels its tasks, and status shows them CANCELLED" {
  grep -q -- '--repeat)' "$HPC_ROOT/hpc_files/lib/hpc_options.bash" || skip "--repeat is not in this version"
  hpc_configs "$PROJECT" 'python tasks.py sleep 300'
  hpc_submit_job "$PROJECT" -g 0 --repeat 2 -e rep-sleep
  wait_running "$job_id"
  local id=$job_id
  manage cancel rep-sleep
  assert_equal "$status" 0
  assert_line --regexp "^cancelled ${id}_0 \(rep-sleep, was (RUNNING|PENDING)\)$"
  assert_line --regexp "^cancelled ${id}_1 \(rep-sleep, was (RUNNING|PENDING)\)$"
  hpc_wait_job "$id" 60
  manage status rep-sleep
  assert_equal "$(row "${id}_0" | cut -d' ' -f1-4)" "${id}_0 rep-sleep venv-none CANCELLED"
  assert_equal "$(row "${id}_1" | cut -d' ' -f1-4)" "${id}_1 rep-sleep venv-none CANCELLED"
}

@test "resubmit --failed on a 4-task array (1-4) whose tasks 2 and 4 failed resubmits exactly 2 and 4" {
  # The array: the kept script of a submission, submitted again by sbatch with --array=1-4 and
  # recorded by the library, as a submission of the array would be. Its output names each task
  # by its own job id (%j), which status and logs learn from SLURM.
  hpc_configs "$PROJECT" 'python tasks.py fail 2,4 3'
  hpc_submit_job "$PROJECT" -g 0 -e four
  hpc_wait_job "$job_id" 60
  local single=$job_id
  run bash -c '
    set -euo pipefail
    source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
    source "$HPC_ROOT/hpc_files/lib/hpc_manifest.bash"
    hpc_manifest_read "$1/four_$2.manifest"
    id=$(sbatch --parsable "${hpc_mf_sbatch[@]}" --array=1-4 "${hpc_mf[script]}")
    id=${id%%;*}
    printf -v tab "\t"
    printf -v nl "\n"
    hpc_manifest_text=
    hpc_manifest_put format 1
    hpc_manifest_put array 1-4
    hpc_manifest_put job_id "$id"
    hpc_manifest_put origin "$id"
    for line in "${hpc_mf_lines[@]}"; do
      case ${line%%"$tab"*} in format | array | job_id | origin | output_path) ;; *) hpc_manifest_text+=$line$nl ;; esac
    done
    hpc_manifest_commit "$1/four_$id.manifest"
    printf "%s\n" "$id"' _ "$manifests" "$single"
  assert_equal "$status" 0
  local id=$output
  hpc_wait_job "$id" 90
  manage status four
  assert_equal "$status" 0
  assert_equal "${#lines[@]}" 6
  for task in 1 2 3 4; do
    want="COMPLETED 0:0"
    [[ $task != [24] ]] || want="FAILED 3:0"
    raw=$(scontrol -o show job "$id" | grep -o "JobId=[0-9]* ArrayJobId=$id ArrayTaskId=$task " | sed 's/JobId=\([0-9]*\).*/\1/')
    assert_equal "$(row "${id}_$task")" "${id}_$task four venv-none $want $outputs/four_venv-none_$raw.out"
  done
  manage logs "${id}_4"
  assert_line --regexp '^TASK id=4 job=[0-9]+ code=3$'

  manage resubmit four --failed
  assert_equal "$status" 0
  new=$(sed -n 's/.* as job \([0-9][0-9]*\)$/\1/p' <<<"${lines[0]}")
  assert_equal "${lines[0]}" "Resubmitted task(s) 2,4 (array 2,4) of four as job $new"
  run bash -c "scontrol -o show job $new | grep -o 'ArrayTaskId=[^ ]*' | sort"
  # Pending together (2,4) or started one by one (2 and 4).
  [[ $output == "ArrayTaskId=2,4" || $output == "ArrayTaskId=2"$'\n'"ArrayTaskId=4" ]] || fail "array of job $new: $output"
  grep -qx "array	2,4" "$manifests/four_$new.manifest"
  grep -qx "resubmit_of	$id" "$manifests/four_$new.manifest"
  hpc_wait_job "$new" 60
  manage status four
  assert_equal "${#lines[@]}" 8
  assert_equal "$(row "${new}_2" | cut -d' ' -f1-5)" "${new}_2 four venv-none FAILED 3:0"
  assert_equal "$(row "${new}_4" | cut -d' ' -f1-5)" "${new}_4 four venv-none FAILED 3:0"
}
