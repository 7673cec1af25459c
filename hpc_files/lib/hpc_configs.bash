# shellcheck shell=bash
# hpc_configs.bash: the configs file (experiment_configurations.txt, or -C FILE) read into an
# argument vector of templates at submission, and the safe $VAR expansion of those templates done
# in the job on the compute node. Needs hpc_common.bash (hpc_say).
# The grammar, the templates' form, why there is no eval and the cost: at the end of this file,
# after its last command, where Bash never reads them (it parses every comment it reads).

# hpc_configs_words: the templates read by hpc_configs_read, one per argument.
hpc_configs_words=()
# hpc_configs_argv: the arguments made by hpc_configs_expand, one per template.
hpc_configs_argv=()

# Sets of characters for [...] patterns (always used quoted, so each character stands for itself;
# names are spelt out, so that no locale's ranges can add letters to them).
_hpc_configs_name_start='abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_'
_hpc_configs_name_chars=${_hpc_configs_name_start}0123456789
# What ends a run of ordinary characters: outside quotes; inside double quotes (a simple
# double-quoted part has none of the first four); in a default outside quotes; in a template.
_hpc_configs_special=$' \t\n\\\'"$`#;&|<>()'
_hpc_configs_dq_stop='"\$`}'
_hpc_configs_du_stop=$'\'"\\$`}'
_hpc_configs_template_stop='\$}'
# What ends a run of escapes and ordinary characters outside quotes (_hpc_configs_escapes).
_hpc_configs_escapes_stop=$' \t\n\'"$`#;&|<>()'
# What a plain piece (split at blanks at once) has none of: the special characters but blanks.
_hpc_configs_not_plain=$'\\\'"$`#;&|<>()'

# The bounds of reading (why each: at the end of this file): the largest file read; the piece the
# parser is given at a time; the block a long line is split into; the longest word; the most bytes
# of words; the most quoted parts, escapes and references; the deepest ${NAME:-...}.
hpc_configs_max_bytes=4194304
_hpc_configs_piece_bytes=4096
_hpc_configs_block_bytes=65536
hpc_configs_max_word=131072
hpc_configs_max_args=2097152
# shellcheck disable=SC2034 # read by hpc_configs_quoted.bash
hpc_configs_max_parts=100000
# shellcheck disable=SC2034 # read by hpc_configs_quoted.bash
hpc_configs_max_depth=32
# What may end a piece cut inside a run without blanks: the last byte before the cut is none of
# these (a backslash, or a $, {, : or name character that may begin or go on with a reference).
_hpc_configs_no_cut_after=$'\\$:{'${_hpc_configs_name_chars}

# hpc_configs_read FILE: reads the configs file FILE into hpc_configs_words (templates, one per
# argument). On bad input prints one line '-C/--configs: FILE: PROBLEM' and returns 2. FILE must
# be a regular file (a FIFO, a device or a socket is refused before it is opened: reading one
# could wait forever) of at most hpc_configs_max_bytes bytes.
hpc_configs_read() {
  local LC_ALL=C
  local _hpc_configs_file=${1-} _hpc_configs_text='' _hpc_configs_max=$hpc_configs_max_bytes _hpc_configs_error=''
  hpc_configs_words=()
  if [[ -z $_hpc_configs_file ]]; then
    hpc_say "-C/--configs: no file name given"
    return 2
  fi
  if [[ -d $_hpc_configs_file ]]; then
    _hpc_configs_error='is a directory, not a file'
  elif [[ ! -e $_hpc_configs_file ]]; then
    _hpc_configs_error='no such file'
  elif [[ ! -f $_hpc_configs_file ]]; then
    # (A failed load recorded its own error, printed below.)
    if _hpc_configs_load_long; then
      _hpc_configs_error="is $(_hpc_configs_kind "$_hpc_configs_file"), not a regular file; accepted: a text file"
    fi
  elif [[ ! -r $_hpc_configs_file ]] || ! : 2>/dev/null <"$_hpc_configs_file"; then
    _hpc_configs_error='cannot be read (permission denied)'
  # read -d '' stops at a NUL byte or after -n bytes, and succeeds only then (not at the end).
  elif IFS= read -r -d '' -n $((_hpc_configs_max + 1)) _hpc_configs_text 2>/dev/null <"$_hpc_configs_file"; then
    _hpc_configs_error='contains a NUL byte (not a text file)'
    ((${#_hpc_configs_text} <= _hpc_configs_max)) ||
      _hpc_configs_error="larger than $_hpc_configs_max bytes (4 MiB); a configs file holds one command"
  else
    _hpc_configs_words
  fi
  [[ -n $_hpc_configs_error ]] || return 0
  hpc_say "-C/--configs: $_hpc_configs_file: $_hpc_configs_error"
  return 2
}

# _hpc_configs_words: (in hpc_configs_read) parses _hpc_configs_text into hpc_configs_words, or
# sets _hpc_configs_error.
_hpc_configs_words() {
  # A UTF-8 byte order mark at the start is dropped (compared, not removed by a pattern: Bash
  # would try the pattern at every length of the text).
  if [[ ${_hpc_configs_text:0:3} == $'\xef\xbb\xbf' ]]; then _hpc_configs_text=${_hpc_configs_text:3}; fi
  # Parser state, seen by the _hpc_configs_ helpers through Bash's dynamic scope: the lines (each
  # with its newline), the next one to give, what is left of a long line, the current piece.
  local -a _hpc_configs_lines=() _hpc_configs_found=()
  local -A _hpc_configs_run_text=() _hpc_configs_run_lines=()
  local _hpc_configs_next=0 _hpc_configs_long='' _hpc_configs_rest='' _hpc_configs_line=0
  local _hpc_configs_at=0 _hpc_configs_size=0 _hpc_configs_word='' _hpc_configs_depth=0 _hpc_configs_all
  # A long line's blocks not yet in _hpc_configs_long (from _hpc_configs_bnext on).
  local -a _hpc_configs_blocks=()
  local _hpc_configs_bnext=0
  _hpc_configs_split_lines
  _hpc_configs_parse
  [[ -z $_hpc_configs_error ]] || return 0
  # The words' bytes as the kernel counts them (the count alone was checked while reading).
  printf -v _hpc_configs_all '%s' "${_hpc_configs_found[@]}"
  if ((${#_hpc_configs_all} + 9 * ${#_hpc_configs_found[@]} > hpc_configs_max_args)); then
    _hpc_configs_error="its ${#_hpc_configs_found[@]} words take"
    _hpc_configs_error+=" $((${#_hpc_configs_all} + 9 * ${#_hpc_configs_found[@]})) bytes as arguments, more than"
    _hpc_configs_error+=" the $hpc_configs_max_args (2 MiB) Linux passes to a program"
  elif ((${#_hpc_configs_found[@]} == 0)); then
    _hpc_configs_error='no command in it (only blank lines and comments)'
  fi
  # shellcheck disable=SC2034 # a result, read by the caller
  [[ -n $_hpc_configs_error ]] || hpc_configs_words=("${_hpc_configs_found[@]}")
}

# _hpc_configs_split_lines: splits _hpc_configs_text into _hpc_configs_lines, each line with its
# newline. CRLF (Windows) and a lone CR (old Mac) end a line as LF does, so that no carriage
# return reaches the program. (mapfile splits in one pass; <<< adds a newline, taken off again.)
_hpc_configs_split_lines() {
  local first
  local -a parts=()
  if [[ $_hpc_configs_text == *$'\r'* ]]; then
    mapfile -d $'\r' parts <<<"$_hpc_configs_text"
    parts[-1]=${parts[-1]/%$'\n'/}
    # A LF right after a CR: the CR and the LF are one line end (CRLF).
    first=${parts[0]}
    parts=("${parts[@]/#$'\n'/}")
    parts[0]=$first
    parts=("${parts[@]/%$'\r'/$'\n'}")
    printf -v _hpc_configs_text '%s' "${parts[@]}"
  fi
  mapfile _hpc_configs_lines <<<"$_hpc_configs_text"
  if [[ $_hpc_configs_text == *$'\n' ]]; then
    unset '_hpc_configs_lines[-1]'
  fi
  _hpc_configs_plain_runs
}

# _hpc_configs_plain_runs: finds the runs of plain continued lines (only ordinary characters and
# blanks, ending with a backslash and a newline: most of a long configs file) and sets, for the
# first line of each, _hpc_configs_run_text (the run's text, continuations removed) and
# _hpc_configs_run_lines (how many lines). Done with whole-array expansions and one split, so
# that the cost stays linear in the size of the file: a loop of the shell over every line (or a
# string cut at every word) would cost tens of microseconds each. The last line is never in a
# run: a continuation there is an error.
_hpc_configs_plain_runs() {
  local not_plain=$_hpc_configs_not_plain$'\n\x1e' IFS=$'\x1e' all signature k line=0
  local -a texts=() kinds=() run_texts=() run_kinds=()
  ((${#_hpc_configs_lines[@]} > 1)) || return 0
  # Each line: its text without the continuation, or \x1e when it is no plain continued line.
  # (/% and not %: Bash's % tries the pattern at every byte, each try to the end: quadratic.)
  texts=("${_hpc_configs_lines[@]/%$'\\\n'/}")
  texts=("${texts[@]/#*["$not_plain"]*/$'\x1e'}")
  texts[-1]=$'\x1e'
  # One letter a line: p (plain continued) or x (\x1e); then both split at the x lines.
  kinds=("${texts[@]/#/p}")
  kinds=("${kinds[@]/#p$'\x1e'/$'\x1e'}")
  kinds=("${kinds[@]/#p*/p}")
  printf -v all '%s' "${texts[@]}"
  printf -v signature '%s' "${kinds[@]}"
  local -
  set -f
  # shellcheck disable=SC2206 # split at \x1e on purpose (IFS above); nothing is globbed (set -f)
  run_texts=($all)
  # shellcheck disable=SC2206
  run_kinds=($signature)
  for k in "${!run_kinds[@]}"; do
    if [[ -n ${run_kinds[k]} ]]; then
      _hpc_configs_run_text[$line]=${run_texts[k]}
      _hpc_configs_run_lines[$line]=${#run_kinds[k]}
    fi
    line=$((line + ${#run_kinds[k]} + 1))
  done
}

# _hpc_configs_take_run: takes the run of plain continued lines that starts at the next line: its
# words (the first one ends the word in progress, if any; the last one may go on after it).
_hpc_configs_take_run() {
  local text=${_hpc_configs_run_text[$_hpc_configs_next]} first
  local -a plain=()
  _hpc_configs_next=$((_hpc_configs_next + ${_hpc_configs_run_lines[$_hpc_configs_next]}))
  _hpc_configs_line=$_hpc_configs_next
  if ((started)); then
    first=${text%%[' '$'\t']*}
    _hpc_configs_word+=$first
    text=${text:${#first}}
    [[ -n $text ]] || return 0
    _hpc_configs_push || return
    started=0
  fi
  # shellcheck disable=SC2206 # split at blanks on purpose; nothing in it is globbed (set -f)
  plain=($text)
  _hpc_configs_check_plain "$text" || return
  if [[ -n $text && ${text: -1} != [' '$'\t'] ]]; then
    _hpc_configs_word=${plain[-1]}
    unset 'plain[-1]'
    started=1
  fi
  _hpc_configs_found+=(${plain[@]+"${plain[@]}"})
}

# _hpc_configs_refill: gives the parser the next piece of the text in _hpc_configs_rest (empty
# when called): the next line, or of a line longer than _hpc_configs_piece_bytes its next part,
# cut after a blank (a word, quoted part or reference never ends inside one; comments and
# _hpc_configs_after_command deal in whole lines), or in a long run without blanks after a byte
# where nothing is left half read (_hpc_configs_cut); sets _hpc_configs_line to the line's number.
# The line is in _hpc_configs_long (a long one: a buffer of its blocks, _hpc_configs_fill), read
# from offset _hpc_configs_at (copying the rest of a long line at every piece would be
# quadratic). False at the end of the text, and on an
# error (a word too long: recorded, and kept over the error of a caller that then gives up).
_hpc_configs_refill() {
  local window piece cut
  if ((${#_hpc_configs_word} > hpc_configs_max_word)); then
    _hpc_configs_too_long
    return 1
  fi
  # (Lengths, not [[ -z ]]: Bash copies a string it expands, and the line may be megabytes long.)
  if ((${#_hpc_configs_long} == 0)); then
    ((_hpc_configs_next < ${#_hpc_configs_lines[@]})) || return 1
    _hpc_configs_long=${_hpc_configs_lines[_hpc_configs_next]}
    _hpc_configs_blocks=() _hpc_configs_bnext=0
    if ((${#_hpc_configs_long} > 4 * _hpc_configs_block_bytes)); then
      _hpc_configs_load_long && _hpc_configs_split_blocks
    fi
    _hpc_configs_size=${#_hpc_configs_long}
    _hpc_configs_at=0
    _hpc_configs_next=$((_hpc_configs_next + 1))
    _hpc_configs_line=$_hpc_configs_next
  fi
  _hpc_configs_fill "$_hpc_configs_piece_bytes"
  if ((_hpc_configs_size - _hpc_configs_at <= _hpc_configs_piece_bytes)); then
    _hpc_configs_rest=${_hpc_configs_long:_hpc_configs_at}
    _hpc_configs_long=''
    return 0
  fi
  window=${_hpc_configs_long:_hpc_configs_at:_hpc_configs_piece_bytes}
  if [[ $window == *[' '$'\t']* ]]; then
    # Up to and with the last blank of the window...
    piece=${window%[' '$'\t']*}
    cut=$((${#piece} + 1))
  else
    # ...or, in a run without blanks, after a byte where nothing is left half read.
    _hpc_configs_load_long && _hpc_configs_cut "$window" || return 1
  fi
  # From the window when the cut is in it: each expansion of the line copies all of it.
  if ((cut <= ${#window})); then
    _hpc_configs_rest=${window:0:cut}
  else
    _hpc_configs_rest=${_hpc_configs_long:_hpc_configs_at:cut}
  fi
  _hpc_configs_at=$((_hpc_configs_at + cut))
  if ((_hpc_configs_at >= _hpc_configs_size && _hpc_configs_bnext >= ${#_hpc_configs_blocks[@]})); then
    _hpc_configs_long=''
  fi
}

# _hpc_configs_fill N: moves the long line's next blocks into _hpc_configs_long (what is read of it
# dropped) until more than N bytes from _hpc_configs_at are there, or the whole line.
_hpc_configs_fill() {
  while ((_hpc_configs_size - _hpc_configs_at <= $1 && _hpc_configs_bnext < ${#_hpc_configs_blocks[@]})); do
    _hpc_configs_long=${_hpc_configs_long:_hpc_configs_at}${_hpc_configs_blocks[_hpc_configs_bnext]}
    _hpc_configs_blocks[_hpc_configs_bnext]=''
    _hpc_configs_bnext=$((_hpc_configs_bnext + 1))
    _hpc_configs_at=0
    _hpc_configs_size=${#_hpc_configs_long}
  done
}

# _hpc_configs_too_long: records the error of a word longer than hpc_configs_max_word; returns 2.
_hpc_configs_too_long() {
  _hpc_configs_fail \
    "line $_hpc_configs_line: a word longer than $hpc_configs_max_word bytes, the most Linux passes as one argument"
}

# _hpc_configs_push: adds the word (template) in progress to _hpc_configs_found; returns 2 when
# it is too long.
_hpc_configs_push() {
  if ((${#_hpc_configs_word} > hpc_configs_max_word)); then
    _hpc_configs_too_long
    return
  fi
  _hpc_configs_found+=("$_hpc_configs_word")
}

# _hpc_configs_check_plain TEXT: returns 2 (the error recorded) when the plain words in the array
# plain, split from TEXT, hold one too long (looked at only when TEXT is that long).
_hpc_configs_check_plain() {
  local word
  ((${#1} > hpc_configs_max_word)) || return 0
  for word in ${plain[@]+"${plain[@]}"}; do
    if ((${#word} > hpc_configs_max_word)); then
      _hpc_configs_too_long
      return
    fi
  done
}

# _hpc_configs_fail MESSAGE: records the parse error MESSAGE (unless one is recorded: the first
# error is the one reported); returns 2.
_hpc_configs_fail() {
  _hpc_configs_error=${_hpc_configs_error:-$1}
  return 2
}

# _hpc_configs_parse: splits the text into _hpc_configs_found; returns 2 on an error.
# (Dispatch on the first character with case and pattern removal: faster in Bash than regular
# expressions, which are compiled at every use. A newline is always the last byte of a piece.)
_hpc_configs_parse() {
  # shellcheck disable=SC2034 # nparts: counted by _hpc_configs_part (hpc_configs_quoted.bash)
  local started=0 part quoted=0 nparts=0
  local -a plain=()
  # For the plain text below: split at blanks only, and never globbed (set -f, undone on return).
  local - IFS=$' \t\n'
  set -f
  while :; do
    if ((${#_hpc_configs_found[@]} * 9 > hpc_configs_max_args)); then
      local _hpc_configs_msg="line $_hpc_configs_line: more than $((hpc_configs_max_args / 9)) words, more than Linux"
      _hpc_configs_msg+=" passes to a program (2 MiB of arguments, each word its length + 9 bytes)"
      _hpc_configs_fail "$_hpc_configs_msg"
      return
    fi
    if ((${#_hpc_configs_rest} == 0)); then
      # At the start of a line: a run of plain continued lines is taken at once.
      if ((${#_hpc_configs_long} == 0)) && [[ -v _hpc_configs_run_text[$_hpc_configs_next] ]]; then
        _hpc_configs_take_run
      fi
      _hpc_configs_refill || break
      if ((! started)) &&
        [[ ${_hpc_configs_rest: -1} == [$' \t\n'] && $_hpc_configs_rest != *["$_hpc_configs_not_plain"]* ]]; then
        # A plain piece (such as the command's last line) ending a word: its words at once.
        # shellcheck disable=SC2206 # split at blanks on purpose; nothing in it is globbed (set -f)
        plain=($_hpc_configs_rest)
        _hpc_configs_check_plain "$_hpc_configs_rest" || return
        _hpc_configs_found+=(${plain[@]+"${plain[@]}"})
        if [[ ${_hpc_configs_rest: -1} == $'\n' ]] && ((${#_hpc_configs_found[@]})); then
          # The end of the command: only blank lines and comments may follow.
          _hpc_configs_after_command
          return
        fi
        _hpc_configs_rest=''
        continue
      fi
    fi
    case $_hpc_configs_rest in
      [!"$_hpc_configs_special"]*)
        # Ordinary characters, and the blanks after them: the most common case.
        part=${_hpc_configs_rest%%["$_hpc_configs_special"]*}
        _hpc_configs_rest=${_hpc_configs_rest:${#part}}
        if ((started)); then
          _hpc_configs_word+=$part
        else
          _hpc_configs_word=$part
          started=1
        fi
        [[ $_hpc_configs_rest != [' '$'\t']* ]] || _hpc_configs_blanks || return
        continue
        ;;
      [' '$'\t']*)
        _hpc_configs_blanks || return
        continue
        ;;
      $'\n')
        if ((started)); then
          _hpc_configs_push || return
          started=0
        fi
        _hpc_configs_rest=''
        if ((${#_hpc_configs_found[@]})); then
          # The end of the command: only blank lines and comments may follow.
          _hpc_configs_after_command
          return
        fi
        continue
        ;;
      $'\\\n')
        # A continued line: no word starts or ends here (the next line's indent is blanks).
        _hpc_configs_rest=''
        if ((_hpc_configs_next >= ${#_hpc_configs_lines[@]})); then
          _hpc_configs_fail "trailing backslash at end of file (line $_hpc_configs_line)"
          return
        fi
        continue
        ;;
      '#'*)
        if ((! started)); then
          # A comment: the rest of the line (every piece of it) up to its newline, which stays.
          part=${_hpc_configs_long:-$_hpc_configs_rest}
          # (A long line's end is in its last block.)
          if ((_hpc_configs_bnext < ${#_hpc_configs_blocks[@]})); then part=${_hpc_configs_blocks[-1]}; fi
          _hpc_configs_long='' _hpc_configs_blocks=() _hpc_configs_bnext=0
          _hpc_configs_rest=''
          if [[ ${part: -1} == $'\n' ]]; then _hpc_configs_rest=$'\n'; fi
          continue
        fi
        ;;
    esac
    # Anything else is (part of) a word, read by hpc_configs_quoted.bash (loaded once a parse:
    # looking for its functions at every quoted word cost a third of its time).
    ((quoted)) || {
      _hpc_configs_load_quoted || {
        _hpc_configs_fail "cannot be read: the toolkit's hpc_configs_quoted.bash is missing"
        return
      }
      quoted=1
    }
    _hpc_configs_part || return
  done
  if ((started)); then
    _hpc_configs_push
  fi
}

# _hpc_configs_blanks: (in _hpc_configs_parse) _hpc_configs_rest starts with blanks: the word in
# progress (the caller's started) ends and is pushed; the blanks are skipped. Returns 2 when the
# word is too long.
_hpc_configs_blanks() {
  local part
  if ((started)); then
    _hpc_configs_push || return
    started=0
  fi
  part=${_hpc_configs_rest%%[!$' \t']*}
  _hpc_configs_rest=${_hpc_configs_rest:${#part}}
}

# _hpc_configs_after_command: checks that only blank lines and comments follow the command (the
# lines not yet given to the parser); returns 2 naming the line of a second command.
_hpc_configs_after_command() {
  local i text
  for ((i = _hpc_configs_next; i < ${#_hpc_configs_lines[@]}; i++)); do
    text=${_hpc_configs_lines[i]}
    text=${text#"${text%%[!$' \t']*}"}
    case $text in
      '' | $'\n' | '#'*) ;;
      *)
        _hpc_configs_fail \
          "line $((i + 1)): a second command; the file holds one command (end a line with \\ to continue it)"
        return
        ;;
    esac
  done
}

# _hpc_configs_load_quoted: loads hpc_configs_quoted.bash once (hpc_module_load, from
# hpc_common.bash): reading quoted parts, escapes and references, and expanding references in the
# job. A plain command (words of ordinary characters, most configs files) needs none of it, so
# that a submission parses it only when the file has them.
_hpc_configs_load_quoted() {
  # shellcheck disable=SC2154 # hpc_lib_dir: hpc_common.bash
  hpc_module_load "$hpc_lib_dir" _hpc_configs_scan hpc_configs_quoted
}

# _hpc_configs_load_long: loads hpc_configs_long.bash once: what only a line longer than four
# blocks, a piece without blanks or a file that is not a regular file needs (so that a plain
# submission does not parse it).
_hpc_configs_load_long() {
  # shellcheck disable=SC2154 # hpc_module_problem: hpc_common.bash
  hpc_module_load "$hpc_lib_dir" _hpc_configs_cut hpc_configs_long || _hpc_configs_fail "$hpc_module_problem"
}

# hpc_configs_expand TEMPLATE...: expands the references in each TEMPLATE from the environment
# into hpc_configs_argv, one element per template (never split, globbed or expanded again). An
# unset NAME without a default: prints 'configs: variable NAME is not set in the job (used in:
# TEMPLATE)' to stderr and returns 1.
hpc_configs_expand() {
  local _hpc_configs_template _hpc_configs_t _hpc_configs_v _hpc_configs_unset=''
  local -a _hpc_configs_out=()
  hpc_configs_argv=()
  for _hpc_configs_template in "$@"; do
    if [[ $_hpc_configs_template != *["\\\$"]* ]]; then
      # No escape and no reference: the template is its own value.
      _hpc_configs_out+=("$_hpc_configs_template")
      continue
    fi
    _hpc_configs_load_quoted || return 1
    _hpc_configs_t=$_hpc_configs_template
    _hpc_configs_v=''
    if ! _hpc_configs_scan 1 0; then
      if [[ -z $_hpc_configs_unset ]]; then
        _hpc_configs_too_deep "$_hpc_configs_template"
        return 1
      fi
      printf 'configs: variable %s is not set in the job (used in: %s)\n' \
        "$_hpc_configs_unset" "$_hpc_configs_template" >&2
      return 1
    fi
    _hpc_configs_out+=("$_hpc_configs_v")
  done
  # shellcheck disable=SC2034 # a result, read by the caller
  hpc_configs_argv=("${_hpc_configs_out[@]}")
}

# hpc_configs_references TEMPLATE...: prints the names the templates refer to, one per line, each
# once, in order of first appearance: NAME when the job fails without it (a use with no default,
# not inside another reference's default), NAME:- when every use has a default or sits in one.
# Defaults nested too deep: prints 'configs: references nested deeper than ...' to stderr and
# returns 1.
hpc_configs_references() {
  hpc_configs_reference_names "$@" || return 1
  ((${#hpc_configs_names[@]} == 0)) || printf '%s\n' "${hpc_configs_names[@]}"
}

# hpc_configs_reference_names TEMPLATE...: sets hpc_configs_names to what hpc_configs_references
# prints (for a caller in this shell: no process substitution to read them).
hpc_configs_reference_names() {
  hpc_configs_names=()
  # Without a $ no template refers to anything (a literal $ is stored as \$).
  [[ "$*" == *\$* ]] || return 0
  _hpc_configs_load_quoted || return 1
  _hpc_configs_reference_names "$@"
}

[[ ${BASH_SOURCE[0]} == "$0" ]] || return 0
# The configs file (see the top of this file).
#
# The file holds ONE command, written as in a POSIX shell:
#   - a backslash at the end of a line continues the command on the next line (a line that ends
#     with a backslash as the last line of the file is an error); CRLF (Windows) and a lone CR
#     (old Mac) end a line as LF does, so no carriage return reaches the program, and a UTF-8 byte
#     order mark at the start is dropped;
#   - blank lines are ignored; a '#' that starts a word outside quotes begins a comment that runs
#     to the end of the line (a backslash inside a comment does not continue it, as in a shell: to
#     leave out one line of a continued command, move it below the command instead);
#   - words are split on unquoted spaces and tabs; 'single quotes' keep everything literal;
#     "double quotes" keep everything but $ (references, below), and there a backslash escapes only
#     $ ` " \ and a newline (which it removes); outside quotes a backslash makes the next character
#     literal; adjacent parts join into one word: --name="my run" is the one word --name=my run;
#   - the command ends at the first unquoted newline that is not continued. A second command later
#     in the file is refused (naming its line), so that a forgotten trailing backslash never drops
#     arguments silently; a configs file holds one command, as it always did;
#   - unquoted ; & | < > ( ) are refused (with the line): pipes, redirections, command lists and
#     subshells would need a shell. Quote them to pass them to the program as text.
# References: $NAME, ${NAME} and ${NAME:-default} (NAME = [A-Za-z_][A-Za-z0-9_]*), outside quotes
# or inside double quotes, are expanded in the job, from the job's environment, just before the
# program starts; the default is written like the rest of the word (quotes and references allowed,
# spaces kept) and is used when NAME is unset or empty, as in a shell. A word is one argument
# whatever its values: never split, and kept when it expands to nothing (then it is an empty
# argument; a shell would drop an unquoted one). Every other use of $ is plain text that reaches
# the program as written, not an error: $(...), $((...)), ${#x}, ${x/a/b}, ${x-y}, $1, $@, $$, and
# so are backquotes ($'...' is no ANSI-C quoting here: a plain $, then a single-quoted part). Outside single quotes,
# $(...), $((...)), ${...} and `...` stay one piece of their word up to the matching close, as a shell would read them:
# '--stamp=$(date +%s)' and --stamp=$(date +%s) both give the program the text --stamp=$(date +%s). Nothing is globbed
# (*.py stays *.py), brace-expanded or tilde-expanded (write $HOME), and expanded values are
# inserted verbatim: never split, globbed or expanded again.
#
# Why there is no eval: the file is user text. It is tokenised here in pure Bash (case patterns
# and pattern removal over the text; no eval, bash -c, source or declare of any of it; the only
# unquoted expansions split plain text, which holds no quote, $ or backslash, at blanks with
# globbing off), so nothing in it can run at submission, and the job expands only the
# references above, by ${!NAME} after NAME has been checked to be a name. Nothing in it can run
# in the job either.
#
# Cost: linear in the size of the file. The parser works on one line at a time (a long line in
# pieces of about 4 KiB, cut after a blank; a line over 256 KiB split once into blocks of 64 KiB,
# the pieces cut from a block or two), never on the rest of the file, and runs of plain
# continued lines (most of a long generated file) are found and split with whole-array
# expansions. Only regular files up to 4 MiB are read. tests/unit/configs.bats counts the work
# (the size of a bash -x trace) for files of N and 2N lines. A word (template) longer than
# 131072 bytes (Linux's MAX_ARG_STRLEN) is refused while it is read, and so are ${NAME:-...}
# nested deeper than 32 levels (reading and expanding recurse once a level).
#
# Templates (the hpc_configs_words elements, hpc_configs_expand's arguments): one per argument;
# '\' makes the next character literal and an unescaped '$' begins a reference, written ${NAME} or
# ${NAME:-default} by hpc_configs_read. A literal \ or $ from the file is stored as \\ or \$, and a
# literal } inside a default as \}. Example: the file line
#   python "train.py" --out="$SCRATCH/run 1" --tag='$x' ${SEED:-4\2}
# gives the templates  python  train.py  --out=${SCRATCH}/run 1  --tag=\$x  ${SEED:-42}
# The job's plan file holds them as hpc_plan_command=( ... ), each quoted with printf %q; each task
# runs hpc_configs_expand on them (hpc_job_task, the runner) and then the expanded words.
#
# Internal names start with _hpc_configs_; a reference to such a name is not supported.

# The bounds of reading (see the top of this file).
# hpc_configs_max_bytes: the largest configs file read (4 MiB): twice what Linux allows a
# command's arguments and environment together (2 MiB), so that comments and indentation never
# matter; reading stops one byte past it, so no file is ever read whole to refuse it.
# _hpc_configs_piece_bytes: the parser is given the text in pieces of at most about this many bytes
# (a line, or part of a long line cut after a blank): every string operation works on one piece,
# never on the rest of the file, so reading is linear in the size of the file.
# _hpc_configs_block_bytes: a line longer than four blocks of this many bytes is split into blocks
# once (read -N, one pass), and the pieces are cut from a buffer of a block or two: Bash copies a
# string at every expansion, so cutting each piece from the whole line was quadratic (a line of
# megabytes, seconds a megabyte).
# hpc_configs_max_word: the longest word or template read (131072 bytes): Linux passes no longer
# argument to a program (MAX_ARG_STRLEN). A longer one is refused as it is read, in pieces, so
# that reaching the limit costs no more than reading that many bytes.
# hpc_configs_max_args: the most bytes a command's words may take (2 MiB): Linux passes a program
# at most that much of arguments and environment together (a quarter of the default 8 MiB
# stack), each word its length, its NUL and its pointer (8 bytes). So a command of more than
# hpc_configs_max_args / 9 words can never start: it is refused as soon as the parser has read
# that many, which bounds the time a huge file takes to refuse (a million words took 21 s).
# hpc_configs_max_parts: the most quoted parts, escapes and references one command may have. Each
# costs the parser tens of microseconds, and an empty one ("") costs the program nothing: a line
# of a million of them took minutes to read. Past this many the command is refused, a few seconds
# in; a list that long belongs in a file the program reads.
# hpc_configs_max_depth: the most ${NAME:-...} nested in one another (reading and expanding recurse
# once a level: a bound keeps Bash far from its stack's end).
