#!/usr/bin/env bash
# `make demo`: the microphone chain in a private, headless PipeWire, on any machine.
#
# Starts a session bus, pipewire (scripts/pipewire-session.conf) and wireplumber under a
# temporary XDG_RUNTIME_DIR / XDG_CONFIG_HOME, with conf.d/pipewire/hear-*.conf as drop-ins
# pointing at the built plugin; makes a noisy speech sample (espeak-ng + sox); plays it into the
# stand-in microphone and records "Hear: enhanced microphone"; prints levels and noise figures;
# leaves before.wav (what went in) and after.wav (what a call app would get) in the current
# folder. Every process it starts is stopped by pid when it exits, however it exits.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
plugin=${HEAR_PLUGIN:-$repo/.build/release/libhear.so}
out=$(pwd)
[ -f "$plugin" ] || { echo "error: $plugin is not built; run make" >&2; exit 1; }
for tool in dbus-daemon pipewire wireplumber pw-play pw-record pw-link sox espeak-ng python3; do
    command -v "$tool" >/dev/null || { echo "error: $tool is missing; run make deps" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/hear-demo.XXXXXX")
pids=()
cleanup() {
    local status=$?
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
        kill -9 "$pid" 2>/dev/null || true
    done
    # Kept when something failed: its logs say why.
    if [ "$status" = 0 ]; then rm -rf "$work"; else echo "logs: $work" >&2; fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Nothing of a desktop session leaks in, and nothing leaks out to it.
unset DBUS_SESSION_BUS_ADDRESS PIPEWIRE_REMOTE PIPEWIRE_RUNTIME_DIR PIPEWIRE_CONFIG_DIR PULSE_SERVER
export XDG_RUNTIME_DIR=$work/run XDG_CONFIG_HOME=$work/config XDG_STATE_HOME=$work/state
mkdir -p -m 700 "$XDG_RUNTIME_DIR"
mkdir -p "$XDG_CONFIG_HOME/pipewire/pipewire.conf.d" "$XDG_STATE_HOME"
cp "$repo/scripts/pipewire-session.conf" "$XDG_CONFIG_HOME/pipewire/pipewire.conf"
mkdir -p "$XDG_CONFIG_HOME/wireplumber/bluetooth.lua.d"
cp "$repo/scripts/wireplumber-session.lua" "$XDG_CONFIG_HOME/wireplumber/bluetooth.lua.d/80-hear-session.lua"
for conf in hear-microphone.conf hear-speaker.conf; do
    sed "/^[[:space:]]*#/!s|@HEAR_PLUGIN@|$plugin|g" "$repo/conf.d/pipewire/$conf" > "$XDG_CONFIG_HOME/pipewire/pipewire.conf.d/$conf"
done

wait_for() {  # wait_for WHAT COMMAND...: polls for up to 30 s
    local what=$1; shift
    for _ in $(seq 600); do "$@" >/dev/null 2>&1 && return 0; sleep 0.05; done
    echo "error: timed out waiting for $what" >&2
    exit 1
}

echo "== starting a private PipeWire in $work"
export DBUS_SESSION_BUS_ADDRESS=unix:path=$XDG_RUNTIME_DIR/bus
dbus-daemon --session --nofork --address="$DBUS_SESSION_BUS_ADDRESS" >"$work/dbus.log" 2>&1 & pids+=($!)
wait_for "the session bus" test -S "$XDG_RUNTIME_DIR/bus"
pipewire >"$work/pipewire.log" 2>&1 & pids+=($!)
wait_for "pipewire" test -S "$XDG_RUNTIME_DIR/pipewire-0"
wireplumber >"$work/wireplumber.log" 2>&1 & pids+=($!)
linked() { pw-link -l | grep -q '|-> capture.hear_microphone:'; }
wait_for "wireplumber to link the chains" linked
echo "   nodes: $(pw-cli ls Node | sed -n 's/.*node.description = "\(Hear:[^"]*\)".*/\1/p' | sort -u | paste -sd, -)"

echo "== making a noisy speech sample (espeak-ng + sox)"
espeak-ng -v en-us -s 150 -w "$work/speech.wav" \
    "Hello, can you hear me? This is a test of the hear speech filter. The fan behind me is quite loud today, but my voice should come through clearly." 2>/dev/null
# A microphone's level (peaks at -12 dBFS), four and a half seconds of noise alone (the noise
# suppressor learns a new noise floor within about four), then speech over it: fan hiss (pink
# noise) and rumble (brown noise).
sox "$work/speech.wav" -r 48000 -c 1 -b 32 -e floating-point "$work/clean.wav" norm -12 pad 4.5 0.5
length=$(soxi -D "$work/clean.wav")
sox -R -n -r 48000 -c 1 -b 32 -e floating-point "$work/hiss.wav" synth "$length" pinknoise vol 0.04
sox -R -n -r 48000 -c 1 -b 32 -e floating-point "$work/rumble.wav" synth "$length" brownnoise vol 0.02
sox -m -v 1 "$work/clean.wav" -v 1 "$work/hiss.wav" -v 1 "$work/rumble.wav" -b 32 -e floating-point "$out/before.wav"

echo "== playing it into the microphone, recording \"Hear: enhanced microphone\""
pw-record --target hear_microphone -P '{ node.name = hear_demo_recorder }' --format f32 --rate 48000 --channels 1 \
    "$work/recorded.wav" 2>"$work/record.log" & recorder=$!; pids+=($recorder)
recording() { pw-link -l | grep -q '^hear_demo_recorder:'; }
wait_for "the recorder" recording
pw-play --target hear_test_mic_input "$out/before.wav"
size=$(stat -c %s "$work/recorded.wav"); grown() { [ "$(stat -c %s "$work/recorded.wav")" -ge $((size + 96000)) ]; }
wait_for "the end of the recording" grown
kill -INT "$recorder"; wait "$recorder" 2>/dev/null || true

python3 "$repo/scripts/levels.py" "$out/before.wav" "$work/recorded.wav" "$out/after.wav" 4.5
echo "Listen: before.wav (what the microphone heard), after.wav (what the call gets)."
