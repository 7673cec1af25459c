#!/usr/bin/env bats
# hpc_configs.bash: the configs file read into templates (hpc_configs_read), their expansion in
# the job (hpc_configs_expand), the names they refer to (hpc_configs_references) and their quoting
# in the plan file's hpc_plan_command=( ... ). Tables of inputs and exact outputs; arguments are
# compared as NUL-terminated bytes (od -c), so every element is checked exactly. The tests of long
# and large files are configs_size.bats (side by side with this one).
# shellcheck disable=SC2016,SC1003,SC2088 # $, backslashes and ~ in single quotes are the inputs, on purpose

bats_require_minimum_version 1.5.0
# Set by configs_setup (helpers/configs.bash) and hpc_configs.bash; declared for shellcheck.
declare -g TMP CONFIGS
declare -ga hpc_configs_words hpc_configs_argv

setup() {
  load '../helpers/common'
  load '../helpers/configs'
  configs_setup
}

@test "read: words, blanks and quotes as in a shell" {
  words $'python train.py\n' python train.py
  words 'python train.py' python train.py
  words $'  python \t  train.py   \n' python train.py
  words $'python "my file.py"\n' python 'my file.py'
  words $'--name="my run"\n' '--name=my run'
  words $'\'a b\'"c d"e\\ f\n' 'a bc de f'
  words $'\'it\'\\\'\'s\'\n' "it's"
  words $'"it\'s"\n' "it's"
  words $'a \'\' b "" c\n' a '' b '' c
  words $'""\n' ''
  words $'"tab\there"\n' $'tab\there'
  words $'"two\nlines" x\n' $'two\nlines' x
  words $'\'two\nlines\'\n' $'two\nlines'
  words $'a\\ b\\\tc\n' $'a b\tc'
  words $'\\"quoted\\" \\\'s\\\'\n' '"quoted"' "'s'"
  words $'--msg="h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93 \xe6\x97\xa5\xe6\x9c\xac"\n' '--msg=héllo wörld ✓ 日本'
  words $'x\r\n' x
  words $'\xef\xbb\xbfpython a.py\n' python a.py
}

@test "read: backslashes: outside quotes, in double quotes (only \$ \` \" \\ newline) and in single quotes" {
  words $'a\\\\b\n' 'a\\b'
  words $'\\a\\b\n' ab
  words $'"\\$ \\` \\" \\\\ \\x \\n"\n' '\$ ` " \\ \\x \\n'
  words $'\'\\n \\\\ \\$\'\n' '\\n \\\\ \\\$'
  words $'"ends with \\\\"\n' 'ends with \\'
  words $'C:\\\\path\\\\x\n' 'C:\\path\\x'
}

@test "read: comments and blank lines" {
  words $'# a comment\n\n   \npython a.py\n\n# another\n' python a.py
  words $'python a.py # --lr 0.1\n' python a.py
  words $'python a.py #--lr 0.1 \\\n' python a.py
  words $'a#b "#c" \'#d\' \\#e #f\n' 'a#b' '#c' '#d' '#e'
  words $'\t# indented comment\npython\n' python
  words $'python a.py\n# after the command, with a backslash \\\n\n' python a.py
}

@test "read: continued lines" {
  words $'python train.py \\\n  --a 1 \\\n  --b 2\n' python train.py --a 1 --b 2
  words $'python \\\n\t--a\\\n1\n' python --a1
  words $'ab\\\ncd\n' abcd
  words $'"ab\\\ncd"\n' abcd
  words $'\'ab\\\ncd\'\n' $'ab\\\\\ncd'
  words $'python \\\r\n  a.py\r\n' python a.py
  words $'\\\npython a.py\n' python a.py
  words $'python \\\n\n' python
  words $'# comment\n\npython \\\n  x \\\n  y # z\n\n# done\n' python x y
}

@test "read: references become \${NAME} templates; literal \$ and \\ are escaped" {
  words $'$HOME\n' '${HOME}'
  words $'${HOME}\n' '${HOME}'
  words $'"$HOME/x" $HOME$USER $A_1b.c\n' '${HOME}/x' '${HOME}${USER}' '${A_1b}.c'
  words $'${X:-def}\n' '${X:-def}'
  words $'${X:-a b}\n' '${X:-a b}'
  words $'--out=${X:-"a}b"}/x\n' '--out=${X:-a\}b}/x'
  words $'${X:-${Y:-z}}\n' '${X:-${Y:-z}}'
  words $'${X:-$Y}\n' '${X:-${Y}}'
  words $'${X:-\'$lit\'}\n' '${X:-\$lit}'
  words $'"${X:-\'q\'}"\n' "\${X:-'q'}"
  words $'"${X:-"a b"}"\n' '${X:-a b}'
  words $'${X:-}\n' '${X:-}'
  words $'${X:-a;b|c #d}\n' '${X:-a;b|c #d}'
  words $'\'$HOME\' \\$HOME "\\$HOME"\n' '\$HOME' '\$HOME' '\$HOME'
  words $'cost$ $ 5$\n' 'cost\$' '\$' '5\$'
}

@test "read: other \$ forms, backquotes, globs, braces and tildes stay text" {
  words $'$(touch pwned)\n' '\$(touch pwned)'
  words $'"$(touch pwned)" \'$(touch pwned)\'\n' '\$(touch pwned)' '\$(touch pwned)'
  words $'--x=$(echo (a b)) y\n' '--x=\$(echo (a b))' y
  words $'`touch pwned` "`id`"\n' '`touch pwned`' '`id`'
  words $'$((1 + 2)) ${#x} ${x/a/b} ${x-d y}\n' '\$((1 + 2))' '\${#x}' '\${x/a/b}' '\${x-d y}'
  words $'$1 $@ $* $$ $? $# $! $-\n' '\$1' '\$@' '\$*' '\$\$' '\$?' '\$#' '\$!' '\$-'
  words $'$\'a\\nb\'\n' '\$a\\nb'
  words $'${X:-$(date)}\n' '${X:-\$(date)}'
  words $'*.py [ab] {a,b} ~/x ~ !x\n' '*.py' '[ab]' '{a,b}' '~/x' '~' '!x'
  words $'\'a|b\' "a;b" a\\>b \'(x)\' "&"\n' 'a|b' 'a;b' 'a>b' '(x)' '&'
}

@test "read errors: exit status 2 and one line naming -C/--configs, the file and the problem" {
  read_error '' 'no command in it (only blank lines and comments)'
  read_error $'\n\n  \n' 'no command in it (only blank lines and comments)'
  read_error $'# only\n  # comments\n' 'no command in it (only blank lines and comments)'
  read_error $'python \'a.py\n' "unbalanced ' (single quote) opened on line 1"
  read_error $'# c\npython a.py \\\n  --x \'it\'s\'\n' "unbalanced ' (single quote) opened on line 3"
  read_error $'python \\\n  "a\n\nb\n' 'unbalanced " (double quote) opened on line 2'
  read_error $'python "a\\"\n' 'unbalanced " (double quote) opened on line 1'
  read_error $'python a.py \\\n' 'trailing backslash at end of file (line 1)'
  read_error $'python \\\n  a.py \\' 'trailing backslash at end of file (line 2)'
  read_error $'python a.py\npython b.py\n' 'line 2: a second command; the file holds one command (end a line with \ to continue it)'
  read_error $'python a.py\n\n# c\n  --lr 1\n' 'line 4: a second command; the file holds one command (end a line with \ to continue it)'
  read_error $'python a.py \\\n  # --lr 1 \\\n  --epochs 3\n' 'line 3: a second command; the file holds one command (end a line with \ to continue it)'
  read_error $'python a.py | tee log\n' "line 1: unquoted '|': pipes, redirections, command lists and subshells are not supported (quote it to pass it to the program)"
  read_error $'python \\\n a.py > log\n' "line 2: unquoted '>': pipes, redirections, command lists and subshells are not supported (quote it to pass it to the program)"
  read_error $'python a.py; rm x\n' "line 1: unquoted ';': pipes, redirections, command lists and subshells are not supported (quote it to pass it to the program)"
  read_error $'python a.py &\n' "line 1: unquoted '&': pipes, redirections, command lists and subshells are not supported (quote it to pass it to the program)"
  read_error $'python a.py 2<x\n' "line 1: unquoted '<': pipes, redirections, command lists and subshells are not supported (quote it to pass it to the program)"
  read_error $'(python a.py)\n' "line 1: unquoted '(': pipes, redirections, command lists and subshells are not supported (quote it to pass it to the program)"
  read_error $'python ${X:-abc\n' 'unterminated ${X:-...} opened on line 1'
  read_error $'python\\\n $(date\n' 'unbalanced $( opened on line 2'
  read_error $'python ${#x\n' 'unbalanced ${ opened on line 1'
  read_error $'python `date\n' 'unbalanced ` (backquote) opened on line 1'
  # (A Bash string cannot hold a NUL byte: printf writes it.)
  printf 'python a\0.py\n' >"$CONFIGS"
  run hpc_configs_read "$CONFIGS"
  assert_equal "$status" 2
  assert_output "job_submitter.sh: -C/--configs: $CONFIGS: contains a NUL byte (not a text file)"
}

@test "read errors: missing, a directory, unreadable, no name" {
  run hpc_configs_read "$TMP/nope.txt"
  assert_equal "$status" 2
  assert_output "job_submitter.sh: -C/--configs: $TMP/nope.txt: no such file"
  run hpc_configs_read "$TMP"
  assert_equal "$status" 2
  assert_output "job_submitter.sh: -C/--configs: $TMP: is a directory, not a file"
  run hpc_configs_read ''
  assert_equal "$status" 2
  assert_output "job_submitter.sh: -C/--configs: no file name given"
  printf 'python a.py\n' >"$CONFIGS"
  chmod 000 "$CONFIGS"
  if [[ -r $CONFIGS ]]; then
    skip "running as root: every file is readable"
  fi
  run hpc_configs_read "$CONFIGS"
  assert_equal "$status" 2
  assert_output "job_submitter.sh: -C/--configs: $CONFIGS: cannot be read (permission denied)"
}

@test "read: a failed read leaves no templates behind" {
  words $'python a.py\n' python a.py
  printf 'python "a.py\n' >"$CONFIGS"
  hpc_configs_read "$CONFIGS" 2>/dev/null || true
  assert_equal "${#hpc_configs_words[@]}" 0
}

@test "expand: values from the environment, never split, globbed or expanded again" {
  argv $'prog $X\n' prog 'x val'
  argv $'prog "$X" ${X}\n' prog 'x val' 'x val'
  argv $'prog --x=$X/y\n' prog '--x=x val/y'
  argv $'prog $E "" \'\'\n' prog '' '' ''
  argv $'prog a${E}b\n' prog ab
  argv $'prog $DOLLAR "$DOLLAR"\n' prog '$HOME' '$HOME'
  argv $'prog $STAR "${STAR}.py"\n' prog '*' '*.py'
  argv $'prog $SUB\n' prog '$(touch pwned)'
  argv $'prog $NL\n' prog $'a\nb'
  argv $'prog $BS\n' prog 'a\b'
  argv $'prog \'$X\' \\$X "\\$X"\n' prog '$X' '$X' '$X'
  argv $'prog $X$E$X\n' prog 'x valx val'
  argv $'prog "a \\\\ b" \'c \\ d\'\n' prog 'a \ b' 'c \ d'
  run ls -A
  assert_output "experiment_configurations.txt"
}

@test "expand: defaults, used when unset or empty, and nested" {
  argv $'prog ${U:-d}\n' prog d
  argv $'prog ${E:-d}\n' prog d
  argv $'prog ${X:-d}\n' prog 'x val'
  argv $'prog ${U:-a b} "${U:-c d}"\n' prog 'a b' 'c d'
  argv $'prog ${U:-}x\n' prog x
  argv $'prog ${U:-${U2:-deep}}\n' prog deep
  argv $'prog ${U:-$X}\n' prog 'x val'
  argv $'prog ${X:-$U}\n' prog 'x val'
  argv $'prog ${X:-${U:-$U2}}\n' prog 'x val'
  argv $'prog ${U:-"a}b"}\n' prog 'a}b'
  argv $'prog ${U:-$STAR}\n' prog '*'
  argv $'prog ${U:-$(touch pwned)}\n' prog '$(touch pwned)'
  argv $'prog --out="${U:-/tmp}/${E:-run 1}/x"\n' prog '--out=/tmp/run 1/x'
}

@test "expand: an unset name without a default fails with status 1 and one exact line" {
  local -a cases=(
    '${U}' 'variable U is not set in the job (used in: ${U})'
    '--out=${U}/x' 'variable U is not set in the job (used in: --out=${U}/x)'
    '${U:-${U2}}' 'variable U2 is not set in the job (used in: ${U:-${U2}})'
    '${E:-$U2}' 'variable U2 is not set in the job (used in: ${E:-$U2})'
    '$U' 'variable U is not set in the job (used in: $U)'
  )
  local i
  for ((i = 0; i < ${#cases[@]}; i += 2)); do
    run hpc_configs_expand ok "${cases[i]}"
    assert_equal "$status" 1
    assert_output "configs: ${cases[i + 1]}"
  done
  hpc_configs_expand '${U}' 2>/dev/null || true
  assert_equal "${#hpc_configs_argv[@]}" 0
}

@test "expand: templates written by hand" {
  expands -- # nothing in, nothing out
  expands 'plain' 'with space' '' -- plain 'with space' ''
  expands '\$X' '\\' 'a\b' 'end\' -- '$X' '\' 'ab' 'end\'
  expands '}' 'a}b' '${X}}' -- '}' 'a}b' 'x val}'
  expands '${U:-a\}b}' '${U:-\${X\}}' -- 'a}b' '${X}'
  expands '$(x)' '$' '${1}' '${#X}' -- '$(x)' '$' '${1}' '${#X}'
  expands '$X.y' '${X}y' '${X:-}' -- 'x val.y' 'x valy' 'x val'
  run hpc_configs_expand '$Xy'
  assert_equal "$status" 1
  assert_output 'configs: variable Xy is not set in the job (used in: $Xy)'
  expands $'h\xc3\xa9 ${X}' $'\xff\xfe' -- 'hé x val' $'\xff\xfe'
}

@test "nothing in the configs file or the values runs, and nothing is globbed" {
  touch a.py b.py
  argv $'prog $(touch pwned) "$(touch pwned)" \'$(touch pwned)\' `touch pwned` *.py [ab].py ${U:-`touch pwned`} $SUB\n' \
    prog '$(touch pwned)' '$(touch pwned)' '$(touch pwned)' '`touch pwned`' '*.py' '[ab].py' '`touch pwned`' '$(touch pwned)'
  [[ ! -e pwned ]]
  run hpc_configs_references "${hpc_configs_words[@]}"
  [[ ! -e pwned ]]
  # Also in a job script made from them, run by a fresh shell.
  {
    printf 'set -euo pipefail\nsource %q\nsource %q\n' "$HPC_ROOT/hpc_files/lib/hpc_common.bash" \
      "$HPC_ROOT/hpc_files/lib/hpc_configs.bash"
    render_command "${hpc_configs_words[@]}"
    printf 'hpc_configs_expand "${hpc_plan_command[@]}"\nprintf "%%s\\0" "${hpc_configs_argv[@]}"\n'
  } >job.sh
  run --separate-stderr bash job.sh
  assert_success
  [[ ! -e pwned ]]
  run ls -A
  assert_output "a.py
b.py
experiment_configurations.txt
job.sh"
}

@test "references: names in order of first use, each once; NAME:- when a default covers every use" {
  printf '%s\n' 'python ${A} x${B:-1} "$A" ${C:-${D}} \$E '"'\$F'"' ${G:-x} $G' >"$CONFIGS"
  hpc_configs_read "$CONFIGS"
  run hpc_configs_references "${hpc_configs_words[@]}"
  assert_success
  assert_output "A
B:-
C:-
D:-
G"
  run hpc_configs_references python '\$X' 'plain'
  assert_success
  assert_output ''
  run hpc_configs_references '${B:-x}' '${A:-${B}}' '${B}'
  assert_output "B
A:-"
}

@test "quote: templates survive the plan file's hpc_plan_command=( ... ) exactly" {
  local -a templates=(
    '' 'a b' "it's" 'say "hi"' $'line1\nline2' '${X}' '\$HOME' 'back\\slash' 'é ✓ 日本'
    $'tab\there' '*' '~' '#c' '!x' "a'b\"c" $'\x01ctrl' '${U:-a\}b}' $'\xff' '-' '--' '--x=$(id)'
  )
  local line
  line=$(render_command "${templates[@]}")
  [[ $line != *$'\n'* ]]
  printf 'set -euo pipefail\n%s\nprintf "%%s\\0" "${hpc_plan_command[@]}"\n' "$line" >job.sh
  run bash -c 'bash job.sh | od -An -v -c'
  assert_success
  assert_output "$(nul_dump "${templates[@]}")"
}

@test "round trip: configs file -> templates -> job script -> the program's arguments" {
  cat >"$CONFIGS" <<'EOF'
# The experiment
python -m my_project.train \
  --config "configs/base model.yaml" \
  --out="$SCRATCH_DIR/runs/${SLURM_JOB_ID:-local}" \
  --seed ${SEED:-42} --tags "a b" 'c $d' e\ f \
  --desc "it's a \"quoted\" \$tring with \\ and ✓" \
  --pattern='*.py' --sub '$(id)'
EOF
  hpc_configs_read "$CONFIGS"
  {
    printf 'set -euo pipefail\nsource %q\nsource %q\n' "$HPC_ROOT/hpc_files/lib/hpc_common.bash" \
      "$HPC_ROOT/hpc_files/lib/hpc_configs.bash"
    render_command "${hpc_configs_words[@]}"
    printf 'hpc_configs_expand "${hpc_plan_command[@]}"\nprintf "%%s\\0" "${hpc_configs_argv[@]}"\n'
  } >job.sh
  run bash -c 'SCRATCH_DIR="/s p" SLURM_JOB_ID=7 bash job.sh | od -An -v -c'
  assert_success
  assert_output "$(nul_dump python -m my_project.train --config 'configs/base model.yaml' \
    '--out=/s p/runs/7' --seed 42 --tags 'a b' 'c $d' 'e f' \
    --desc 'it'"'"'s a "quoted" $tring with \ and ✓' '--pattern=*.py' --sub '$(id)')"
  run bash -c 'bash job.sh'
  assert_failure 1
  assert_output 'configs: variable SCRATCH_DIR is not set in the job (used in: --out=${SCRATCH_DIR}/runs/${SLURM_JOB_ID:-local})'
}

@test "works under set -euo pipefail and with nullglob, failglob and extglob on" {
  printf '%s\n' 'python *.py ${X:-d} "$E" ${U:-u} ~ [x]' >"$CONFIGS"
  run --separate-stderr bash -c '
    set -euo pipefail
    shopt -s nullglob failglob extglob
    source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"
    source "$HPC_ROOT/hpc_files/lib/hpc_configs.bash"
    hpc_configs_read "$1"
    hpc_configs_expand "${hpc_configs_words[@]}"
    hpc_configs_references "${hpc_configs_words[@]}"
    printf "[%s]" "${hpc_configs_argv[@]}"
    echo
    hpc_configs_expand "\${U}" || echo "status $?"
    printf "x\n" >"$1.2"
    hpc_configs_read "$1.2"
    echo read ok' _ "$CONFIGS"
  assert_success
  assert_output "X:-
E
U:-
[python][*.py][x val][][u][~][[x]]
status 1
read ok"
}

@test "the library never evaluates: no eval, bash -c, source or declare in its code" {
  run grep -nE '(^|[^_[:alnum:]])(eval|source|declare|bash -c)([^_[:alnum:]]|$)' \
    <(grep -hv '^[[:space:]]*#' "$HPC_ROOT/hpc_files/lib/hpc_configs.bash" "$HPC_ROOT/hpc_files/lib/hpc_configs_quoted.bash" \
      "$HPC_ROOT/hpc_files/lib/hpc_configs_long.bash")
  assert_failure 1
}

@test "read: CR-only (old Mac) and CRLF line ends leave no carriage return in the words" {
  words $'python a.py \\\r  --x 1\r' python a.py --x 1
  words $'x\r' x
  words $'python \\\r\n  a.py \\\r  b\r\n' python a.py b
  words $'"two\rlines" \'and\r\nthese\'\r' $'two\nlines' $'and\nthese'
  words $'# comment\r\rpython \\\r  x # y\r\r# done\r' python x
  read_error $'python a.py\rpython b.py\r' 'line 2: a second command; the file holds one command (end a line with \ to continue it)'
  read_error $'# c\r\npython \'a\r\n' "unbalanced ' (single quote) opened on line 2"
}

@test "read: continued plain lines are read as a run, joined as a shell joins them" {
  words $'python \\\n--a\\\n1 \\\n  b\\\n"c d" \\\n  e\n' python --a1 'bc d' e
  words $'"x y"\\\nz \\\nw\n' 'x yz' w
  words $'"x y"\\\nz\\\nw\n' 'x yzw'
  words $'a \\\n\\\n\\\n  b \\\n c\n' a b c
  words $'a \\\n  *.py [x] \\\n  c' a '*.py' '[x]' c
  read_error $'a \\\n b \\\n' 'trailing backslash at end of file (line 2)'
  read_error $'a \\\n b \\\n c \\' 'trailing backslash at end of file (line 3)'
}

@test "read errors: a FIFO refused where hpc_configs_long.bash (the kinds of special files) is missing: still one line, exit 2" {
  local lib=$TMP/lib
  cp -r "$HPC_ROOT/hpc_files/lib" "$lib"
  rm "$lib/hpc_configs_long.bash"
  mkfifo "$TMP/fifo"
  run timeout "$HPC_TEST_HANG_S" bash -c 'source "$1/hpc_common.bash"; source "$1/hpc_configs.bash"; hpc_program=job_submitter.sh
    hpc_configs_read "$2"' _ "$lib" "$TMP/fifo"
  assert_equal "$status" 2
  assert_output "job_submitter.sh: -C/--configs: $TMP/fifo: no 'hpc_configs_long' in $lib"
}

@test "read errors: only regular files: a FIFO, a device or a socket is refused at once, without reading it" {
  mkfifo "$TMP/fifo"
  # A FIFO with no writer would block a reader forever: the timeout proves it is never opened.
  run timeout "$HPC_TEST_HANG_S" bash -c 'source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"; source "$HPC_ROOT/hpc_files/lib/hpc_configs.bash"; hpc_program=job_submitter.sh; hpc_configs_read "$1"' _ "$TMP/fifo"
  assert_equal "$status" 2
  assert_output "job_submitter.sh: -C/--configs: $TMP/fifo: is a named pipe (FIFO), not a regular file; accepted: a text file"
  run hpc_configs_read /dev/zero
  assert_equal "$status" 2
  assert_output "job_submitter.sh: -C/--configs: /dev/zero: is a character device, not a regular file; accepted: a text file"
  run hpc_configs_read /dev/null
  assert_equal "$status" 2
  assert_output "job_submitter.sh: -C/--configs: /dev/null: is a character device, not a regular file; accepted: a text file"
  # A symlink to a regular file is that file.
  printf 'python a.py\n' >"$CONFIGS"
  ln -s "$CONFIGS" "$TMP/link.txt"
  words_of_file "$TMP/link.txt" python a.py
}

@test "read errors: a file larger than 4 MiB is refused; 4 MiB exactly is read" {
  {
    printf 'python a.py\n#'
    head -c $((4194304 - 14)) /dev/zero | tr '\0' x
    printf '\n'
  } >"$CONFIGS"
  assert_equal "$(stat -c %s "$CONFIGS")" 4194304
  words_of_file "$CONFIGS" python a.py
  printf 'x' >>"$CONFIGS"
  run hpc_configs_read "$CONFIGS"
  assert_equal "$status" 2
  assert_output "job_submitter.sh: -C/--configs: $CONFIGS: larger than 4194304 bytes (4 MiB); a configs file holds one command"
}

@test "read: a word of many references is read in bounded time" {
  {
    printf 'python \\\n'
    head -c 90000 /dev/zero | sed 's/\x0\{5\}/$HOME/g'
    printf '\n'
  } >"$CONFIGS"
  read_bounded ''
  assert_line --index 1 126000
}

@test "read errors: references nested deeper than 32 levels are refused (no deep recursion)" {
  local too_deep='line 2: references nested deeper than 32 levels (${NAME:-${NAME:-...}})'
  printf 'python \\\n%s\n' "$(nested 32)" >"$CONFIGS"
  read_bounded ''
  printf 'python \\\n"%s"\n' "$(nested 32)" >"$CONFIGS"
  read_bounded ''
  printf 'python \\\n%s\n' "$(nested 33)" >"$CONFIGS"
  read_bounded "$too_deep"
  printf 'python \\\n"%s"\n' "$(nested 33)" >"$CONFIGS"
  read_bounded "$too_deep"
  printf 'python \\\n%s\n' "$(nested 3000)" >"$CONFIGS"
  read_bounded "$too_deep"
}

@test "expand: templates nested deeper than 32 levels fail with one line, never a deep recursion" {
  local ok deep
  ok=$(nested 32)
  expands "$ok" -- x
  deep=$(nested 3000)
  run timeout "$HPC_TEST_HANG_S" bash -c 'source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"; source "$HPC_ROOT/hpc_files/lib/hpc_configs.bash"
    hpc_configs_expand "$1"' _ "$deep"
  assert_equal "$status" 1
  assert_output "configs: references nested deeper than 32 levels (used in: $deep)"
  run timeout "$HPC_TEST_HANG_S" bash -c 'source "$HPC_ROOT/hpc_files/lib/hpc_common.bash"; source "$HPC_ROOT/hpc_files/lib/hpc_configs.bash"
    hpc_configs_references "$1"' _ "$deep"
  assert_equal "$status" 1
  assert_output "configs: references nested deeper than 32 levels (used in: $deep)"
}
