#!/usr/bin/env bash
# The interop matrix: the conformance suite against our server (three transports, both
# profiles) and against a peer phux server (its socket and its stdio bridge, profile phux,
# with its expectations file); phuxctl driving the peer; the peer's CLI driving ours. Writes
# conformance/INTEROP.md (generated; do not edit by hand).
#
#   PHUX_REF_BIN=/path/to/phux conformance/interop.sh
#
# Needs only the peer binary's path; without PHUX_REF_BIN it says so and exits 0. The peer
# runs with HOME and XDG directories of its own, in a scratch directory removed at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

if [ -z "${PHUX_REF_BIN:-}" ]; then
    echo "interop: PHUX_REF_BIN is not set; skipping the interop matrix"
    exit 0
fi
if [ ! -x "$PHUX_REF_BIN" ]; then
    echo "interop: PHUX_REF_BIN=$PHUX_REF_BIN is not an executable" >&2
    exit 2
fi

cargo build --quiet -p phux-conformance -p phux-mio-server -p phux-ctl || exit 2
bin=$root/target/debug
conf=$bin/phux-conformance
peer_file=$root/conformance/peers/phux-0.22.0.toml

scratch=$(mktemp -d)
ref_pid=""
ours_pid=""
cleanup() {
    [ -n "$ref_pid" ] && kill "$ref_pid" 2>/dev/null
    [ -n "$ours_pid" ] && kill "$ours_pid" 2>/dev/null
    wait 2>/dev/null
    rm -rf "$scratch"
}
trap cleanup EXIT

# The peer's own home: never the caller's.
peer_vars=(HOME="$scratch/ref" XDG_RUNTIME_DIR="$scratch/ref/run" XDG_CONFIG_HOME="$scratch/ref/config"
    XDG_STATE_HOME="$scratch/ref/state" XDG_DATA_HOME="$scratch/ref/data"
    XDG_CACHE_HOME="$scratch/ref/cache" SHELL=/bin/sh)
mkdir -p -m 700 "$scratch/ref/run" "$scratch/ours/run" "$scratch/ours/state"
ref_sock=$scratch/ref/run/ref.sock
ours_sock=$scratch/ours/run/ours.sock

# `env` execs the peer, so $! is the peer's own pid.
env "${peer_vars[@]}" "$PHUX_REF_BIN" server --socket "$ref_sock" >"$scratch/ref-server.log" 2>&1 &
ref_pid=$!
"$bin/phux-mio-server" --socket "$ours_sock" --log-level error >"$scratch/ours-server.log" 2>&1 &
ours_pid=$!
for _ in $(seq 100); do
    [ -S "$ref_sock" ] && [ -S "$ours_sock" ] && break
    sleep 0.1
done
ref_exe_before=$(readlink "/proc/$ref_pid/exe")
peer_version=$("$PHUX_REF_BIN" --version 2>/dev/null | head -1)

rows=()
failed=0
# suite NAME ARGS...: one suite run; its summary line becomes a row.
suite() {
    local name=$1
    shift
    local out=$scratch/$(echo "$name" | tr -c 'a-z0-9' '-').txt
    "$conf" run "$@" >"$out" 2>&1
    local status=$?
    local summary
    summary=$(grep -E '^[0-9]+ cases:' "$out" | tail -1)
    [ -z "$summary" ] && summary="$(tail -1 "$out")"
    local verdict=pass
    if [ $status -ne 0 ]; then verdict=FAIL; failed=1; cp "$out" "$root/target/interop-$(basename "$out")"; fi
    rows+=("| suite | $name | $verdict | $summary |")
    echo "interop: $name: $verdict: $summary"
}
# check NAME COMMAND...: one CLI step; passes when the command exits 0.
check() {
    local name=$1
    shift
    local out=$scratch/check.txt
    if "$@" >"$out" 2>&1; then
        rows+=("| cli | $name | pass | $(head -c 120 "$out" | tr '\n|' ' /') |")
        echo "interop: $name: pass"
    else
        rows+=("| cli | $name | FAIL | $(head -c 200 "$out" | tr '\n|' ' /') |")
        echo "interop: $name: FAIL"; cat "$out"
        failed=1
    fi
}

# Our server: both profiles on all three transports.
for profile in phux phux-rs; do
    suite "ours in-process, $profile" --in-process --profile $profile
    suite "ours socket, $profile" --socket "$ours_sock" --profile $profile
    suite "ours exec, $profile" --exec "'$bin/phux-mio-server' --stdio --log-level error" --profile $profile
done
# The peer: its socket and its stdio bridge, profile phux, its known deviations.
suite "peer socket, phux" --socket "$ref_sock" --expectations "$peer_file"
suite "peer stdio-bridge, phux" --exec "$(printf '%q' "$PHUX_REF_BIN") stdio-bridge --socket $ref_sock" \
    --exec-shared --expectations "$peer_file"

# phuxctl driving the peer (its outbox journal in our scratch state directory).
ctl() { env XDG_STATE_HOME="$scratch/ours/state" "$bin/phuxctl" --socket "$ref_sock" "$@"; }
t=$(ctl spawn -- /bin/cat 2>/dev/null | head -1)
listed() { ctl list | grep "$t"; }
pasted() { printf 'pasted-text' | ctl paste "$t"; }
on_screen() {
    for _ in $(seq 50); do
        ctl screen "$t" | grep -q "$1" && { echo "screen shows $1"; return 0; }
        sleep 0.1
    done
    ctl screen "$t"
    return 1
}
# watch and events stream until the connection ends: a few lines within a timeout will do.
streams() {
    timeout 2 env XDG_STATE_HOME="$scratch/ours/state" "$bin/phuxctl" --socket "$ref_sock" "$@" \
        | head -c 300
    local status=${PIPESTATUS[0]}
    [ "$status" -eq 124 ] || [ "$status" -eq 0 ]
}
leased() { ctl lease acquire "$t" && ctl lease release "$t"; }
check "phuxctl spawn (peer)" echo "$t"
check "phuxctl list (peer)" listed
check "phuxctl send (peer)" ctl send "$t" "hello-peer"
check "phuxctl paste (peer)" pasted
check "phuxctl screen (peer)" on_screen hello-peer
check "phuxctl watch (peer)" streams watch "$t"
check "phuxctl events (peer)" streams events
check "phuxctl lease (peer)" leased
check "phuxctl signal (peer)" ctl signal interrupt "$t"
check "phuxctl kill (peer)" ctl kill "$t"

# The peer's CLI driving our server.
ref() { env "${peer_vars[@]}" "$PHUX_REF_BIN" --socket "$ours_sock" "$@"; }
pane=$(ref spawn -- /bin/cat 2>&1 | grep -oE '@[0-9]+' | head -1)
snapshot_shows() {
    for _ in $(seq 50); do
        ref snapshot "$pane" | grep -q "$1" && { echo "snapshot shows $1"; return 0; }
        sleep 0.1
    done
    ref snapshot "$pane"
    return 1
}
check "phux spawn (ours)" echo "$pane"
check "phux send-keys (ours)" ref send-keys "$pane" "echo hi-ours" Enter
check "phux snapshot (ours)" snapshot_shows hi-ours
check "phux kill (ours)" ref kill "$pane"

# A session of the peer's CLI against our server, recorded and replayed as a transcript.
replay_recorded() {
    local rec=$scratch/rec
    mkdir -p "$rec/recorded"
    "$conf" record --socket "$ours_sock" --out "$rec/draft.phuxt" --listen "$rec/rec.sock" 2>/dev/null &
    local recorder=$!
    for _ in $(seq 100); do [ -S "$rec/rec.sock" ] && break; sleep 0.1; done
    env "${peer_vars[@]}" "$PHUX_REF_BIN" --socket "$rec/rec.sock" spawn -- /bin/cat >/dev/null || return 1
    wait "$recorder" || return 1
    cp "$root/conformance/transcripts/prelude.phuxt" "$rec/"
    sed -e 's|^id: draft/001|id: recorded/001|' \
        -e 's|^clauses: TODO|clauses: HELLO.OK.1 SPAWN.REPLY.1|' \
        -e 's|^description: TODO|description: the peer CLI spawning a terminal, replayed|' \
        -e 's|^requirement: TODO|requirement: the session the peer CLI had replays unchanged|' \
        "$rec/draft.phuxt" >"$rec/recorded/001-peer-cli-spawn.phuxt"
    local out
    out=$("$conf" run --socket "$ours_sock" --transcripts "$rec" --profile phux) || { echo "$out"; return 1; }
    echo "$out" | grep -E '^[0-9]+ cases:'
    echo "$out" | grep -qE '^1 cases: 1 PASS$'
    # The terminal the replay spawned is killed by the runner; the recorded one is ours to end.
}
check "peer CLI session recorded against ours, replayed" replay_recorded

# The peer must be the same process image after all of it.
ref_exe_after=$(readlink "/proc/$ref_pid/exe" 2>/dev/null || echo gone)
if [ "$ref_exe_before" = "$ref_exe_after" ] && kill -0 "$ref_pid" 2>/dev/null; then
    rows+=("| peer | same process image (pid $ref_pid) before and after | pass | $(basename "$ref_exe_after") |")
else
    rows+=("| peer | same process image before and after | FAIL | $ref_exe_before → $ref_exe_after |")
    failed=1
fi

{
    echo "# Interop matrix"
    echo
    echo "Generated by \`conformance/interop.sh\` (do not edit by hand) on $(date -u +%Y-%m-%dT%H:%M:%SZ),"
    echo "phux-rs $(git rev-parse --short HEAD 2>/dev/null), peer: ${peer_version:-unknown}."
    echo "The peer's known deviations: [peers/phux-0.22.0.md](peers/phux-0.22.0.md)."
    echo
    echo "| Kind | What | Verdict | Detail |"
    echo "|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
} >"$root/conformance/INTEROP.md"
echo "interop: wrote conformance/INTEROP.md"
exit $failed
