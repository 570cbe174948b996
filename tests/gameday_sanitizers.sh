#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Userspace under sanitizers and valgrind. By default (make test), a smoke
# that needs no second build of everything:
#   1. `make san`: floodgated, floodgate, test_policy, test_gcra and
#      test_fgmaps linked from the fuzzers' ASan+UBSan objects of user/
#      ($OUTPUT/fuzz/san), checked instrumented;
#   2. those unit tests: any AddressSanitizer/LeakSanitizer/UBSan report fails;
#   4. floodgated start / CLI commands / reload (good, bad, garbage, good) /
#      metrics / stop in a namespace with a veth and its own pin dir, then a
#      `floodgate reload` cycle, all of that ASan build (leak check at exit);
#   5. valgrind --leak-check=full on `floodgate check` of a good and a bad file.
# FG_GAMEDAY=1 (make gameday) adds:
#   3. `make OUTPUT=$OUTPUT/asan ASAN=1 UBSAN=1` (gcc, everything; an output
#      dir of its own: .output is not touched), checked instrumented, and
#      test_policy, test_gcra, test_fgmaps and test_datapath built there;
#   5. the daemon's cycle of 4 under valgrind (normal build);
#   6. the cycle of 4 under the gcc ASan+UBSan build.
# valgrind has no exact model of bpf(2): it flags fields of union bpf_attr
# that libbpf deliberately leaves outside the size it passes, and the NULL
# key of BPF_MAP_GET_NEXT_KEY (which means "first key"). Those Param
# errors, raised by libbpf's own syscall, are suppressed; nothing else is.
# Needs root. Cleans up namespace, pin dirs, temp dir and daemons (by PID).
# Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
fg_init --root
OUT=$FG_OUT
AOUT=$OUT/asan
GD_FULL=0; [ "${FG_GAMEDAY:-0}" = 1 ] && GD_FULL=1
PIN=$(fg_pin san)
TMP=$FG_TMP
FG_STOP_TENTHS=600	# a daemon under valgrind takes its time to exit

export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=0:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
SAN_RE='ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: (Address|Leak|UndefinedBehavior)Sanitizer'

# instrumented BIN...: each links ASan and UBSan (gcc: the shared runtimes;
# clang: the static ones, whose entry points it defines)
instrumented() {
	local b
	for b in "$@"; do
		{ ldd "$b" 2>/dev/null | grep -q libasan || nm "$b" 2>/dev/null | grep -q ' __asan_init$'; } &&
		{ ldd "$b" 2>/dev/null | grep -q libubsan || nm "$b" 2>/dev/null | grep -q ' __ubsan_handle_'; } ||
		{ echo "$b"; return 1; }
	done
}

# san_tests DIR LABEL T...: the unit tests T in DIR, any sanitizer report fails
san_tests() {
	local dir=$1 label=$2 t bin line rc what
	shift 2
	for t in "$@"; do
		bin=$dir/$t
		if [ ! -x "$bin" ]; then bad "$t ($label)" "$bin not built"; continue; fi
		t0=$SECONDS
		# headroom: test_datapath under ASan took 60-120 s here on a loaded machine
		timeout 900 "$bin" > "$TMP/$t.$label.log" 2>&1; rc=$?
		line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$TMP/$t.$label.log" | tail -n 1)
		if [ $rc = 0 ] && ! grep -qE "$SAN_RE" "$TMP/$t.$label.log"; then
			ok "$t under $label: ${line:-no summary} ($((SECONDS - t0)) s)"
		else
			what=$(grep -m1 -E "$SAN_RE" "$TMP/$t.$label.log")
			bad "$t under $label" "exit $rc, ${line:-no summary line}; ${what:-no sanitizer report}"
			grep -m1 -B2 -A12 -E "$SAN_RE" "$TMP/$t.$label.log" | sed 's/^/    /'
		fi
	done
}

# --- 1. the smoke's programs: no second build of user/ ---------------------------------
SOUT=$OUT/fuzz/san
t0=$SECONDS
if env -u MAKEFLAGS -u MAKELEVEL make -s -j2 OUTPUT="$OUT" san > "$TMP/san.log" 2>&1; then
	ok "make san: ASan+UBSan programs on the fuzzers' objects in $SOUT ($((SECONDS - t0)) s)"
else
	bad "make OUTPUT=$OUT san" "$(tail -n 10 "$TMP/san.log" | one_line 1500)"
	fg_finish
fi
if not=$(instrumented "$SOUT/floodgated" "$SOUT/floodgate" "$SOUT/test_policy"); then
	ok "the programs under $SOUT are built with ASan and UBSan"
else
	bad "$not is instrumented" "it links neither the ASan nor the UBSan runtime"
fi

# --- 2. unit tests under ASan + UBSan --------------------------------------------------------
san_tests "$SOUT" "ASan+UBSan" test_policy test_gcra test_fgmaps

# --- 3. (game day) the full gcc build under ASAN=1 UBSAN=1 -------------------------------------
if [ "$GD_FULL" = 1 ]; then
	t0=$SECONDS
	if env -u MAKEFLAGS -u MAKELEVEL make -s -j2 OUTPUT="$AOUT" ASAN=1 UBSAN=1 all > "$TMP/build.log" 2>&1; then
		ok "make OUTPUT=$AOUT ASAN=1 UBSAN=1 builds ($((SECONDS - t0)) s)"
		if not=$(instrumented "$AOUT/floodgated" "$AOUT/floodgate" "$AOUT"/tests/test_policy); then
			ok "the binaries under $AOUT link libasan and libubsan"
		else
			bad "$not is instrumented" "not linked with libasan and libubsan: ASAN=1/UBSAN=1 did not reach it"
		fi
		san_tests "$AOUT/tests" "gcc ASan+UBSan" test_policy test_gcra test_fgmaps test_datapath
	else
		bad "make OUTPUT=$AOUT ASAN=1 UBSAN=1" "$(tail -n 10 "$TMP/build.log" | one_line 1500)"
	fi
else
	skip "make ASAN=1 UBSAN=1 (gcc, everything) and test_datapath under it; the daemon under valgrind" \
		"FG_GAMEDAY=1 (make gameday) runs them"
fi

# --- the daemon's life cycle: set-up -------------------------------------------------------------
# valgrind cannot run a sanitized binary: under `make ASAN=1 UBSAN=1 test`
# the suite's own tree is sanitized, so build a plain one beside it
if ldd "$FGD" 2>/dev/null | grep -q 'libasan\|libubsan'; then
	VOUT=$OUT/plain
	if env -u MAKEFLAGS -u MAKELEVEL make -s -j2 OUTPUT="$VOUT" ASAN= UBSAN= \
		"$VOUT/floodgated" "$VOUT/floodgate" > "$TMP/plain.log" 2>&1; then
		ok "$OUT is sanitized: a plain build for valgrind in $VOUT"
		FGD=$VOUT/floodgated
		FG=$VOUT/floodgate
	else
		bad "plain build for valgrind in $VOUT" "$(tail -n 5 "$TMP/plain.log" | one_line 800)"
	fi
fi
# one namespace, the veth pair v0 <-> v1 in it
if ! { fg_ns_create s && fg_veth_create s v0 s v1; }; then
	bad setup "namespace and veth pair"; fg_finish
fi
PORT=$((30000 + $$ % 20000))

# valgrind's bpf(2) wrapper checks all of union bpf_attr, libbpf zeroes and
# passes only the part a command uses; NULL key = first key for GET_NEXT_KEY.
for f in key flags prog_ifindex expected_attach_type; do
	printf '{\n   fg-libbpf-bpf-attr-%s\n   Memcheck:Param\n   bpf(attr->%s)\n   fun:syscall\n   obj:*/libbpf.so*\n}\n' "$f" "$f"
done > "$TMP/vg.supp"
# ... and no model of the info the kernel writes back (BPF_OBJ_GET_INFO_BY_FD):
# libbpf's bpf_program__set_attach_target reads the kernel BTF of the
# dispatcher probe's attach target (xdpattach.c), which valgrind never saw written
for k in Cond Value8; do
	printf '{\n   fg-libbpf-btf-info-%s\n   Memcheck:%s\n   ...\n   fun:bpf_program__set_attach_target\n}\n' "$k" "$k"
done >> "$TMP/vg.supp"
# ... nor of the verifier log a refused load writes (valgrind marks a
# syscall's output only when it succeeds): libbpf_probe_bpf_helper reads
# the log of the helper probe the kernel refused (user/lib/kfeat.c)
for k in Cond Value8; do
	printf '{\n   fg-libbpf-probe-log-%s\n   Memcheck:%s\n   ...\n   fun:libbpf_probe_bpf_helper\n}\n' "$k" "$k"
done >> "$TMP/vg.supp"

policy() {	# policy RATE
	cat <<YAML
interfaces: [v1]
max_sources: 4096
metrics: "127.0.0.1:$PORT"
allow: [127.0.0.0/8]
deny: [192.0.2.0/24, "2001:db8::/32"]
rules:
  - name: icmp-echo
    match: {proto: icmp, icmp_type: 8}
    per_source: {rate: $1/s, burst: 5}
  - name: udp-any
    match: {proto: udp}
    per_source: {rate: 100/s, burst: 100, prefix_v4: 24}
    aggregate: {rate: 1000/s, burst: 1000}
YAML
}

# cycle LABEL FG-CLI FLOODGATED [WRAPPER...]: start floodgated (under the
# wrapper), CLI commands, reload good, reload bad, reload good, SIGTERM.
# Sets CYC_RC (the daemon's exit status) and CYC_LOG.
cycle() {
	local label=$1 cli=$2 FGD=$3 log=$TMP/$1.log n t0=$SECONDS
	local FG_DAEMON_WRAP=("${@:4}") FG_START_TENTHS=600
	CYC_LOG=$log
	policy 5 > "$TMP/policy.yaml"
	: > "$log"
	if ! fg_daemon_start s "$PIN" "$TMP/policy.yaml" "$log"; then
		bad "$label: floodgated starts" "$(tail -n 8 "$log" | one_line 800)"
		fg_daemon_stop KILL
		CYC_RC=255
		return
	fi
	ok "$label: floodgated starts ($((SECONDS - t0)) s)"
	# the CLI, the same build, on the live pin dir
	local c cli_bad=""
	for c in "status" "stats" "stats --json" "top" "top --json" "mode shadow" "mode enforce" \
		 "mode shadow --rule icmp-echo" "mode enforce --rule icmp-echo" \
		 "bypass on --for 30s" "bypass off" "check $TMP/policy.yaml"; do
		# shellcheck disable=SC2086
		$cli --pin-dir "$PIN" $c > "$TMP/cli.out" 2>&1 || cli_bad+=" [$c: exit $?: $(tail -n 3 "$TMP/cli.out" | one_line 300)]"
	done
	if [ -z "$cli_bad" ]; then ok "$label: CLI status/stats/top/mode/bypass/check clean"
	else bad "$label: CLI" "$cli_bad"; fi
	# a good reload, a bad one, a good one (SIGHUP: the CLI's reload goes
	# through it too, but cannot tell a valgrind'ed daemon by its comm)
	n=0
	reload_wait() {
		local want=$1
		kill -HUP "$FG_DPID"
		for _ in $(seq 300); do
			[ "$(grep -c "$want" "$log")" -gt "$n" ] && return 0
			kill -0 "$FG_DPID" 2>/dev/null || return 1
			sleep 0.1
		done
		return 1
	}
	policy 50 > "$TMP/policy.yaml"
	n=$(grep -c "reload: policy version" "$log")
	check "$label: SIGHUP with a changed file applies it" reload_wait "reload: policy version"
	printf 'rules:\n  - name: x\n    match: {proto: tcpp}\n' > "$TMP/policy.yaml"
	n=$(grep -c "running policy is unchanged" "$log")
	check "$label: SIGHUP with a bad file is refused" reload_wait "running policy is unchanged"
	head -c 3000 /dev/urandom > "$TMP/policy.yaml"
	n=$(grep -c "running policy is unchanged" "$log")
	check "$label: SIGHUP with binary garbage is refused" reload_wait "running policy is unchanged"
	policy 7 > "$TMP/policy.yaml"
	n=$(grep -c "reload: policy version" "$log")
	check "$label: SIGHUP with a good file again applies it" reload_wait "reload: policy version"
	if command -v curl > /dev/null; then
		fg_ns_exec s curl -s -m 5 "http://127.0.0.1:$PORT/metrics" > "$TMP/metrics" 2>&1
		fg_ns_exec s curl -s -m 5 "http://127.0.0.1:$PORT/nope" > /dev/null 2>&1
		check "$label: metrics endpoint answers" grep -q floodgate_policy_version "$TMP/metrics"
	fi
	fg_daemon_stop TERM; CYC_RC=$?
	if [ ! -e "$PIN" ]; then ok "$label: SIGTERM detached and unpinned ($((SECONDS - t0)) s in all)"
	else bad "$label: SIGTERM left $PIN"; fg_pin_remove "$PIN"; fi
}

# asan_cycle LABEL DIR: the cycle of 4 with DIR's floodgated and floodgate,
# then `floodgate reload` (good, bad) from that CLI to that daemon
asan_cycle() {
	local label=$1 dir=$2 rep rc
	if [ ! -x "$dir/floodgated" ] || [ ! -x "$dir/floodgate" ]; then
		bad "$label floodgated" "$dir/floodgated or $dir/floodgate not built"
		return
	fi
	cycle "$label" "$dir/floodgate" "$dir/floodgated"
	rep=$(grep -E "$SAN_RE" "$CYC_LOG" | head -n 5)
	if [ "$CYC_RC" = 0 ] && [ -z "$rep" ]; then
		ok "$label: floodgated start/reload/stop: no reports, no leaks (exit 0)"
	else
		bad "$label: floodgated start/reload/stop" "exit $CYC_RC; $(echo "$rep" | one_line 600)"
		grep -m1 -A20 -E "$SAN_RE" "$CYC_LOG" | sed 's/^/    /'
	fi
	policy 5 > "$TMP/policy.yaml"
	: > "$TMP/$label-2.log"
	FGD=$dir/floodgated FG_START_TENTHS=600 fg_daemon_start s "$PIN" "$TMP/policy.yaml" "$TMP/$label-2.log"
	policy 9 > "$TMP/policy.yaml"
	"$dir/floodgate" --pin-dir "$PIN" reload > "$TMP/reload.out" 2>&1
	check "$label: floodgate reload (good) exits 0" [ $? = 0 ]
	printf 'rules: [ {name: broken\n' > "$TMP/policy.yaml"
	"$dir/floodgate" --pin-dir "$PIN" reload >> "$TMP/reload.out" 2>&1
	check "$label: floodgate reload (bad) exits 1" [ $? = 1 ]
	"$dir/floodgate" --pin-dir "$PIN" detach >> "$TMP/reload.out" 2>&1
	check "$label: floodgate detach refuses while the daemon runs" [ $? = 1 ]
	fg_daemon_stop TERM; rc=$?
	rep=$(grep -E "$SAN_RE" "$TMP/$label-2.log" "$TMP/reload.out" | head -n 5)
	if [ $rc = 0 ] && [ -z "$rep" ] && [ ! -e "$PIN" ]; then ok "$label: CLI reload cycle clean, daemon exit 0, unpinned"
	else bad "$label: CLI reload cycle" "daemon exit $rc; $(echo "$rep" | one_line 600)"; fi
}

# --- 4. the daemon's life cycle under ASan + UBSan (the smoke's build) ------------------------
asan_cycle "ASan+UBSan" "$SOUT"

# --- 5. valgrind: `floodgate check`; (game day) the daemon's cycle ------------------------------
if command -v valgrind > /dev/null && [ -x "$FGD" ] && [ -x "$FG" ]; then
	VG=(valgrind --leak-check=full --error-exitcode=9 --suppressions="$TMP/vg.supp" -q)
	# no daemon needed: a good file and a bad one
	vrc=0
	policy 5 > "$TMP/policy.yaml"
	for f in "$TMP/policy.yaml" tests/policies/bad_prefix.yaml; do
		"${VG[@]}" "$FG" check "$f" > "$TMP/vgcli.log" 2>&1
		rc=$?
		[ $rc = 9 ] && { vrc=9; bad "valgrind: floodgate check $f" "$(grep '^==' "$TMP/vgcli.log" | head -n 20 | one_line 1500)"; }
	done
	[ $vrc = 0 ] && ok "valgrind: floodgate check (good and bad file): no errors, no leaks"
	if [ "$GD_FULL" = 1 ]; then
		cycle valgrind "$FG" "$FGD" "${VG[@]}"
		errs=$(grep -E "^==[0-9]+== " "$CYC_LOG" | grep -vE "WARNING: unhandled eBPF command" | head -n 40)
		if [ "$CYC_RC" = 0 ] && [ -z "$errs" ]; then
			ok "valgrind: floodgated start/reload/stop: no errors, no leaks (exit 0)"
		else
			bad "valgrind: floodgated start/reload/stop" "exit $CYC_RC (9 = valgrind errors)"
			echo "$errs" | sed 's/^/    /'
		fi
	fi
else
	skip valgrind "$(command -v valgrind > /dev/null || echo 'no valgrind (tools/deps.sh gameday)') $([ -x "$FGD" ] || echo "$FGD not built")"
fi

# --- 6. (game day) the daemon's life cycle under the gcc ASan + UBSan build ---------------------
[ "$GD_FULL" = 1 ] && asan_cycle "gcc ASan+UBSan" "$AOUT"

check "nothing left pinned" [ ! -e "$PIN" ]
fg_finish
