#!/usr/bin/env bash
# `make deb`: builds hear_<version>_<arch>.deb from what `make` and `make man` built.
#
#   deb.sh PLUGIN=... HEARCTL=... MANPAGE=... [OUT=dir]      (environment variables)
#
# The version is the first entry of packaging/debian/changelog. What the package holds:
#   /usr/lib/ladspa/libhear.so                      the plugin
#   /usr/bin/hearctl                                the CLI (stripped)
#   /usr/share/man/man1/hearctl.1.gz                swift-argument-parser's generate-manual, from the same
#                                                   source as `hearctl --help`
#   /usr/share/bash-completion/completions/hearctl  hearctl --generate-completion-script bash
#   /usr/share/zsh/vendor-completions/_hearctl      ... zsh
#   /usr/share/fish/vendor_completions.d/hearctl.fish ... fish
#   /usr/share/hear/pipewire/hear-*.conf            the drop-in templates `hearctl enable` fills in
#   /usr/share/doc/hear/examples/                   the drop-ins and hear.pa, ready to copy
#   /usr/share/doc/hear/{copyright,changelog.Debian.gz}
#   /usr/share/lintian/overrides/hear               documented in packaging/debian/lintian-overrides
# Depends comes from dpkg-shlibdeps. No maintainer scripts: a user turns a chain on with
# `hearctl enable mic|speaker`, which writes the drop-in in their own ~/.config.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
debian=$repo/packaging/debian
: "${PLUGIN:?PLUGIN must name the built libhear.so}" "${HEARCTL:?HEARCTL must name the built hearctl}"
: "${MANPAGE:?MANPAGE must name hearctl.1 (make man)}"
OUT=${OUT:-$repo}
for file in "$PLUGIN" "$HEARCTL" "$MANPAGE"; do
    [ -f "$file" ] || { echo "error: $file is missing: run \`make deb\` (it builds it)" >&2; exit 1; }
done

version=$(sed -n '1s/^hear (\([^)]*\)).*/\1/p' "$debian/changelog")
[ -n "$version" ] || { echo "error: no version on the first line of $debian/changelog" >&2; exit 1; }
arch=$(dpkg --print-architecture)
work=$(mktemp -d "${TMPDIR:-/tmp}/hear-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/hear
umask 022

install -D -m 0644 "$PLUGIN" "$root/usr/lib/ladspa/libhear.so"
install -D -m 0755 "$HEARCTL" "$root/usr/bin/hearctl"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/bin/hearctl"
strip --strip-unneeded --remove-section=.comment "$root/usr/lib/ladspa/libhear.so"

# The man page: generate-manual's, with the exit status table as EXIT STATUS (manpage.sh).
mkdir -p "$root/usr/share/man/man1"
"$(dirname "$0")/manpage.sh" "$MANPAGE" "$HEARCTL" | gzip -9n > "$root/usr/share/man/man1/hearctl.1.gz"

mkdir -p "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
    "$root/usr/share/fish/vendor_completions.d"
# (bash completions are sourced, not run: no #! line)
"$HEARCTL" --generate-completion-script bash | sed '1{/^#!/d}' > "$root/usr/share/bash-completion/completions/hearctl"
"$HEARCTL" --generate-completion-script zsh > "$root/usr/share/zsh/vendor-completions/_hearctl"
"$HEARCTL" --generate-completion-script fish > "$root/usr/share/fish/vendor_completions.d/hearctl.fish"
chmod 0644 "$root"/usr/share/bash-completion/completions/* "$root"/usr/share/zsh/vendor-completions/* \
    "$root"/usr/share/fish/vendor_completions.d/*

plugin=/usr/lib/ladspa/libhear.so
doc=$root/usr/share/doc/hear
mkdir -p "$root/usr/share/hear/pipewire" "$doc/examples"
for conf in hear-microphone.conf hear-speaker.conf; do
    install -m 0644 "$repo/conf.d/pipewire/$conf" "$root/usr/share/hear/pipewire/$conf"
    sed "/^[[:space:]]*#/!s|@HEAR_PLUGIN@|$plugin|g" "$repo/conf.d/pipewire/$conf" > "$doc/examples/$conf"
done
sed "/^[[:space:]]*#/!s|@HEAR_PLUGIN@|$plugin|g" "$repo/conf.d/pulseaudio/hear.pa" > "$doc/examples/hear.pa"
install -m 0644 "$debian/copyright" "$doc/copyright"
gzip -9nc "$debian/changelog" > "$doc/changelog.Debian.gz"
# Only the override lines (the file's comments say why each is there).
overrides=$(grep -v '^[[:space:]]*\(#\|$\)' "$debian/lintian-overrides" || true)
if [ -n "$overrides" ]; then
    mkdir -p "$root/usr/share/lintian/overrides"
    printf '%s\n' "$overrides" > "$root/usr/share/lintian/overrides/hear"
fi
find "$root/usr" -type f -exec chmod go-w {} + -o -type d -exec chmod 0755 {} +

# Depends: the shared libraries the two binaries link, as Debian's shlibs files name them.
mkdir -p "$work/shlibs/debian"
printf 'Source: hear\n\nPackage: hear\nArchitecture: any\n' > "$work/shlibs/debian/control"
depends=$(cd "$work/shlibs" && dpkg-shlibdeps -O -e"$root/usr/bin/hearctl" -e"$root/usr/lib/ladspa/libhear.so" 2>/dev/null \
    | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "error: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

mkdir -p "$root/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@SIZE@|$size|" -e "s|@DEPENDS@|$depends|" \
    "$debian/control.in" > "$root/DEBIAN/control"
(cd "$root" && find usr -type f -print0 | sort -z | xargs -0 md5sum) > "$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"

mkdir -p "$OUT"
deb=$OUT/hear_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "built $deb"
