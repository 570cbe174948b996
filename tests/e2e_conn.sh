#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# End to end, concurrency caps (docs/concurrency.md): floodgated with a cap
# of 10 connections per source on one TCP port, a real TCP server (a python
# listener started here that accepts and holds connections, closes on EOF,
# resets everything on SIGUSR1, and has keepalive so the kernel closes the
# connections of a peer that vanished) in namespace srv, clients in
# namespace cli holding connections (python, driven through a FIFO), and
# `ss` on the client's side to see what got a SYN-ACK. Checks: 10 of 30
# established, the rest in SYN-SENT; the drops under the rule's cap
# outcome; 5 closed, 5 more in; a second client unaffected; IPv6; a daemon
# SIGKILLed and restarted counts what exists; closes the counter missed
# (its link unpinned while no daemon ran) corrected by the seed; a daemon
# first started over existing connections counts them; connections reset
# by the server, or killed by keepalive after the client vanished, come off
# the count within the reconcile period; a spoofed SYN flood creates no
# count entry and the cap holds; a reload lowering the cap cuts nothing
# and refuses until the count is under it; shadow mode passes at the cap;
# SIGTERM leaves nothing pinned; a second daemon in another namespace,
# with its own program on the same cgroup hooks, neither disturbs nor is
# disturbed; a policy without a cap loads no counting program, a reload
# adding one loads it (its seed counts what exists), a reload removing the
# last one unloads it.
# All of it runs once per way of counting this kernel allows (tp_btf,
# sock_ops: FLOODGATE_CONN_WAY, which floodgated and floodgate read), each
# check named "[way] ..."; FG_E2E_CONN_WAY=WAY runs one.
# Needs root. Cleans up namespaces, pin dir and processes (by PID).
# Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh

if [ -z "${FG_E2E_CONN_WAY:-}" ]; then
	tp=0 tf=0 ts=0 ran=0
	for way in tp_btf sock_ops; do
		if [ "$(FLOODGATE_CONN_WAY=$way "$FG" kernel --json 2>/dev/null |
			fg_json get - conn_way 2>/dev/null)" != "$way" ]; then
			echo "skip - [$way] concurrency caps: this kernel cannot count that way:" \
				"$(FLOODGATE_CONN_WAY=$way "$FG" kernel 2>&1 | grep 'count through' | sed 's/^ *//')"
			ts=$((ts + 1))
			continue
		fi
		ran=1
		out=$(mktemp /tmp/fg-e2e-conn-way.XXXXXX)
		FG_E2E_CONN_WAY=$way FLOODGATE_CONN_WAY=$way bash "$0" 2>&1 |
			sed -u -E "s/^(ok|FAIL|skip) - /\1 - [$way] /" | tee "$out"
		line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1)
		rm -f "$out"
		if [ -z "$line" ]; then
			echo "FAIL - [$way] e2e_conn.sh printed no summary"; tf=$((tf + 1)); continue
		fi
		read -r p _ f _ s _ <<< "$line"
		tp=$((tp + p)); tf=$((tf + f)); ts=$((ts + s))
	done
	if [ "$ran" = 0 ]; then	# no way at all: the one run says why it skips
		FG_E2E_CONN_WAY=none bash "$0"
		exit $?
	fi
	echo "$tp passed, $tf failed, $ts skipped"
	[ "$tf" = 0 ]
	exit $?
fi

fg_init --root --pin conn "$FGD" "$FG"
WAY=$("$FG" kernel --json | fg_json get - conn_way)
if [ "$WAY" = none ]; then
	skip "concurrency caps" "no way to count connections on this kernel: $("$FG" kernel | grep 'count through')"
	fg_finish
fi

PORT=$((20000 + $$ % 20000))
MPORT=$((PORT + 1))
CAP=10
S4=10.61.0.2 C1=10.61.0.1 C2=10.61.0.3 S6=fd61::2 C6=fd61::1
RECONCILE_S=2

fg_pair cli v0 "$C1/24 $C2/24 $C6/64" srv v1 "$S4/24 $S6/64"

policy() {	# policy CAP
	cat > "$FG_TMP/policy.yaml" <<YAML
interfaces: [v1]
max_sources: 4096
metrics: "127.0.0.1:$MPORT"
concurrency: {reconcile: ${RECONCILE_S}s, max_keys: 4096}
rules:
  - name: web
    match: {proto: tcp, dport: $PORT}
    per_source: {concurrency: $1, handshake_timeout: 3s}
YAML
}
policy "$CAP"

# --- the server and the clients ------------------------------------------------------

cat > "$FG_TMP/server.py" <<'PY'
# server.py PORT ACKFILE: accept and hold; close on EOF; SIGUSR1 resets all
import os, selectors, signal, socket, struct, sys
port, ack = int(sys.argv[1]), sys.argv[2]
ls = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
ls.bind(("::", port))
ls.listen(1024)
ls.setblocking(False)
sel = selectors.DefaultSelector()
sel.register(ls, selectors.EVENT_READ)
conns, resets = set(), [0]
signal.signal(signal.SIGUSR1, lambda *a: resets.__setitem__(0, resets[0] + 1))
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
done = 0
open(ack, "a").write("ready\n")
def drop(c):
    sel.unregister(c)
    conns.discard(c)
    c.close()
while True:
    for key, _ in sel.select(0.1):
        if key.fileobj is ls:
            while True:
                try:
                    c, _ = ls.accept()
                except BlockingIOError:
                    break
                c.setblocking(False)
                # a peer that vanishes: the kernel gives up after ~3 s
                c.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
                c.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 1)
                c.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, 1)
                c.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 2)
                c.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, 3000)
                sel.register(c, selectors.EVENT_READ)
                conns.add(c)
        else:
            c = key.fileobj
            try:
                d = c.recv(4096)
            except OSError:
                d = b""
            if not d:
                drop(c)
    if resets[0] != done:
        for c in list(conns):
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            drop(c)
        done = resets[0]
        open(ack, "a").write("reset\n")
PY

cat > "$FG_TMP/client.py" <<'PY'
# client.py SRC DST PORT FIFO: holds connections; commands on FIFO, one per
# line, each acknowledged by a line in FIFO.ack:
#   open N          N non-blocking connects from SRC
#   close N         close N established ones (a FIN)
#   closepending    close those not established (SYN-SENT)
#   closeall
import os, socket, sys
src, dst, port, fifo = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
fam = socket.AF_INET6 if ":" in dst else socket.AF_INET
socks = []
def established(s):
    try:
        return s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0] == 1
    except OSError:
        return False
fd = os.open(fifo, os.O_RDWR)  # RDWR: no EOF between two writers
buf = b""
while True:
    chunk = os.read(fd, 4096)
    buf += chunk
    while b"\n" in buf:
        line, buf = buf.split(b"\n", 1)
        cmd = line.decode().split()
        if not cmd:
            continue
        if cmd[0] == "open":
            for _ in range(int(cmd[1])):
                s = socket.socket(fam, socket.SOCK_STREAM)
                s.setblocking(False)
                s.bind((src, 0))
                s.connect_ex((dst, port))
                socks.append(s)
        elif cmd[0] == "close":
            n, keep = int(cmd[1]), []
            for s in socks:
                if n and established(s):
                    s.close()
                    n -= 1
                else:
                    keep.append(s)
            socks = keep
        elif cmd[0] in ("closepending", "closeall"):
            keep = []
            for s in socks:
                if cmd[0] == "closepending" and established(s):
                    keep.append(s)
                else:
                    s.close()
            socks = keep
        with open(fifo + ".ack", "a") as f:
            f.write(line.decode() + "\n")
PY

SACK=$FG_TMP/server.ack
fg_bg srv "$FG_PY" "$FG_TMP/server.py" "$PORT" "$SACK" > "$FG_TMP/server.log" 2>&1
SPID=$FG_BG_PID
fg_wait_for "$SACK" '^ready' 50 || { bad "server starts" "$(cat "$FG_TMP/server.log")"; fg_finish; }

declare -A CPID
client_start() {	# client_start NAME SRC DST [NS [PORT]]
	mkfifo "$FG_TMP/$1.fifo"
	: > "$FG_TMP/$1.fifo.ack"
	fg_bg "${4:-cli}" "$FG_PY" "$FG_TMP/client.py" "$2" "$3" "${5:-$PORT}" "$FG_TMP/$1.fifo" \
		> "$FG_TMP/$1.log" 2>&1
	CPID[$1]=$FG_BG_PID
}
# cmd NAME COMMAND: send, wait for its acknowledgement
cmd() {
	local ack=$FG_TMP/$1.fifo.ack n
	n=$(wc -l < "$ack")
	echo "$2" > "$FG_TMP/$1.fifo"
	for _ in $(seq 50); do
		[ "$(wc -l < "$ack")" -gt "$n" ] && return 0
		sleep 0.1
	done
	bad "client $1: '$2' not acknowledged" "$(tail -3 "$FG_TMP/$1.log")"
	return 1
}
client_start c1 "$C1" "$S4"
client_start c2 "$C2" "$S4"
client_start c6 "$C6" "$S6"

# ss_n STATE SRC: the client's sockets from SRC to the port in STATE
ss_n() {
	fg_ns_exec cli ss -Htn state "$1" "dport = :$PORT" 2>/dev/null |
		awk -v s="$2" '{ a = $3; sub(/:[0-9]+$/, "", a); gsub(/[][]/, "", a); if (a == s) n++ } END { print n + 0 }'
}
est() { ss_n established "$1"; }
synsent() { ss_n syn-sent "$1"; }

# wait_val CMD SRC N TENTHS: until `CMD SRC` prints N, at most TENTHS tenths of a second; prints
# what it printed last
wait_val() {
	local n=$4 v
	while :; do
		v=$("$1" "$2")
		[ "$v" = "$3" ] || [ "$n" -le 0 ] && break
		sleep 0.1; n=$((n - 1))
	done
	echo "$v"
}
# wait_est SRC N [TENTHS]: until SRC has N established; prints the count
wait_est() { wait_val est "$1" "$2" "${3:-50}"; }

# the daemon's view, from `floodgate top --json`: conns SRC (0 if absent)
top_json() { "$FG" top -n 1000 --json 2>/dev/null; }
# conn_field FIELD DEFAULT SRC: FIELD of SRC's connections entry, as JSON (DEFAULT if absent)
conn_field() {
	top_json | "$FG_PY" -c 'import json, sys
d = json.load(sys.stdin)
v = next((e[sys.argv[1]] for e in d["connections"] if e["source"].split("/")[0] == sys.argv[3]), None)
print(sys.argv[2] if v is None else json.dumps(v))' "$@"
}
conns() { conn_field connections 0 "$1"; }
at_cap() { conn_field at_cap false "$1"; }
# wait_conns SRC N TENTHS: until the daemon counts N for SRC; prints the count
wait_conns() { wait_val conns "$1" "$2" "$3"; }
status_get() { "$FG" status --json 2>/dev/null | fg_json_get - "$@"; }
# after_close SRC LOW HIGH TENTHS: after closes that bring SRC's count to
# LOW, with clients waiting in SYN-SENT to bring it back to HIGH: waits
# until the daemon counts LOW, or HIGH while SRC holds HIGH established
# (the waiting SYNs got in before a slow poll saw LOW: a slow guest); a
# close that was not counted leaves neither. Prints what it counted.
after_close() {
	local n=$4 c
	while :; do
		c=$(conns "$1")
		[ "$c" = "$2" ] && break
		[ "$c" = "$3" ] && [ "$(est "$1")" = "$3" ] && break
		[ "$n" -le 0 ] && break
		sleep 0.1; n=$((n - 1))
	done
	echo "$c"
}

start_daemon() { fg_daemon_start srv "$PIN" "$FG_TMP/policy.yaml" "$DLOG"; }

# --- policy ---------------------------------------------------------------------------
out=$("$FG" check "$FG_TMP/policy.yaml" 2>&1)
if echo "$out" | grep -q "concurrency $CAP connections per source, handshake_timeout 3000 ms$" &&
   echo "$out" | grep -q "^ *counts TCP to ports $PORT$"; then
	ok "check prints the cap: $(echo "$out" | grep 'concurrency ' | sed 's/^ *//' | head -1)"
else
	bad "check prints the cap" "$(echo "$out" | one_line 400)"
fi

# --- 30 connections from one client: exactly 10 -----------------------------------------
CG2_MOUNTS=$(grep -c ' - cgroup2 ' /proc/self/mountinfo)
if ! start_daemon; then bad "floodgated starts" "$(tail -5 "$DLOG")"; fg_finish; fi
ok "floodgated starts with a cap of $CAP per source"
check "the counter is pinned next to the filter" test -e "$PIN/fgc_link" -a -e "$PIN/fgc_count"
check "the daemon says it counts through $WAY" grep -q "concurrency caps: counting through $WAY" "$DLOG"
if [ "$WAY" = sock_ops ]; then
	check "sock_ops: the release hook's link is pinned too" test -e "$PIN/fgc_rlink"
	check_cmp "sock_ops: no cgroup2 mount left behind (it came from a private mount)" \
		"$(grep -c ' - cgroup2 ' /proc/self/mountinfo)" = "$CG2_MOUNTS"
fi

cmd c1 "open 30"
sleep 1.5
e=$(est "$C1"); s=$(synsent "$C1")
check_cmp "30 connects from $C1: established (client's ss)" "$e" = "$CAP"
check_cmp "30 connects from $C1: no SYN-ACK, still SYN-SENT (client's ss)" "$s" = 20
check_cmp "the daemon counts $C1's connections" "$(conns "$C1")" = "$CAP"
check_cmp "top --json: $C1 at its cap" "$(at_cap "$C1")" = true
fg_snap "$PIN"
check_cmp "SYNs refused counted under web's cap outcome (20 SYNs + retransmits)" \
	"$(fg_stat "$FG_SNAP" web cap)" -ge 20
check_cmp "no SYN of web dropped otherwise" "$(fg_stat "$FG_SNAP" web drop)" = 0
"$FG" top --json > "$FG_TMP/top.json" 2>/dev/null
fg_json_check "top --json with the connections section" top "$FG_TMP/top.json"
"$FG" top > "$FG_TMP/top.txt" 2>&1
if grep -qE "^$C1/32 +web +$CAP +0 +$CAP yes$" "$FG_TMP/top.txt"; then ok "top: $C1 in the caps' section, at its cap"
else bad "top: the caps' section" "$(one_line 400 < "$FG_TMP/top.txt")"; fi
"$FG" status > "$FG_TMP/status.txt" 2>&1
if grep -qE "^concurrency: counting \(link pinned\) through $WAY," "$FG_TMP/status.txt" &&
   grep -qE "^  web +cap $CAP per source, ports $PORT: 1 sources, 1 at the cap, $CAP connections" "$FG_TMP/status.txt"
then ok "status: the counter and the capped rule"
else bad "status: the caps" "$(one_line 600 < "$FG_TMP/status.txt")"; fi

# a second client (another address) has its own count
cmd c2 "open $CAP"
check_cmp "a second client $C2 is unaffected: all $CAP established" "$(wait_est "$C2" "$CAP" 30)" = "$CAP"
cmd c6 "open 12"
check_cmp "IPv6 client $C6: $CAP of 12 established" "$(wait_est "$C6" "$CAP" 30)" = "$CAP"
sleep 0.5
check_cmp "IPv6 client: 2 in SYN-SENT" "$(synsent "$C6")" = 2
check_cmp "$C1 still at $CAP" "$(est "$C1")" = "$CAP"

# close 5: 5 of the waiting SYNs get in at their next retransmit, no more
cmd c1 "close 5"
check_cmp "5 closed: the count falls to 5" "$(wait_conns "$C1" 5 30)" = 5
# until then, at most 40 s: the waiting clients' SYN retransmits back off
# (1, 3, 7, 15, 31 s after their first), and in a slow guest this comes a
# minute after the connects
peak=0; t0=$SECONDS
while [ $((SECONDS - t0)) -lt 40 ]; do
	e=$(est "$C1"); [ "$e" -gt "$peak" ] && peak=$e
	[ "$e" = "$CAP" ] && [ "$(synsent "$C1")" = 15 ] && break
	sleep 0.2
done
check_cmp "after closing 5: 5 more established from the retransmitted SYNs" "$(est "$C1")" = "$CAP"
check_cmp "... never more than the cap" "$peak" -le "$CAP"
check_cmp "... 15 still in SYN-SENT" "$(synsent "$C1")" = 15
cmd c1 closepending
cmd c6 closeall

# --- SIGKILL and restart: the counts survive, and new SYNs are still refused -----------
fg_daemon_stop KILL
if ! start_daemon; then bad "floodgated restarts after SIGKILL" "$(tail -5 "$DLOG")"; fg_finish; fi
check_cmp "after SIGKILL + restart: $C1 counted" "$(conns "$C1")" = "$CAP"
check_cmp "after SIGKILL + restart: $C2 counted" "$(conns "$C2")" = "$CAP"
cmd c1 "open 2"
sleep 1.5
check_cmp "after the restart a new SYN of $C1 is still refused" "$(synsent "$C1")" = 2
cmd c1 closepending

# --- closes the counter missed: repaired by the next daemon's seed ---------------------
fg_daemon_stop KILL
rm -f "$PIN/fgc_link" "$PIN/fgc_rlink"	# no counter attached from here on
cmd c1 "close 4"
sleep 0.5
check_cmp "closes while no counter runs: client has 6" "$(est "$C1")" = 6
check_cmp "... the count still says 10 (the closes were missed)" "$(conns "$C1")" = "$CAP"
if ! start_daemon; then bad "floodgated starts over stale counts" "$(tail -5 "$DLOG")"; fg_finish; fi
check_cmp "the seed corrects $C1 to 6" "$(conns "$C1")" = 6
check "the daemon logs the correction" grep -qE "concurrency caps: seed: .*corrected 1 key by 4 connections" "$DLOG"
check_cmp "status --json: corrections counted" "$(status_get concurrency.corrections.connections)" -ge 4
check_cmp "status --json: the counter's link is pinned again" "$(status_get concurrency.counting)" = true
check_cmp "status --json: the way" "$(status_get concurrency.way)" = "$WAY"
"$FG" status --json > "$FG_TMP/status.json" 2>/dev/null
fg_json_check "status --json with the concurrency section" status "$FG_TMP/status.json"

# --- first start over connections that exist already ----------------------------------
fg_daemon_stop TERM
check_cmp "SIGTERM removes the pin dir, the counter's pins too" "$(ls -A "$PIN" 2>/dev/null | wc -l)" = 0
cmd c1 "open 5"	# no filter: all of them get in
check_cmp "no filter: $C1 holds 11" "$(wait_est "$C1" 11 30)" = 11
if ! start_daemon; then bad "floodgated first start" "$(tail -5 "$DLOG")"; fg_finish; fi
check_cmp "first start: the seed counts the 11 that exist" "$(conns "$C1")" = 11
check "the daemon logs the seed" grep -qE "concurrency caps: seed: seeded 21 connections" "$DLOG"
cmd c1 "open 2"
sleep 1.2
check_cmp "over its cap (11 > 10): a new SYN is refused" "$(synsent "$C1")" = 2
cmd c1 "close 3"
c=$(after_close "$C1" 8 "$CAP" 30)
if [ "$c" = 8 ] || [ "$c" = "$CAP" ]; then ok "3 closed: 8 counted (measured $c; $CAP: the 2 waiting got in already)"
else bad "3 closed: 8 counted" "expected 8 (or $CAP, all established), measured '$c'"; fi
check_cmp "... and the 2 waiting get in (10)" "$(wait_est "$C1" "$CAP" 60)" = "$CAP"
cmd c1 closepending

# --- reset by the server: no FIN from the client ----------------------------------------
kill -USR1 "$SPID"
fg_wait_for "$SACK" '^reset' 20 || bad "server resets" "no acknowledgement"
t0=$SECONDS
c=$(wait_conns "$C1" 0 $((RECONCILE_S * 10 + 10)))
check_cmp "server reset: $C1's count back to 0 within the reconcile period (${RECONCILE_S} s + 1)" "$c" = 0
cmd c1 closeall
cmd c2 closeall
cmd c1 "open 12"
check_cmp "after the reset $C1 is not locked out: $CAP get in" "$(wait_est "$C1" "$CAP" 30)" = "$CAP"

# --- the client vanishes: the server's keepalive ends the connections -------------------
ip -n "$(fg_ns_name cli)" link set v0 down
t0=$SECONDS
c=$(wait_conns "$C1" 0 150)
check_cmp "client gone silently: the kernel's keepalive closes, count 0 (in $((SECONDS - t0)) s)" "$c" = 0
ip -n "$(fg_ns_name cli)" link set v0 up
cmd c1 closeall
sleep 0.5
cmd c1 "open 12"
check_cmp "back again, $C1 is not locked out: $CAP get in" "$(wait_est "$C1" "$CAP" 50)" = "$CAP"
cmd c1 closepending

# --- a spoofed SYN flood -------------------------------------------------------------------
keys0=$(status_get concurrency.keys)
if [ -x "$FGEN" ]; then
	cmd c1 "open 3"
	fg_ns_exec cli "$FGEN" -i v0 -d "$S4" --syn --dport "$PORT" -s 10.99.0.0/16 --random \
		-r 20000 -t 2 --dst-mac "$MAC" > "$FG_TMP/fgen.out" 2>&1
	sent=$(sed -nE 's/.*sent ([0-9]+).*/\1/p' "$FG_TMP/fgen.out" | head -1)
	fg_snap "$PIN"
	check_cmp "spoofed SYN flood sent" "${sent:-0}" -gt 10000
	check_cmp "spoofed SYNs passed XDP (each under its own cap)" "$(fg_stat "$FG_SNAP" web pass)" -gt 10000
	check_cmp "the flood created no count entry (keys before: $keys0)" "$(status_get concurrency.keys)" -le "$keys0"
	check_cmp "... and the real client's cap holds: still $CAP" "$(est "$C1")" = "$CAP"
	check_cmp "... its 3 new SYNs refused" "$(synsent "$C1")" = 3
	cmd c1 closepending
else
	skip "spoofed SYN flood" "$FGEN not built"
fi

# --- a reload that lowers the cap cuts nothing -------------------------------------------
policy 5
check "reload to a cap of 5" bash -c "'$FG' reload > /dev/null"
check "the daemon logs the lower cap" grep -q "rule web: concurrency 10 -> 5 connections" "$DLOG"
sleep 0.5
check_cmp "lowered cap: the 10 open connections stay" "$(est "$C1")" = "$CAP"
cmd c1 "open 1"
sleep 1.2
check_cmp "lowered cap: a new SYN is refused" "$(synsent "$C1")" = 1
cmd c1 "close 6"
c=$(after_close "$C1" 4 5 30)
if [ "$c" = 4 ] || [ "$c" = 5 ]; then ok "6 closed: 4 counted (measured $c; 5: the waiting one got in already)"
else bad "6 closed: 4 counted" "expected 4 (or 5, all established), measured '$c'"; fi
check_cmp "... under the new cap, the waiting one gets in" "$(wait_est "$C1" 5 60)" = 5

# --- shadow: at the cap it passes, counted --------------------------------------------
"$FG" mode shadow > /dev/null 2>&1
ev0=$(fg_event "$PIN" web cap_shadow)
cmd c1 "open 2"
check_cmp "shadow mode: over the cap, they get in" "$(wait_est "$C1" 7 30)" = 7
check_cmp "shadow mode: counted as cap_shadow" "$(fg_event "$PIN" web cap_shadow)" -ge $((ev0 + 2))
"$FG" mode enforce > /dev/null 2>&1

# --- metrics, then SIGTERM -------------------------------------------------------------------
if command -v curl > /dev/null; then
	drops=$(fg_stat "$PIN" web cap)
	fixed0=$(status_get concurrency.corrections.connections)
	sleep "$RECONCILE_S"	# the per-rule gauges come from the last reconcile
	m=$(fg_ns_exec srv curl -s "http://127.0.0.1:$MPORT/metrics")
	cap_drops=$(echo "$m" | sed -nE 's/^floodgate_packets_total\{rule="web",outcome="cap"\} ([0-9]+)$/\1/p')
	fixed=$(echo "$m" | sed -nE 's/^floodgate_conn_reconcile_corrections_total\{unit="connections"\} ([0-9]+)$/\1/p')
	held=$(echo "$m" | sed -nE 's/^floodgate_conn_connections\{rule="web"\} ([0-9]+)$/\1/p')
	atcap=$(echo "$m" | sed -nE 's/^floodgate_conn_sources_at_cap\{rule="web"\} ([0-9]+)$/\1/p')
	check_cmp "metrics: at-cap drops of web (this pin dir's, as stats said)" "${cap_drops:-none}" -ge "$drops"
	check_cmp "metrics: reconcile corrections, as status says" "${fixed:-none}" = "$fixed0"
	check_cmp "metrics: connections counted under web" "${held:-none}" = 7
	check_cmp "metrics: sources at web's cap of 5" "${atcap:-none}" = 1
	check_cmp "metrics: the way" "$(echo "$m" | sed -nE 's/^floodgate_conn_way\{way="([a-z_]+)"\} 1$/\1/p')" = "$WAY"
	rec_us=$(echo "$m" | awk '/^floodgate_conn_reconcile_seconds / { printf "%d", $2 * 1e6 }')
	check_cmp "metrics: the last reconcile (us) took far less than its period" "${rec_us:-none}" -lt 500000
else
	skip "metrics" "no curl"
fi

# --- a second daemon, in the client's namespace -------------------------------------------
# Its own cap (3) on the same port, for a server in cli and a client in
# srv: both daemons' programs are on the same hooks (the cgroup v2 root for
# sock_ops, the tracepoint for tp_btf) and see every namespace's sockets;
# each counts its own namespace's only.
PORT2=$PORT
PIN2=$(fg_pin conn2)
DLOG2=$FG_TMP/daemon2.log
cat > "$FG_TMP/policy2.yaml" <<YAML
interfaces: [v0]
max_sources: 4096
concurrency: {reconcile: ${RECONCILE_S}s, max_keys: 4096}
rules:
  - name: other
    match: {proto: tcp, dport: $PORT2}
    per_source: {concurrency: 3, handshake_timeout: 3s}
YAML
SACK2=$FG_TMP/server2.ack
fg_bg cli "$FG_PY" "$FG_TMP/server.py" "$PORT2" "$SACK2" > "$FG_TMP/server2.log" 2>&1
fg_wait_for "$SACK2" '^ready' 50 || bad "second server starts" "$(cat "$FG_TMP/server2.log")"
client_start c3 "$S4" "$C1" srv "$PORT2"
D1=$FG_DPID
if fg_daemon_start cli "$PIN2" "$FG_TMP/policy2.yaml" "$DLOG2"; then
	D2=$FG_DPID
	FG_DPID=$D1
	held=$(conns "$C1")
	cmd c3 "open 5"
	est3=$(fg_ns_exec srv ss -Htn state established "dport = :$PORT2" 2>/dev/null | wc -l)
	for _ in $(seq 30); do
		[ "$est3" = 3 ] && break
		sleep 0.1
		est3=$(fg_ns_exec srv ss -Htn state established "dport = :$PORT2" 2>/dev/null | wc -l)
	done
	check_cmp "second daemon: its cap of 3 holds for its own server" "$est3" = 3
	c2n=$(FLOODGATE_PIN_DIR=$PIN2 conns "$S4")
	check_cmp "second daemon counts $S4's connections to its server" "$c2n" = 3
	check_cmp "the first daemon still counts $C1 as before" "$(conns "$C1")" = "$held"
	check_cmp "the first daemon counts nothing of the other namespace's ($S4)" "$(conns "$S4")" = 0
	check_cmp "the second counts nothing of the first's ($C1)" "$(FLOODGATE_PIN_DIR=$PIN2 conns "$C1")" = 0
	"$FG" --pin-dir "$PIN2" status > "$FG_TMP/status2.txt" 2>&1
	check "second daemon: its status says it counts through $WAY" \
		grep -qE "^concurrency: counting \(link pinned\) through $WAY," "$FG_TMP/status2.txt"
	sleep "$RECONCILE_S"	# both reconcile at least once, each over its own namespace
	check_cmp "after both reconciled: the second still 3" "$(FLOODGATE_PIN_DIR=$PIN2 conns "$S4")" = 3
	check_cmp "... the first still $held" "$(conns "$C1")" = "$held"
	fg_bg_stop "$D2" TERM || bad "the second floodgated exits 0 on SIGTERM"
	check_cmp "second daemon stopped: its pin dir removed" "$(ls -A "$PIN2" 2>/dev/null | wc -l)" = 0
	cmd c1 "close 1"
	check_cmp "the first daemon's counting goes on without the other's links: $((held - 1))" \
		"$(wait_conns "$C1" $((held - 1)) 30)" = $((held - 1))
else
	FG_DPID=$D1
	bad "a second floodgated starts in the other namespace" "$(tail -5 "$DLOG2")"
fi
cmd c3 closeall

cmd c1 closeall
cmd c2 closeall
fg_daemon_stop TERM
check_cmp "SIGTERM: nothing left in the pin dir" "$(ls -A "$PIN" 2>/dev/null | wc -l)" = 0

# --- no cap, no counter: loaded by the reload that adds one, unloaded by the one that
# removes it (issue 25: a cap-less policy pays no verification of the counter) ---------
# conn_progs: the counter's programs (fgc_*) over this pin dir's fgc_ctl, by id
conn_progs() {
	local id
	id=$(bpftool -j map show pinned "$PIN/fgc_ctl" 2>/dev/null | fg_json_get - id) || { echo none; return; }
	bpftool -j prog show 2>/dev/null | "$FG_PY" -c 'import json, sys
print(sum(1 for p in json.load(sys.stdin)
          if p.get("name", "").startswith("fgc_") and int(sys.argv[1]) in p.get("map_ids", [])))' "$id"
}
policy_nocap() {
	cat > "$FG_TMP/policy.yaml" <<YAML
interfaces: [v1]
max_sources: 4096
concurrency: {reconcile: ${RECONCILE_S}s, max_keys: 4096}
rules:
  - name: web
    match: {proto: tcp, dport: $PORT}
    per_source: {rate: 1000/s, burst: 1000}
YAML
}
if command -v bpftool > /dev/null; then
	policy_nocap
	DLOG=$FG_TMP/daemon3.log
	if start_daemon; then
		check_cmp "no cap: the counter's maps are pinned (XDP shares them)" \
			"$(test -e "$PIN/fgc_count" && echo yes)" = yes
		check "no cap: no counting link pinned" test ! -e "$PIN/fgc_link" -a ! -e "$PIN/fgc_rlink"
		check_cmp "no cap: no counter program loaded over this pin dir's maps" "$(conn_progs)" = 0
		check "no cap: the daemon says the counter is not loaded" \
			grep -q "concurrency caps: no rule has a cap: the $WAY counter is not loaded" "$DLOG"
		"$FG" status > "$FG_TMP/status3.txt" 2>&1
		check "no cap: status says it does not count, and why" \
			grep -q "^concurrency: not counting: no rule has a cap" "$FG_TMP/status3.txt"
		check_cmp "no cap: status --json: way none" "$(status_get concurrency.way)" = none
		cmd c1 "open 4"
		check_cmp "no cap: $C1's 4 connections get in" "$(wait_est "$C1" 4 30)" = 4
		policy 3
		check "reload adding a cap of 3" bash -c "'$FG' reload > /dev/null"
		check "the reload loaded the counter" \
			grep -q "concurrency caps: counting through $WAY" "$DLOG"
		check "... its link pinned" test -e "$PIN/fgc_link"
		check_cmp "... its programs over this pin dir's maps" "$(conn_progs)" -gt 0
		check_cmp "... its seed counts the 4 that exist" "$(wait_conns "$C1" 4 30)" = 4
		check_cmp "status --json: counting through $WAY" \
			"$(status_get concurrency.counting) $(status_get concurrency.way)" = "true $WAY"
		cmd c1 "open 1"
		sleep 1.2
		check_cmp "over the new cap (4 > 3): a new SYN is refused" "$(synsent "$C1")" = 1
		cmd c1 closepending
		policy_nocap
		check "reload removing the last cap" bash -c "'$FG' reload > /dev/null"
		check "the daemon says the counter stopped" \
			grep -q "concurrency caps: no rule has a cap: the $WAY counter is stopped and unloaded" "$DLOG"
		check "... its links unpinned" test ! -e "$PIN/fgc_link" -a ! -e "$PIN/fgc_rlink"
		check_cmp "... its programs unloaded" "$(wait_val conn_progs x 0 30)" = 0
		check_cmp "status --json: not counting, way none" \
			"$(status_get concurrency.counting) $(status_get concurrency.way)" = "false none"
		cmd c1 "open 1"
		check_cmp "no cap again: a fifth connection gets in" "$(wait_est "$C1" 5 30)" = 5
		cmd c1 closeall
		fg_daemon_stop TERM
		check_cmp "SIGTERM: nothing left in the pin dir" "$(ls -A "$PIN" 2>/dev/null | wc -l)" = 0
	else
		bad "floodgated starts with a cap-less policy" "$(tail -5 "$DLOG")"
	fi
else
	skip "no cap, no counter" "bpftool missing"
fi
fg_finish
