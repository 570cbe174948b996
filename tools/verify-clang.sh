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
# A program of a type this kernel refuses (the project's probe, `floodgate
# kernel --json`: user/lib/kfeat.c; here "tracing" for the map-element
# iterator) is not a verifier regression: when the load stops at such a
# program before the verifier walked it (processed 0 insns), it is a skip
# with the probe's reason, and the object is loaded again without it.
# Anything else that stops the load is a failure.
# Needs root (BPF_PROG_LOAD). Prints "ok - ..."/"FAIL - ..."/"skip - ..." per
# compiler and ends with "N passed, N failed, N skipped".
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
	/BPF program load failed/ { if (match($0, /prog .[A-Za-z0-9_]+./)) print "LOADFAIL " substr($0, RSTART + 6, RLENGTH - 7) }
	{ ring[NR % 60] = $0 }
	END { for (i = NR - 59; i <= NR; i++) if (i > 0) print "TAIL " ring[i % 60] }'
}

# The program types the probe says this kernel refuses, each with its reason
FGBIN=${OUTPUT:-.output}/floodgate
declare -A REFUSED=()
if kjson=$("$FGBIN" kernel --json 2> /dev/null); then
	for f in tracing ext; do
		why=$(echo "$kjson" | sed -nE "s/.*\"$f\":\{\"ok\":false,[^}]*\"why\":\"([^\"]*)\".*/\1/p")
		[ -n "$why" ] && REFUSED[$f]=$why
	done
fi

# sec_type SECTION: the program type of a section name, as libbpf reads it
# (only the two types the probe can say are refused)
sec_type() {
	case $1 in
	tp_btf/* | fentry/* | fexit/* | fmod_ret/* | fentry.s/* | fexit.s/* | iter/* | iter.s/*) echo tracing ;;
	freplace/*) echo ext ;;
	*) echo other ;;
	esac
}

# load OBJ TAG [-d]: bpftool [-d] prog loadall into $PIN/TAG, summarised into
# $TMP/TAG.sum; a program refused by type (above) goes, with a skip, and
# the rest loads again; sets `dropped` to those programs. Status: bpftool's.
load() {
	local obj=$1 tag=$2 dbg=${3:-} cur=$1 n=0 rc prog sec ty
	dropped=""
	while :; do
		rm -rf "${PIN:?}/${tag:?}"
		# shellcheck disable=SC2086 # dbg is empty or -d
		"$BPFTOOL" $dbg prog loadall "$cur" "$PIN/$tag" 2>&1 | summarise > "$TMP/$tag.sum"
		rc=${PIPESTATUS[0]}
		[ "$rc" = 0 ] && return 0
		prog=$(sed -n 's/^LOADFAIL //p' "$TMP/$tag.sum" | head -n 1)
		[ -n "$prog" ] && [ $n -lt 8 ] || return "$rc"
		# the verifier did not walk it: the kernel stopped at its type
		grep -q "^PROG $prog 0 " "$TMP/$tag.sum" || return "$rc"
		sec=$("$OBJDUMP" -t "$cur" | awk -F'\t' -v p="$prog" '{ split($1, a, " "); split($2, b, " ") }
			b[2] == p && $1 ~ / F / { print a[length(a)] }' | head -n 1)
		ty=$(sec_type "$sec")
		[ -n "$sec" ] && [ -n "${REFUSED[$ty]:-}" ] || return "$rc"
		n=$((n + 1))
		"$OBJCOPY" --remove-section="$sec" --remove-section=".rel$sec" "$cur" "$TMP/$tag.drop$n.o" ||
			return "$rc"
		skp "$cc $ver: $UNIT.bpf.o $prog ($sec)" "this kernel refuses program type $ty (floodgate kernel: ${REFUSED[$ty]}); loaded without it"
		dropped+="${dropped:+ }$prog"
		cur=$TMP/$tag.drop$n.o
	done
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
	OBJCOPY=llvm-objcopy OBJDUMP=llvm-objdump
	command -v "llvm-objcopy-$major" > /dev/null && OBJCOPY=llvm-objcopy-$major
	command -v "llvm-objdump-$major" > /dev/null && OBJDUMP=llvm-objdump-$major
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
		if load "$obj" "$tag"; then
			ok "$cc $ver ($strip): $UNIT.bpf.o ($size B) loads in $((SECONDS - t0)) s: $(ls "$PIN/$tag" | tr '\n' ' ')(FG_VERIFY_QUICK: no verifier counts; make verify-clang prints them)"
			rm -rf "${PIN:?}/${tag:?}"
			continue
		fi
		rm -rf "${PIN:?}/${tag:?}"
	fi
	load "$obj" "$tag" -d
	rc=$?
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
