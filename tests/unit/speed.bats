#!/usr/bin/env bats
# What a submission costs, counted (never timed): the processes job_submitter.sh starts and the
# library files it reads, without SLURM (the PATH stubs of tests/fixtures/submitter/bin), in the
# steady state that bench/submit and bench/map time (venv built, profile and SLURM facts cached,
# folders there: the second of two equal submissions is the one counted).
# Processes are counted with strace -f: a fork of the submitter, or of a subshell of it, is one
# of its processes; what a stub (a program it started) does is not. A subshell between the
# submitter and sbatch, as $(unset X && sbatch ... 2>&1) makes (Bash forks again for a command
# with a redirection in a command substitution), is one more process: `exec` avoids it.

bats_require_minimum_version 1.5.0

setup_file() {
  load '../helpers/common'
  load '../helpers/submitter'
  hpc_test_warm_profiles
}

setup() {
  load '../helpers/common'
  # shellcheck source=tests/helpers/submitter.bash
  source "$BATS_TEST_DIRNAME/../helpers/submitter.bash"
  hpc_test_submitter_project "$(hpc_test_tmp)/cache" "$(hpc_test_tmp)/scratch"
  hpc_test_venv_built "$project"
  # As SLURM says it (scontrol show config), for the maps: kept for 10 minutes, so not asked the
  # second time.
  export HPC_STUB_MAX_ARRAY_SIZE=1001
  command -v strace >/dev/null || skip "strace is not installed"
  strace -f -o /dev/null true 2>/dev/null || skip "strace cannot trace here (ptrace not permitted)"
}

# forks_of ARGS...: runs the submitter with ARGS twice and the second time under strace; sets
# forks to the programs its own processes started, sorted, one word each ('-' for a process
# that started none: a subshell), and files to the library files it read (their names, sorted).
forks_of() {
  local trace="$BATS_TEST_TMPDIR/strace.txt"
  bash "$submitter" "$@" >/dev/null 2>&1 || fail "the first submission failed"
  strace -f -qq -e trace=execve,clone,clone3,fork,vfork,openat,open -o "$trace" \
    bash "$submitter" "$@" >"$BATS_TEST_TMPDIR/out" 2>&1 || fail "the submission under strace failed: $(cat "$BATS_TEST_TMPDIR/out")"
  # A process is the submitter's while it runs no program of its own: the first one, and each
  # one it (or such a process) forks, until it calls execve. strace -f may write a child's
  # first lines before its parent's clone returns (a busy machine), so the parents and each
  # process's first program are gathered first and the tree is walked at the end.
  forks=$(awk '
    { pid = $1 }
    NR == 1 { first = pid }
    /execve\(/ && !/ENOENT/ && pid != first {
      execd[pid] = 1
      if (!(pid in prog)) { split($0, p, "\""); n = split(p[2], part, "/"); prog[pid] = part[n] }
    }
    /(clone|clone3|fork|vfork)\(|<\.\.\. (clone|clone3|fork|vfork) resumed>/ && / = [0-9]+$/ && !/CLONE_VM|CLONE_THREAD/ {
      parent[$NF] = pid
    }
    END {
      own[first] = 1
      do {
        more = 0
        for (k in parent) if (!(k in own) && (parent[k] in own) && !(parent[k] in execd)) { own[k] = 1; more = 1 }
      } while (more)
      for (k in parent) if ((parent[k] in own) && !(parent[k] in execd)) print (k in prog ? prog[k] : "-")
    }' "$trace" | sort | tr '\n' ' ')
  forks=${forks% }
  files=$(grep -o '/lib/[a-z_/]*\.bash\|/[a-z_]*_hpc_files/[a-z_]*\.bash' "$trace" | sed 's|.*/||' | sort -u | tr '\n' ' ')
  files=${files% }
}

@test "a plain submission starts two processes, flock (the venv's shared lock) and sbatch, each forked by the submitter itself" {
  forks_of -y -g 0 -e speed
  assert_equal "$forks" "flock sbatch"
}

@test "a map with a gather starts seven processes: flock, the held array's sbatch, one mkdir for its folder, the gather's subshell (its plan stays apart) and sbatch, scontrol release, the limit's one sacctmgr (under timeout); it reads the map's submission code only" {
  forks_of -y -g 0 --map-range 0-5 --max-concurrent 2 --gather "python -c pass" -e speed
  assert_equal "$forks" "- flock mkdir sbatch sbatch scontrol timeout"
  # The map's code for submitting, not its management and job side (hpc_map.bash).
  [[ " $files " == *" hpc_map_submit.bash "* && " $files " != *" hpc_map.bash "* ]] || fail "map libraries read: $files"
}

@test "a scaling study of 4 runs starts ten processes: the fit check's subshell, flock, the held report job's and the 4 runs' sbatch, one mkdir for the study's folder and its runs' folders, scontrol update and release; sinfo is asked no more once its answer is kept" {
  forks_of -y --scaling-test --scale-nodes 1,2 --scale-gpus 1,2 -W torchrun -e speed
  assert_equal "$forks" "- flock mkdir sbatch sbatch sbatch sbatch sbatch scontrol scontrol"
}

@test "a map with a gather and a scaling study work out the secrets to mask once: /proc/self/environ is read once per submission, not once per job and manifest" {
  # The names come from /proc/self/environ when the submitter runs without BASH_ENV.
  unset BASH_ENV
  export SENTINEL_TOKEN=sentinel-speed-token
  forks_of -y -g 0 --map-range 0-5 --max-concurrent 2 --gather "python -c pass" -e speed
  assert_equal "$(grep -c 'open.*"/proc/self/environ"' "$BATS_TEST_TMPDIR/strace.txt")" 1
  forks_of -y --scaling-test --scale-nodes 1,2 --scale-gpus 1,2 -W torchrun -e speed
  assert_equal "$(grep -c 'open.*"/proc/self/environ"' "$BATS_TEST_TMPDIR/strace.txt")" 1
}

@test "a scaling study and a map of a project under git ask git once per submission, not once per job's manifest" {
  git -C "$project" init -q
  git -C "$project" -c user.name=t -c user.email=t@t add -A >/dev/null
  git -C "$project" -c user.name=t -c user.email=t@t commit -qm init
  forks_of -y --scaling-test --scale-nodes 1,2 --scale-gpus 1,2 -W torchrun -e speed
  assert_equal "$(grep -c 'execve(".*/git"' "$BATS_TEST_TMPDIR/strace.txt")" 1
  forks_of -y -g 0 --map-range 0-5 --max-concurrent 2 --gather "python -c pass" -e speed
  assert_equal "$(grep -c 'execve(".*/git"' "$BATS_TEST_TMPDIR/strace.txt")" 1
}

@test "a plain submission of a plain command reads only the libraries it runs: not the configs file's quoted parts and references (hpc_configs_quoted.bash), the venv's build (venv_build.bash), map, scaling, sweeps, data or management code" {
  forks_of -y -g 0 -e speed
  assert_equal "$files" "hpc_common.bash hpc_configs.bash hpc_facts.bash hpc_manifest.bash hpc_options.bash hpc_pending.bash hpc_plan.bash hpc_profile.bash hpc_slurm.bash hpc_submit.bash none.bash single.bash venv.bash venv_runner.bash"
}

@test "a container submission takes no venv lock and reads no venv code: its runner module (singularity.bash) and the container runner are the only runner code it loads" {
  command -v siftool >/dev/null || skip "no siftool to make an image"
  bash "$HPC_ROOT/tests/fixtures/apptainer/make_sif.sh" "$tmp/app.sif" >/dev/null
  forks_of -y -g 0 -s "$tmp/app.sif" -e speed
  [[ " $forks " == *" sbatch "* && " $forks " != *" flock "* && " $forks " != *" sbatch sbatch "* ]] || fail "processes: $forks"
  assert_equal "$files" "container_runner.bash hpc_common.bash hpc_configs.bash hpc_facts.bash hpc_manifest.bash hpc_options.bash hpc_pending.bash hpc_plan.bash hpc_profile.bash hpc_slurm.bash hpc_submit.bash none.bash single.bash singularity.bash"
}

@test "a configs file with a quoted part and a reference loads hpc_configs_quoted.bash, and its command reaches the job (its plan file) whole" {
  # shellcheck disable=SC2016 # the reference is for the job to expand
  printf 'python main.py --name "my run" --seed ${SEED:-4}\n' >"$project/hpc_files/experiment_configurations.txt"
  forks_of -y -g 0 -e speed
  [[ " $files " == *" hpc_configs_quoted.bash "* ]] || fail "hpc_configs_quoted.bash was not read: $files"
  # The words as the reader made them (hpc_configs.bats has the grammar): one word 'my run', one
  # template with its reference.
  # In the job's plan file, which the job script names (%q-quoted: spaces are the test paths' only
  # special characters).
  local plan
  plan=$(grep '^hpc_job_main ' "$stub_log/sbatch.2.script")
  plan=${plan#hpc_job_main }
  plan=${plan//\\ / }
  grep -qF 'my\ run' "$plan" || fail "no word 'my run' in the job's plan"
  grep -qF '\$\{SEED:-4\}' "$plan" || fail "no template \${SEED:-4} in the job's plan"
}

@test "secrets' names read from /proc/self/environ all at once: a name ending in _PWD, a lowercase one and WANDB_API_KEY alone are each still found, and none when the environment has none" {
  # The submitter run as a script (hpc_secret_names_environ=1) tests the environment's names
  # at once before looking at any one (hpc_secret_values); the values of those it finds are masked.
  # shellcheck disable=SC2016 # expanded by the bash -c below
  local script='source "$1/hpc_files/lib/hpc_common.bash"; hpc_secret_names_environ=1
    s="a sentinel-pwd-value b sentinel-lower-token c sentinel-wandb-key d"; hpc_mask_vars s; printf "%s\n" "$s"'
  run env -i PATH="$PATH" MYSQL_PWD=sentinel-pwd-value bash -c "$script" _ "$HPC_ROOT"
  assert_success
  assert_output 'a (masked) b sentinel-lower-token c sentinel-wandb-key d'
  run env -i PATH="$PATH" PWD_HOLDER=x my_token=sentinel-lower-token bash -c "$script" _ "$HPC_ROOT"
  assert_success
  assert_output 'a sentinel-pwd-value b (masked) c sentinel-wandb-key d'
  run env -i PATH="$PATH" WANDB_API_KEY=sentinel-wandb-key bash -c "$script" _ "$HPC_ROOT"
  assert_success
  assert_output 'a sentinel-pwd-value b sentinel-lower-token c (masked) d'
  run env -i PATH="$PATH" OLDPWD=sentinel-pwd-value HOME=sentinel-lower-token bash -c "$script" _ "$HPC_ROOT"
  assert_success
  assert_output 'a sentinel-pwd-value b sentinel-lower-token c sentinel-wandb-key d'
}
