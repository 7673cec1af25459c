# shellcheck shell=bash
# hpc_help.bash: what the submitter says of its commands and of words it does not know. Each
# command, a file of lib/commands/, describes itself in its first comment block (as rbenv's do):
#   # Summary: one line, listed by --help after the command's name
#   # Usage: bash job_submitter.sh NAME ...   (more '#        bash job_submitter.sh NAME' lines)
#   #
#   # The help: what it does, its options ('  -x, --xyz   ...'), its exit status.
# so a new file there is listed by --help, and answers NAME --help, with no other edit. An
# unknown option or command is answered with the nearest valid one (hpc_nearest). Loaded only
# for --help and for those refusals: a submission does not read it.

# What this library reads, set by the others: declared here, not set (values already there are
# kept), so that the linter knows each name and catches a misspelt one.
# hpc_common.bash: the library's folder; hpc_options.bash: the table of settings, the launchers'
# old names; hpc_common.bash's hpc_launcher_list: the launchers.
declare -g hpc_lib_dir
declare -ga hpc_opt_table hpc_launcher_names
declare -gA hpc_opt_launcher_aliases

# hpc_edit_distance A B: sets hpc_edit_distance to the number of edits (insert, delete, replace a
# character, swap two adjacent ones: the optimal string alignment distance) that make A into B,
# or 3 when it is more: only near words matter, so only the band of 2 around the diagonal is
# computed (a few dozen steps, where the whole table of two options costs hundreds).
hpc_edit_distance() {
  local a=$1 b=$2 la=${#1} lb=${#2} i j lo hi d x w row_min
  hpc_edit_distance=3
  ((la - lb <= 2 && lb - la <= 2)) || return 0
  # One table, row i at i*(lb+1); a cell outside the band reads as 3 (unset).
  local -a t=()
  w=$((lb + 1))
  for ((j = 0; j <= lb && j <= 2; j++)); do t[j]=$j; done
  for ((i = 1; i <= la; i++)); do
    ((i > 2)) || t[i * w]=$i
    lo=$((i > 2 ? i - 2 : 1)) hi=$((i + 2 < lb ? i + 2 : lb)) row_min=${t[i * w]:-3}
    for ((j = lo; j <= hi; j++)); do
      d=$((${t[(i - 1) * w + j - 1]:-3} + 1))
      [[ ${a:i-1:1} != "${b:j-1:1}" ]] || d=$((d - 1))
      x=$((${t[(i - 1) * w + j]:-3} + 1))
      ((x >= d)) || d=$x
      x=$((${t[i * w + j - 1]:-3} + 1))
      ((x >= d)) || d=$x
      if ((i > 1 && j > 1)) && [[ ${a:i-1:1} == "${b:j-2:1}" && ${a:i-2:1} == "${b:j-1:1}" ]]; then
        x=$((${t[(i - 2) * w + j - 2]:-3} + 1))
        ((x >= d)) || d=$x
      fi
      ((d <= 3)) || d=3
      t[i * w + j]=$d
      ((d >= row_min)) || row_min=$d
    done
    # Every path goes through this row: none can come back under 3.
    ((row_min < 3)) || return 0
  done
  hpc_edit_distance=${t[la * w + lb]:-3}
}

# hpc_nearest WORD CANDIDATE...: sets hpc_nearest to the candidate WORD most likely meant: the
# only one that starts with WORD, else the only one nearest to it, at most 2 edits away and
# fewer than half WORD's length (-x is 1 edit from every short option: none is meant); empty
# when none is (a guess that could be wrong is not offered).
hpc_nearest() {
  local word=$1 name prefixed='' prefixes=0 best='' best_d=3 ties=0
  shift
  for name in "$@"; do
    if [[ $name == "$word"* ]]; then
      prefixed=$name
      prefixes=$((prefixes + 1))
    fi
    hpc_edit_distance "$word" "$name"
    if ((hpc_edit_distance < best_d)); then
      best=$name best_d=$hpc_edit_distance ties=1
    elif ((hpc_edit_distance == best_d)); then
      ties=$((ties + 1))
    fi
  done
  hpc_nearest=''
  if ((prefixes == 1)); then
    hpc_nearest=$prefixed
  elif ((best_d <= 2 && ties == 1 && 2 * best_d < ${#word})); then
    hpc_nearest=$best
  fi
}

# hpc_commands_list: sets hpc_commands_names to the commands, the files of lib/commands/ (NAME.bash),
# in the glob's order.
hpc_commands_list() {
  local file
  hpc_commands_names=()
  for file in "$hpc_lib_dir"/commands/*.bash; do
    [[ -f $file ]] || continue
    file=${file##*/}
    hpc_commands_names+=("${file%.bash}")
  done
}

# hpc_commands_summaries: (--help) prints each command with its '# Summary:' line, aligned as the
# options' texts are.
hpc_commands_summaries() {
  local name line summary
  hpc_commands_list
  for name in ${hpc_commands_names[@]+"${hpc_commands_names[@]}"}; do
    summary=''
    while IFS= read -r line && [[ $line == '#'* ]]; do
      if [[ $line == '# Summary: '* ]]; then
        summary=${line#'# Summary: '}
        break
      fi
    done <"$hpc_lib_dir/commands/$name.bash"
    printf '  %-26s %s\n' "$name" "$summary"
  done
}

# hpc_commands_usage NAME: prints the help of command NAME: its file's first comment block from
# the '# Usage:' line on (the Summary and shellcheck lines left out); the file's other comments,
# after a line that is not a comment, are its code's.
hpc_commands_usage() {
  local line started=0
  while IFS= read -r line && [[ $line == '#'* ]]; do
    [[ $line != '# Usage: '* ]] || started=1
    ((started)) || continue
    case $line in
      '#') printf '\n' ;;
      '# '*) printf '%s\n' "${line#'# '}" ;;
    esac
  done <"$hpc_lib_dir/commands/$1.bash"
  ((started)) ||
    printf 'Usage: bash job_submitter.sh %s ... (its file, lib/commands/%s.bash, has no # Usage: line)\n' "$1" "$1"
}

# hpc_commands_help_asked WORD...: true when -h or --help is among the words (a command's, which
# then prints its usage and does nothing else).
hpc_commands_help_asked() {
  local word
  for word in "$@"; do
    [[ $word != -h && $word != --help ]] || return 0
  done
  return 1
}

# hpc_commands_options NAME: sets hpc_commands_options to the options that command NAME's usage
# block names: the words in [...] of its Usage lines, and the first words of its option lines
# ('  -f, --follow   ...'); -h and --help always.
hpc_commands_options() {
  local line word
  local -a words
  hpc_commands_options=(-h --help)
  while IFS= read -r line; do
    if [[ $line == 'Usage: '* || $line == '       bash job_submitter.sh '* ]]; then
      line=${line//[\[\]|]/ }
    elif [[ $line =~ ^\ +(-[^ ].*)$ ]]; then
      # An option line: the option and its other names, up to the text (two blanks).
      line=${BASH_REMATCH[1]%%  *}
    else
      continue
    fi
    read -ra words <<<"${line//,/ }"
    for word in "${words[@]}"; do
      [[ $word =~ ^--?[A-Za-z][A-Za-z0-9-]*$ && " ${hpc_commands_options[*]} " != *" $word "* ]] ||
        continue
      hpc_commands_options+=("$word")
    done
  done < <(hpc_commands_usage "$1")
}

# hpc_commands_die_unknown_option NAME WORD: bad input: WORD is no option of command NAME; names
# the nearest of those its usage names (hpc_nearest). Exit 2.
hpc_commands_die_unknown_option() {
  hpc_commands_options "$1"
  hpc_nearest "$2" "${hpc_commands_options[@]}"
  if [[ -n $hpc_nearest ]]; then
    hpc_die_usage "$2" "unknown option of '$1'; did you mean $hpc_nearest? (see 'bash job_submitter.sh $1 --help')"
  fi
  hpc_die_usage "$2" "unknown option of '$1'; see 'bash job_submitter.sh $1 --help'"
}

# hpc_commands_check_word WORD: (the first word, not an option, nor a command) exit 2 naming the
# command WORD likely meant, or listing the commands when WORD looks like one (lower-case letters
# and '-'); returns otherwise (a value without its option: the options' parser refuses it).
hpc_commands_check_word() {
  local message list
  hpc_commands_list
  hpc_nearest "$1" ${hpc_commands_names[@]+"${hpc_commands_names[@]}"}
  if [[ -n $hpc_nearest ]]; then
    message="unknown command '$1'; did you mean $hpc_nearest? (see --help)"
  elif [[ $1 =~ ^[a-z][a-z-]*$ ]]; then
    printf -v list '%s, ' ${hpc_commands_names[@]+"${hpc_commands_names[@]}"}
    message="unknown command '$1'; commands: ${list%, } (see --help)"
  else
    return 0
  fi
  # A word holding a newline stays one line, as in hpc_die_usage.
  hpc_say "${message//$'\n'/\\n}"
  exit 2
}

# The submitter's own options (the table of settings, hpc_options.bash), for --help and the
# refusals of unknown options: here, as a submission does not need them.

# hpc_opt_names: sets hpc_opt_names to every spelling hpc_opt_parse accepts, from the table.
hpc_opt_names() {
  local row
  local -a words
  hpc_opt_names=()
  for row in "${hpc_opt_table[@]}"; do
    read -r -a words <<<"${row##*|}"
    hpc_opt_names+=("${words[@]}")
  done
}

# hpc_opt_launchers_text: prints the launchers -W accepts (the files in hpc_files/lib/launchers/),
# as a refusal lists them: 'lightning, none, torchrun (alias: script)'.
hpc_opt_launchers_text() {
  local name alias text=''
  hpc_launcher_list
  for name in "${hpc_launcher_names[@]}"; do
    text+="$name, "
    for alias in "${!hpc_opt_launcher_aliases[@]}"; do
      [[ ${hpc_opt_launcher_aliases[$alias]} != "$name" ]] || text="${text%, } (alias: $alias), "
    done
  done
  printf '%s\n' "${text%, }"
}

# hpc_opt_help FILE: prints the usage comment of FILE (--help), with each launcher's own lines
# (hpc_launcher_NAME_describe, from the files in hpc_files/lib/launchers/) after the line that
# introduces them, indented as the option's text.
hpc_opt_help() {
  local line name text
  while IFS= read -r line; do
    printf '%s\n' "$line"
    if [[ $line == 'Commands (one file each in hpc_files/lib/commands/):' ]]; then
      # Each command by its file's Summary line.
      hpc_commands_summaries
      continue
    fi
    if [[ $line == *"one of the files in hpc_files/lib/runners/:" ]]; then
      printf '%29saccepted: %s\n' '' "$(hpc_opt_runners_text)"
      continue
    fi
    [[ $line == *"one of the files in hpc_files/lib/launchers/:" ]] || continue
    hpc_launcher_list
    for name in "${hpc_launcher_names[@]}"; do
      hpc_launcher_load "$name" || continue
      while IFS= read -r text; do
        printf '%29s%s\n' '' "$text"
      done < <("hpc_launcher_${name}_describe")
    done
  done < <(hpc_usage "$1")
}
