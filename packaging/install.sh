#!/usr/bin/env bash
# `make install` / `make uninstall`: puts the plugin, hearctl and the PipeWire drop-ins in place,
# and writes a manifest of exactly what it wrote, which uninstall removes (files, then the folders
# install created, if empty).
#
#   install.sh install      PLUGIN=path/libhear.so [HEARCTL=path/hearctl] [PREFIX=/usr/local]
#   install.sh uninstall    [PREFIX=/usr/local]
#
# Per user (no PREFIX): ~/.local/lib/ladspa/libhear.so, ~/.local/bin/hearctl,
#   ~/.config/pipewire/pipewire.conf.d/hear-*.conf, ~/.local/share/hear/{hear.pa,install-manifest}.
# System-wide (PREFIX=/usr/local): $PREFIX/lib/ladspa, $PREFIX/bin, $SYSCONFDIR/pipewire/pipewire.conf.d
#   (SYSCONFDIR defaults to /etc), $PREFIX/share/hear.
# The drop-ins get the installed plugin's absolute path in place of @HEAR_PLUGIN@, as the tests do.
set -euo pipefail

action=${1:-}
repo=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=${PREFIX:-}
if [ -n "$PREFIX" ]; then
    libdir=$PREFIX/lib/ladspa
    bindir=$PREFIX/bin
    confdir=${SYSCONFDIR:-/etc}/pipewire/pipewire.conf.d
    datadir=$PREFIX/share/hear
else
    : "${HOME:?HOME is not set}"
    libdir=$HOME/.local/lib/ladspa
    bindir=$HOME/.local/bin
    confdir=${XDG_CONFIG_HOME:-$HOME/.config}/pipewire/pipewire.conf.d
    datadir=${XDG_DATA_HOME:-$HOME/.local/share}/hear
fi
manifest=$datadir/install-manifest

uninstall() {
    if [ ! -f "$manifest" ]; then
        echo "hear is not installed here (no $manifest)"
        return 0
    fi
    local entries
    entries=$(cat "$manifest")
    # Files first (the manifest is one of them), then folders deepest first, only if empty:
    # something else may have moved in since.
    grep '^file ' <<<"$entries" | cut -d' ' -f2- | while IFS= read -r path; do
        rm -f -- "$path" && echo "removed $path"
    done
    grep '^dir ' <<<"$entries" | cut -d' ' -f2- | sort -r | while IFS= read -r path; do
        if rmdir -- "$path" 2>/dev/null; then echo "removed $path/"; fi
    done
}

# After an uninstall: PipeWire drops the chains (restart), and what stays is listed.
after_uninstall() {
    if [ -n "$PREFIX" ]; then
        echo "Each user's PipeWire drops the chains at their next login, or now with: systemctl --user restart pipewire"
    else
        restart_pipewire "to drop the chains"
    fi
    # Saved settings and presets are the user's: listed, never removed.
    local state=${XDG_STATE_HOME:-$HOME/.local/state}/hear presets=${XDG_CONFIG_HOME:-$HOME/.config}/hear/presets
    [ -n "$PREFIX" ] && { state='~/.local/state/hear'; presets='~/.config/hear/presets'; }
    kept "saved settings" "$state"
    kept "your presets" "$presets"
}

# kept WHAT DIR: says that DIR stays, with the command that removes it (per user: only if it has files).
kept() {
    if [ -n "$PREFIX" ]; then
        echo "kept: each user's $1 in $2/; they remove them with: rm -r $2"
    elif [ -d "$2" ] && [ -n "$(ls -A -- "$2")" ]; then
        echo "kept $1 in $2/ ($(ls -A -- "$2" | tr '\n' ' ' | sed 's/ $//; s/ /, /g')); remove them with: rm -r $(printf '%q' "$2")"
    fi
    return 0
}

# restart_pipewire WHY: restarts those of pipewire, pipewire-pulse and wireplumber that systemd runs
# for this user, or says what to do.
restart_pipewire() {
    if systemctl --user is-active --quiet pipewire.service 2>/dev/null; then
        local units=()
        for unit in pipewire.service pipewire-pulse.service wireplumber.service; do
            systemctl --user is-active --quiet "$unit" 2>/dev/null && units+=("$unit")
        done
        systemctl --user restart "${units[@]}"
        echo "restarted PipeWire $1: systemctl --user restart ${units[*]}"
    else
        echo "PipeWire does not run under systemd here: restart it (or log out and in) $1."
    fi
}
install_() {
    : "${PLUGIN:?PLUGIN must name the built libhear.so}"
    [ -f "$PLUGIN" ] || { echo "error: $PLUGIN is not built; run make first" >&2; exit 1; }
    # A second install replaces the first, so the manifest stays exact.
    [ -f "$manifest" ] && uninstall >/dev/null
    written=()
    created=()
    make_dir() {
        local missing=() dir=$1
        while [ ! -d "$dir" ]; do missing+=("$dir"); dir=$(dirname "$dir"); done
        mkdir -p -- "$1"
        created+=("${missing[@]}")
    }
    put() {  # put SOURCE DEST MODE [substitute]
        make_dir "$(dirname "$2")"
        if [ "${4:-}" = substitute ]; then
            sed "/^[[:space:]]*#/!s|@HEAR_PLUGIN@|$libdir/libhear.so|g" "$1" > "$2.tmp.$$"
            chmod "$3" "$2.tmp.$$"
            mv -f -- "$2.tmp.$$" "$2"
        else
            install -m "$3" -- "$1" "$2"
        fi
        written+=("$2")
        echo "installed $2"
    }
    put "$PLUGIN" "$libdir/libhear.so" 0644
    if [ -n "${HEARCTL:-}" ] && [ -x "$HEARCTL" ]; then
        put "$HEARCTL" "$bindir/hearctl" 0755
    fi
    for conf in hear-microphone.conf hear-speaker.conf; do
        put "$repo/conf.d/pipewire/$conf" "$confdir/$conf" 0644 substitute
    done
    put "$repo/conf.d/pulseaudio/hear.pa" "$datadir/hear.pa" 0644 substitute
    # The templates `hearctl enable` fills in (it looks in <prefix>/share/hear/pipewire/).
    for conf in hear-microphone.conf hear-speaker.conf; do
        put "$repo/conf.d/pipewire/$conf" "$datadir/pipewire/$conf" 0644
    done
    {
        for path in "${written[@]}"; do echo "file $path"; done
        echo "file $manifest"
        for path in "${created[@]}"; do echo "dir $path"; done
    } > "$manifest"
    echo "installed $manifest (what \`make uninstall\` removes)"

    # Let PipeWire load the drop-ins.
    if [ -n "$PREFIX" ]; then
        echo "Each user picks the chains up at their next login, or now with: systemctl --user restart pipewire"
    else
        restart_pipewire "to load the drop-ins"
        echo "Pick \"Hear: enhanced microphone\" in your call app."
        echo "PulseAudio instead? Add '.include $datadir/hear.pa' to ~/.config/pulse/default.pa (after '.include /etc/pulse/default.pa'), then 'pulseaudio -k'."
    fi
}

case $action in
    install) install_ ;;
    uninstall) if [ -f "$manifest" ]; then uninstall; after_uninstall; else uninstall; fi ;;
    *) echo "usage: $0 install|uninstall" >&2; exit 2 ;;
esac
