#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# floodgated's start (issue 25): `floodgate status` says "starting" and
# "adopting" with the new daemon's pid while a start is in progress, never
# "not running"; an adopting restart keeps the running program when it is
# this build (no second verification, the link's program id unchanged) and
# swaps a fresh one in with FLOODGATE_ADOPT_RELOAD=1; either way the filter
# enforces throughout the restart: a UDP receiver behind it, on a device
# that delivers without XDP too (GRO on), gets no more than burst + rate x T
# while one source floods at 25x its rate. The start windows are held open
# by holding the pin dir's lock (flock), so nothing here depends on how
# fast the verifier is. Start-up time itself is a benchmark (make bench).
# Needs root. Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
fg_init --root --pin start "$FGD" "$FG" "$FGEN"
command -v bpftool > /dev/null || { skip "$FG_NAME" "bpftool missing"; fg_finish; }
# the start files in a directory of this run's, not /run/floodgate
export FLOODGATE_RUN_DIR=$FG_TMP/run
mkdir -p "$FLOODGATE_RUN_DIR"

fg_pair -q gen veth0 "10.203.0.1/24" rcv veth1 "10.203.0.2/24"
RCV=$(fg_ns_name rcv)
# without XDP the frames still reach the stack: a lapse would show
ip netns exec "$RCV" ethtool -K veth1 gro on > /dev/null 2>&1
RATE=100
BURST=200
cat > "$FG_TMP/policy.yaml" <<EOF
interfaces: [veth1]
max_sources: 65536
rules:
  - name: flood
    match: {proto: udp, dport: 9}
    per_source: {rate: $RATE/s, burst: $BURST}
EOF

# A UDP receiver on 10.203.0.2:9 writing how many datagrams it got, every 50 ms.
cat > "$FG_TMP/rx.py" <<'PY'
import os, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
s.bind(("10.203.0.2", 9))
s.settimeout(0.05)
n, out, last = 0, sys.argv[1], 0.0
while True:
    try:
        s.recv(2048)
        n += 1
    except socket.timeout:
        pass
    now = time.monotonic()
    if now - last >= 0.05:
        with open(out + ".tmp", "w") as f:
            f.write("%d\n" % n)
        os.rename(out + ".tmp", out)
        last = now
PY
fg_bg rcv "$FG_PY" "$FG_TMP/rx.py" "$FG_TMP/rx.count"
RXPID=$FG_BG_PID
rx_count() { cat "$FG_TMP/rx.count" 2>/dev/null || echo 0; }

state() { "$FG" --pin-dir "$PIN" status --json 2>/dev/null | fg_json_get - daemon.state 2>/dev/null; }
dpid() { "$FG" --pin-dir "$PIN" status --json 2>/dev/null | fg_json_get - daemon.pid 2>/dev/null; }
link_prog() { bpftool -j link show pinned "$PIN/link_veth1" 2>/dev/null | fg_json_get - prog_id; }
# wait_state STATE [TENTHS]: until status says STATE
wait_state() {
	local n=${2:-50}
	while [ "$n" -gt 0 ]; do
		[ "$(state)" = "$1" ] && return 0
		sleep 0.1; n=$((n - 1))
	done
	return 1
}
# start_bg [ENV=...]: floodgated in the background, foreground mode; FG_DPID
start_bg() {
	FG_LOGS+=("$DLOG")
	fg_bg rcv env "$@" "$FGD" --config "$FG_TMP/policy.yaml" --pin-dir "$PIN" --foreground \
		--keep >> "$DLOG" 2>&1
	FG_DPID=$FG_BG_PID
}
wait_started() {
	fg_wait_for "$DLOG" "(started|adopted pinned state); .*\(pid $FG_DPID\)" 200
}

# --- a fresh start, held at the lock: "starting" -----------------------------------
# The lock is held until these checks are done (a fixed hold once ran out
# on a loaded machine before the text status was read): flock's child
# writes its pid and becomes the sleep, whose end frees the lock.
mkdir -p "$PIN"
flock "$PIN" bash -c 'echo $$ > "$1"; exec sleep 30' _ "$FG_TMP/lock.pid" &
LOCKPID=$!
for _ in $(seq 50); do [ -s "$FG_TMP/lock.pid" ] && break; sleep 0.1; done
start_bg
if wait_state starting 50; then
	ok "fresh start: status says starting"
	check_cmp "fresh start: status names the new daemon's pid" "$(dpid)" = "$FG_DPID"
	"$FG" --pin-dir "$PIN" status > "$FG_TMP/st.txt" 2>&1
	if grep -q "floodgated pid $FG_DPID is starting" "$FG_TMP/st.txt" &&
	   ! grep -q 'not running' "$FG_TMP/st.txt"; then
		ok "fresh start: status text says starting, not 'not running'"
	else
		bad "fresh start: status text says starting, not 'not running'" \
			"$(head -4 "$FG_TMP/st.txt" | tr '\n' '|')"
	fi
else
	bad "fresh start: status says starting" "state '$(state)'"
fi
kill "$(cat "$FG_TMP/lock.pid")" 2>/dev/null
wait "$LOCKPID" 2>/dev/null
if wait_started; then ok "fresh start: started once the lock was free"
else bad "fresh start" "$(tail -3 "$DLOG")"; fg_finish; fi
check_cmp "running: status says running" "$(state)" = running
check "the start file is gone once fg_meta names the daemon" \
	bash -c "! ls '$FLOODGATE_RUN_DIR'/start-* > /dev/null 2>&1"

# restart_under_flood NAME [ENV=...]: SIGKILL, restart adopting while one
# source floods; the window is held 1.5 s at the lock. Sets PROG0/PROG1,
# RX_WIN (datagrams received over the window) and WIN_S (its length).
restart_under_flood() {
	local name=$1 t0 t1 r0 r1 d0 d1
	shift
	PROG0=$(link_prog)
	fg_bg gen "$FGEN" -i veth0 -s 10.203.0.1 -d 10.203.0.2 --dport 9 -r $((RATE * 25)) -t 12 \
		--dst-mac "$MAC" > /dev/null 2>&1
	GENPID=$FG_BG_PID
	sleep 3 # the source's burst is spent: from here it gets RATE a second
	r0=$(rx_count); d0=$(fg_stat "$PIN" flood drop); t0=$(date +%s.%N)
	fg_daemon_stop KILL
	flock "$PIN" sleep 1.5 &
	LOCKPID=$!
	sleep 0.1
	start_bg "$@"
	if wait_state adopting 30; then
		ok "$name: status says adopting"
		check_cmp "$name: status names the adopting daemon's pid" "$(dpid)" = "$FG_DPID"
	else
		bad "$name: status says adopting" "state '$(state)'"
	fi
	wait "$LOCKPID" 2>/dev/null
	if wait_started; then ok "$name: adopted"
	else bad "$name: adopted" "$(tail -3 "$DLOG")"; fi
	check_cmp "$name: status says running" "$(state)" = running
	sleep 1
	r1=$(rx_count); d1=$(fg_stat "$PIN" flood drop); t1=$(date +%s.%N)
	fg_bg_stop "$GENPID"
	PROG1=$(link_prog)
	RX_WIN=$((r1 - r0))
	WIN_S=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
	# the bucket was empty at t0: RATE a second, plus a little for the edges
	local max
	max=$(awk -v r=$RATE -v t="$WIN_S" 'BEGIN { printf "%d", r * t * 1.2 + 20 }')
	check_cmp "$name: datagrams through over the ${WIN_S} s restart (rate $RATE/s)" "$RX_WIN" -le "$max"
	check_cmp "$name: the program kept dropping through the restart" "$((d1 - d0))" -gt $((RATE * 2))
}

restart_under_flood "adopt (same build)"
check_cmp "adopt (same build): the link's program is the one that ran (id)" "$PROG1" = "$PROG0"
check "adopt (same build): the daemon kept it, not loaded again" \
	grep -q "veth1: adopted pinned link, its program kept" "$DLOG"

restart_under_flood "adopt (FLOODGATE_ADOPT_RELOAD=1)" FLOODGATE_ADOPT_RELOAD=1
check_cmp "adopt (reload): a new program is in the link" "$PROG1" != "$PROG0"
check "adopt (reload): swapped atomically" \
	grep -q "veth1: adopted pinned link, program swapped atomically" "$DLOG"

# --- an adoption of the file as pinned rewrites nothing (pdigest.h) -------------------
pol_version() { "$FG" --pin-dir "$PIN" status --json 2>/dev/null | fg_json_get - policy.version; }
DIGEST=$(fg_state_file policy "$PIN")
# adopt_once [FUNC]: SIGKILL, FUNC, start adopting; this start's log in $FG_TMP/adopt.log
adopt_once() {
	local mark
	fg_daemon_stop KILL
	[ -n "${1:-}" ] && "$1"
	mark=$(wc -l < "$DLOG")
	start_bg
	wait_started || bad "adopting start" "$(tail -3 "$DLOG")"
	tail -n +$((mark + 1)) "$DLOG" > "$FG_TMP/adopt.log"
}
kept() { grep -q "adopt: the pinned policy (version $1) is what .* compiles to: kept, not rewritten" "$FG_TMP/adopt.log"; }
rewritten() { grep -q "adopt: rewriting the pinned policy: $1" "$FG_TMP/adopt.log" && ! kept '[0-9]*'; }
# a rule's name in fg_names changed by hand (bpftool), its first letter's case
tamper_name() {
	local kv
	kv=$(bpftool -j map dump pinned "$PIN/fg_names" | "$FG_PY" -c '
import json, sys
name = sys.argv[1].encode()
for e in json.load(sys.stdin):
    v = bytearray(int(x, 16) for x in e["value"])
    if v.startswith(name + b"\0"):
        v[0] ^= 0x20
        print(" ".join(str(int(x, 16)) for x in e["key"]), "value", " ".join(map(str, v)))
        break' flood)
	[ -n "$kv" ] && bpftool map update pinned "$PIN/fg_names" key $kv
}
put_back_digest() { cp "$FG_TMP/digest.old" "$DIGEST"; }
rm_digest() { rm -f "$DIGEST"; }

check "after an apply its digest is kept beside the pin dir" test -s "$DIGEST"
v0=$(pol_version)
adopt_once
check "unchanged file: the adoption keeps the pinned policy, rewrites nothing (log)" kept "$v0"
check_cmp "unchanged file: the policy version stays" "$(pol_version)" = "$v0"
check "unchanged file: the link's program kept too" grep -q "veth1: adopted pinned link, its program kept" "$FG_TMP/adopt.log"
sed -i "s/burst: $BURST/burst: $((BURST + 1))/" "$FG_TMP/policy.yaml"
adopt_once
check "changed file: rewritten, the log says why" rewritten "the file (or this build) differs"
check_cmp "changed file: a new policy version" "$(pol_version)" = $((v0 + 1))
check "changed file: the log says what changed" \
	grep -q "adopt: rule flood: per_source rate 100 -> 100, burst $BURST -> $((BURST + 1))" "$FG_TMP/adopt.log"
adopt_once
check "unchanged again: kept" kept $((v0 + 1))
cp "$DIGEST" "$FG_TMP/digest.old"
check "a reload" bash -c "'$FG' --pin-dir '$PIN' reload > /dev/null"
adopt_once put_back_digest
check "a stale digest (of the policy before a reload): rewritten" rewritten "the pinned policy changed since"
check_cmp "... a new version" "$(pol_version)" = $((v0 + 3))
adopt_once tamper_name
check "fg_names edited by hand: rewritten" rewritten "fg_names does not hold exactly"
check_cmp "... a new version" "$(pol_version)" = $((v0 + 4))
adopt_once
check "the hand edit repaired: kept again" kept $((v0 + 4))
adopt_once rm_digest
check "no digest: rewritten" rewritten "no digest of the pinned policy"

# --- a start file whose daemon is gone says nothing ----------------------------------
fg_daemon_stop KILL
( exit 0 ) & dead=$!; wait "$dead"
printf 'pid %s\nphase 2\nsince %s\n' "$dead" "$(date +%s)" > "$(fg_state_file start "$PIN")"
check_cmp "a dead daemon's start file: status says none" "$(state)" = none
"$FG" --pin-dir "$PIN" status > "$FG_TMP/st.txt" 2>&1
check "a dead daemon's start file: status text says not running" \
	grep -q "daemon:    not running" "$FG_TMP/st.txt"

fg_bg_stop "$RXPID"
fg_finish
