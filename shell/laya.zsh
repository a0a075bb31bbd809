# Laya for zsh: Tab asks the warm Laya engine (the app, or `laya serve`) how the command line
# goes on and shows the answer as dim ghost text; Tab again accepts it. When Laya has nothing
# within the time budget (no server running, model unsure, cursor not at the end of the line),
# Tab does what it did before.
#
# Use: source /path/to/laya.zsh in ~/.zshrc, after compinit and any other Tab binding.
# Settings (set before sourcing or any time later):
#   LAYA_BIN      the laya command (default: laya)
#   LAYA_TIMEOUT  budget for one suggestion (default: 100ms)
#   LAYA_STYLE    highlight of the ghost text (default: fg=8)

: ${LAYA_BIN:=laya}
: ${LAYA_TIMEOUT:=100ms}
: ${LAYA_STYLE:=fg=8}

typeset -g _laya_shown=""    # the suggestion on display
typeset -g _laya_for=""      # the command line it was made for
typeset -g _laya_hl=""       # our region_highlight entry
typeset -g _laya_fallback    # the widget Tab ran before

# _laya_query PREFIX SUFFIX sets REPLY to a one-line suggestion, or fails. Only a running
# server is asked (loading a model takes far longer than the budget), under the budget.
_laya_query() {
  REPLY=""
  local out
  out=$(command "$LAYA_BIN" complete --fallback=false --timeout "$LAYA_TIMEOUT" \
    --client "zsh-$$" --app zsh --suffix "$2" -- "$1" 2>/dev/null) || return 1
  # A newline would run the command; suggestions that need one are not for the shell.
  [[ $out != *$'\n'* && -n ${out//[[:space:]]/} ]] || return 1
  REPLY=$out
}

_laya_clear() {
  if [[ -n $_laya_hl ]]; then
    region_highlight=("${(@)region_highlight:#$_laya_hl}")
  fi
  [[ -n $_laya_shown ]] && POSTDISPLAY=""
  _laya_shown="" _laya_for="" _laya_hl=""
}

# The Tab widget: accept the suggestion on display, else ask for one, else fall back.
_laya_complete() {
  if [[ -n $_laya_shown && $BUFFER == "$_laya_for" ]]; then
    LBUFFER+=$_laya_shown
    _laya_clear
    return 0
  fi
  _laya_clear
  if [[ -z $RBUFFER && -n ${LBUFFER//[[:space:]]/} ]] && _laya_query "$LBUFFER" "$RBUFFER"; then
    _laya_shown=$REPLY _laya_for=$BUFFER
    POSTDISPLAY=$REPLY
    _laya_hl="${#BUFFER} $(( ${#BUFFER} + ${#REPLY} )) $LAYA_STYLE"
    region_highlight+=("$_laya_hl")
    return 0
  fi
  zle "${_laya_fallback:-expand-or-complete}"
}

# Any edit makes a shown suggestion stale.
_laya_redraw() {
  [[ -n $_laya_shown && $BUFFER != "$_laya_for" ]] && _laya_clear
  return 0
}

if [[ -o interactive ]]; then
  if [[ -z $_laya_fallback ]]; then
    _laya_fallback=${${(z)"$(bindkey '^I')"}[2]}
    [[ -z $_laya_fallback || $_laya_fallback == laya-complete ]] && _laya_fallback=expand-or-complete
  fi
  zle -N laya-complete _laya_complete
  zle -N _laya_redraw
  zle -N _laya_clear
  autoload -Uz add-zle-hook-widget
  add-zle-hook-widget line-pre-redraw _laya_redraw
  add-zle-hook-widget line-finish _laya_clear
  bindkey '^I' laya-complete
fi
