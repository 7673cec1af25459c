#!/usr/bin/env bats
# The shipped Bash files (hpc_files/, plai_cleanups/, the runners), read as text: no dead
# functions, and none of the banned constructs.

setup() {
  load '../helpers/common'
  load '../helpers/shipped'
  cd "$HPC_ROOT" || return 1
}

# shipped_text: prints the toolkit's tracked text files (shipped code, its helpers, the benchmarks,
# the CI and the tests' helpers), one a line: images and the JSON and CSV fixtures left out, and
# any other binary file skipped by long_lines (grep -I).
shipped_text() {
  git ls-files -- hpc_files virtual_env_hpc_files singularity_hpc_files plai_cleanups python_helpers bench .ci \
    tests/helpers Makefile ':(exclude)*.png' ':(exclude)*.json' ':(exclude)*.csv'
}

# max_line_length: prints the max_line_length that .editorconfig sets for every file ([*]).
max_line_length() {
  awk -F '[[:space:]]*=[[:space:]]*' '/^\[/ { section = $0 } section == "[*]" && $1 == "max_line_length" { print $2 }' \
    .editorconfig
}

# long_lines WIDTH FILE...: prints FILE:LINE for each line of the text FILEs longer than WIDTH
# characters (UTF-8: a character, not a byte); binary files are skipped.
long_lines() {
  LC_ALL=C.UTF-8 grep -InE -- "^.{$(($1 + 1))}" "${@:2}" /dev/null | sed -E 's/^([^:]+:[0-9]+):.*/\1/' || true
}

# unused_functions FILE...: prints each function defined in FILEs (NAME() {) that no code line
# of FILEs (comments not counted) names besides its definition.
unused_functions() {
  local name code hooks hook key
  local -A used=() named=()
  code=$(grep -hvE '^[[:space:]]*#' -- "$@")
  # The hooks the core asks modes for (hpc_mode HOOK).
  hooks=$(grep -oE '(^|[^a-z0-9_])hpc_mode [a-z_]+' <<<"$code" | sed 's/.*hpc_mode //' | sort -u)
  # How often each function is named: one reading of the code for all of them (names_used).
  while IFS= read -r name; do used[$name]=1; done < <(
    names_used "$(grep -hoE '^[a-z_][a-z0-9_]*\(\) \{' -- "$@" | sed 's/() {//' | sort -u)" <<<"$code"
  )
  grep -hoE '^[a-z_][a-z0-9_]*\(\) \{' -- "$@" | sed 's/() {//' | sort -u | while IFS= read -r name; do
    # A launcher's or runner's function is called by name: "hpc_launcher_${name}_plan".
    if [[ $name =~ ^hpc_(launcher|runner)_[a-z0-9_]+_(describe|plan|processes|srun|task|workers|check|prepare|preview|folders|python|node_work|node_setup|here|enter|wrap)$ ]]; then
      # The same call form for every launcher: asked once.
      key=${BASH_REMATCH[1]}_${BASH_REMATCH[2]}
      [[ -n ${named[$key]-} ]] || {
        named[$key]=no
        ! grep -qE "hpc_${BASH_REMATCH[1]}_\\\$\{[^}]+\}_${BASH_REMATCH[2]}([^a-z0-9_]|$)" <<<"$code" || named[$key]=yes
      }
      [[ ${named[$key]} == yes ]] || printf '%s\n' "$name"
      continue
    fi
    # A group kind's hook is called by name (hpc_group.bash): "hpc_${kind}_resubmit_read".
    if [[ $name =~ ^hpc_(map|scaling)_(group_[a-z]+|resubmit_[a-z]+)$ ]]; then
      grep -qE "hpc_\\\$\{[^}]+\}_${BASH_REMATCH[2]}([^a-z0-9_]|$)" <<<"$code" || printf '%s\n' "$name"
      continue
    fi
    # A mode's hook (hpc_files/lib/modes/NAME.bash, or the core's hpc_mode_any_HOOK) is called by
    # name, by hpc_mode HOOK (hpc_common.bash); describe marks a mode's file as loaded.
    if [[ $name == hpc_mode_?*_?* ]]; then
      for hook in $hooks describe; do
        [[ $name != hpc_mode_*_"$hook" ]] || continue 2
      done
      printf '%s\n' "$name"
      continue
    fi
    # A command's function is called by name, "hpc_command_$hpc_command" (job_submitter.sh), for
    # the word that names its file: hpc_command_scaling_report in commands/scaling-report.bash.
    if [[ $name =~ ^hpc_command_([a-z0-9_]+)$ ]]; then
      [[ -f $HPC_ROOT/hpc_files/lib/commands/${BASH_REMATCH[1]//_/-}.bash ]] &&
        grep -qE '"hpc_command_\$' <<<"$code" || printf '%s\n' "$name"
      continue
    fi
    [[ -n ${used[$name]-} ]] || printf '%s\n' "$name"
  done
}

# names_used NAMES: prints each of NAMES (one a line) that the code on stdin names more than once,
# counted as `grep -oE "(^|[^a-z0-9_])NAME([^a-z0-9_]|$)" | wc -l` counts it, for all names in one
# reading instead of a grep of the whole code for each (726 of them: 10 CPU-s): a match takes the
# character after the name with it, so the same name right after that character does not count.
names_used() {
  awk -v names="$1" '
    BEGIN { n = split(names, list, "\n"); for (i = 1; i <= n; i++) want[list[i]] = 1 }
    {
      delete taken
      rest = $0
      at = 0
      while (match(rest, /[a-z0-9_]+/)) {
        start = at + RSTART
        end = start + RLENGTH - 1
        word = substr(rest, RSTART, RLENGTH)
        at = end
        rest = substr(rest, RSTART + RLENGTH)
        if (!(word in want)) continue
        # Before it: the line start, or a character no earlier match of this name took.
        if (start > 1 && (word in taken) && taken[word] >= start - 1) continue
        count[word]++
        if (end < length($0)) taken[word] = end + 1
      }
    }
    END { for (word in count) if (count[word] > 1) print word }
  '
}

# banned_constructs FILE...: prints FILE:LINE: NAME: TEXT for each code line (comments not
# counted) of FILEs that uses a banned construct, unless the line carries the marker
# '# hpc-allow: NAME (why)'. NAME: eval (runs data as code), function (the keyword: NAME() {
# is the style), pwd ($(pwd) or `pwd`: $PWD costs no process), ls (its output parsed: names with
# blanks or newlines break; use a glob).
banned_constructs() {
  # shellcheck disable=SC2016 # regular expressions, not expansions
  local -A banned=(
    [eval]='(^|[;&|(!{[:space:]])eval([[:space:]]|;|$)'
    [function]='(^|[;&|({[:space:]])function[[:space:]]+[A-Za-z_][A-Za-z0-9_]*'
    [pwd]='\$\([[:space:]]*pwd[[:space:]]*\)|`[[:space:]]*pwd[[:space:]]*`'
    [ls]='(\$\(|`|<\()[[:space:]]*(command[[:space:]]+)?ls([[:space:]]|\)|`|$)|(^|[;&({[:space:]])ls([[:space:]][^|#]*)?\|'
  )
  local name
  for name in eval function pwd ls; do
    grep -nE -- "${banned[$name]}" "$@" /dev/null | grep -vE '^[^:]+:[0-9]+:[[:space:]]*#' |
      grep -vE "# hpc-allow: $name \(.+\)" | sed -E "s/^([^:]+:[0-9]+):/\1: $name: /" || true
  done
}

@test "style: no eval, function keyword, \$(pwd) or parsed ls output in the shipped Bash files" {
  local -a files
  mapfile -t files < <(shipped_bash)
  ((${#files[@]} > 20))
  run banned_constructs "${files[@]}"
  assert_success
  assert_output ''
}

@test "style: no line of the shipped text files is longer than .editorconfig's max_line_length" {
  local width
  width=$(max_line_length)
  [[ $width =~ ^[1-9][0-9]*$ ]] || fail "no max_line_length under [*] in .editorconfig: '$width'"
  local -a files
  mapfile -t files < <(shipped_text)
  ((${#files[@]} > 50))
  run long_lines "$width" "${files[@]}"
  assert_success
  assert_output ''
}

@test "style: the width check finds a planted line one character too long, counts characters not bytes, and passes one at the width" {
  local f=$BATS_TEST_TMPDIR/wide.bash
  printf '%s\n' "$(printf 'x%.0s' {1..120})" "# $(printf 'é%.0s' {1..118})" >"$f"
  run long_lines 120 "$f"
  assert_output ''
  printf '%s\n' "$(printf 'y%.0s' {1..121})" >>"$f"
  run long_lines 120 "$f"
  assert_output "$f:3"
}

@test "style: the banned-constructs check finds each planted construct; the allow marker needs a reason" {
  local f=$BATS_TEST_TMPDIR/planted.bash
  cat >"$f" <<'PLANTED'
# eval in a comment is fine, and so is function, $(pwd) and $(ls)
x=1 # no construct here: evaluate, functions, lsof, pwdx
eval "$x"
  if true; then eval "y=$x"; fi
function f {
  :
}
here=$(pwd)
there=`pwd`
for n in $(ls /tmp); do :; done
ls -1 /tmp | wc -l
mapfile -t n < <(ls)
eval "$x" # hpc-allow: eval (a reason)
eval "$x" # hpc-allow: eval
PLANTED
  run banned_constructs "$f"
  assert_success
  assert_output "$f:3: eval: eval \"\$x\"
$f:4: eval:   if true; then eval \"y=\$x\"; fi
$f:14: eval: eval \"\$x\" # hpc-allow: eval
$f:5: function: function f {
$f:8: pwd: here=\$(pwd)
$f:9: pwd: there=\`pwd\`
$f:10: ls: for n in \$(ls /tmp); do :; done
$f:11: ls: ls -1 /tmp | wc -l
$f:12: ls: mapfile -t n < <(ls)"
}

# file_wide_sc2154 FILE...: prints FILE:LINE for each 'shellcheck disable=SC2154' directive of
# FILEs that hides misspelt names in more than one command: one before the file's first command,
# or one before a function definition (it then covers the whole function).
file_wide_sc2154() {
  awk '
    FNR == 1 { seen_command = 0; pending = 0 }
    /^[[:space:]]*#/ {
      if ($0 ~ /^[[:space:]]*#[[:space:]]*shellcheck[[:space:]]+([^[:space:]#]+[[:space:]]+)*disable=([A-Z0-9]+,)*SC2154/) {
        if (!seen_command) print FILENAME ":" FNR
        else pending = FNR
      }
      next
    }
    /^[[:space:]]*$/ { next }
    {
      if (pending && $0 ~ /^[[:space:]]*[A-Za-z_][A-Za-z0-9_]*\(\)[[:space:]]*\{/) print FILENAME ":" pending
      pending = 0
      seen_command = 1
    }
  ' "$@"
}

# misspell_a_read FILE COPY: writes COPY, FILE with its first read ($NAME or ${NAME) of a name that
# FILE declares (declare -g NAME..., no value) misspelt: the name's last letter doubled. Prints
# the misspelt name.
misspell_a_read() {
  local line names n name re
  # The declared names: 'declare -g NAME...' lines, continued with a backslash.
  names=$(awk '/^declare -g[aA]? [A-Za-z_ ]+\\?$/ || more { more = /\\$/; sub(/^declare -g[aA]? /, ""); gsub(/\\/, ""); print }' "$1" | xargs)
  [[ -n $names ]] || { cp -- "$1" "$2" && return 0; }
  # The first code line after them that reads one of them.
  line=$(awk '/^declare -g/ || more { more = /\\$/; last = NR } END { print last + 0 }' "$1")
  n=$(awk -v after="$line" -v re="[$][{]?(${names// /|})([^A-Za-z0-9_]|$)" \
    'NR > after && $0 !~ /^[[:space:]]*#/ && $0 ~ re { print NR; exit }' "$1")
  [[ -n $n ]] || { cp -- "$1" "$2" && return 0; }
  line=$(sed -n "${n}p" -- "$1")
  for name in $names; do
    re="^(.*[$][{]?)($name)([^A-Za-z0-9_].*)?$"
    [[ $line =~ $re ]] || continue
    {
      head -n "$((n - 1))" -- "$1"
      printf '%s\n' "${BASH_REMATCH[1]}${name}${name: -1}${BASH_REMATCH[3]}"
      tail -n "+$((n + 1))" -- "$1"
    } >"$2"
    printf '%s\n' "$name${name: -1}"
    return 0
  done
}

@test "style: no file-wide shellcheck disable=SC2154 in the shipped Bash files and the tests (they declare what they read)" {
  local -a files
  mapfile -t files < <(shipped_bash && git ls-files -- 'tests/*.bats' 'tests/*.bash' 'tests/*.sh')
  ((${#files[@]} > 50))
  run file_wide_sc2154 "${files[@]}"
  assert_success
  assert_output ''
}

@test "style: the file-wide SC2154 check finds a directive before the first command or a function" {
  local f=$BATS_TEST_TMPDIR/planted.bash
  # shellcheck disable=SC2016 # shell code as data
  printf '%s\n' '# shellcheck shell=bash' '# shellcheck disable=SC2034,SC2154 # file-wide' 'x=1' \
    '# shellcheck disable=SC2154 # one command: fine' 'echo "$y"' '' '# shellcheck disable=SC2154' \
    'f() {' '  echo "$z"' '}' >"$f"
  run file_wide_sc2154 "$f"
  assert_success
  assert_output "$f:2
$f:7"
}

@test "style: a misspelt global in a library that declares what it reads fails shellcheck" {
  local -a files
  # Every library that reads globals set by another one declares them, and has a read to misspell.
  mapfile -t files < <(shipped_bash)
  mapfile -t files < <(grep -lE '^declare -g[aA]? [A-Za-z_ ]+\\?$' -- "${files[@]}")
  ((${#files[@]} >= 10))
  local file copy typo
  local -a planted=()
  for file in "${files[@]}"; do
    copy=$BATS_TEST_TMPDIR/$file
    mkdir -p "${copy%/*}"
    typo=$(misspell_a_read "$file" "$copy")
    [[ -n $typo ]] || fail "$file: no read of a declared name to misspell"
    planted+=("$copy:$typo")
  done
  # Two of them go through shellcheck, the shortest of those that source no library: the lint
  # (tests/run.sh) reads every original, and a file costs a reading of all it sources.
  mapfile -t files < <(grep -L 'shellcheck source=[a-z]' -- "${files[@]}")
  mapfile -t files < <(wc -l -- "${files[@]}" | sed '$d' | sort -n | head -n 2 | awk '{print $2}')
  ((${#files[@]} == 2))
  for file in "${files[@]}"; do
    copy=$BATS_TEST_TMPDIR/$file
    typo=$(printf '%s\n' "${planted[@]}" | sed -n "s|^$copy:||p")
    run shellcheck -x -f gcc -- "$copy"
    assert_failure 1
    assert_output --partial "warning: $typo is referenced but not assigned"
  done
}

@test "style: shfmt with the repository's .editorconfig keeps its style and flags other styles" {
  command -v shfmt >/dev/null || fail "shfmt is missing: pip install -r requirements-dev.txt"
  local dir=$BATS_TEST_TMPDIR/fmt
  mkdir -p "$dir"
  cp .editorconfig "$dir/"
  # shellcheck disable=SC2016 # shell code as data
  printf '%s\n' '#!/usr/bin/env bash' 'f() {' '  case $1 in' '    a) [[ -n $1 ]] &&' '      echo "x" >&2 ;;' '  esac' '}' >"$dir/good"
  run shfmt -d "$dir/good"
  assert_success
  assert_output ''
  printf '#!/usr/bin/env bash\nf() {\n\techo x\n}\n' >"$dir/tabs.sh"
  # shellcheck disable=SC2016 # shell code as data
  printf 'case $1 in\na) echo a ;;\nesac\n' >"$dir/flat.bash"
  local bad
  for bad in tabs.sh flat.bash; do
    run shfmt -d "$dir/$bad"
    assert_failure
  done
}

@test "style: every function of the shipped Bash files is called from them (no dead code)" {
  local -a files
  mapfile -t files < <(shipped_bash)
  ((${#files[@]} > 20))
  run unused_functions "${files[@]}"
  assert_success
  assert_output ''
}

# unread_arrays TESTS FILE...: prints each array that a code line of FILEs appends to
# (NAME+=(...)) and that no other code line of FILEs or of the tests in the folder TESTS reads:
# ${NAME...}, $NAME, or NAME as a word not followed by = or += (a nameref, [[ -v NAME ]], an
# argument naming it).
unread_arrays() {
  local code tests=$1
  shift
  code=$(
    grep -hvE '^[[:space:]]*#' -- "$@"
    find "$tests" -type f \( -name '*.bats' -o -name '*.bash' \) -exec grep -hvE '^[[:space:]]*#' -- {} + || true
  )
  # One reading of the code for all the arrays (a grep of it for each cost seconds): a line can
  # read NAME only where NAME stands between characters other than [a-z0-9_], so only those
  # names of a line are tried, each with the expressions that a grep of each would use.
  local names
  names=$(grep -hvE '^[[:space:]]*#' -- "$@" | grep -oE '(^|[[:space:];(])[a-z_][a-z0-9_]*\+=\(' |
    sed -E 's/^[[:space:];(]*//; s/\+=\($//' | sort -u)
  [[ -n $names ]] || return 0
  awk -v names="$names" '
    BEGIN { n = split(names, list, "\n"); for (i = 1; i <= n; i++) want[list[i]] = 1 }
    {
      rest = $0
      while (match(rest, /[a-z0-9_]+/)) {
        name = substr(rest, RSTART, RLENGTH)
        rest = substr(rest, RSTART + RLENGTH)
        if (!(name in want) || (name in read)) continue
        if ($0 ~ ("(^|[[:space:];(])" name "\\+?=")) continue
        if ($0 ~ ("[$][{][#!]?" name "([^a-z0-9_]|$)|[$]" name "([^a-z0-9_]|$)|" \
          "(^|[^a-z0-9_$])" name "([^a-z0-9_=+]|$)"))
          read[name] = 1
      }
    }
    END { for (name in want) if (!(name in read)) print name }
  ' <<<"$code" | sort
}

@test "style: every array the shipped Bash files fill (NAME+=(...)) is read by them or the tests" {
  local -a files
  mapfile -t files < <(shipped_bash)
  ((${#files[@]} > 20))
  run unread_arrays tests "${files[@]}"
  assert_success
  assert_output ''
}

@test "style: the unread-array check finds an array nothing reads" {
  mkdir "$BATS_TEST_TMPDIR/tests"
  # shellcheck disable=SC2016 # shell code as data
  printf '%s\n' 'kept=() dropped=()' 'kept+=(a)' 'dropped+=(b)' 'printf "%s" "${kept[@]}"' >"$BATS_TEST_TMPDIR/x.bash"
  run unread_arrays "$BATS_TEST_TMPDIR/tests" "$BATS_TEST_TMPDIR/x.bash"
  assert_output dropped
}

@test "style: the dead-function check finds a function nothing calls" {
  printf 'used() {\n  :\n}\n# dead is named in a comment only\ndead() {\n  used\n}\n' >"$BATS_TEST_TMPDIR/x.bash"
  run unused_functions "$BATS_TEST_TMPDIR/x.bash"
  assert_output dead
}

@test "style: the dead-function check takes a command's function as called only when its file is in lib/commands/" {
  # shellcheck disable=SC2016 # shell code as data
  printf '%s\n' 'hpc_command_status() {' '  :' '}' 'hpc_command_no_such_thing() {' '  :' '}' \
    '"hpc_command_$hpc_command" "$@"' >"$BATS_TEST_TMPDIR/x.bash"
  run unused_functions "$BATS_TEST_TMPDIR/x.bash"
  assert_output hpc_command_no_such_thing
}
