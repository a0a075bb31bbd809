# Laya for zsh: as you type, the warm Laya engine (the app, or `laya serve`) suggests how the
# command line goes on, shown as dim ghost text after the cursor, the way zsh-autosuggestions
# does. → (forward-char) or End (end-of-line) at the end of the line accepts it; Tab is left to
# zsh's completion. Suggestions are fetched in the background, so typing never waits for them;
# without a running server there are none.
#
# Use: source /path/to/laya.zsh in ~/.zshrc (after zsh-autosuggestions, if you use both: the
# later one's ghost text wins).
# Settings (set before sourcing; LAYA_BIN, LAYA_TIMEOUT and LAYA_STYLE also any time later):
#   LAYA_BIN             the laya command (default: laya)
#   LAYA_TIMEOUT         budget for one suggestion (default: 300ms)
#   LAYA_STYLE           highlight of the ghost text (default: fg=8)
#   LAYA_ACCEPT_WIDGETS  widgets that accept the suggestion when the cursor is at the end of the
#                        line (default: forward-char end-of-line vi-forward-char vi-end-of-line
#                        vi-add-eol)
#   LAYA_DISABLE         set to anything to stop suggesting (the widgets stay bound)

: ${LAYA_BIN:=laya}
: ${LAYA_TIMEOUT:=300ms}
: ${LAYA_STYLE:=fg=8}
(( ${+LAYA_ACCEPT_WIDGETS} )) ||
  typeset -ga LAYA_ACCEPT_WIDGETS=(forward-char end-of-line vi-forward-char vi-end-of-line vi-add-eol)

typeset -g _laya_shown=""    # the suggestion on display
typeset -g _laya_for=""      # the command line it was made for
typeset -g _laya_hl=""       # our region_highlight entry
typeset -g _laya_asked=""    # the command line the request in flight is for
typeset -g _laya_fd=""       # that request's output
typeset -g _laya_pid=""      # and its process

# _laya_query PREFIX prints a one-line suggestion for a command line ending in PREFIX, or
# fails. Only a running server is asked (loading a model takes far longer than the budget).
# The prefix is always an argument: a line of just "-" is text, not "read stdin".
_laya_query() {
  local out
  out=$(command "$LAYA_BIN" complete --fallback=false --timeout "$LAYA_TIMEOUT" \
    --client "zsh-$$" --app zsh -- "$1" 2>/dev/null) || return 1
  # A newline would run the command; suggestions that need one are not for the shell.
  [[ $out != *$'\n'* && -n ${out//[[:space:]]/} ]] || return 1
  print -rn -- "$out"
}

_laya_show() {
  _laya_shown=$1 _laya_for=$BUFFER
  POSTDISPLAY=$1
  _laya_hl="${#BUFFER} $(( ${#BUFFER} + ${#1} )) $LAYA_STYLE"
  region_highlight+=("$_laya_hl")
}

_laya_clear() {
  if [[ -n $_laya_hl ]]; then
    region_highlight=("${(@)region_highlight:#$_laya_hl}")
  fi
  [[ -n $_laya_shown ]] && POSTDISPLAY=""
  _laya_shown="" _laya_for="" _laya_hl=""
}

_laya_cancel() {
  if [[ -n $_laya_fd ]]; then
    zle -F $_laya_fd 2>/dev/null
    exec {_laya_fd}<&-
    [[ -n $_laya_pid && $_laya_pid != 0 ]] && kill -TERM $_laya_pid 2>/dev/null
  fi
  _laya_fd="" _laya_pid="" _laya_asked=""
}

# Runs when a line is done: no ghost text left in the scrollback, no request left running.
_laya_finish() {
  _laya_clear
  _laya_cancel
}

# _laya_fetch asks for a suggestion for BUFFER in the background; the widget _laya_fetched
# shows it if the line is still the same when it comes.
_laya_fetch() {
  _laya_cancel
  _laya_asked=$BUFFER
  exec {_laya_fd}< <(_laya_query "$BUFFER")
  _laya_pid=${sysparams[procsubstpid]:-}
  zle -F -w $_laya_fd _laya_fetched
}

_laya_fetched() {
  local fd=$1 out="" asked=$_laya_asked
  IFS= read -r -d '' -u $fd out
  zle -F $fd 2>/dev/null
  exec {fd}<&-
  [[ $fd == $_laya_fd ]] && _laya_fd="" _laya_pid="" _laya_asked=""
  if [[ -n $out && $BUFFER == "$asked" && -z $RBUFFER ]]; then
    _laya_clear
    _laya_show "$out"
    zle -R
  fi
}

# Runs before every redraw: an edit makes the suggestion stale and asks for the next one.
_laya_redraw() {
  [[ $BUFFER == "$_laya_for" || $BUFFER == "$_laya_asked" ]] && return 0
  _laya_clear
  _laya_cancel
  if [[ -z ${LAYA_DISABLE:-} && -z $RBUFFER && -n ${BUFFER//[[:space:]]/} && $PENDING == 0 ]]; then
    _laya_fetch
  fi
  return 0
}

# _laya_accept WIDGET ARGS: with a suggestion on display and the cursor at the end of the line,
# take it into the line; else run WIDGET (the one the accepting widget replaced).
_laya_accept() {
  local orig=$1
  shift
  local end=${#BUFFER}
  [[ $KEYMAP == vicmd ]] && (( end > 0 )) && end=$(( end - 1 ))
  if [[ -n $_laya_shown && $BUFFER == "$_laya_for" && $CURSOR == $end ]]; then
    local s=$_laya_shown
    _laya_clear
    BUFFER+=$s
    CURSOR=${#BUFFER}
    return 0
  fi
  zle $orig -- "$@"
}

# _laya_wrap WIDGET makes WIDGET accept the suggestion, keeping what it did before for when
# there is none. Wrapping by name, not by key, is what zsh-autosuggestions does: → and End
# stay whatever widgets the keymap binds them to.
_laya_wrap() {
  local w=$1 orig
  [[ ${widgets[$w]:-} == user:_laya_accept_* ]] && return 0 # sourced twice
  case ${widgets[$w]:-} in
    user:*|completion:*)
      orig=_laya_orig_$w
      zle -A $w $orig ;;
    *) orig=.$w ;;
  esac
  eval "_laya_accept_${w}() { _laya_accept ${(q)orig} \"\$@\" }"
  zle -N $w _laya_accept_$w
}

if [[ -o zle ]]; then
  zmodload zsh/system 2>/dev/null # sysparams, for the process to stop when a fetch is stale
  autoload -Uz add-zle-hook-widget
  zle -N _laya_redraw
  zle -N _laya_finish
  zle -N _laya_fetched
  add-zle-hook-widget line-pre-redraw _laya_redraw
  add-zle-hook-widget line-finish _laya_finish
  () {
    local w
    for w in $LAYA_ACCEPT_WIDGETS; do
      _laya_wrap $w
    done
  }
fi
