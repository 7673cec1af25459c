# shellcheck shell=bash
# hpc_configs_long.bash: the part of hpc_configs.bash's reader that a configs file of ordinary
# lines does not need, loaded by it (_hpc_configs_load_long) at the first line longer than four
# blocks, the first piece of a long line without a blank, or a file that is not a regular file.
# Works on hpc_configs.bash's parser state and sets (Bash's dynamic scope); never evaluates.

# Regular expressions for a long run (_hpc_configs_cut): a pattern removal (%%) tries its pattern
# at every byte, microseconds each, where a regular expression is one pass: its bytes up to the
# first blank; its bytes in _hpc_configs_no_cut_after from the start; backslashes, then bytes
# that are none (up to the first backslash that follows another byte).
_hpc_configs_re_run=$'^[^ \t]*'
# shellcheck disable=SC2154 # _hpc_configs_no_cut_after: hpc_configs.bash
_hpc_configs_re_no_cut="^[${_hpc_configs_no_cut_after}]*"
_hpc_configs_re_escape='^\\*[^\\]*'

# _hpc_configs_kind FILE: what FILE (not a regular file, not a folder) is, for a message.
_hpc_configs_kind() {
  if [[ -p $1 ]]; then
    printf 'a named pipe (FIFO)'
  elif [[ -c $1 ]]; then
    printf 'a character device'
  elif [[ -b $1 ]]; then
    printf 'a block device'
  elif [[ -S $1 ]]; then
    printf 'a socket'
  else
    printf 'a special file'
  fi
}

# _hpc_configs_split_blocks: (in _hpc_configs_refill) splits the long line in _hpc_configs_long
# into _hpc_configs_blocks of _hpc_configs_block_bytes and keeps the first in _hpc_configs_long.
_hpc_configs_split_blocks() {
  local block=''
  # shellcheck disable=SC2154 # _hpc_configs_block_bytes: hpc_configs.bash
  while IFS= read -r -N "$_hpc_configs_block_bytes" block; do
    _hpc_configs_blocks+=("$block")
  done <<<"$_hpc_configs_long"
  # The last, short block; then the newline that <<< adds, the last byte, taken off.
  if [[ -n $block ]]; then _hpc_configs_blocks+=("$block"); fi
  _hpc_configs_blocks[-1]=${_hpc_configs_blocks[-1]%$'\n'}
  if [[ -z ${_hpc_configs_blocks[-1]} ]]; then unset '_hpc_configs_blocks[-1]'; fi
  _hpc_configs_long=${_hpc_configs_blocks[0]}
  _hpc_configs_bnext=1
}

# _hpc_configs_cut WINDOW: sets cut (of _hpc_configs_refill) to where the window WINDOW of a run
# without blanks can end: after its last byte outside _hpc_configs_no_cut_after, or after its
# last \c (c any byte) whose backslash follows another byte (an escape, whole), or after its
# last name character before a \ or $ (a name ends there), or else after the first place
# further on after a byte outside _hpc_configs_no_cut_after or an escape. A run with none in twice the longest word is a
# word too long (returns 1, the error recorded).
_hpc_configs_cut() {
  local window=$1 head run tail
  head=${window%[!"$_hpc_configs_no_cut_after"]*}
  if ((${#head} < ${#window})); then
    cut=$((${#head} + 1))
    return 0
  fi
  head=${window%[!\\]\\?*}
  if ((${#head} < ${#window})); then
    cut=$((${#head} + 3))
    return 0
  fi
  head=${window%["$_hpc_configs_name_chars"][\\\$]*}
  if ((${#head} < ${#window})); then
    cut=$((${#head} + 1))
    return 0
  fi
  # Rare (a run of name characters, or of \ $ { :): the first place after the window.
  # shellcheck disable=SC2154 # hpc_configs_max_word: hpc_configs.bash
  _hpc_configs_fill $((2 * hpc_configs_max_word + 8))
  run=${_hpc_configs_long:_hpc_configs_at:2*hpc_configs_max_word+8}
  [[ $run =~ $_hpc_configs_re_run ]]
  run=${BASH_REMATCH[0]}
  if ((${#run} > 2 * hpc_configs_max_word)); then
    _hpc_configs_too_long
    return 1
  fi
  tail=${run:${#window}}
  cut=$((${#run} + 1))
  # After the first byte outside _hpc_configs_no_cut_after...
  [[ $tail =~ $_hpc_configs_re_no_cut ]]
  head=${BASH_REMATCH[0]}
  if ((${#head} < ${#tail})); then cut=$((${#window} + ${#head} + 1)); fi
  # ...or after the first \c whose backslash follows another byte (head ends with that byte),
  # whichever comes first.
  [[ $tail =~ $_hpc_configs_re_escape ]]
  head=${BASH_REMATCH[0]}
  if ((${#head} + 1 < ${#tail} && ${#window} + ${#head} + 2 < cut)); then
    cut=$((${#window} + ${#head} + 2))
  fi
}
