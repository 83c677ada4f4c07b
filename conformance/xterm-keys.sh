#!/usr/bin/env bash
# What xterm sends a raw-mode program for each chord: the evidence behind the legacy key
# encoding (spec/input.md INPUT.ENCODE.KEY) and conformance/keydiff-decided.toml.
#
#   conformance/xterm-keys.sh                      # the default chords
#   conformance/xterm-keys.sh ctrl+minus alt+eacute
#   MODES='\033[?67h' conformance/xterm-keys.sh BackSpace shift+BackSpace
#
# Chords are xdotool key names (keysyms with modifiers). MODES is printf text the program writes
# before it reads (mode sequences: \033= for DECKPAM, \033[>4;2m for modifyOtherKeys 2, ...).
# Needs xterm, Xvfb and xdotool (apt-get install xterm xvfb xdotool); says so and exits 0
# without them. xterm runs with metaSendsEscape on, a UTF-8 locale and Xvfb's US keymap.
set -uo pipefail

for tool in xterm Xvfb xdotool; do
    if ! command -v "$tool" >/dev/null; then
        echo "xterm-keys: $tool is not installed; skipping" >&2
        exit 0
    fi
done

if [ $# -eq 0 ]; then
    set -- ctrl+minus ctrl+slash ctrl+question ctrl+grave ctrl+braceleft ctrl+1 ctrl+equal \
        ctrl+shift+p ctrl+shift+1 ctrl+shift+2 ctrl+alt+space alt+shift+a alt+colon alt+eacute \
        ctrl+eacute alt+Cyrillic_ef ctrl+Cyrillic_es shift+Return ctrl+Return ctrl+Tab alt+Tab \
        alt+shift+Tab ctrl+BackSpace alt+BackSpace ctrl+Escape shift+F3 ctrl+F5 F13 F16 F21 F25 \
        Menu shift+Menu KP_1 ctrl+KP_Divide ctrl+KP_8
fi

scratch=$(mktemp -d)
xvfb_pid="" xterm_pid=""
cleanup() {
    [ -n "$xterm_pid" ] && kill "$xterm_pid" 2>/dev/null
    [ -n "$xvfb_pid" ] && kill "$xvfb_pid" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$scratch"
}
trap cleanup EXIT

# A display nobody uses: Xvfb writes the number it took to the descriptor it is given.
exec 3>"$scratch/display"
Xvfb -displayfd 3 -screen 0 1024x768x24 >/dev/null 2>&1 &
xvfb_pid=$!
for _ in $(seq 100); do [ -s "$scratch/display" ] && break; sleep 0.1; done
export DISPLAY=":$(head -1 "$scratch/display")"

out=$scratch/read
: >"$out"
# The program: set the modes, go raw, and keep every byte it reads.
LANG=C.UTF-8 xterm -u8 -xrm 'XTerm*metaSendsEscape: true' \
    -e sh -c "printf '${MODES:-}'; stty raw -echo; exec cat > '$out'" 2>/dev/null &
xterm_pid=$!
window=""
for _ in $(seq 100); do
    window=$(xdotool search --pid "$xterm_pid" 2>/dev/null | head -1)
    [ -n "$window" ] && break
    sleep 0.1
done
if [ -z "$window" ]; then
    echo "xterm-keys: xterm never mapped a window" >&2
    exit 1
fi
xdotool windowfocus "$window" 2>/dev/null
sleep 0.5

echo "# xterm $(xterm -version 2>/dev/null | head -1), modes: '${MODES:-}'"
for chord in "$@"; do
    for attempt in 1 2; do
        before=$(stat -c %s "$out")
        # Typed through the X server (XTEST), as a keyboard would: xterm ignores synthetic
        # events. A keysym missing from the keymap is bound to a spare keycode first, and
        # xterm may miss the key that follows the remapping: nothing read is tried once more.
        xdotool key "$chord" 2>/dev/null
        sleep 0.3
        read=$(tail -c +$((before + 1)) "$out" | od -An -tx1 | tr -s ' \n' ' ')
        [ -n "${read// /}" ] && break
    done
    printf '%-24s %s\n' "$chord" "$read"
done
