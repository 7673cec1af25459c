#!/usr/bin/env bats
# Bad input to job_submitter.sh, as one table: every row must exit 2 with exactly one line on
# stderr that names the option and what is accepted, submit nothing (the sbatch and squeue stubs
# of tests/fixtures/submitter/bin record no call), create or delete nothing under the temporary
# folder that holds the project and SCRATCH (both with a space in their paths), and end within a
# bounded time. The sinfo stub answers with its default table (see tests/fixtures/submitter/bin/sinfo).
#
# Adding a case is one line of the table in the test below:
#   ENV|ARGS|LINE
# ENV: space-separated NAME=value (set) or -NAME (unset) for that run; ARGS: the submitter's
# words, split on spaces; LINE: what stderr's one line must contain after 'job_submitter.sh: ',
# starting with the option's name. In all three, @TMP@ is the test's temporary folder,
# @PROFILES@ the names of the profiles in hpc_files/clusters/ (as a refusal lists them),
# @LAUNCHERS@ and @DISTRIBUTED@ the launchers in hpc_files/lib/launchers/ (as refusals list them),
# @SCRATCH@ the project's ${SCRATCH}/${project_name} and @LONG@ an experiment name of 300
# characters.

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
  # The profile cache lies outside $tmp, whose listing must not change.
  hpc_test_submitter_project "$BATS_TEST_TMPDIR/cache" "$(hpc_test_tmp)/scratch space"
  # A built venv, so that nothing would wait for an install job.
  hpc_test_venv_built "$project"
}

# calls COMMAND: how many times the stub COMMAND was called.
calls() {
  local n=0
  while [[ -e $stub_log/$1.$((n + 1)).args ]]; do n=$((n + 1)); done
  printf '%s\n' "$n"
}

# listing DIR: everything under DIR, with type, size, mode and modification time.
listing() {
  find "$1" -printf '%P|%y|%s|%m|%T@\n' | LC_ALL=C sort
}

# expand_to NAME TEXT: sets NAME to TEXT with @TMP@, @SCRATCH@ and @LONG@ replaced (see the top
# of this file). (Not printed: a subshell for each word of each row cost more than the refusals.)
expand_to() {
  local text=$2 long
  printf -v long '%0300d' 0
  long=${long//0/x}
  text=${text//@SCRATCH@/$SCRATCH/my project}
  text=${text//@TMP@/$tmp}
  # Each name list costs processes: made only where the text holds its mark.
  [[ $text != *@PROFILES@* ]] || text=${text//@PROFILES@/$(hpc_test_profile_names)}
  [[ $text != *@LAUNCHERS@* ]] || text=${text//@LAUNCHERS@/$(hpc_test_launcher_names)}
  [[ $text != *@DISTRIBUTED@* ]] || text=${text//@DISTRIBUTED@/$(hpc_test_distributed_names)}
  printf -v "$1" '%s' "${text//@LONG@/$long}"
}

# refused ENV ARGS LINE: runs one row of the table; prints what it broke of its promises and
# returns 1, or returns 0. The listing of $tmp before the run is taken now, or is
# refused_listing where the caller set it: the listing after the previous row, nothing having
# changed $tmp since (refused sets it to the listing after this row).
refused() {
  local env_words=$1 words=$2 want before after env_args=() word value
  local -a records
  expand_to want "$3"
  want="job_submitter.sh: $want"
  # Split first: @TMP@ holds a space.
  read -ra args <<<"$words"
  for word in "${!args[@]}"; do expand_to "args[word]" "${args[word]}"; done
  read -ra env_words <<<"$env_words"
  for word in "${env_words[@]}"; do
    if [[ $word == -* ]]; then
      env_args+=(-u "${word#-}")
    else
      expand_to value "$word"
      env_args+=("$value")
    fi
  done
  # The stubs' records of the previous row, if any.
  records=("${stub_log:?}"/*)
  [[ ! -e ${records[0]} ]] || rm -f -- "${records[@]}"
  if [[ -n ${refused_listing+set} ]]; then before=$refused_listing; else before=$(listing "$tmp"); fi
  # env only where the row sets or unsets a variable.
  run --separate-stderr timeout "$HPC_TEST_HANG_S" ${env_args[@]+env "${env_args[@]}"} bash "$submitter" "${args[@]}" </dev/null
  after=$(listing "$tmp")
  [[ -z ${refused_listing+set} ]] || refused_listing=$after
  local problems=()
  [[ $status == 2 ]] || problems+=("exit $status, expected 2")
  [[ -z $output ]] || problems+=("printed on stdout: $output")
  [[ $stderr != *$'\n'* ]] || problems+=("more than one line on stderr")
  [[ $stderr == "$want"* ]] || problems+=("stderr does not start with: $want")
  # (calls COMMAND is 0 exactly when its first call left no record.)
  [[ ! -e $stub_log/sbatch.1.args && ! -e $stub_log/squeue.1.args ]] || problems+=("sbatch or squeue was called")
  [[ $after == "$before" ]] || problems+=("created, changed or deleted something under $tmp")
  ((${#problems[@]} == 0)) && return 0
  printf -- '- %s %s: %s\n  stderr: %s\n' "$1" "$words" "${problems[*]}" "$stderr"
  return 1
}

@test "bad input table: exit 2, one line naming the option, nothing submitted, created or deleted" {
  # -C names below are relative to the configs fixtures: the submitter reads -C from the cwd.
  cd "$fixtures/configs"
  local rows=0 report='' refused_listing
  # Each row's problems are appended to a file (refused runs in this shell: a subshell for
  # each row cost more than its refusal); the listing of $tmp is carried from row to row.
  refused_listing=$(listing "$tmp")
  while IFS='|' read -r env_words words line; do
    [[ -n $words$env_words && $env_words != '#'* ]] || continue
    hpc_test_untraced refused "$env_words" "$words" "$line" >>"$BATS_TEST_TMPDIR/report" || true
    rows=$((rows + 1))
  done <<'EOT'
# Numbers and words.
|-g x|-g/--gpus: 'x' is not accepted; accepted: a whole number of GPUs per node, 0 to 999999
|-g -1|-g/--gpus: '-1' is not accepted; accepted: a whole number of GPUs per node, 0 to 999999
|-g 1.5|-g/--gpus: '1.5' is not accepted; accepted: a whole number of GPUs per node, 0 to 999999
|--gpus=|-g/--gpus: '' is not accepted; accepted: a whole number of GPUs per node, 0 to 999999
|-g 9999999|-g/--gpus: '9999999' is not accepted; accepted: a whole number of GPUs per node, 0 to 999999
|-c 0|-c/--cpus: '0' is not accepted; accepted: a whole number of CPUs per GPU process, 1 to 999999
|--cpu -2|-c/--cpus: '-2' is not accepted; accepted: a whole number of CPUs per GPU process, 1 to 999999
|-n 0|-n/--num-nodes: '0' is not accepted; accepted: a whole number of nodes, 1 to 999999
|-n two|-n/--num-nodes: 'two' is not accepted; accepted: a whole number of nodes, 1 to 999999
|-W deepspeed|-W/--which-distributed: 'deepspeed' is not accepted; accepted: @LAUNCHERS@
|-t 25:60:00|-t/--time: '25:60:00' is not accepted; accepted: a SLURM time M, M:S, H:M:S, D-H, D-H:M or D-H:M:S (minutes and seconds < 60, hours < 24 after a day count), e.g. 48:00:00 or 1-12:00:00
|-t 1-24|-t/--time: '1-24' is not accepted; accepted: a SLURM time M, M:S, H:M:S, D-H, D-H:M or D-H:M:S (minutes and seconds < 60, hours < 24 after a day count), e.g. 48:00:00 or 1-12:00:00
|-t 00:00:00|-t/--time: '00:00:00' is not accepted; accepted: a SLURM time M, M:S, H:M:S, D-H, D-H:M or D-H:M:S (minutes and seconds < 60, hours < 24 after a day count), e.g. 48:00:00 or 1-12:00:00
|-t UNLIMITED|-t/--time: 'UNLIMITED' is not accepted; accepted: a SLURM time M, M:S, H:M:S, D-H, D-H:M or D-H:M:S (minutes and seconds < 60, hours < 24 after a day count), e.g. 48:00:00 or 1-12:00:00
|-t 00-00:60:00|-t/--time: '00-00:60:00' is not accepted; accepted: a SLURM time M, M:S, H:M:S, D-H, D-H:M or D-H:M:S (minutes and seconds < 60, hours < 24 after a day count), e.g. 48:00:00 or 1-12:00:00
|-m 10|-m/--mem-per-gpu: '10' is not accepted; accepted: a whole amount with a unit K, M, G or T, e.g. 10G or 512M
|-m 0G|-m/--mem-per-gpu: '0G' is not accepted; accepted: a whole amount with a unit K, M, G or T, e.g. 10G or 512M
|-t|-t/--time: needs a value
|--time --gpus 2|-t/--time: needs a value
|-g 2 -e|-e/--exp-name: needs a value
|-e -x|-e/--exp-name: needs a value
|-e ../up|-e/--exp-name: '../up' is not accepted; accepted: letters, digits and _ . + -
|--exp-name=-x|-e/--exp-name: '-x' is not accepted; accepted: letters, digits and _ . + -
|-e -5|-e/--exp-name: '-5' is not accepted; accepted: letters, digits and _ . + -
|-e .hidden|-e/--exp-name: '.hidden' is not accepted; accepted: letters, digits and _ . + -
|-e @LONG@|-e/--exp-name: a name of 300 characters is too long; accepted: at most 220 characters
|-W lightning -e @LONG@|-e/--exp-name: a name of 300 characters is too long; accepted: at most 215 characters
|train.py|train.py: unexpected word (every value belongs to an option; see --help)
|-g 2 extra|extra: unexpected word (every value belongs to an option; see --help)
|--gpuz 2|--gpuz: unknown option; did you mean --gpus? (see --help)
|--num-node 2|--num-node: unknown option; did you mean --num-nodes? (see --help)
|--zzz|--zzz: unknown option; see 'bash job_submitter.sh --help'
|stauts|unknown command 'stauts'; did you mean status? (see --help)
|-x|-x: unknown option; see 'bash job_submitter.sh --help'
|--dry-run=yes|--dry-run: takes no value
|--wandb-offline=1|--wandb-offline: takes no value
|-a a/b|-a/--account: 'a/b' is not an account name (letters, digits, _ . -)
|-p a/b|-p/--partition: 'a/b' is not a partition name; accepted: letters, digits, _ . - (several: separated by commas)
HPC_CLUSTER=generic SBATCH_PARTITION=a/b|-g 1|SBATCH_PARTITION: 'a/b' is not a partition name; accepted: letters, digits, _ . - (several: separated by commas)
HPC_CLUSTER=generic SBATCH_PARTITION=x"y|-g 1|SBATCH_PARTITION: 'x"y' is not a partition name; accepted: letters, digits, _ . - (several: separated by commas)
|-G 'v100'|-G/--gpu-type: ''v100'' is not a GPU type name
# Profiles.
|--cluster mars|--cluster: 'mars' is not a known cluster; accepted: @PROFILES@
HPC_CLUSTER=mars|-g 1|--cluster: 'mars' is not a known cluster; accepted: @PROFILES@
HPC_CLUSTER=../clusters/local|-g 1|HPC_CLUSTER: '../clusters/local' is not accepted; accepted: the name of a profile in hpc_files/clusters/
HPC_CLUSTER=../../../../tmp/evil|--dry-run -g 0|HPC_CLUSTER: '../../../../tmp/evil' is not accepted; accepted: the name of a profile in hpc_files/clusters/
|--cluster ../clusters/local|--cluster: '../clusters/local' is not accepted; accepted: the name of a profile in hpc_files/clusters/
|--cluster=|--cluster: '' is not accepted; accepted: the name of a profile in hpc_files/clusters/
|--cluster cedar -a my-lab|-a/--account: 'my-lab' is not an account of cluster cedar; accepted: def-fwood rrg-kevinlb
|--cluster cedar -G k80|-G/--gpu-type: 'k80' is not a GPU type of cluster cedar; accepted: p100 p100l v100l
|--cluster local -g 3|-g/--gpus: 3 GPUs per node is more than a node of cluster local has; accepted: 0 to 2
|-W torchrun -n 2 -g 3|-g/--gpus: 3 GPUs per node is more than a node of cluster local has; accepted: 0 to 2
# The configs file and the launcher.
|-C nope.txt|-C/--configs: nope.txt: no such file
|--configs=|-C/--configs: '' is not accepted; accepted: the path of a configs file
|-C empty.txt|-C/--configs: empty.txt: no command in it (only blank lines and comments)
|-C comments_only.txt|-C/--configs: comments_only.txt: no command in it (only blank lines and comments)
|-C unbalanced.txt|-C/--configs: unbalanced.txt: unbalanced " (double quote) opened on line 2
|-W torchrun -C bash_command.txt|-W/--which-distributed: with -W torchrun the command must start with python; the configs file's starts with 'bash'
|-W lightning -C bash_command.txt|-W/--which-distributed: with -W lightning the command must start with python; the configs file's starts with 'bash'
|-n 2|-n/--num-nodes: 2 nodes need a launcher; accepted with @DISTRIBUTED@, else 1
|-W torchrun -g 0|-g/--gpus: 0 GPUs cannot be used with -W torchrun, which starts one process per GPU; accepted: 1 or more, or no -W
|-W lightning -g 0|-g/--gpus: 0 GPUs cannot be used with -W lightning, which starts one process per GPU; accepted: 1 or more, or no -W
# Data and copy-back.
|-d data|-d/--data: 'data': does not exist: there is no @SCRATCH@
|-d a b -g 1|-d/--data: 'a': does not exist: there is no @SCRATCH@
|-d /nonexistent-hpc-data/x|-d/--data: '/nonexistent-hpc-data/x': does not exist
|-d ../x|-d/--data: '../x': is outside @SCRATCH@; a path elsewhere is given absolute (one you can read, e.g. /datasets/NAME), and is staged under its own name
|-d|-d/--data: needs at least one path relative to ${SCRATCH}/${project_name}
|--copy-back|--copy-back: needs at least one path relative to ${SLURM_TMPDIR}
|--copy-back /abs|--copy-back: '/abs' is absolute; accepted: a path relative to ${SLURM_TMPDIR}
|--copy-back a/../../b|--copy-back: 'a/../../b' leaves ${SLURM_TMPDIR} (..); accepted: a path inside it
|--copy-back .|--copy-back: '.' is ${SLURM_TMPDIR} itself; accepted: a path inside it
|--copy-back ./|--copy-back: './' is ${SLURM_TMPDIR} itself; accepted: a path inside it
|--copy-back out ./.|--copy-back: './.' is ${SLURM_TMPDIR} itself; accepted: a path inside it
# Time limits.
|--requeue -1|--requeue: '-1' is not accepted; accepted: how many times a warned job may requeue itself, 0 to 999999
|--signal-lead x|--signal-lead: 'x' is not accepted; accepted: seconds before the time limit for the warning signal, 0 to 65535
|--signal-lead 70000|--signal-lead: '70000' is not accepted; accepted: seconds before the time limit for the warning signal, 0 to 65535
|--signal-lead 65536|--signal-lead: '65536' is not accepted; accepted: seconds before the time limit for the warning signal, 0 to 65535
|-t 00:05:00 --signal-lead 300|--signal-lead: 300 s before the time limit 00:05:00 (300 s: SLURM counts whole minutes) leaves less than 60 s, and SLURM may send the warning up to 60 s early; accepted: at most 240 s with this time limit
|-t 00:05:00 --signal-lead 900|--signal-lead: 900 s before the time limit 00:05:00 (300 s: SLURM counts whole minutes) leaves less than 60 s, and SLURM may send the warning up to 60 s early; accepted: at most 240 s with this time limit
|-t 00:01:10 --signal-lead 61|--signal-lead: 61 s before the time limit 00:01:10 (120 s: SLURM counts whole minutes) leaves less than 60 s, and SLURM may send the warning up to 60 s early; accepted: at most 60 s with this time limit
# Arrays and containers.
|--repeat 0|--repeat: '0' is not accepted; accepted: a whole number, 1 to 999999
|--repeat 2 -w abc|-w/--repeat/--wandb-offline: choose one: a W&B sweep (-w), an offline grid sweep (--wandb-offline) or repeats (--repeat)
|-w abc -W torchrun|-W/--which-distributed: sweeps run one agent per array task, on one node: accepted without -W
|--num-sweeps 3|--num-sweeps: is for W&B sweeps; accepted with -w/--wandb-sweepid
|--sweep-config x.yml|--sweep-config: is for sweeps; accepted with -w/--wandb-sweepid or --wandb-offline
WANDB_API_KEY=k|-w abc -g 2|-g/--gpus: a sweep agent gets one GPU; accepted: 0 or 1
-HOME|-w abc --num-sweeps 2|HOME: is not set
|-s x.sif|-s/--singularity-container: 'x.sif': no such file
|-s proj.img --workdir /code|-s/--singularity-container: 'proj.img': no such file
|--workdir=|--workdir: '' is not accepted; accepted: a folder path (without -s: absolute or relative to the current folder; with -s: absolute in the container)
|--workdir /dev/null|--workdir: '/dev/null': /dev/null is not a folder; accepted: a folder, absolute or relative to the current folder
|--workdir /dev/null/sub/dir|--workdir: '/dev/null/sub/dir': /dev/null is not a folder; accepted: a folder, absolute or relative to the current folder
|--workdir /|--workdir: '/' is the root folder; accepted: a folder of your own, absolute or relative to the current folder
|--workdir /tmp/../..|--workdir: '/tmp/../..' is the root folder; accepted: a folder of your own, absolute or relative to the current folder
WANDB_API_KEY=k|-w abc --num-sweeps 2 --workdir @TMP@/w|--workdir: W&B agents (-w) start the sweep's program in the project folder; accepted without -w (or with -s: the container's folder)
|-g 1 --workdir @TMP@/a --workdir @TMP@/b|--workdir: given twice
|--workdir @TMP@/w/@LONG@/x|--workdir: '@TMP@/w/@LONG@/x' has a name longer than 255 bytes; accepted: a folder path whose names are at most 255 bytes each
# Options given twice (only --data and --copy-back take several).
|-g 1 -g 2|-g/--gpus: given twice ('1', then '2'); accepted: once
|--gpus=1 -g 1|-g/--gpus: given twice ('1', then '1'); accepted: once
|-c 1 --cpu 2|-c/--cpus: given twice ('1', then '2'); accepted: once
|-e a --exp-name b|-e/--exp-name: given twice ('a', then 'b'); accepted: once
|-t 01:00:00 --time=02:00:00|-t/--time: given twice ('01:00:00', then '02:00:00'); accepted: once
|-p debug -p debug|-p/--partition: given twice ('debug', then 'debug'); accepted: once
|--cluster local --cluster cedar|--cluster: given twice ('local', then 'cedar'); accepted: once
|-n 1 --num_nodes 1|-n/--num-nodes: given twice ('1', then '1'); accepted: once
|-W torchrun -W lightning|-W/--which-distributed: given twice ('torchrun', then 'lightning'); accepted: once
|-m 1G -m 2G|-m/--mem-per-gpu: given twice ('1G', then '2G'); accepted: once
|--requeue 1 --requeue 2|--requeue: given twice ('1', then '2'); accepted: once
|--signal-lead 1 --signal-lead 2|--signal-lead: given twice ('1', then '2'); accepted: once
|--label-ranks -g 1|--label-ranks: labels the lines of each rank of a distributed job; accepted with @DISTRIBUTED@
|--label-ranks=yes|--label-ranks: takes no value
|-a x -a y|-a/--account: given twice ('x', then 'y'); accepted: once
|-C a -C b|-C/--configs: given twice ('a', then 'b'); accepted: once
|--repeat 2 --repeat 3|--repeat: given twice ('2', then '3'); accepted: once
|-w a -w b|-w/--wandb-sweepid: given twice ('a', then 'b'); accepted: once
|-s a.sif --singularity-container b.sif|-s/--singularity-container: given twice ('a.sif', then 'b.sif'); accepted: once
# Map + gather (-C names are the configs fixtures, used as list files here).
|--map-over missing.txt|--map-over: 'missing.txt': no such file; accepted: a list file, one item per line
|--map-over empty.txt|--map-over: 'empty.txt' has no items (only blank lines and comments); accepted: a list file, one item per line
|--map-over comments_only.txt|--map-over: 'comments_only.txt' has no items (only blank lines and comments); accepted: a list file, one item per line
|--map-range 5-2|--map-range: '5-2' is not accepted; accepted: A-B, whole numbers with A <= B, e.g. 0-3
|--map-range a-3|--map-range: 'a-3' is not accepted; accepted: A-B, whole numbers with A <= B, e.g. 0-3
|--map-range -1|--map-range: '-1' is not accepted; accepted: A-B, whole numbers with A <= B, e.g. 0-3
|--map-range=|--map-range: '' is not accepted; accepted: a non-empty value (see --help)
|--map-range 0-1 --map-over standard.txt|--map-range/--map-over: choose one: a range of indices or a list file
|--gather x|--gather: needs a map or repeats to gather; accepted with --map-range, --map-over or --repeat
|--gather-configs standard.txt|--gather: needs a map or repeats to gather; accepted with --map-range, --map-over or --repeat
|--repeat 2 --gather x --gather-when min-ok=3|--gather-when: 'min-ok=3' asks for more tasks than the map has (2); accepted: min-ok=1 to min-ok=2
|--map-range 0-1 --gather x --gather-configs standard.txt|--gather/--gather-configs: choose one: the command, or a file holding it
|--map-range 0-1 --gather x --gather-when sometimes|--gather-when: 'sometimes' is not accepted; accepted: all-ok, always, min-ok=K or min-ok=P%
|--map-range 0-3 --gather x --gather-when min-ok=0|--gather-when: 'min-ok=0': at least 1 task must be ok; accepted: min-ok=1 to min-ok=4
|--map-range 0-3 --gather x --gather-when min-ok=5|--gather-when: 'min-ok=5' asks for more tasks than the map has (4); accepted: min-ok=1 to min-ok=4
|--map-range 0-3 --gather x --gather-when min-ok=0%|--gather-when: 'min-ok=0%': a percentage must be 1 to 100
|--map-range 0-3 --gather x --gather-when min-ok=101%|--gather-when: 'min-ok=101%': a percentage must be 1 to 100
|--map-range 0-1 --repeat 2|--map-range/--map-over: a map is its own array; accepted without -w, --wandb-offline and --repeat
|--map-over standard.txt -w abc|--map-range/--map-over: a map is its own array; accepted without -w, --wandb-offline and --repeat
|--map-range 0-1 --max-concurrent 0|--max-concurrent: '0' is not accepted; accepted: a whole number, 1 to 999999
|--map-range 0-1 --max-concurrent x|--max-concurrent: 'x' is not accepted; accepted: a whole number, 1 to 999999
|--map-range 0-1 --gather x --gather-gpus 3|--gather-gpus: 3 GPUs is more than a node of cluster local has; accepted: 0 to 2
|--map-range 0-1 --gather x --gather-cpus 64|--gather-cpus: 64 CPUs is more than a node of partition debug has (32); accepted: 1 to 32
|-p small --map-range 0-1 --gather x --gather-cpus 5|--gather-cpus: 5 CPUs is more than a node of partition small has (4); accepted: 1 to 4
# The partition from SBATCH_PARTITION (a profile without one, a cluster without a default), as sbatch takes it.
HPC_CLUSTER=generic HPC_STUB_SINFO=nodefault SBATCH_PARTITION=small|--map-range 0-1 --gather x --gather-cpus 5|--gather-cpus: 5 CPUs is more than a node of partition small has (4); accepted: 1 to 4
HPC_CLUSTER=generic HPC_STUB_SINFO=nodefault SBATCH_PARTITION=small|--map-range 0-1 --gather x --gather-gpus 3|--gather-gpus: 3 GPUs is more than a node of partition small has (2); accepted: 0 to 2
# The gather's memory: -m per GPU times --gather-gpus.
|-p small -g 1 -m 3000M --map-range 0-1 --gather x --gather-gpus 2|--gather-gpus: 2 GPUs x 3000M (-m/--mem-per-gpu) is more memory than a node of partition small has (4000M); accepted: 0 to 1
# The gather's GPUs are of the type the tasks ask for (-G), even when the tasks ask for none.
HPC_CLUSTER=generic|-g 0 -G a100 --map-range 0-1 --gather x --gather-gpus 1|-G/--gpu-type: 'a100': the GPUs of partition debug have no type; accepted: no -G (any GPU)
HPC_CLUSTER=generic|-p plai -g 0 -G p100 --map-range 0-1 --gather x --gather-gpus 1|-G/--gpu-type: 'p100' is not a GPU type of partition plai; accepted: a100 v100
HPC_CLUSTER=generic|-p plai -g 1 -G a100 --map-range 0-1 --gather x --gather-gpus 5|--gather-gpus: 5 a100 GPUs is more than a node of partition plai has; accepted: 0 to 4
|--map-range 0-1 --gather x --gather-cpus 0|--gather-cpus: '0' is not accepted; accepted: a whole number of CPUs, 1 to 999999
|--map-range 0-1 --gather x --gather-time 99:00:60|--gather-time: '99:00:60' is not accepted; accepted: a SLURM time M, M:S, H:M:S, D-H, D-H:M or D-H:M:S (minutes and seconds < 60, hours < 24 after a day count), e.g. 48:00:00 or 1-12:00:00
|--map-range 0-1 --gather x --gather-time 1-24:00:00|--gather-time: '1-24:00:00' is not accepted; accepted: a SLURM time M, M:S, H:M:S, D-H, D-H:M or D-H:M:S (minutes and seconds < 60, hours < 24 after a day count), e.g. 48:00:00 or 1-12:00:00
|--map-range 0-1 --gather x --gather-time 0|--gather-time: '0' is not accepted; accepted: a SLURM time M, M:S, H:M:S, D-H, D-H:M or D-H:M:S (minutes and seconds < 60, hours < 24 after a day count), e.g. 48:00:00 or 1-12:00:00
|--map-range 0-1 --gather x --gather-time 1-24|--gather-time: '1-24' is not accepted; accepted: a SLURM time M, M:S, H:M:S, D-H, D-H:M or D-H:M:S (minutes and seconds < 60, hours < 24 after a day count), e.g. 48:00:00 or 1-12:00:00
|--map-over nul_byte.txt|--map-over: 'nul_byte.txt' holds a NUL byte (a binary file?); accepted: a text list file, one item per line
|--map-over /bin/sh|--map-over: '/bin/sh' holds a NUL byte (a binary file?); accepted: a text list file, one item per line
HPC_STUB_MAX_ARRAY_SIZE=1001 HPC_STUB_MAX_JOB_COUNT=10000|--map-range 0-999999999 --gather x|--map-range: 1000000000 tasks are more than this cluster can hold (MaxJobCount 10000); accepted: at most 10000 tasks
HPC_STUB_MAX_JOB_COUNT=3|--map-range 5-8|--map-range: 4 tasks are more than this cluster can hold (MaxJobCount 3); accepted: at most 3 tasks
HPC_STUB_MAX_JOB_COUNT=3|--repeat 4 --gather x|--repeat: 4 tasks are more than this cluster can hold (MaxJobCount 3); accepted: at most 3 tasks
HPC_STUB_MAX_JOB_COUNT=2|--map-over standard.txt|--map-over: 3 tasks are more than this cluster can hold (MaxJobCount 2); accepted: at most 2 tasks
|--map-range 0-1 --gather python'|--gather: unbalanced ' (single quote) opened on line 1; accepted: one command written as in a shell
|--map-range 0-1 --gather-configs unbalanced.txt|--gather-configs: unbalanced.txt: unbalanced " (double quote) opened on line 2
|--map-range 0-1 --gather-when always|--gather-when: is for a gather; accepted with --gather or --gather-configs
|--gather-time 00:10:00|--gather-time: is for a gather; accepted with --map-range or --map-over and --gather
# Scaling test (issue 17).
|--scaling-test --scale-nodes 1,,2 -W torchrun|--scale-nodes: '1,,2' is not accepted; accepted: comma-separated whole numbers, each 1 or more and given once, e.g. 1,2,4
|--scaling-test --scale-nodes 1,x -W torchrun|--scale-nodes: '1,x' is not accepted; accepted: comma-separated whole numbers, each 1 or more and given once, e.g. 1,2,4
|--scaling-test --scale-nodes 1,-2 -W torchrun|--scale-nodes: '1,-2' is not accepted; accepted: comma-separated whole numbers, each 1 or more and given once, e.g. 1,2,4
|--scaling-test --scale-nodes 0,1 -W torchrun|--scale-nodes: '0,1' holds 0; accepted: comma-separated whole numbers, each 1 or more and given once, e.g. 1,2,4
|--scaling-test --scale-nodes 1,2,1 -W torchrun|--scale-nodes: '1,2,1' holds 1 twice; accepted: comma-separated whole numbers, each 1 or more and given once, e.g. 1,2,4
|--scaling-test --scale-gpus 0,1|--scale-gpus: '0,1' holds 0; accepted: comma-separated whole numbers, each 1 or more and given once, e.g. 1,2,4
|--scaling-test --scale-gpus 2,02|--scale-gpus: '2,02' holds 2 twice; accepted: comma-separated whole numbers, each 1 or more and given once, e.g. 1,2,4
|--scaling-test --scale-nodes 1,9 -W torchrun|--scale-nodes/--scale-gpus: the largest configuration 9x1 does not fit: 9 nodes are more than partition debug has; accepted: 1 to 4
|--scaling-test --scale-gpus 1,9|--scale-nodes/--scale-gpus: the largest configuration 1x9 does not fit: 9 GPUs per node is more than a node of cluster local has; accepted: 0 to 2
# A partition that is missing or unknown is -p's fault, not the configurations'.
HPC_STUB_SINFO=nodefault|--scaling-test --scale-nodes 1,2 -W torchrun --cluster generic|-p/--partition: the cluster has no default partition and none was given; accepted: debug gpu plai small cpu
|--scaling-test --scale-nodes 1,2 -W torchrun -p nosuch|-p/--partition: 'nosuch' is not a partition of this cluster; accepted: debug gpu plai small cpu
HPC_CLUSTER=generic SBATCH_PARTITION=nosuch|--scaling-test --scale-gpus 1,2|SBATCH_PARTITION: 'nosuch' is not a partition of this cluster; accepted: debug gpu plai small cpu
# A GPU type the partition lacks is -G's fault, whatever the sizes.
HPC_CLUSTER=generic|--scaling-test --scale-gpus 1,2 -p plai -G p100|-G/--gpu-type: 'p100' is not a GPU type of partition plai; accepted: a100 v100
|--scaling-test --scale-nodes 1 --scale-gpus 2|--scale-nodes/--scale-gpus: every configuration has world size 2; accepted: at least two different world sizes (nodes x GPUs per node)
|--scaling-test --scale-nodes 1,2 -n 4 -W torchrun|-n/--num-nodes: 4 with --scale-nodes 1,2, whose largest is 2; accepted: -n/--num-nodes equal to the largest of --scale-nodes, or one of the two alone
|--scaling-test --scale-nodes 2,4 -n 1 -W torchrun|-n/--num-nodes: 1 with --scale-nodes 2,4, whose largest is 4; accepted: -n/--num-nodes equal to the largest of --scale-nodes, or one of the two alone
|--scaling-test --scale-nodes 1,2|-W/--which-distributed: a scaling test over 2 nodes needs a launcher; accepted: @DISTRIBUTED@
|--scaling-test --scale-gpus 1,2 --repeat 2|--scaling-test: submits its own jobs, one per configuration; accepted without -w, --wandb-offline, --repeat, --map-range, --map-over and --gather
|--scaling-test --scale-gpus 1,2 -w abc|--scaling-test: submits its own jobs, one per configuration; accepted without -w, --wandb-offline, --repeat, --map-range, --map-over and --gather
|--scaling-test --scale-gpus 1,2 --map-range 0-1|--scaling-test: submits its own jobs, one per configuration; accepted without -w, --wandb-offline, --repeat, --map-range, --map-over and --gather
|--scaling-test --scale-gpus 1,2 --repeats 0|--repeats: '0' is not accepted; accepted: a whole number of repeats, 1 to 999999
|--scaling-test --scale-gpus 1,2 --repeats x|--repeats: 'x' is not accepted; accepted: a whole number of repeats, 1 to 999999
|--scaling-test --scale-gpus 1,2 --scaling-mode fast|--scaling-mode: 'fast' is not accepted; accepted: strong, weak
|--scaling-test --scale-gpus 1,2 --report-time 99x|--report-time: '99x' is not accepted; accepted: a SLURM time M, M:S, H:M:S, D-H, D-H:M or D-H:M:S (minutes and seconds < 60, hours < 24 after a day count), e.g. 48:00:00 or 1-12:00:00
|--scale-nodes 1,2|--scale-nodes: is for a scaling test; accepted with --scaling-test
|--repeats 2|--repeats: is for a scaling test; accepted with --scaling-test
|--scaling-test=1|--scaling-test: takes no value
|scaling-report ./nostudy|scaling-report: './nostudy' has no study.json; accepted: a scaling study's folder, or an experiment with a study
|scaling-report nosuch|scaling-report: experiment 'nosuch' has no scaling study under @SCRATCH@/hpc_outputs/scaling/nosuch; accepted: an experiment submitted with --scaling-test, or a study folder
|scaling-report|scaling-report: needs an experiment or a study folder; usage: scaling-report EXP|PATH [--out DIR]
|scaling-report nosuch --bogus|--bogus: unknown option of 'scaling-report'; see 'bash job_submitter.sh scaling-report --help'
# SCRATCH.
-SCRATCH|-g 1|SCRATCH: is not set; set it to your scratch folder, e.g. export SCRATCH=/scratch/$USER in ~/.bashrc
SCRATCH=|-g 1|SCRATCH: is not set; set it to your scratch folder, e.g. export SCRATCH=/scratch/$USER in ~/.bashrc
SCRATCH=scratch|-g 1|SCRATCH: 'scratch' is not an absolute path
SCRATCH=/|-g 1|SCRATCH: '/' is the root folder; accepted: your own scratch folder, e.g. /scratch/$USER
SCRATCH=//|-g 1|SCRATCH: '//' is the root folder; accepted: your own scratch folder, e.g. /scratch/$USER
SCRATCH=/./|--dry-run|SCRATCH: '/./' is the root folder; accepted: your own scratch folder, e.g. /scratch/$USER
SCRATCH=@TMP@/back\slash|-g 1|SCRATCH: '@TMP@/back\slash' contains a backslash, a double quote, a % or a newline, which SLURM's job options cannot hold
SCRATCH=@TMP@/quo"te|-g 1|SCRATCH: '@TMP@/quo"te' contains a backslash, a double quote, a % or a newline
SCRATCH=@TMP@/per%cent|--dry-run|SCRATCH: '@TMP@/per%cent' contains a backslash, a double quote, a % or a newline
# What the cluster has (the sinfo stub's table: debug* 4 nodes x 32 CPUs, 256000 MB, gpu:8;
# gpu 4 x 16, gpu:v100l:4; plai 2 x 32; small 2 x 4 CPUs, 4000 MB, gpu:2; cpu 2 x 8, no GPU).
|-c 999999|-c/--cpus: 999999 CPUs per process (x 1) is more than a node of partition debug has (32); accepted: 1 to 32
|-g 2 -c 20|-c/--cpus: 20 CPUs per process (x 2) is more than a node of partition debug has (32); accepted: 1 to 16
|-p small -W lightning -g 2 -c 3|-c/--cpus: 3 CPUs per process (x 2) is more than a node of partition small has (4); accepted: 1 to 2
|-p small -W torchrun -n 3|-n/--num-nodes: 3 nodes are more than partition small has; accepted: 1 to 2
|-p gpu -W torchrun -n 5|-n/--num-nodes: 5 nodes are more than partition gpu has; accepted: 1 to 4
|--cluster plai -W torchrun -n 3|-n/--num-nodes: 3 nodes are more than partition plai has; accepted: 1 to 2
|--cluster generic -g 999999|-g/--gpus: 999999 GPUs per node is more than a node of partition debug has; accepted: 0 to 8
|--cluster generic -p gpu -g 5|-g/--gpus: 5 GPUs per node is more than a node of partition gpu has; accepted: 0 to 4
|-p cpu|-g/--gpus: 1 GPUs per node is more than a node of partition cpu has; accepted: 0 (it has no GPUs)
|-m 300G|-m/--mem-per-gpu: 300G x 1 GPU(s) is more memory than a node of partition debug has (256000M); accepted: at most 256000M
|-p small -g 2 -m 3G|-m/--mem-per-gpu: 3G x 2 GPU(s) is more memory than a node of partition small has (4000M); accepted: at most 2000M
|--cluster cedar -p small -g 1|-m/--mem-per-gpu: 10G x 1 GPU(s) is more memory than a node of partition small has (4000M); accepted: at most 4000M
|-p nosuchpart|-p/--partition: 'nosuchpart' is not a partition of this cluster; accepted: debug gpu plai small cpu
|-p small,nosuch|-p/--partition: 'nosuch' is not a partition of this cluster; accepted: debug gpu plai small cpu
HPC_STUB_SINFO=nodefault|--cluster generic -g 1|-p/--partition: the cluster has no default partition and none was given; accepted: debug gpu plai small cpu
HPC_STUB_SINFO=nodefault|--cluster cedar -W torchrun -n 5|-n/--num-nodes: 5 nodes are more than any of the partitions debug gpu plai small cpu has; accepted: 1 to 4
|--cluster plai -g 9|-g/--gpus: 9 GPUs per node is more than a node of cluster plai has; accepted: 0 to 8
|--cluster generic -p plai -g 9|-g/--gpus: 9 GPUs per node is more than a node of partition plai has; accepted: 0 to 8
|--cluster generic -p small,cpu -g 3|-g/--gpus: 3 GPUs per node is more than a node of any of the partitions small cpu has; accepted: 0 to 2
# A GPU type: from sinfo's GRES when the profile lists none (the stub: debug untyped, gpu v100l and p100, plai a100 and v100).
|--cluster generic -g 1 -G a100|-G/--gpu-type: 'a100': the GPUs of partition debug have no type; accepted: no -G (any GPU)
|--cluster generic -p plai -g 1 -G h100|-G/--gpu-type: 'h100' is not a GPU type of partition plai; accepted: a100 v100
|--cluster generic -p gpu,plai -g 1 -G h100|-G/--gpu-type: 'h100' is not a GPU type of any of the partitions gpu plai; accepted: v100l p100 a100 v100
|--cluster generic -p plai -g 5 -G a100|-g/--gpus: 5 a100 GPUs per node is more than a node of partition plai has; accepted: 0 to 4
|--cluster cedar -p small -g 1 -m 1G|-G/--gpu-type: 'v100l' (the profile's gpu.default_type): the GPUs of partition small have no type; accepted: no -G (any GPU)
HPC_STUB_SINFO=nodefault|--cluster generic --dry-run|-p/--partition: the cluster has no default partition and none was given; accepted: debug gpu plai small cpu
EOT
  [[ ! -s $BATS_TEST_TMPDIR/report ]] || report=$(<"$BATS_TEST_TMPDIR/report")
  [[ -z $report ]] || fail "$report"
  ((rows >= 80)) || fail "only $rows rows"
}

@test "bad input: a backslash, double quote or % in the project's path -> exit 2, one line" {
  local dir out
  for dir in 'back\slash' 'quo"te' 'per%cent'; do
    mkdir -p "$tmp/$dir"
    bash "$HPC_ROOT/hpc_files/install.sh" "$tmp/$dir" >/dev/null
    cp -R "$HPC_WARM_CACHE/." "$BATS_TEST_TMPDIR/cache/"
    submitter=$tmp/$dir/hpc_files/job_submitter.sh
    out=$(refused "" "-g 1" "project: '$tmp/$dir' contains a backslash, a double quote, a % or a newline") || fail "$out"
  done
}

@test "bad input: a scaling study of too many runs -> exit 2 at once, one line, never a long loop" {
  local list out start
  list=$(seq -s, 1 3000)
  start=$SECONDS
  out=$(refused "" "--scaling-test --scale-gpus 1,2 --repeats 999999" "--scale-nodes/--scale-gpus/--repeats: 1 node count(s) x 2 GPU count(s) x 999999 repeat(s) are 1999998 runs; accepted: at most 1000 runs") || fail "$out"
  out=$(refused "" "--scaling-test --scale-nodes $list -W torchrun" "--scale-nodes/--scale-gpus/--repeats: 3000 node count(s) x 1 GPU count(s) x 1 repeat(s) are 3000 runs; accepted: at most 1000 runs") || fail "$out"
  out=$(refused "" "--scaling-test --scale-nodes 99999999999999999999,1 -W torchrun" "--scale-nodes: '99999999999999999999,1' is not accepted") || fail "$out"
  # A loop over the runs (two million) takes many minutes; three refusals take seconds, or more on
  # a machine as loaded as the suite's own (11 s seen): the bound tells the two apart, not speed.
  ((SECONDS - start <= 60)) || fail "took $((SECONDS - start)) s"
}

@test "bad input: a value holding a newline is still one line (the newline shown as \\n)" {
  local opt want
  for opt in -g -e -p -t --workdir; do
    rm -f -- "${stub_log:?}"/*
    run --separate-stderr timeout "$HPC_TEST_HANG_S" bash "$project/hpc_files/job_submitter.sh" "$opt" $'1\n2' </dev/null
    assert_equal "$opt -> $status" "$opt -> 2"
    [[ $stderr != *$'\n'* ]] || fail "$opt: more than one line: $stderr"
    want="'1\\n2' is not"
    [[ $stderr == *"$want"* ]] || fail "$opt: $stderr"
    assert_equal "$(calls sbatch)" 0
  done
}

@test "bad input: --workdir in a folder you cannot write (existing, or where it would be made) -> exit 2, one line" {
  local ro=$tmp/readonly out
  mkdir -p "$ro/inside"
  if ((EUID == 0)); then
    # root writes anywhere but on a read-only file system.
    mount -t tmpfs -o ro tmpfs "$ro" || skip "cannot mount a read-only tmpfs"
  else
    chmod 555 "$ro"
  fi
  out=$(refused "" "-g 1 --workdir @TMP@/readonly" "--workdir: '@TMP@/readonly': @TMP@/readonly is not writable for you; accepted: a folder you can write in") || true
  local out2
  out2=$(refused "" "-g 1 --workdir @TMP@/readonly/new/deeper" "--workdir: '@TMP@/readonly/new/deeper': @TMP@/readonly is not writable for you; accepted: a folder you can write in") || true
  if ((EUID == 0)); then umount "$ro"; else chmod 755 "$ro"; fi
  [[ -z $out$out2 ]] || fail "$out$out2"
}

@test "bad input: a --map-over item longer than Linux passes as one argument, SCRATCH that is a file or a link to / -> exit 2, one line naming it" {
  # (No spaces: refused splits its words at blanks.)
  local list=$BATS_TEST_TMPDIR/long_items.txt out
  {
    printf 'short\n'
    head -c 131073 /dev/zero | tr '\0' x
    printf '\n'
  } >"$list"
  out=$(refused "" "--map-over $list" "--map-over: '$list' line 2: an item of 131073 bytes, longer than 131072, the most Linux passes as one argument; accepted: items of at most 131072 bytes") || fail "$out"
  ln -s / "$BATS_TEST_TMPDIR/to_root"
  out=$(refused "SCRATCH=$BATS_TEST_TMPDIR/to_root" "-g 0" "SCRATCH: '$BATS_TEST_TMPDIR/to_root' is the root folder (through a link); accepted: your own scratch folder") || fail "$out"
  : >"$BATS_TEST_TMPDIR/a_file"
  out=$(refused "SCRATCH=$BATS_TEST_TMPDIR/a_file" "-g 0" "SCRATCH: '$BATS_TEST_TMPDIR/a_file' is not a folder; accepted: your own scratch folder") || fail "$out"
  out=$(refused "SCRATCH=$BATS_TEST_TMPDIR/a_file" "status" "SCRATCH: '$BATS_TEST_TMPDIR/a_file' is not a folder; accepted: your own scratch folder") || fail "$out"
}

@test "bad input: a launcher file that lacks its functions (a copy cut short) -> exit 2, one line naming what is missing; a whole copy works" {
  local dir=$project/hpc_files/lib/launchers out
  sed '/^hpc_launcher_torchrun_srun()/,$d' "$dir/torchrun.bash" | sed 's/hpc_launcher_torchrun_/hpc_launcher_mine_/g' >"$dir/mine.bash"
  out=$(refused "" "-W mine -g 2" "-W/--which-distributed: launcher 'mine' ($dir/mine.bash) lacks hpc_launcher_mine_srun hpc_launcher_mine_task hpc_launcher_mine_workers; it must define hpc_launcher_mine_{describe,plan,processes,srun,task,workers} (docs/architecture.md)") || fail "$out"
  sed 's/hpc_launcher_torchrun_/hpc_launcher_mine_/g' "$dir/torchrun.bash" >"$dir/mine.bash"
  run --separate-stderr bash "$project/hpc_files/job_submitter.sh" -W mine -g 2 --dry-run </dev/null
  assert_success
}
