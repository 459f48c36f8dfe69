#!/usr/bin/env bash
# The man page as packaged: generate-manual's hearctl.1 with
#   - EXIT STATUS as a tagged list of `hearctl --help`'s table (ExitStatus.table, the one source),
#     instead of generate-manual's generic `.Ex -std`; wrapped lines keep their indent;
#   - that table left out of DESCRIPTION (troff would fill its lines together there);
#   - indented example lines as literal displays, so each command stays on its own line;
#   - blank lines as paragraph breaks (mdoc warns about blank lines).
# Usage: manpage.sh HEARCTL.1 HEARCTL > out.1
set -euo pipefail
page=$1 hearctl=$2
table=$("$hearctl" --help | awk '/^ *Exit status \(every verb\):/ { on = 1; next } on && /^ *$/ { exit } on')
[ -n "$table" ] || { echo "manpage.sh: no exit status table in $hearctl --help" >&2; exit 1; }
awk -v table="$table" '
function close_literal() { if (literal) { print ".Ed"; literal = 0 } }
BEGIN { n = split(table, rows, "\n") }
/^Exit status \(every verb\):$/ { skipping = 1; next }
skipping { if ($0 == "") { skipping = 0 } ; next }
/^\.Ex -std/ {
    close_literal()
    print "The exit status is the same for every subcommand:"
    print ".Bl -tag -width Ds"
    for (i = 1; i <= n; i++) {
        line = rows[i]
        if (match(line, /^ *[0-9]+  /)) {
            code = line; sub(/^ */, "", code); sub(/ .*/, "", code)
            text = line; sub(/^ *[0-9]+ +/, "", text)
            print ".It " code; print text
        } else {
            sub(/^ +/, "", line); print line
        }
    }
    print ".El"
    next
}
/^  / && !/^\./ {
    if (!literal) { print ".Bd -literal -offset indent"; literal = 1 }
    sub(/^  /, ""); print; next
}
{ close_literal() }
/^$/ { print ".Pp"; next }
{ print }
END { close_literal() }
' "$page"
