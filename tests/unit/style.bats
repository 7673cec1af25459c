#!/usr/bin/env bats
# The shipped Bash files (hpc_files/, plai_cleanups/, the runners), read as text: no dead
# functions, and none of the banned constructs.

setup() {
  load '../helpers/common'
  cd "$HPC_ROOT" || return 1
}

# shipped_bash: prints the toolkit's shipped Bash files (not tests), one a line.
shipped_bash() {
  git ls-files -- 'hpc_files/*' 'plai_cleanups/*' 'virtual_env_hpc_files/*' 'singularity_hpc_files/*' |
    while IFS= read -r f; do
      [[ $f == *.bash || $f == *.sh ]] || head -n 1 -- "$f" | grep -qE '^#!.*\b(ba)?sh\b' || continue
      printf '%s\n' "$f"
    done
}

# unused_functions FILE...: prints each function defined in FILEs (NAME() {) that no code line
# of FILEs (comments not counted) names besides its definition.
unused_functions() {
  local name code
  code=$(grep -hvE '^[[:space:]]*#' -- "$@")
  grep -hoE '^[a-z_][a-z0-9_]*\(\) \{' -- "$@" | sed 's/() {//' | sort -u | while IFS= read -r name; do
    # A launcher's or runner's function is called by name: "hpc_launcher_${name}_plan".
    if [[ $name =~ ^hpc_(launcher|runner)_[a-z0-9_]+_(describe|plan|processes|srun|task|workers|enter|wrap)$ ]]; then
      grep -qE "hpc_${BASH_REMATCH[1]}_\\\$\{[^}]+\}_${BASH_REMATCH[2]}([^a-z0-9_]|$)" <<<"$code" || printf '%s\n' "$name"
      continue
    fi
    (($(grep -oE "(^|[^a-z0-9_])$name([^a-z0-9_]|$)" <<<"$code" | wc -l) > 1)) || printf '%s\n' "$name"
  done
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

@test "style: hpc_fit.bash declares what it reads: no file-wide shellcheck disable=SC2154" {
  # A file-wide disable (a directive before the first command) hides every misspelt name.
  run grep -nE '^# shellcheck disable=([A-Z0-9,]*,)?SC2154' hpc_files/lib/hpc_fit.bash
  assert_failure
  assert_output ''
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

@test "style: the dead-function check finds a function nothing calls" {
  printf 'used() {\n  :\n}\n# dead is named in a comment only\ndead() {\n  used\n}\n' >"$BATS_TEST_TMPDIR/x.bash"
  run unused_functions "$BATS_TEST_TMPDIR/x.bash"
  assert_output dead
}
