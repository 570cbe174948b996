#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The man pages: mandoc -T lint and groff -ww clean; within 80 columns
# when rendered for them; each command's heading
# in floodgate(8) renders as its synopsis alone (a .TP tag is one line: a
# tag split over two put the rest of the synopsis into the description);
# every command of `floodgate --help` has one; FILES names every pinned map
# of the program (FG_MAPS in user/maps/fgmaps.c). Needs neither root nor a daemon.
# Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
fg_init "$FG"
PAGES="docs/floodgate.8 docs/floodgated.8 docs/floodgate.yaml.5"

for m in $PAGES; do
	if command -v mandoc > /dev/null; then
		out=$(mandoc -T lint -W warning "$m" 2>&1)
		check_cmp "mandoc -T lint $m: clean [$(echo "$out" | one_line 200)]" "${#out}" = 0
	else
		skip "mandoc -T lint $m" "mandoc is not installed (tools/deps.sh)"
	fi
	out=$(groff -ww -man -Tutf8 -z "$m" 2>&1)
	check_cmp "groff -ww $m: clean [$(echo "$out" | one_line 200)]" "${#out}" = 0
done

# rendered for an 80-column terminal, no line is wider (characters, not bytes)
for m in $PAGES; do
	w=$(MANWIDTH=80 man -l "$m" 2>/dev/null | col -bx | "$FG_PY" -c '
import sys
print(max((len(l.rstrip("\n")) for l in sys.stdin.buffer.read().decode("utf-8", "replace").splitlines()), default=0))')
	check_cmp "man $m at MANWIDTH=80: the widest line" "$w" -le 80
done

# the rendered COMMANDS section: each heading line, then its description
MANWIDTH=80 man -l docs/floodgate.8 2>/dev/null | col -b > "$FG_TMP/floodgate.txt"
for c in $("$FG" --help | sed -n '/^Commands/,/^$/p' | awk '/^  [a-z]/ { print $1 }'); do
	head=$(grep -m1 -E "^       $c( |$)" "$FG_TMP/floodgate.txt")
	next=$(grep -m1 -A1 -E "^       $c( |$)" "$FG_TMP/floodgate.txt" | sed -n 2p)
	if [ -z "$head" ]; then
		bad "floodgate(8) describes '$c'" "no heading line for it in COMMANDS"
	elif echo "$next" | grep -qE '^ +[A-Z]?[a-z]*\]|^ +[A-Z]+\]'; then
		bad "floodgate(8): the heading of '$c' is whole" "the description starts with the synopsis' rest: '$next'"
	else
		ok "floodgate(8): '$c' has a whole heading: '$(echo "$head" | sed 's/^ *//')'"
	fi
done

files=$(sed -n '/^\.SH FILES/,/^\.SH EXAMPLES/p' docs/floodgate.8 | tr -c 'a-z0-9_\n' ' ')
missing=
maps=$(grep -oE 'X\(FGM_[A-Z0-9]+, fg[a-z0-9_]+' user/maps/fgmaps.c | awk '{ print $2 }' | sort -u)
for map in $maps; do
	echo "$files" | grep -qw "$map" || missing+=" $map"
done
nmaps=$(echo "$maps" | wc -w)
check_cmp "floodgate(8) FILES names every pinned map of fgmaps.c ($nmaps) [missing:${missing:- none}]" "${missing:-none}" = none

fg_finish
