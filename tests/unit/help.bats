#!/usr/bin/env bats
# Commands that describe themselves and messages that guess what was meant: --help lists the
# files of hpc_files/lib/commands/ (each one's '# Summary:' line), COMMAND --help (and
# help COMMAND) prints that file's '# Usage:' block; an unknown option or command names the
# nearest valid one (hpc_nearest, hpc_files/lib/hpc_help.bash). A project installed in a folder
# whose path has a space, SCRATCH beside it, PATH stubs of SLURM (tests/fixtures/submitter/bin).

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
  hpc_test_submitter_project "$BATS_TEST_TMPDIR/cache" "$(hpc_test_tmp)/scratch space"
}

# commands_of DIR: the commands of a lib/commands/ folder, as --help lists them (sorted by name).
commands_of() {
  local file
  for file in "$1"/*.bash; do
    file=${file##*/}
    printf '%s\n' "${file%.bash}"
  done
}

@test "hpc_edit_distance: optimal string alignment distance, capped at 3" {
  # shellcheck source=hpc_files/lib/hpc_common.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
  # shellcheck source=hpc_files/lib/hpc_help.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_help.bash"
  local a b want
  while IFS='|' read -r a b want; do
    hpc_edit_distance "$a" "$b"
    assert_equal "$a|$b -> $hpc_edit_distance" "$a|$b -> $want"
  done <<'EOT'
abc|abc|0
|ab|2
ab||2
ab|ba|1
stauts|status|1
--num-node|--num-nodes|1
--gpuz|--gpus|1
--faild|--failed|1
abcd|badc|2
kitten|sitting|3
ca|abc|3
--num-node|--gpus|3
x|--scaling-test|3
EOT
}

@test "hpc_nearest: the one candidate a word is a prefix of, else the one nearest within 2 edits (fewer than half the word), else none" {
  source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
  source "$HPC_ROOT/hpc_files/lib/hpc_help.bash"
  local word candidates want
  while IFS='|' read -r word candidates want; do
    read -ra candidates <<<"$candidates"
    hpc_nearest "$word" "${candidates[@]}"
    assert_equal "$word -> $hpc_nearest" "$word -> $want"
  done <<'EOT'
--num-node|-n --num-nodes --num_nodes --gpus -g|--num-nodes
stauts|cancel gather logs resubmit scaling-report status|status
Status|cancel gather logs resubmit scaling-report status|status
--gpuz|--gpus --gpu-type --cpus --cpu|--gpus
--gpu|--gpus --gpu-type --cpus|--gpus
--workd|--workdir --wandb-offline --which-distributed|--workdir
--lab|--label-ranks --data|--label-ranks
-x|-a -g -n -c|
-nn|-a -g -n -c|-n
--zzz|--gpus --time --data|
--tail|-f --follow -h --help|
--all|-h --help|
--hepl|-h --help|--help
train|cancel gather logs resubmit scaling-report status|
ab|abc abd|
EOT
}

@test "--help lists every file of lib/commands/ with its Summary; a new file is listed, 'NAME --help' and 'help NAME' print its usage block, and NAME runs" {
  local commands=$project/hpc_files/lib/commands name file summary
  # A user's own command: one file with its Summary, Usage and help lines, and its function.
  cat >"$commands/hello.bash" <<'EOF'
# shellcheck shell=bash
# Summary: says hello to each name
# Usage: bash job_submitter.sh hello NAME...
#        bash job_submitter.sh hello --loud NAME...
#
# Prints 'hello NAME' for each NAME.
#   -h, --help   This text.

# hello.bash: a test's command (this comment is not its help).

# hpc_command_hello NAME...: says hello.
hpc_command_hello() {
  printf 'hello %s\n' "$@"
}
EOF
  run --separate-stderr bash "$submitter" --help </dev/null
  assert_success
  assert_equal "$stderr" ""
  assert_line --index 0 "Usage: bash job_submitter.sh [options]"
  assert_line --regexp '^  hello +says hello to each name$'
  # Every command, shipped or not, by its own Summary line.
  while IFS= read -r name; do
    summary=$(sed -n 's/^# Summary: //p' "$commands/$name.bash")
    [[ -n $summary ]] || fail "lib/commands/$name.bash has no '# Summary:' line"
    assert_line --regexp "^  ${name} +${summary//[.()|]/.}\$"
  done < <(commands_of "$commands")
  refute_line --regexp '^#'

  local want=$'Usage: bash job_submitter.sh hello NAME...\n       bash job_submitter.sh hello --loud NAME...\n\nPrints \'hello NAME\' for each NAME.\n  -h, --help   This text.'
  for words in "hello --help" "hello -h" "hello a --help" "help hello"; do
    read -ra args <<<"$words"
    SCRATCH='' run --separate-stderr bash "$submitter" "${args[@]}" </dev/null
    assert_equal "$words -> $status" "$words -> 0"
    assert_equal "$stderr" ""
    assert_equal "$output" "$want"
  done
  run --separate-stderr bash "$submitter" hello a "b c" </dev/null
  assert_success
  assert_output $'hello a\nhello b c'
}

@test "every shipped command's --help prints its file's usage block (exit 0, no SCRATCH or SLURM); 'help' alone is --help" {
  local name
  while IFS= read -r name; do
    for words in "$name --help" "$name x -h" "help $name"; do
      read -ra args <<<"$words"
      SCRATCH='' run --separate-stderr bash "$submitter" "${args[@]}" </dev/null
      assert_equal "$words -> $status" "$words -> 0"
      assert_equal "$stderr" ""
      assert_line --index 0 --regexp "^Usage: bash job_submitter.sh $name( |\$)"
      assert_line --regexp '^  -h, --help +This text\.$'
      refute_line --regexp '^#'
      refute_output --partial "shellcheck"
      refute_output --partial "$name.bash:"
    done
  done < <(commands_of "$HPC_ROOT/hpc_files/lib/commands")
  SCRATCH='' run --separate-stderr bash "$submitter" help </dev/null
  assert_success
  assert_line --index 0 "Usage: bash job_submitter.sh [options]"
  run --separate-stderr bash "$submitter" help stauts </dev/null
  assert_equal "$status" 2
  assert_equal "$stderr" "job_submitter.sh: unknown command 'stauts'; did you mean status? (see --help)"
}

@test "did you mean: an unknown option or command names the nearest valid one; exit 2, one line, nothing submitted" {
  local words want list
  list=$(commands_of "$HPC_ROOT/hpc_files/lib/commands")
  list=${list//$'\n'/, }
  while IFS='|' read -r words want; do
    read -ra args <<<"$words"
    run --separate-stderr bash "$submitter" "${args[@]}" </dev/null
    assert_equal "$words -> $status" "$words -> 2"
    assert_equal "$output" ""
    assert_equal "$words -> $stderr" "$words -> job_submitter.sh: ${want//@LIST@/$list}"
  done <<'EOT'
--num-node 2|--num-node: unknown option; did you mean --num-nodes? (see --help)
--num-node=2|--num-node: unknown option; did you mean --num-nodes? (see --help)
-g 1 --gpu-typ v100l|--gpu-typ: unknown option; did you mean --gpu-type? (see --help)
--dryrun|--dryrun: unknown option; did you mean --dry-run? (see --help)
--zzz|--zzz: unknown option; see 'bash job_submitter.sh --help'
-x|-x: unknown option; see 'bash job_submitter.sh --help'
stauts|unknown command 'stauts'; did you mean status? (see --help)
stauts e|unknown command 'stauts'; did you mean status? (see --help)
Status|unknown command 'Status'; did you mean status? (see --help)
scaling-reprot e|unknown command 'scaling-reprot'; did you mean scaling-report? (see --help)
train|unknown command 'train'; commands: @LIST@ (see --help)
train.py|train.py: unexpected word (every value belongs to an option; see --help)
-g 2 stauts|stauts: unexpected word (every value belongs to an option; see --help)
EOT
  [[ ! -e $stub_log/sbatch.1.args ]] || fail "sbatch was called"
}

@test "hpc_opt_names: the table of settings' spellings; every option the --help text lists is among them" {
  source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
  source "$HPC_ROOT/hpc_files/lib/hpc_options.bash"
  source "$HPC_ROOT/hpc_files/lib/hpc_help.bash"
  hpc_opt_names
  local known=" ${hpc_opt_names[*]} " word count=0
  [[ $known != *" -* "* && $known != *"*"* ]] || fail "a glob pattern is taken as an option: $known"
  # The options of the usage's option lines ('  -g, --gpus N   ...', '  --gather-cpus N, ...').
  while read -r word; do
    [[ $known == *" $word "* ]] || fail "--help names $word, which hpc_opt_names lacks: $known"
    count=$((count + 1))
  done < <(grep -E '^#   -' "$HPC_ROOT/hpc_files/job_submitter.sh" | grep -oE '(^#   |, )--?[A-Za-z][A-Za-z0-9-]*' | sed -E 's/^(#   |, )//')
  ((count > 40)) || fail "only $count options found in the usage"
}
