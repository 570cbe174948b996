#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The BPF objects must build and pass the kernel verifier with both supported
# compilers: tools/verify-clang.sh (clang 14 and clang-19, temp OUTPUT,
# bpftool -d prog loadall, processed-instruction counts, unpinned after),
# once for the XDP program (floodgate.bpf.o) and once for the connection
# counter of the concurrency caps (FG_VERIFY_UNIT=fgconn: fgconn.bpf.o).
# A compiler that is not installed is a skip here (tools/deps.sh gameday
# installs clang-19); `make verify-clang` makes it a failure.
# Needs root. Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
fg_require_root
# verify-clang.sh counts and prints a summary line per unit: add them up
for unit in floodgate fgconn; do
	FG_VERIFY_UNIT=$unit FG_VERIFY_MISSING=skip tools/verify-clang.sh > "/tmp/fg-verify-$$.$unit" 2>&1
	rc=$?
	grep -v -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "/tmp/fg-verify-$$.$unit"
	read -r p f s < <(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped$/\1 \2 \3/p' \
		"/tmp/fg-verify-$$.$unit" | tail -1)
	rm -f "/tmp/fg-verify-$$.$unit"
	if [ -z "${p:-}" ]; then
		bad "verify-clang $unit" "no summary line (exit $rc)"
		continue
	fi
	FG_NPASS=$((FG_NPASS + p)); FG_NFAIL=$((FG_NFAIL + f)); FG_NSKIP=$((FG_NSKIP + s))
	[ "$rc" = 0 ] || [ "$f" != 0 ] || bad "verify-clang $unit" "exit $rc"
done
summary
