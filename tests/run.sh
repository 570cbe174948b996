#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The whole test suite. Runs every .output/tests/test_* binary, every
# tests/test_*.sh, then every tests/e2e_*.sh and tests/gameday_*.sh script, and ends with one line
# "N passed, N failed, N skipped" for CI.
#   tests/run.sh            everything (needs root)
#   tests/run.sh --unit     only tests that need neither root nor namespaces
#   tests/run.sh --gameday  everything, game-day drills and fuzzers run long
set -u
cd "$(dirname "$0")/.." || exit 2
OUT=${OUTPUT:-.output}
unit_only=0
[ "${1:-}" = "--unit" ] && unit_only=1
[ "${1:-}" = "--gameday" ] && export FG_GAMEDAY=1
export OUTPUT=$OUT

# a fresh machine may not have bpffs mounted (the daemon mounts it itself,
# but some tests pin before any daemon runs)
if [ "$(id -u)" = 0 ] && [ "$unit_only" = 0 ] && ! mountpoint -q /sys/fs/bpf; then
	mount -t bpf bpf /sys/fs/bpf && echo "run.sh: mounted bpffs on /sys/fs/bpf"
fi

pass=0; fail=0; skip=0; failed_list=""
log_dir=$(mktemp -d /tmp/fgtest.XXXXXX)

# A child ends with "N passed, N failed, N skipped"; add it up. A child
# that crashed or printed no summary counts as one failure.
run_one() {
	local name=$1; shift
	local log="$log_dir/$(basename "$name").log"
	local t0=$SECONDS
	echo "=== $name"
	"$@" 2>&1 | tee "$log"
	local rc=${PIPESTATUS[0]}
	local line
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
	if [ -z "$line" ]; then
		echo "FAIL - $name: exited $rc without a summary line"
		fail=$((fail + 1)); failed_list+=" $name"
		return
	fi
	local p f s
	p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
	f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
	s=$(echo "$line" | sed -nE 's/.* ([0-9]+) skipped.*/\1/p')
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + ${s:-0}))
	if [ "$f" != 0 ] || { [ "$rc" != 0 ] && [ "$f" = 0 ]; }; then
		[ "$f" = 0 ] && { echo "FAIL - $name: exited $rc"; fail=$((fail + 1)); }
		failed_list+=" $name"
	fi
	echo "--- $name: $line ($((SECONDS - t0)) s)"
}

for t in "$OUT"/tests/test_*; do
	[ -x "$t" ] || continue
	case "$t" in *.d|*.o) continue ;; esac
	if [ "$unit_only" = 1 ] && grep -q "FG_NEEDS_ROOT" "tests/$(basename "$t").c" 2>/dev/null; then
		echo "skip - $(basename "$t"): needs root (--unit)"; skip=$((skip + 1)); continue
	fi
	run_one "$(basename "$t")" "$t"
done

# shell tests that need no namespace (each skips what needs root itself)
for s in tests/test_*.sh; do
	[ -f "$s" ] && run_one "$(basename "$s")" bash "$s"
done

if [ "$unit_only" = 0 ]; then
	for s in tests/e2e_*.sh tests/gameday_*.sh; do
		[ -f "$s" ] || continue
		case "$s" in *_lib.sh) continue ;; esac	# sourced by the others
		run_one "$(basename "$s")" bash "$s"
	done
fi

rm -rf "$log_dir"
[ -n "$failed_list" ] && echo "failed:$failed_list"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
