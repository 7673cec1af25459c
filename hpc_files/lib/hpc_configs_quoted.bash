# shellcheck shell=bash
# hpc_configs_quoted.bash: the part of hpc_configs.bash that a plain command does not need, loaded
# by it at the first quoted part, escape or reference it reads (_hpc_configs_load_quoted), and by
# hpc_configs_expand and hpc_configs_reference_names at the first template that has one: reading
# 'single' and "double" quoted parts, backslashes and $ references into templates, and walking
# templates to expand or list their references. The grammar and the templates: hpc_configs.bash.
# Works on hpc_configs.bash's parser state and sets (Bash's dynamic scope); never evaluates.

# _hpc_configs_backslash_unquoted: a backslash outside quotes: continues the line before a
# newline, else makes the next character literal.
_hpc_configs_backslash_unquoted() {
  case $_hpc_configs_rest in
    "\\")
      # shellcheck disable=SC2154 # _hpc_configs_line: hpc_configs.bash
      _hpc_configs_fail "trailing backslash at end of file (line $_hpc_configs_line)"
      return
      ;;
    $'\\\n')
      _hpc_configs_rest=''
      if ! _hpc_configs_refill; then
        _hpc_configs_fail "trailing backslash at end of file (line $_hpc_configs_line)"
        return
      fi
      ;;
    *) _hpc_configs_escapes ;;
  esac
}

# _hpc_configs_escapes: a run of \c escapes (outside quotes) and ordinary characters, at once: a
# long word of escapes (\x\x...) costs one step a run, not one a byte.
_hpc_configs_escapes() {
  # shellcheck disable=SC2154 # _hpc_configs_escapes_stop: hpc_configs.bash
  local stop=$_hpc_configs_escapes_stop run pair=$'\x01' text
  if ((_hpc_configs_depth > 0)); then stop+='}'; fi
  run=${_hpc_configs_rest%%["$stop"]*}
  text=${run//"\\\\"/$pair}
  if [[ $text == *"\\" ]]; then
    # The last backslash escapes a special character: left for the next step.
    run=${run%?}
    text=${text%?}
  fi
  if [[ -z $run || $run == *"$pair"* ]]; then
    # A backslash before a special character (or a run holding \x01): one escape.
    _hpc_configs_literal "${_hpc_configs_rest:1:1}"
    _hpc_configs_rest=${_hpc_configs_rest:2}
    return 0
  fi
  text=${text//"\\"/}
  _hpc_configs_literal "${text//$pair/\\}"
  _hpc_configs_rest=${_hpc_configs_rest:${#run}}
}

# _hpc_configs_backslash_dquoted: a backslash inside double quotes: escapes only $ ` " \ and a
# newline (which it removes); before anything else it is itself literal.
_hpc_configs_backslash_dquoted() {
  case $_hpc_configs_rest in
    $'\\\n')
      _hpc_configs_rest=''
      ;;
    "\\\$"* | "\\\`"* | "\\\""* | "\\\\"*)
      _hpc_configs_literal "${_hpc_configs_rest:1:1}"
      _hpc_configs_rest=${_hpc_configs_rest:2}
      ;;
    *)
      _hpc_configs_word+="\\\\"
      _hpc_configs_rest=${_hpc_configs_rest:1}
      ;;
  esac
}

# _hpc_configs_squote: a single-quoted part: all of it literal, over as many lines as it takes.
_hpc_configs_squote() {
  local opened=$_hpc_configs_line part
  _hpc_configs_rest=${_hpc_configs_rest:1}
  while :; do
    part=${_hpc_configs_rest%%\'*}
    _hpc_configs_literal "$part"
    if ((${#part} < ${#_hpc_configs_rest})); then
      _hpc_configs_rest=${_hpc_configs_rest:${#part}+1}
      return 0
    fi
    _hpc_configs_rest=''
    if ! _hpc_configs_refill; then
      _hpc_configs_fail "unbalanced ' (single quote) opened on line $opened"
      return
    fi
  done
}

# _hpc_configs_dquote: a double-quoted part, from its opening quote.
_hpc_configs_dquote() {
  local opened=$_hpc_configs_line part=${_hpc_configs_rest:1}
  # The common case first: nothing in it but plain text, closed on the same piece.
  part=${part%%["${_hpc_configs_dq_stop%\}}"]*}
  if [[ ${_hpc_configs_rest:${#part}+1:1} == '"' ]]; then
    _hpc_configs_rest=${_hpc_configs_rest:${#part}+2}
    if ((_hpc_configs_depth > 0)); then part=${part//\}/\\\}}; fi
    _hpc_configs_word+=$part
    return 0
  fi
  _hpc_configs_rest=${_hpc_configs_rest:1}
  while ((${#_hpc_configs_rest})) || _hpc_configs_refill; do
    case $_hpc_configs_rest in
      '"'*)
        _hpc_configs_rest=${_hpc_configs_rest:1}
        return 0
        ;;
      "\\"*) _hpc_configs_backslash_dquoted ;;
      ["\$\`"]*) _hpc_configs_dollar q || return ;;
      '}'*)
        _hpc_configs_literal '}'
        _hpc_configs_rest=${_hpc_configs_rest:1}
        ;;
      *)
        # Ordinary characters: nothing in them to escape.
        part=${_hpc_configs_rest%%["$_hpc_configs_dq_stop"]*}
        _hpc_configs_rest=${_hpc_configs_rest:${#part}}
        _hpc_configs_word+=$part
        ;;
    esac
  done
  _hpc_configs_fail "unbalanced \" (double quote) opened on line $opened"
}

# _hpc_configs_dollar [q]: a $ or ` (q: inside double quotes): a reference, or plain text.
_hpc_configs_dollar() {
  local context=${1:-u} name after opened=$_hpc_configs_line
  # shellcheck disable=SC2154 # _hpc_configs_name_start: hpc_configs.bash
  case $_hpc_configs_rest in
    \$\{["$_hpc_configs_name_start"]*)
      after=${_hpc_configs_rest:2}
      name=${after%%[!"$_hpc_configs_name_chars"]*}
      after=${after:${#name}}
      case $after in
        '}'*)
          _hpc_configs_word+="\${$name}"
          _hpc_configs_rest=${after:1}
          ;;
        ':-'*)
          # shellcheck disable=SC2154 # hpc_configs_max_depth: hpc_configs.bash
          if ((_hpc_configs_depth >= hpc_configs_max_depth)); then
            local _hpc_configs_msg="line $_hpc_configs_line: references nested deeper than"
            _hpc_configs_msg+=" $hpc_configs_max_depth levels (\${NAME:-\${NAME:-...}})"
            _hpc_configs_fail "$_hpc_configs_msg"
            return
          fi
          _hpc_configs_rest=${after:2}
          after=${_hpc_configs_rest%%["$_hpc_configs_du_stop"]*}
          if [[ ${_hpc_configs_rest:${#after}:1} == '}' ]]; then
            # The common case: a default of ordinary characters.
            _hpc_configs_rest=${_hpc_configs_rest:${#after}+1}
            _hpc_configs_word+="\${$name:-$after}"
            return 0
          fi
          _hpc_configs_word+="\${$name:-"
          _hpc_configs_depth=$((_hpc_configs_depth + 1))
          _hpc_configs_default "$context" || return
          _hpc_configs_depth=$((_hpc_configs_depth - 1))
          if ((${#_hpc_configs_rest} == 0)); then
            _hpc_configs_fail "unterminated \${$name:-...} opened on line $opened"
            return
          fi
          _hpc_configs_word+='}'
          _hpc_configs_rest=${_hpc_configs_rest:1}
          ;;
        *) _hpc_configs_group || return ;;
      esac
      ;;
    '$'["$_hpc_configs_name_start"]*)
      after=${_hpc_configs_rest:1}
      name=${after%%[!"$_hpc_configs_name_chars"]*}
      _hpc_configs_word+="\${$name}"
      _hpc_configs_rest=${after:${#name}}
      ;;
    "\$("* | "\${"*)
      _hpc_configs_group || return
      ;;
    '`'*)
      # Plain text up to the closing backquote, over as many lines as it takes.
      _hpc_configs_literal '`'
      _hpc_configs_rest=${_hpc_configs_rest:1}
      while :; do
        after=${_hpc_configs_rest%%\`*}
        if ((${#after} < ${#_hpc_configs_rest})); then
          _hpc_configs_literal "$after\`"
          _hpc_configs_rest=${_hpc_configs_rest:${#after}+1}
          return 0
        fi
        _hpc_configs_literal "$after"
        _hpc_configs_rest=''
        if ! _hpc_configs_refill; then
          _hpc_configs_fail "unbalanced \` (backquote) opened on line $opened"
          return
        fi
      done
      ;;
    *)
      _hpc_configs_word+='\$'
      _hpc_configs_rest=${_hpc_configs_rest:1}
      ;;
  esac
}

# _hpc_configs_group: $( or ${ that is no reference: plain text up to the matching ) or }, over
# as many lines as it takes.
_hpc_configs_group() {
  local open=${_hpc_configs_rest:1:1} close=')' depth=0 part c opened=$_hpc_configs_line
  if [[ $open == '{' ]]; then close='}'; fi
  _hpc_configs_literal '$'
  _hpc_configs_rest=${_hpc_configs_rest:1}
  while ((${#_hpc_configs_rest})) || _hpc_configs_refill; do
    part=${_hpc_configs_rest%%["$open$close"]*}
    _hpc_configs_literal "$part"
    _hpc_configs_rest=${_hpc_configs_rest:${#part}}
    ((${#_hpc_configs_rest})) || continue
    c=${_hpc_configs_rest:0:1}
    _hpc_configs_literal "$c"
    _hpc_configs_rest=${_hpc_configs_rest:1}
    if [[ $c == "$open" ]]; then
      depth=$((depth + 1))
    else
      depth=$((depth - 1))
      if ((depth == 0)); then return 0; fi
    fi
  done
  _hpc_configs_fail "unbalanced \$$open opened on line $opened"
}

# _hpc_configs_default CONTEXT: the default of ${NAME:-default} up to (not past) its closing },
# read like the text around it (CONTEXT u: outside quotes, q: inside double quotes) except that
# spaces, newlines, # and ; & | < > ( ) are plain text in it.
_hpc_configs_default() {
  local context=$1 stop=$_hpc_configs_du_stop part
  if [[ $context == q ]]; then stop=$_hpc_configs_dq_stop; fi
  while ((${#_hpc_configs_rest})) || _hpc_configs_refill; do
    case $_hpc_configs_rest in
      '}'*) return 0 ;;
      '"'*) _hpc_configs_dquote || return ;;
      ["\$\`"]*) _hpc_configs_dollar "$context" || return ;;
      "\\"*)
        if [[ $context == q ]]; then
          _hpc_configs_backslash_dquoted
        else
          _hpc_configs_backslash_unquoted || return
        fi
        ;;
      "'"*)
        if [[ $context == q ]]; then
          _hpc_configs_word+="'"
          _hpc_configs_rest=${_hpc_configs_rest:1}
        else
          _hpc_configs_squote || return
        fi
        ;;
      *)
        # Ordinary characters: nothing in them to escape.
        part=${_hpc_configs_rest%%["$stop"]*}
        _hpc_configs_rest=${_hpc_configs_rest:${#part}}
        _hpc_configs_word+=$part
        ;;
    esac
  done
}

# _hpc_configs_too_deep TEMPLATE: prints that TEMPLATE nests references too deep, to stderr.
_hpc_configs_too_deep() {
  printf 'configs: references nested deeper than %s levels (used in: %s)\n' \
    "$hpc_configs_max_depth" "$1" >&2
}

# _hpc_configs_scan EVALUATE IN_DEFAULT: walks the template text _hpc_configs_t (up to the } that
# closes a default when IN_DEFAULT is 1), appending its value to _hpc_configs_v when EVALUATE is 1
# and noting references when _hpc_configs_note is set; returns 1 on an unset NAME (named in
# _hpc_configs_unset), and 1 with _hpc_configs_unset empty on defaults nested deeper than
# hpc_configs_max_depth (one call a level: the bound keeps the recursion short).
_hpc_configs_scan() {
  local _hpc_configs_eval=$1 _hpc_configs_in_default=$2 _hpc_configs_name _hpc_configs_after
  local _hpc_configs_level=$((${_hpc_configs_level:-0} + $2))
  if ((_hpc_configs_level > hpc_configs_max_depth)); then
    _hpc_configs_unset=''
    return 1
  fi
  while [[ -n $_hpc_configs_t ]]; do
    case $_hpc_configs_t in
      "\\"*)
        if ((_hpc_configs_eval)); then _hpc_configs_v+=${_hpc_configs_t:1:1}; fi
        if [[ $_hpc_configs_t == "\\" ]]; then
          # A lone backslash at the end stands for itself.
          if ((_hpc_configs_eval)); then _hpc_configs_v+="\\"; fi
        fi
        _hpc_configs_t=${_hpc_configs_t:2}
        ;;
      '}'*)
        _hpc_configs_t=${_hpc_configs_t:1}
        if ((_hpc_configs_in_default)); then return 0; fi
        if ((_hpc_configs_eval)); then _hpc_configs_v+='}'; fi
        ;;
      '$'["$_hpc_configs_name_start"]* | \$\{["$_hpc_configs_name_start"]*)
        if [[ $_hpc_configs_t == "\${"* ]]; then
          _hpc_configs_after=${_hpc_configs_t:2}
        else
          _hpc_configs_after=${_hpc_configs_t:1}
        fi
        _hpc_configs_name=${_hpc_configs_after%%[!"$_hpc_configs_name_chars"]*}
        _hpc_configs_after=${_hpc_configs_after:${#_hpc_configs_name}}
        if [[ $_hpc_configs_t == '$'["$_hpc_configs_name_start"]* || $_hpc_configs_after == '}'* ]]; then
          # $NAME or ${NAME}
          if [[ $_hpc_configs_t == "\${"* ]]; then _hpc_configs_after=${_hpc_configs_after:1}; fi
          _hpc_configs_t=$_hpc_configs_after
          if [[ -n ${_hpc_configs_note-} ]]; then
            _hpc_configs_note_name "$_hpc_configs_name" $((! _hpc_configs_in_default))
          fi
          if ((_hpc_configs_eval)); then
            if [[ ! -v $_hpc_configs_name ]]; then
              _hpc_configs_unset=$_hpc_configs_name
              return 1
            fi
            _hpc_configs_v+=${!_hpc_configs_name}
          fi
        elif [[ $_hpc_configs_after == ':-'* ]]; then
          # ${NAME:-default}
          _hpc_configs_t=${_hpc_configs_after:2}
          if [[ -n ${_hpc_configs_note-} ]]; then
            _hpc_configs_note_name "$_hpc_configs_name" 0
          fi
          if ((_hpc_configs_eval)) && [[ -v $_hpc_configs_name && -n ${!_hpc_configs_name} ]]; then
            _hpc_configs_v+=${!_hpc_configs_name}
            _hpc_configs_scan 0 1 || return
          else
            _hpc_configs_scan "$_hpc_configs_eval" 1 || return
          fi
        else
          # ${NAME followed by anything else: plain text.
          if ((_hpc_configs_eval)); then _hpc_configs_v+='$'; fi
          _hpc_configs_t=${_hpc_configs_t:1}
        fi
        ;;
      "\$"*)
        if ((_hpc_configs_eval)); then _hpc_configs_v+='$'; fi
        _hpc_configs_t=${_hpc_configs_t:1}
        ;;
      *)
        _hpc_configs_after=${_hpc_configs_t%%["$_hpc_configs_template_stop"]*}
        if ((_hpc_configs_eval)); then _hpc_configs_v+=$_hpc_configs_after; fi
        _hpc_configs_t=${_hpc_configs_t:${#_hpc_configs_after}}
        ;;
    esac
  done
}

# _hpc_configs_note_name NAME REQUIRED: records NAME for hpc_configs_references (REQUIRED 1: used
# without a default).
_hpc_configs_note_name() {
  if [[ ! -v "_hpc_configs_required[$1]" ]]; then
    _hpc_configs_names+=("$1")
    _hpc_configs_required[$1]=0
  fi
  if (($2)); then _hpc_configs_required[$1]=1; fi
}

# _hpc_configs_part: (in _hpc_configs_parse) reads the quoted part, escape or reference (or a
# character of no meaning there) that starts _hpc_configs_rest into the word, which it starts
# when none is (the caller's started; nparts counts them); returns 2 on an error.
_hpc_configs_part() {
  # shellcheck disable=SC2154 # hpc_configs_max_parts: hpc_configs.bash
  if ((++nparts > hpc_configs_max_parts)); then
    local _hpc_configs_msg="line $_hpc_configs_line: more than $hpc_configs_max_parts quoted parts, escapes and"
    _hpc_configs_msg+=" references in one command, more than the toolkit reads (put such a list in a file that the"
    _hpc_configs_msg+=" program reads)"
    _hpc_configs_fail "$_hpc_configs_msg"
    return
  fi
  if ((! started)); then
    started=1
    _hpc_configs_word=''
  fi
  case $_hpc_configs_rest in
    "'"*) _hpc_configs_squote || return ;;
    '"'*) _hpc_configs_dquote || return ;;
    ["\$\`"]*) _hpc_configs_dollar || return ;;
    "\\"*) _hpc_configs_backslash_unquoted || return ;;
    [';&|<>()']*)
      local _hpc_configs_msg="line $_hpc_configs_line: unquoted '${_hpc_configs_rest:0:1}': pipes, redirections,"
      _hpc_configs_msg+=" command lists and subshells are not supported (quote it to pass it to the program)"
      _hpc_configs_fail "$_hpc_configs_msg"
      return
      ;;
    '#'*)
      _hpc_configs_word+='#'
      _hpc_configs_rest=${_hpc_configs_rest:1}
      ;;
    *)
      # A byte the locale cannot read as a character.
      _hpc_configs_literal "${_hpc_configs_rest:0:1}"
      _hpc_configs_rest=${_hpc_configs_rest:1}
      ;;
  esac
  # The blanks after a quoted part or a reference, at once.
  [[ $_hpc_configs_rest != [' '$'\t']* ]] || _hpc_configs_blanks
}

# _hpc_configs_literal TEXT: appends TEXT to the word as literal text (\ $, and } in a default,
# escaped with a backslash).
_hpc_configs_literal() {
  local text=$1
  text=${text//\\/\\\\}
  text=${text//\$/\\\$}
  if ((_hpc_configs_depth > 0)); then
    text=${text//\}/\\\}}
  fi
  _hpc_configs_word+=$text
}

# _hpc_configs_reference_names TEMPLATE...: (hpc_configs_reference_names, for templates with a $)
# sets hpc_configs_names.
_hpc_configs_reference_names() {
  local _hpc_configs_template _hpc_configs_t _hpc_configs_v='' _hpc_configs_note=1
  local _hpc_configs_unset='' _hpc_configs_n
  local -a _hpc_configs_names=()
  local -A _hpc_configs_required=()
  for _hpc_configs_template in "$@"; do
    _hpc_configs_t=$_hpc_configs_template
    if ! _hpc_configs_scan 0 0; then
      _hpc_configs_too_deep "$_hpc_configs_template"
      return 1
    fi
  done
  for _hpc_configs_n in ${_hpc_configs_names[@]+"${_hpc_configs_names[@]}"}; do
    if ((_hpc_configs_required[$_hpc_configs_n])); then
      hpc_configs_names+=("$_hpc_configs_n")
    else
      hpc_configs_names+=("$_hpc_configs_n:-")
    fi
  done
}
