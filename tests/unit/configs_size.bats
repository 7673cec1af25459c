#!/usr/bin/env bats
# hpc_configs.bash with long lines and large files: pieces, cuts, the longest word, the cost.
# The rest of the reader, the expansion and the quoting: configs.bats (side by side with this one).
# shellcheck disable=SC2016,SC1003 # $ and backslashes in single quotes are the inputs, on purpose

bats_require_minimum_version 1.5.0
# Set by configs_setup (helpers/configs.bash); declared for shellcheck.
declare -g TMP CONFIGS

setup() {
  load '../helpers/common'
  load '../helpers/configs'
  configs_setup
}

# read_small_word MESSAGE: $CONFIGS read with hpc_configs_max_word made 8192 is refused with status
# 2 and exactly MESSAGE (after 'job_submitter.sh: -C/--configs: FILE: ').
read_small_word() {
  run timeout 300 bash -c 'source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
    source "$HPC_ROOT/hpc_files/lib/hpc_configs.bash"
    hpc_program=job_submitter.sh hpc_configs_max_word=8192; hpc_configs_read "$1"' _ "$CONFIGS"
  assert_failure 2
  assert_output "job_submitter.sh: -C/--configs: $CONFIGS: $1"
}

@test "read: lines longer than a piece (4 KiB): words, quotes and comments across the cuts" {
  local line='' i
  local -a want=(python)
  for i in {1..1500}; do
    line+=" --o$i \"v $i\""
    want+=("--o$i" "v $i")
  done
  words "python$line"$'\n' "${want[@]}"
  local long=${line//\"/}
  words "python 'a$long' \"b$long\" \${X:-c$long}"$'\n' python "a$long" "b$long" "\${X:-c$long}"
  words "python a.py # a comment:$line 'unbalanced"$'\n# and more\n' python a.py
  read_error "python a.py$line"$'\npython b.py\n' 'line 2: a second command; the file holds one command (end a line with \ to continue it)'
  read_error "python \"a$long"$'\n' 'unbalanced " (double quote) opened on line 1'
}

@test "cost: linear in the size of the file (bytes the parser handles, counted by bash -x, not timed)" {
  # Every command the parser runs is traced with its expanded words: the trace's size is the
  # work done on text. A parser that copies the rest of the file at every word (quadratic) makes
  # the trace of a file twice as long four times as large; a linear one twice.
  generated_file "$TMP/n.txt" 150
  generated_file "$TMP/2n.txt" 300
  local n
  trace_bytes() {
    bash -c 'source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"; source "$HPC_ROOT/hpc_files/lib/hpc_configs.bash"
      exec 3>"$2"; BASH_XTRACEFD=3; set -x; hpc_configs_read "$1"; set +x; printf "%s\n" "${#hpc_configs_words[@]}"' _ "$1" "$1.trace"
    stat -c %s "$1.trace"
  }
  run trace_bytes "$TMP/n.txt"
  assert_success
  assert_line --index 0 $((3 + 135 * 2 + 15 * 3 + 1))
  n=${lines[1]}
  run trace_bytes "$TMP/2n.txt"
  assert_success
  assert_line --index 0 $((3 + 270 * 2 + 30 * 3 + 1))
  echo "# trace bytes: $n for 150 lines, ${lines[1]} for 300" >&3
  ((lines[1] * 10 <= n * 25))
}

@test "cost: a 20,000-line configs file is read, every word right (300 s bounds a hang; the cost: the test above)" {
  generated_file "$CONFIGS" 20000
  run --separate-stderr timeout 300 bash -c 'source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"; source "$HPC_ROOT/hpc_files/lib/hpc_configs.bash"
    hpc_configs_read "$1" && printf "%s\n" "${#hpc_configs_words[@]}" "${hpc_configs_words[3]}" "${hpc_configs_words[-4]}" "${hpc_configs_words[-3]}" "${hpc_configs_words[-2]}" "${hpc_configs_words[-1]}"' _ "$CONFIGS"
  assert_success
  assert_output "$((3 + 18000 * 2 + 2000 * 3 + 1))
--opt1
--name20000
value 20000
--ref20000=\${VAR20000:-default}
--last"
}

@test "read errors: a word longer than 131072 bytes (Linux's most for one argument) is refused early" {
  local too_long='line 2: a word longer than 131072 bytes, the most Linux passes as one argument'
  # 131072 bytes, unquoted, single-quoted, double-quoted, escaped: read.
  {
    printf 'python \\\n'
    head -c 131072 /dev/zero | tr '\0' a
    printf '\n'
  } >"$CONFIGS"
  read_bounded ''
  assert_line --index 1 131072
  {
    printf "python \\\\\n'"
    head -c 131072 /dev/zero | tr '\0' a
    printf "'\n"
  } >"$CONFIGS"
  read_bounded ''
  {
    printf 'python \\\n"'
    head -c 131072 /dev/zero | tr '\0' a
    printf '"\n'
  } >"$CONFIGS"
  read_bounded ''
  {
    printf 'python \\\n'
    head -c 131072 /dev/zero | sed 's/\x0\x0/\\x/g'
    printf '\n'
  } >"$CONFIGS"
  read_bounded ''
  assert_line --index 1 65536
  # One byte more, and words of a megabyte of each kind: refused, at once.
  {
    printf 'python \\\n'
    head -c 131073 /dev/zero | tr '\0' a
    printf '\n'
  } >"$CONFIGS"
  read_bounded "$too_long"
  {
    printf 'python \\\n'
    head -c 1000000 /dev/zero | tr '\0' a
    printf '\n'
  } >"$CONFIGS"
  read_bounded "$too_long"
  {
    printf "python \\\\\n'"
    head -c 1000000 /dev/zero | tr '\0' a
    printf "'\n"
  } >"$CONFIGS"
  read_bounded "$too_long"
  {
    printf 'python \\\n"'
    head -c 1000000 /dev/zero | tr '\0' a
    printf '"\n'
  } >"$CONFIGS"
  read_bounded "$too_long"
  {
    printf 'python \\\n'
    head -c 1000000 /dev/zero | sed 's/\x0\x0/\\x/g'
    printf '\n'
  } >"$CONFIGS"
  read_bounded "$too_long"
  # Words of many parts (double-quoted references; references), the limit made 8192 (each part
  # costs the parser tens of microseconds, as many at 131072: the same code): refused once the
  # word is longer, before the unquoted ';' after it (a parser that read on would refuse that).
  {
    printf 'python \\\n'
    head -c 30000 /dev/zero | sed 's/\x0\{8\}/"$HOME"/g'
    printf ';\n'
  } >"$CONFIGS"
  read_small_word 'line 2: a word longer than 8192 bytes, the most Linux passes as one argument'
  {
    printf 'python \\\n'
    head -c 30000 /dev/zero | sed 's/\x0\{5\}/$HOME/g'
    printf ';\n'
  } >"$CONFIGS"
  read_small_word 'line 2: a word longer than 8192 bytes, the most Linux passes as one argument'
  # The ';' alone is refused: what the early refusals above did not reach.
  {
    printf 'python \\\n'
    head -c 3000 /dev/zero | sed 's/\x0\{5\}/$HOME/g'
    printf ';\n'
  } >"$CONFIGS"
  read_small_word "line 2: unquoted ';': pipes, redirections, command lists and subshells are not supported (quote it to pass it to the program)"
}

@test "read: a run without blanks longer than a piece is cut where nothing is left half read" {
  local unit='{X.b$A\x\\y${B}:-${C:-d.e}"q r"'"'s t'"'$D$E\$F}' template='{X.b${A}x\\y${B}:-${C:-d.e}q rs t${D}${E}\$F}' i long='' expect=''
  for i in {1..300}; do
    long+=$unit
    expect+=$template
  done
  words "python $long end"$'\n' python "$expect" end
  # The same with pieces of a few bytes: every cut lands inside a run.
  for i in 3 5 8 13; do
    _hpc_configs_piece_bytes=$i
    words "python $unit$unit x${unit}y"$'\n' python "$template$template" "x${template}y"
  done
}

@test "read errors: a command no program could be given (over 2 MiB of arguments: 300,000 words, or fewer long ones) is refused once the parser has read too many words, not at the end" {
  {
    printf 'python'
    head -c 300000 /dev/zero | sed 's/\x0/ ab/g'
    printf '\n'
  } >"$CONFIGS"
  read_bounded "line 1: more than 233016 words, more than Linux passes to a program (2 MiB of arguments, each word its length + 9 bytes)"
  {
    printf 'python \\\n'
    for _ in {1..17}; do
      head -c 131000 /dev/zero | tr '\0' a
      printf ' \\\n'
    done
    printf 'end\n'
  } >"$CONFIGS"
  read_bounded "its 19 words take $((6 + 17 * 131000 + 3 + 19 * 9)) bytes as arguments, more than the 2097152 (2 MiB) Linux passes to a program"
  # Just under: 16 such words are read.
  {
    printf 'python \\\n'
    for _ in {1..15}; do
      head -c 131000 /dev/zero | tr '\0' a
      printf ' \\\n'
    done
    printf 'end\n'
  } >"$CONFIGS"
  run timeout "$HPC_TEST_HANG_S" bash -c 'source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"; source "$HPC_ROOT/hpc_files/lib/hpc_configs.bash"
    hpc_configs_read "$1" && printf "%s\n" "${#hpc_configs_words[@]}"' _ "$CONFIGS"
  assert_success
  assert_output 17
}

@test "read errors: more than 100000 quoted parts, escapes and references in one command is refused once that many are read (a line of empty \"\" cost the program nothing and the parser minutes); exactly the limit is read" {
  # The toolkit's limit.
  run bash -c 'source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"; source "$HPC_ROOT/hpc_files/lib/hpc_configs.bash"; printf "%s\n" "$hpc_configs_max_parts"'
  assert_output 100000
  # A million empty quoted parts (minutes to read whole), the limit made 2000 (reading 100,000
  # parts takes seconds, more on a loaded machine): refused once 2000 are read, not at the end.
  {
    printf 'python '
    head -c 1000000 /dev/zero | sed 's/\x0/""/g'
    printf '\n'
  } >"$CONFIGS"
  run timeout "$HPC_TEST_HANG_S" bash -c 'source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"; source "$HPC_ROOT/hpc_files/lib/hpc_configs.bash"
    hpc_program=job_submitter.sh hpc_configs_max_parts=2000; hpc_configs_read "$1"' _ "$CONFIGS"
  assert_failure 2
  assert_output "job_submitter.sh: -C/--configs: $CONFIGS: line 1: more than 2000 quoted parts, escapes and references in one command, more than the toolkit reads (put such a list in a file that the program reads)"
  # The limit itself, made small: at it read, one past it refused.
  printf 'python "a" b\\ c $X\n' >"$CONFIGS"
  run bash -c 'source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"; source "$HPC_ROOT/hpc_files/lib/hpc_configs.bash"
    hpc_configs_max_parts=$2; hpc_configs_read "$1" && printf "%s\n" "${hpc_configs_words[@]}"' _ "$CONFIGS" 3
  assert_success
  assert_output "python
a
b c
\${X}"
  run bash -c 'source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"; source "$HPC_ROOT/hpc_files/lib/hpc_configs.bash"
    hpc_program=job_submitter.sh hpc_configs_max_parts=$2; hpc_configs_read "$1"' _ "$CONFIGS" 2
  assert_failure 2
  assert_output "job_submitter.sh: -C/--configs: $CONFIGS: line 1: more than 2 quoted parts, escapes and references in one command, more than the toolkit reads (put such a list in a file that the program reads)"
}

@test "read: a line longer than four blocks is read from its blocks (split once): words, quotes, escapes, references and a comment across them, the line's end found" {
  local unit=' --o "v w" '\''s t'\'' \x\\y ${A:-"d e"} $B' template
  local line='' i
  local -a want=(python)
  for i in {1..40}; do line+=$unit; done
  # shellcheck disable=SC2016 # the templates, as read
  template=(--o 'v w' 's t' 'x\\y' '${A:-d e}' '${B}')
  for i in {1..40}; do want+=("${template[@]}"); done
  for i in 1 7 64; do
    _hpc_configs_block_bytes=$i
    words "python$line"$'\n' "${want[@]}"
    words "python$line # a comment \"$line"$'\n# more\n' "${want[@]}"
    words "python$line"$'\n\n' "${want[@]}"
    _hpc_configs_piece_bytes=5
    words "python$line" "${want[@]}"
    read_error "python$line"$'\npython b.py\n' 'line 2: a second command; the file holds one command (end a line with \ to continue it)'
    _hpc_configs_piece_bytes=4096
  done
}
