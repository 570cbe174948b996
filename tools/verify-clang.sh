#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Build bpf/floodgate.bpf.c with each compiler (default: clang, i.e. clang
# 14 on Debian 12, and clang-19) through the Makefile's own BPF rule (same
# BPF_CFLAGS, llvm-strip, bpftool gen object) into a temp OUTPUT, so .output
# is not touched; load it with `bpftool -d prog loadall` to run the kernel
# verifier; print the verifier's processed-instruction count and the
# program's size for each; unpin. Exit 1 if any build or load fails.
#   tools/verify-clang.sh                 clang and clang-19
#   tools/verify-clang.sh clang-19 ...    those compilers
#   FG_VERIFY_MISSING=skip                a compiler not installed is a skip
#                                         (the test suite), not a failure
#   FG_VERIFY_QUICK=1                     load without the verifier's log:
#                                         no counts, a fraction of the time
#                                         (make test; a refusal is logged)
# Needs root (BPF_PROG_LOAD). Prints "ok - ..."/"FAIL - ..." per compiler and
# ends with "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
BPFTOOL=${BPFTOOL:-bpftool}
UNIT=${FG_VERIFY_UNIT:-floodgate}
if [ $# -gt 0 ]; then CLANGS=("$@"); else CLANGS=(clang clang-19); fi

pass=0; fail=0; skip=0
ok()   { echo "ok - $1"; pass=$((pass + 1)); }
bad()  { echo "FAIL - $1${2:+: $2}"; fail=$((fail + 1)); }
skp()  { echo "skip - $1: $2"; skip=$((skip + 1)); }
summary() { echo "$pass passed, $fail failed, $skip skipped"; }

TMP=$(mktemp -d /tmp/fg-verify.XXXXXX)
PIN=/sys/fs/bpf/fg-verify-$$
cleanup() {
	rm -rf "$PIN" "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ "$(id -u)" != 0 ]; then
	bad "verify-clang" "loading BPF programs needs root"
	summary; exit 1
fi
if ! command -v "$BPFTOOL" > /dev/null; then
	bad "verify-clang" "no $BPFTOOL"
	summary; exit 1
fi
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
mkdir -p "$PIN"

# The verifier log at level 1 is hundreds of MB for this program: keep only
# the per-program summary and the last lines of each program's log.
#   PROG <name> <processed> <states> <peak> <stack>   per loaded program
#   TAIL ...                                          the last 60 log lines
summarise() {
	awk '
	/BEGIN PROG LOAD LOG/ { if (match($0, /prog .[A-Za-z0-9_]+./)) prog = substr($0, RSTART + 6, RLENGTH - 7) }
	/^stack depth/ { stack = $3 }
	/^processed [0-9]+ insns/ {
		st = ""; pk = ""
		for (i = 1; i <= NF; i++) { if ($i == "total_states") st = $(i + 1); if ($i == "peak_states") pk = $(i + 1) }
		printf "PROG %s %s %s %s %s\n", prog, $2, st, pk, stack
	}
	{ ring[NR % 60] = $0 }
	END { for (i = NR - 59; i <= NR; i++) if (i > 0) print "TAIL " ring[i % 60] }'
}

for cc in "${CLANGS[@]}"; do
	if ! command -v "$cc" > /dev/null; then
		if [ "${FG_VERIFY_MISSING:-}" = skip ]; then
			skp "$cc" "not installed (tools/deps.sh gameday installs clang-19)"
		else
			bad "$cc" "not installed (tools/deps.sh gameday installs clang-19)"
		fi
		continue
	fi
	ver=$("$cc" --version | sed -nE '1s/.*clang version ([0-9][0-9.]*).*/\1/p')
	tag=$(echo "$cc" | tr -c 'A-Za-z0-9_.\n-' '_')
	strip=llvm-strip
	major=${ver%%.*}
	command -v "llvm-strip-$major" > /dev/null && strip=llvm-strip-$major
	out=$TMP/$tag
	obj=$out/$UNIT.bpf.o
	t0=$SECONDS
	if ! make -s OUTPUT="$out" CLANG="$cc" LLVM_STRIP="$strip" BPFTOOL="$BPFTOOL" "$obj" \
		> "$TMP/$tag.build" 2>&1; then
		bad "$cc $ver: build $UNIT.bpf.o" "$(tail -n 15 "$TMP/$tag.build" | tr '\n' ' ' | cut -c1-1500)"
		continue
	fi
	size=$(stat -c %s "$obj")
	if [ -n "${FG_VERIFY_QUICK:-}" ]; then
		# without the level-1 log (68 s for floodgate.bpf.o alone here, its
		# load ~1 s); a refusal goes on to the logged load below, which says where
		if "$BPFTOOL" prog loadall "$obj" "$PIN/$tag" > "$TMP/$tag.quick" 2>&1; then
			ok "$cc $ver ($strip): $UNIT.bpf.o ($size B) loads in $((SECONDS - t0)) s: $(ls "$PIN/$tag" | tr '\n' ' ')(FG_VERIFY_QUICK: no verifier counts; make verify-clang prints them)"
			rm -rf "${PIN:?}/${tag:?}"
			continue
		fi
		rm -rf "${PIN:?}/${tag:?}"
	fi
	"$BPFTOOL" -d prog loadall "$obj" "$PIN/$tag" 2>&1 | summarise > "$TMP/$tag.sum"
	rc=${PIPESTATUS[0]}
	if [ "$rc" != 0 ]; then
		bad "$cc $ver: the verifier rejects $UNIT.bpf.o" "bpftool exited $rc; end of the log:"
		sed -n 's/^TAIL /    /p' "$TMP/$tag.sum"
		rm -rf "${PIN:?}/${tag:?}"
		continue
	fi
	progs=""
	while read -r _ name insns states peak stack; do
		xl=$("$BPFTOOL" -j prog show pinned "$PIN/$tag/$name" 2> /dev/null |
			sed -nE 's/.*"bytes_xlated":([0-9]+).*"bytes_jited":([0-9]+).*/\1 B xlated, \2 B jited/p')
		progs+="${progs:+; }$name: $insns insns processed (limit 1000000), $states states (peak $peak), stack $stack B${xl:+, $xl}"
	done < <(grep '^PROG ' "$TMP/$tag.sum")
	if [ -z "$progs" ]; then
		bad "$cc $ver: no verifier summary for $UNIT.bpf.o" "bpftool -d printed no 'processed N insns'"
	else
		ok "$cc $ver ($strip): $UNIT.bpf.o ($size B) loads in $((SECONDS - t0)) s; $progs"
	fi
	rm -rf "${PIN:?}/${tag:?}"
done

summary
[ "$fail" = 0 ]
