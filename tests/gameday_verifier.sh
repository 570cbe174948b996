#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The BPF objects pass the kernel verifier, within their budget:
#   make test   tools/fgverify (seconds): every program of the objects the
#               build made (floodgate fgen bench_floor fgtest_xdp, the
#               default compiler), one load each with the verifier's
#               statistics, against bpf/budget/<kernel>.txt: a program that
#               does not load, has no budget line or grew more than 10 %
#               fails. This is the smoke of the line below.
#   game day    (FG_GAMEDAY=1) that, and tools/verify-clang.sh (minutes): a
#               rebuild with clang 14 and with clang-19 into a temp OUTPUT,
#               bpftool -d prog loadall with the verifier's level-1 log, for
#               the XDP program (floodgate.bpf.o) and for the connection
#               counter of the concurrency caps (FG_VERIFY_UNIT=fgconn:
#               fgconn.bpf.o; a program of a type this kernel refuses, by
#               the project's probe, is a skip with the reason). A compiler
#               that is not installed is a skip here (tools/deps.sh gameday
#               installs clang-19); `make verify-clang` makes it a failure.
# Needs root. Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
fg_require_root
OUT=${OUTPUT:-.output}

# sub NAME CMD...: run a tool that prints ok/FAIL/skip lines and a summary
# line; print its lines, add its counts to ours
sub() {
	local name=$1 log=/tmp/fg-verify-$$.out rc p f s
	shift
	"$@" > "$log" 2>&1
	rc=$?
	grep -v -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$log"
	read -r p f s < <(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped$/\1 \2 \3/p' \
		"$log" | tail -1)
	rm -f "$log"
	if [ -z "${p:-}" ]; then
		bad "$name" "no summary line (exit $rc)"
		return
	fi
	FG_NPASS=$((FG_NPASS + p)); FG_NFAIL=$((FG_NFAIL + f)); FG_NSKIP=$((FG_NSKIP + s))
	[ "$rc" = 0 ] || [ "$f" != 0 ] || bad "$name" "exit $rc"
}

if [ -x "$OUT/fgverify" ]; then
	t0=$SECONDS
	sub "fgverify" "$OUT/fgverify"
	echo "# fgverify: $((SECONDS - t0)) s"
else
	bad "fgverify" "$OUT/fgverify is not built (make)"
fi
if [ -n "${FG_GAMEDAY:-}" ]; then
	for unit in floodgate fgconn; do
		t0=$SECONDS
		FG_VERIFY_QUICK= FG_VERIFY_UNIT=$unit FG_VERIFY_MISSING=skip sub "verify-clang $unit" \
			tools/verify-clang.sh
		echo "# verify-clang $unit: $((SECONDS - t0)) s"
	done
else
	skip "verify-clang (clang 14 and clang-19 rebuilds, the verifier's log)" \
		"game day's (make gameday, or make verify-clang); fgverify above is its smoke"
fi
summary
