# shellcheck shell=bash
# What tests/unit/configs.bats and configs_size.bats share: the setup (the configs library
# loaded, a temporary folder with a space, the job's environment for the expansion tables) and
# the helpers that read and compare. Loaded from setup.
# shellcheck disable=SC2016 # $ in single quotes is the inputs, on purpose

# configs_setup: the libraries, TMP (the current folder) and CONFIGS (a configs file's path in it).
configs_setup() {
  hpc_program=job_submitter.sh
  # shellcheck source=hpc_files/lib/hpc_common.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
  # shellcheck source=hpc_files/lib/hpc_configs.bash
  source "$HPC_ROOT/hpc_files/lib/hpc_configs.bash"
  TMP=$(hpc_test_tmp)
  CONFIGS="$TMP/experiment_configurations.txt"
  cd "$TMP" || return 1
  # The job's environment for the expansion tables.
  export X='x val' E='' DOLLAR='$HOME' STAR='*' SUB='$(touch pwned)' NL=$'a\nb' BS='a\b'
  unset U U2 || true
}

# render_command TEMPLATE...: the plan file's line hpc_plan_command=( ... ), written as hpc_plan.bash
# writes it (each template quoted with printf %q).
render_command() {
  printf 'hpc_plan_command=('
  printf ' %q' "$@"
  printf ' )\n'
}

# nul_dump ARG...: the arguments as NUL-terminated bytes, shown by od, for exact comparisons.
nul_dump() {
  printf '%s\0' "$@" | od -An -v -c
}

# same_args WHAT INPUT ACTUAL_NAME EXPECTED...: fails, showing both, unless the array named
# ACTUAL_NAME holds exactly EXPECTED.
same_args() {
  local what=$1 input=$2 actual expected
  local -n same_args_actual=$3
  shift 3
  actual=$(nul_dump "${same_args_actual[@]}")
  expected=$(nul_dump "$@")
  if [[ $actual != "$expected" ]]; then
    printf '%s of %q\nexpected:\n%s\nactual:\n%s\n' "$what" "$input" "$expected" "$actual"
    return 1
  fi
}

# words TEXT EXPECTED...: the configs file TEXT reads into exactly the templates EXPECTED.
words() {
  local text=$1
  shift
  printf '%s' "$text" >"$CONFIGS"
  hpc_test_untraced hpc_configs_read "$CONFIGS" || {
    printf 'hpc_configs_read failed on %q\n' "$text"
    return 1
  }
  same_args templates "$text" hpc_configs_words "$@"
}

# words_of_file FILE EXPECTED...: the configs file FILE reads into exactly the templates EXPECTED.
words_of_file() {
  local file=$1
  shift
  hpc_test_untraced hpc_configs_read "$file" || {
    printf 'hpc_configs_read failed on %s\n' "$file"
    return 1
  }
  same_args templates "$file" hpc_configs_words "$@"
}

# argv TEXT EXPECTED...: the configs file TEXT, read and expanded, gives exactly EXPECTED.
argv() {
  local text=$1
  shift
  printf '%s' "$text" >"$CONFIGS"
  hpc_test_untraced hpc_configs_read "$CONFIGS" || {
    printf 'hpc_configs_read failed on %q\n' "$text"
    return 1
  }
  hpc_test_untraced hpc_configs_expand "${hpc_configs_words[@]}" || {
    printf 'hpc_configs_expand failed on %q\n' "$text"
    return 1
  }
  same_args arguments "$text" hpc_configs_argv "$@"
}

# expands TEMPLATE... -- EXPECTED...: hpc_configs_expand TEMPLATE... gives exactly EXPECTED.
expands() {
  local -a templates=()
  while [[ $1 != -- ]]; do
    templates+=("$1")
    shift
  done
  shift
  hpc_test_untraced hpc_configs_expand "${templates[@]}" || {
    printf 'hpc_configs_expand failed on %q\n' "${templates[*]}"
    return 1
  }
  same_args arguments "${templates[*]}" hpc_configs_argv "$@"
}

# read_error TEXT MESSAGE: the configs file TEXT is refused with status 2 and exactly the one line
# 'job_submitter.sh: -C/--configs: FILE: MESSAGE'.
read_error() {
  printf '%s' "$1" >"$CONFIGS"
  run hpc_test_untraced hpc_configs_read "$CONFIGS"
  # shellcheck disable=SC2154 # status and output: set by bats' run
  if [[ $status != 2 || $output != "job_submitter.sh: -C/--configs: $CONFIGS: $2" ]]; then
    printf 'input: %q\nexpected status 2 and: %s\ngot status %s and: %s\n' "$1" \
      "job_submitter.sh: -C/--configs: $CONFIGS: $2" "$status" "$output"
    return 1
  fi
}

# generated_file FILE LINES: a configs file of LINES generated lines (plain options, quoted
# values and references, as a long generated sweep would have) and its command's last line.
# (awk writes the lines: a loop of the test's shell runs bats' DEBUG trap at every command.)
generated_file() {
  awk -v n="$2" 'BEGIN {
    printf "# generated\npython -m my_project.train \\\n"
    for (i = 1; i <= n; i++) {
      if (i % 10 == 0) printf "  --name%d \"value %d\" --ref%d=${VAR%d:-default} \\\n", i, i, i, i
      else printf "  --opt%d %d \\\n", i, i
    }
    printf "  --last\n"
  }' >"$1"
}

# read_bounded MESSAGE: reads $CONFIGS in a fresh shell bounded by a generous timeout (300 s: the
# bound is a hang, not a speed; a case of about 5 CPU-s took over 120 s in a whole suite on 2
# cores, niced beside the integration tests); passes when it is refused with status 2 and exactly MESSAGE
# (after 'job_submitter.sh: -C/--configs: FILE: '), or, with MESSAGE '', read into 2 words.
read_bounded() {
  run timeout 300 bash -c 'source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
    source "$HPC_ROOT/hpc_files/lib/hpc_configs.bash"
    hpc_program=job_submitter.sh; hpc_configs_read "$1" || exit
    printf "%s\n" "${#hpc_configs_words[@]}" "${#hpc_configs_words[1]}"' _ "$CONFIGS"
  if [[ -z $1 ]]; then
    assert_success
    assert_line --index 0 2
  else
    assert_failure 2
    assert_output "job_submitter.sh: -C/--configs: $CONFIGS: $1"
  fi
}

# nested N: ${A:-${A:-...x}} nested N levels deep.
nested() {
  local open close
  printf -v open '%*s' "$1" ''
  printf -v close '%*s' "$1" ''
  printf '%s%s%s' "${open// /\$\{A:-}" x "${close// /\}}"
}
