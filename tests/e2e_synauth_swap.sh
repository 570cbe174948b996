#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# End to end, issue 21: a reload that brings syn_auth into a floodgated
# started without it swaps in a second instance of the XDP program with
# syn_auth's steps (user/attach/swap.h), on both interfaces, for each way
# the daemon attaches here (exclusive bpf_link; libxdp, which on a kernel
# without freplace attaches alone by netlink). For each way:
#   - a swap that fails leaves the old program on every interface and the
#     old policy in force, enforcing, and counts it: once for real (the new
#     program cannot load: the daemon's RLIMIT_NOFILE lowered with prlimit
#     leaves it no fd for the second instance's maps), once through the test
#     hook FLOODGATE_TEST_SWAP_FAIL=s2 (s1 swapped, then s2 refused: s1 is
#     swapped back);
#   - a fresh daemon's reload adding syn_auth: a new program on both
#     interfaces, the counters carried on (same maps), a real client
#     connects through the responder (syn_answered, the verified list),
#     the drop rule still enforces, the kill switch and shadow act on the
#     new program;
#   - an adopting restart (after SIGKILL) with the new file finds and keeps
#     the new program; a reload taking syn_auth out keeps it (steps idle);
#     `floodgate detach` removes it from both interfaces and the pin dir.
# libxdp pins under /sys/fs/bpf/xdp, which it leaves behind: the script runs
# itself in a mount namespace with a bpffs of its own (fg_private_mounts).
# Needs root. Cleans up namespaces, pin dirs and processes (by PID).
# Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
fg_private_mounts "$0" "$@"

fg_init --root --pin swap "$FGD" "$FG"
S1=10.78.1.1 C1=10.78.1.2 S2=10.78.2.1 A1=10.78.2.2
fg_synauth_net "$S1" "$C1" "$S2" "$A1"

policy() { # policy ATTACH SYN_AUTH(0|1)
	local sa=
	[ "$2" = 1 ] && sa="    syn_auth: cookie"
	cat > "$FG_TMP/policy.yaml" <<EOF
interfaces: [s1, s2]
metrics: "127.0.0.1:9479"
xdp_attach: $1
rules:
  - name: closed
    match: {proto: tcp, dport: 8081}
    action: drop
  - name: web
    match: {proto: tcp, dport: 8080, tcp_flags: syn}
$sa
    per_source: {rate: 50/s, burst: 50}
EOF
}

cat > "$FG_TMP/server.py" <<'PY'
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 8080)); s.listen(1024)
while True:
    c, _ = s.accept()
    try: c.send(b"hi")
    except OSError: pass
    c.close()
PY
# connects PORT N: how many of N connects to S1:PORT got "hi"; the last error in $FG_TMP/client.err
cat > "$FG_TMP/client.py" <<'PY'
import socket, sys
port, n, ok = int(sys.argv[2]), int(sys.argv[3]), 0
for i in range(n):
    try:
        s = socket.create_connection((sys.argv[1], port), timeout=float(sys.argv[4]))
        ok += s.recv(8) == b"hi"
        s.close()
    except OSError as e:
        print("connect %d: %s" % (i, e), file=sys.stderr)
print(ok)
PY
connects() { fg_ns_exec cli "$FG_PY" "$FG_TMP/client.py" "$S1" "$1" "$2" "${3:-3}" 2> "$FG_TMP/client.err"; }
# the XDP program id on each of s1 s2, "ID1 ID2" (0: none)
prog_ids() {
	local d
	for d in s1 s2; do
		ip -n "$(fg_ns_name srv)" -d -j link show dev "$d" | "$FG_PY" -c '
import json, sys
x = json.load(sys.stdin)[0].get("xdp", {})
print(x.get("prog", {}).get("id") or next((p["prog"]["id"] for p in x.get("attached", []) if "prog" in p), 0))'
	done | paste -sd' '
}
sa_way() { "$FG" status --json | fg_json_get - syn_auth.way; }
metric() { fg_ns_exec srv curl -s "http://127.0.0.1:9479/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
swaps() { metric "floodgate_syn_auth_swaps_total{result=\"$1\"}"; }
row() { fg_snap "$PIN"; fg_stat "$FG_SNAP" "$1" "$2"; }
bypassed() { fg_snap "$PIN"; fg_stat_sum "$FG_SNAP" bypass; }
# enforcing WHAT: the drop rule still drops (a connect to 8081 times out, counted
# as drop in rule closed) and the web port answers
enforcing() {
	local d0 d1 c8081 c8080
	d0=$(row closed drop)
	c8081=$(connects 8081 1 1)
	d1=$(row closed drop)
	c8080=$(connects 8080 3)
	check_cmp "$1: rule closed still drops (+$((d1 - d0)) drops, connect to 8081: $c8081)" "$((d1 - d0))" -gt 0
	check_cmp "$1: ... and the web port answers ($c8080 of 3; $(one_line 200 < "$FG_TMP/client.err"))" "$c8080" = 3
}
# free_fds_limit PID SPARE: the RLIMIT_NOFILE that leaves PID SPARE new fds (a
# new fd takes the lowest free number, below the limit; those above it stay open)
free_fds_limit() {
	find /proc/"$1"/fd -mindepth 1 -printf "%f\n" | "$FG_PY" -c '
import sys
used, spare, lim, free = set(int(x) for x in sys.stdin.read().split()), int(sys.argv[1]), 0, 0
while free < spare:
    free += lim not in used; lim += 1
print(lim)' "$2"
}

fg_bg srv "$FG_PY" "$FG_TMP/server.py" "$S1"
SPID=$FG_BG_PID
sleep 0.3

for ATTACH in exclusive libxdp; do
	echo "# --- xdp_attach: $ATTACH"
	# --- a failing swap: the old program stays, the old policy enforces ------------------
	policy "$ATTACH" 0
	FLOODGATE_TEST_SWAP_FAIL=s2 fg_daemon_up srv "$FG_TMP/policy.yaml" "$ATTACH: floodgated starts without syn_auth"
	ids0=$(prog_ids)
	check_cmp "$ATTACH: a program on both interfaces ($ids0)" "$(wc -w <<< "${ids0// 0/}")" = 2
	check_cmp "$ATTACH: status: no syn_auth way" "$(sa_way)" = off

	# for real: no fd left for the second instance's maps
	lim0=$(prlimit --pid "$FG_DPID" --nofile --noheadings --raw -o SOFT,HARD | tr ' ' :)
	policy "$ATTACH" 1
	prlimit --pid "$FG_DPID" --nofile="$(free_fds_limit "$FG_DPID" 4):${lim0#*:}"
	out=$("$FG" reload 2>&1); rc=$?
	prlimit --pid "$FG_DPID" --nofile="$lim0"
	check_cmp "$ATTACH: reload adding syn_auth without fds to load it fails ($(one_line 300 <<< "$out"))" "$rc" != 0
	check "$ATTACH: ... saying the new program would not load" grep -q "would not load" <<< "$out"
	check_cmp "$ATTACH: ... the old programs stay on both interfaces" "$(prog_ids)" = "$ids0"
	check_cmp "$ATTACH: ... the old policy stays (no syn_auth way)" "$(sa_way)" = off
	check_cmp "$ATTACH: ... counted: swaps load_failed 1" "$(swaps load_failed)" = 1
	enforcing "$ATTACH: after the failed load"

	# the hook: s1 swapped, s2 refused, s1 swapped back
	out=$("$FG" reload 2>&1); rc=$?
	check_cmp "$ATTACH: reload adding syn_auth whose swap fails on s2 fails ($(one_line 300 <<< "$out"))" "$rc" != 0
	check "$ATTACH: ... naming s2" grep -q "s2: the replace refused" <<< "$out"
	check_cmp "$ATTACH: ... s1 swapped back: the old programs on both interfaces" "$(prog_ids)" = "$ids0"
	check "$ATTACH: ... logged" grep -q "1 interface(s) swapped back to the running program" "$DLOG"
	check_cmp "$ATTACH: ... the old policy stays" "$(sa_way)" = off
	check_cmp "$ATTACH: ... counted: swaps replace_failed 1, rollback_failed 0" \
		"$(swaps replace_failed) $(swaps rollback_failed)" = "1 0"
	enforcing "$ATTACH: after the failed swap"
	fg_daemon_stop
	check "$ATTACH: SIGTERM: the pin dir is gone" test ! -e "$PIN"

	# --- the swap ----------------------------------------------------------------------
	policy "$ATTACH" 0
	fg_daemon_up srv "$FG_TMP/policy.yaml" "$ATTACH: floodgated starts again without syn_auth"
	ids0=$(prog_ids)
	enforcing "$ATTACH: before the swap"
	drop0=$(row closed drop) pass0=$(row web pass)
	policy "$ATTACH" 1
	# a flood the drop rule counts, from before the reload until after it
	fg_bg atk "$FGEN" -i a1 -d "$S2" --syn --dport 8081 --dst-mac "$MAC2" -r 20000 -t 10 \
		> "$FG_TMP/fgen.out" 2>&1
	FPID=$FG_BG_PID t0=$SECONDS
	sleep 0.5
	out=$("$FG" reload 2>&1); rc=$?
	t1=$SECONDS
	wait "$FPID"
	fg_bg_stop "$FPID" > /dev/null 2>&1
	sent=$(sed -nE 's/.*sent ([0-9]+).*/\1/p' "$FG_TMP/fgen.out" | head -1)
	txdrop=$(sed -nE 's/.*counted ([0-9]+) tx_dropped.*/\1/p' "$FG_TMP/fgen.out" | head -1)
	left=$((${sent:-0} - ${txdrop:-0})) drop1=$(row closed drop)
	check_cmp "$ATTACH: reload adding syn_auth succeeds ($(one_line 200 <<< "$out"))" "$rc" = 0
	check_cmp "$ATTACH: ... within the flood (reload done $((t1 - t0)) s into 10 s; fgen sent ${sent:-0})" "$((t1 - t0 < 10 && ${sent:-0} > 100000))" = 1
	check_cmp "$ATTACH: ... every flood frame that left a1 dropped and counted once, by the old or the new program ($((drop1 - drop0)) of $left)" "$((drop1 - drop0))" = "$left"
	ids1=$(prog_ids)
	read -r o1 o2 <<< "$ids0"
	read -r n1 n2 <<< "$ids1"
	check_cmp "$ATTACH: ... new programs on s1 and s2 ($ids0 -> $ids1)" "$((n1 != o1 && n2 != o2 && n1 > 0 && n2 > 0))" = 1
	check "$ATTACH: ... logged with its steps" grep -qE "program [0-9]+ with syn_auth's steps runs on 2 interface" "$DLOG"
	check "$ATTACH: ... the reload log names the rule that gained syn_auth" \
		grep -q "rule web: syn_auth off -> cookie" "$DLOG"
	way=$(sa_way)
	check_cmp "$ATTACH: ... the syn_auth way in force ($way)" "$way" != off
	check_cmp "$ATTACH: ... counted: swaps done 1" "$(swaps "done")" = 1
	ans0=$("$FG" status --json | fg_json_get - syn_auth.syn_answered)
	c=$(connects 8080 10)
	ans1=$("$FG" status --json | fg_json_get - syn_auth.syn_answered)
	check_cmp "$ATTACH: a real client connects through the responder: 10 of 10 ($(one_line 200 < "$FG_TMP/client.err"))" "$c" = 10
	check_cmp "$ATTACH: ... its SYNs answered by floodgate (syn_answered +$((ans1 - ans0)))" "$((ans1 - ans0))" -gt 0
	check "$ATTACH: ... its address verified" sh -c "'$FG' verified list | grep -q '^$C1 '"
	check_cmp "$ATTACH: ... web's counters moved (pass $pass0 -> $(row web pass))" "$(row web pass)" -gt "$pass0"
	enforcing "$ATTACH: after the swap"

	# the kill switch and shadow act on the new program (fg_ctl is shared)
	b0=$(bypassed)
	"$FG" bypass on > /dev/null 2>&1 && connects 8081 1 1 > /dev/null
	check_cmp "$ATTACH: bypass on: everything passes (bypass +$(($(bypassed) - b0)))" "$(bypassed)" -gt "$b0"
	"$FG" bypass off > /dev/null 2>&1
	s0=$(row closed shadow)
	"$FG" mode shadow > /dev/null 2>&1 && connects 8081 1 1 > /dev/null
	check_cmp "$ATTACH: mode shadow: rule closed counts shadow (+$(($(row closed shadow) - s0)))" "$(row closed shadow)" -gt "$s0"
	"$FG" mode file > /dev/null 2>&1

	# --- adoption, a reload without syn_auth, detach -----------------------------------
	fg_daemon_stop KILL
	check_cmp "$ATTACH: SIGKILL: the new programs still attached" "$(prog_ids)" = "$ids1"
	fg_daemon_up srv "$FG_TMP/policy.yaml" "$ATTACH: floodgated adopts with syn_auth"
	check_cmp "$ATTACH: the adopting restart keeps the new programs" "$(prog_ids)" = "$ids1"
	check_cmp "$ATTACH: ... status: the way in force" "$(sa_way)" = "$way"
	check_cmp "$ATTACH: ... status: running" "$("$FG" status --json | fg_json_get - daemon.pid)" = "$FG_DPID"
	c=$(connects 8080 3)
	check_cmp "$ATTACH: ... the client still connects: 3 of 3" "$c" = 3
	policy "$ATTACH" 0
	check "$ATTACH: reload taking syn_auth out" "$FG" reload
	check "$ATTACH: ... the reload log names the rule that lost it" \
		grep -q "rule web: syn_auth cookie -> off" "$DLOG"
	check_cmp "$ATTACH: ... keeps the programs (steps idle)" "$(prog_ids)" = "$ids1"
	check_cmp "$ATTACH: ... no syn_auth way in force" "$(sa_way)" = off
	enforcing "$ATTACH: syn_auth out"
	fg_daemon_stop KILL
	check "$ATTACH: floodgate detach (in the namespace: libxdp's attach is found by device)" \
		fg_ns_exec srv "$FG" detach
	check_cmp "$ATTACH: ... no program left on s1, s2" "$(prog_ids)" = "0 0"
	check "$ATTACH: ... the pin dir is gone" test ! -e "$PIN"

	# --- an interface deleted when the reload comes, and back after it -----------------
	policy "$ATTACH" 0
	fg_daemon_up srv "$FG_TMP/policy.yaml" "$ATTACH: floodgated starts for the deleted interface"
	ip -n "$(fg_ns_name srv)" link del s2
	policy "$ATTACH" 1
	out=$("$FG" reload 2>&1); rc=$?
	check_cmp "$ATTACH: s2 deleted: the reload adding syn_auth succeeds ($(one_line 200 <<< "$out"))" "$rc" = 0
	check "$ATTACH: ... swapped on s1 alone (log)" \
		grep -q "runs on 1 interface(s) (the others when they come back)" "$DLOG"
	fg_veth_create srv s2 atk a1 && fg_ns_addr srv s2 "$S2/24" && fg_ns_addr atk a1 "$A1/24" ||
		bad "$ATTACH: s2 created again"
	MAC2=$(fg_ns_mac srv s2)
	n=50
	while [ "$n" -gt 0 ] && [ "$(prog_ids | cut -d' ' -f2)" = 0 ]; do sleep 0.1; n=$((n - 1)); done
	ans0=$("$FG" status --json | fg_json_get - syn_auth.syn_answered)
	fg_ns_exec atk "$FGEN" -i a1 -d "$S2" --syn --dport 8080 --dst-mac "$MAC2" -n 20 -r 1000 > /dev/null 2>&1
	ans1=$("$FG" status --json | fg_json_get - syn_auth.syn_answered)
	check_cmp "$ATTACH: ... s2 back: attached again ($(prog_ids)), and its SYNs to web answered from XDP (syn_answered +$((ans1 - ans0)) of 20)" "$((ans1 - ans0))" = 20
	fg_daemon_stop
	check "$ATTACH: ... SIGTERM: the pin dir is gone" test ! -e "$PIN"
done

fg_bg_stop "$SPID"
fg_finish
