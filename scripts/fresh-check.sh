#!/usr/bin/env bash
# `make fresh-check`: README's two commands, `make demo` then `make test`, as the first commands on
# a fresh Debian 12. Needs root (debootstrap, mount, chroot); slow (a new root, its packages, a
# full build and the whole test suite).
#
# Debootstraps bookworm (minbase, plus make and git, which README says a new user adds) into
# .build/fresh-check/root, copies the source tree in (without .build and .git) to /src, and binds
# the Swift toolchain read-only at /opt/swift, where the Makefile finds it (it is not on PATH).
# All mounts live in a private mount namespace, so they vanish with it however this script ends.
# In the root: /proc, /sys, /dev (with /dev/pts and /dev/shm), a tmpfs /tmp, the host's
# resolv.conf and hosts (for apt and git), and nothing of a booted systemd (no /run/systemd: the
# private sessions' WirePlumber needs no logind). Then, with /opt/swift gone, the built hearctl
# must still run.
#
#   FRESH_CHECK_MIRROR   the Debian mirror (default http://deb.debian.org/debian)
#   FRESH_CHECK_GOALS    the make goals run in order (default "demo test")
#   SWIFT_TOOLCHAIN      the toolchain to bind at /opt/swift (default /opt/swift)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=$repo/.build/fresh-check
root=$work/root
mirror=${FRESH_CHECK_MIRROR:-http://deb.debian.org/debian}
goals=${FRESH_CHECK_GOALS:-demo test}
toolchain=${SWIFT_TOOLCHAIN:-/opt/swift}

[ "$(id -u)" = 0 ] || { echo "error: fresh-check needs root (debootstrap, mount, chroot); try sudo make fresh-check" >&2; exit 1; }
[ -x "$toolchain/usr/bin/swift" ] || { echo "error: no Swift toolchain at $toolchain (set SWIFT_TOOLCHAIN)" >&2; exit 1; }

# Stops what the check left running in its root, by pid (a process whose root is this root).
stop_leftovers() {
    local pid pids=()
    for pid in /proc/[0-9]*; do
        pid=${pid#/proc/}
        [ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$root" ] && pids+=("$pid")
    done
    [ ${#pids[@]} -eq 0 ] && return 0
    echo "== stopping what is still running in the root: ${pids[*]}"
    kill "${pids[@]}" 2>/dev/null || true
    sleep 2
    kill -9 "${pids[@]}" 2>/dev/null || true
}

if [ "${1:-}" != --inside ]; then
    # A new root each time; refuse to delete one that still has something mounted in it.
    stop_leftovers
    if [ -e "$root" ]; then
        if findmnt -rn -o TARGET | grep -q "^$root/"; then
            echo "error: something is still mounted under $root; unmount it first" >&2; exit 1
        fi
        rm -rf --one-file-system "$root"
    fi
    mkdir -p "$root" "$work/debs"
    echo "== debootstrap bookworm (minbase + make) into $root"
    started=$SECONDS
    debootstrap --variant=minbase --include=make,git --cache-dir="$work/debs" bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 \
        || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
    echo "   $((SECONDS - started)) s (log: $work/debootstrap.log)"
    echo "== copying the source to $root/src"
    mkdir -p "$root/src"
    tar -C "$repo" --exclude=./.build --exclude=./.git --exclude='./.build-*' --exclude=./.swiftpm -cf - . | tar -C "$root/src" -xf -
    # Names resolve as on the host.
    cp /etc/resolv.conf /etc/hosts "$root/etc/"
    # A chroot convention, not part of the machine under test: packages start no system services.
    printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"; chmod +x "$root/usr/sbin/policy-rc.d"
    status=0
    unshare --mount --propagation private "$repo/scripts/fresh-check.sh" --inside || status=$?
    stop_leftovers
    exit "$status"
fi

# Inside the private mount namespace.
mount -t proc proc "$root/proc"
mount -t sysfs -o ro sysfs "$root/sys"
mount --rbind /dev "$root/dev"
mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
mkdir -p "$root/opt/swift"
mount --bind "$toolchain" "$root/opt/swift"
mount -o remount,bind,ro "$root/opt/swift"
# A host without internet access reaches GitHub through local mirrors (git's url.<folder>.insteadOf
# in /etc/gitconfig): the root gets the same rewrites, and those folders read-only. Nothing else of
# the host's git configuration goes in.
{ git config --system --get-regexp '^url\..*\.insteadof$' 2>/dev/null || true; } | while read -r key value; do
    base=${key#url.}; base=${base%.insteadof}
    case $base in /*) [ -d "$base" ] || continue ;; *) continue ;; esac
    if [ ! -d "$root$base" ]; then
        echo "== binding the host's git mirror $base (for $value)"
        mkdir -p "$root$base"
        mount --bind "$base" "$root$base"
        mount -o remount,bind,ro "$root$base"
    fi
    git config --file "$root/etc/gitconfig" --add "url.$base.insteadOf" "$value"
done

# A login's environment on a new machine: no Swift on PATH, no Debian packages but minbase's.
in_root() {
    chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" CI="${CI:-}" \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}
for goal in $goals; do
    echo "== in the new root: make $goal"
    started=$SECONDS
    in_root sh -c "cd /src && make $goal" || { echo "== make $goal failed in the fresh root ($((SECONDS - started)) s)" >&2; exit 1; }
    echo "== make $goal passed in the fresh root ($((SECONDS - started)) s)"
done

echo "== without /opt/swift: hearctl runs, and ldd finds only system libraries"
stop_leftovers
umount "$root/opt/swift"
[ ! -e "$root/opt/swift/usr" ] || { echo "error: /opt/swift is still there" >&2; exit 1; }
in_root sh -c 'cd /src && ldd .build/release/hearctl .build/release/libhear.so && ./.build/release/hearctl --version' \
    || { echo "error: hearctl or libhear.so needs the toolchain" >&2; exit 1; }
if in_root sh -c 'cd /src && ldd .build/release/hearctl .build/release/libhear.so' | grep -e 'not found' -e libswift -e libFoundation; then
    echo "error: a binary still needs a toolchain library" >&2; exit 1
fi
echo "== fresh-check passed: make $(echo $goals | sed 's/ / and make /g') as the first commands on a fresh Debian 12"
