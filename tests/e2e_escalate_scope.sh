#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# End to end: escalation's scope (docs/escalation.md; issue 21). A real
# client (namespace c, 10.81.0.1) talks TCP to a server behind floodgated
# (namespace b), one connection every 0.2 s, each sending a line and reading
# it back. An attacker (namespace x, its own veth into b) sends 500 UDP
# datagrams/s to port 53 carrying the client's address (tools/fgen -s). The
# UDP rule escalates (after: 2s). With scope: rule (the default) the entry
# is scoped to the UDP rule: the client's TCP to the other rule passes
# throughout, the spoofed flood is refused as rt_deny on the UDP rule's
# row. With scope: address the entry denies the whole address and the
# client's TCP fails until the entry is deleted. Real frames over veth,
# judged at the client (connections that completed) and in floodgate's
# counters. Needs root. Cleans up its namespaces, processes, pin dir.
# Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
fg_init --root --pin escs "$FGD" "$FG" "$FGEN"
export FLOODGATE_RUN_DIR=$FG_TMP/run
mkdir -p "$FLOODGATE_RUN_DIR"

CLIENT=10.81.0.1
SERVER=10.81.0.2
if ! { fg_ns_create c && fg_ns_create b && fg_ns_create x &&
       fg_ns_quiet c && fg_ns_quiet b && fg_ns_quiet x &&
       fg_veth_create c v0 b v1 && fg_veth_create x v0 b v2 &&
       fg_ns_addr c v0 "$CLIENT/24" && fg_ns_addr b v1 "$SERVER/24" &&
       fg_ns_addr x v0 10.82.0.1/24 && fg_ns_addr b v2 10.82.0.2/24; }; then
	bad setup "namespaces and veth pairs"; fg_finish
fi
MAC2=$(fg_ns_mac b v2)
TPORT=$((20000 + $$ % 20000))
RATE=500	# spoofed datagrams/s, as in the issue
FLOOD_S=6

write_policy() {	# write_policy SCOPE
	cat > "$FG_TMP/policy.yaml" <<YAML
interfaces: [v1, v2]
max_sources: 4096
rules:
  - name: dns
    match: {proto: udp, dport: 53}
    per_source: {rate: 10/s, burst: 10, prefix_v4: 32}
    escalate: {after: 2s, for: 60s, scope: $1}
  - name: web
    match: {proto: tcp, dport: $TPORT}
    per_source: {rate: 1000/s, burst: 1000, prefix_v4: 32}
YAML
}

cat > "$FG_TMP/server.py" <<'PY'
import socket, sys, threading
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("0.0.0.0", int(sys.argv[1])))
ls.listen(64)
print("listening", flush=True)
def serve(c):
    with c:
        c.settimeout(2)
        try:
            d = c.recv(64)
            if d:
                c.sendall(d)
        except OSError:
            pass
while True:
    c, _ = ls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
# client.py HOST PORT SECS: a connection every 0.2 s for SECS, each line
# "T ok|fail" (T: seconds since the start)
cat > "$FG_TMP/client.py" <<'PY'
import socket, sys, time
host, port, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
t0 = time.monotonic()
while time.monotonic() - t0 < secs:
    t = time.monotonic()
    r = "fail"
    try:
        with socket.create_connection((host, port), timeout=0.5) as s:
            s.settimeout(0.5)
            s.sendall(b"hello\n")
            if s.recv(64) == b"hello\n":
                r = "ok"
    except OSError:
        pass
    print("%.2f %s" % (t - t0, r), flush=True)
    time.sleep(max(0, 0.2 - (time.monotonic() - t)))
PY

fg_bg b "$FG_PY" "$FG_TMP/server.py" "$TPORT" > "$FG_TMP/server.log" 2>&1
SPID=$FG_BG_PID
n=0; while ! grep -q listening "$FG_TMP/server.log" && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
write_policy rule
fg_daemon_up b "$FG_TMP/policy.yaml" "floodgated starts"
ok "floodgated on v1 (the client's side) and v2 (the attacker's), a TCP server on :$TPORT"

deny_json() { "$FG" deny list --json > "$FG_TMP/deny.json" 2> "$FG_TMP/deny.err"; }
# entry_of PREFIX: "scope rule" of the first entry of PREFIX, "none" if none
entry_of() {
	deny_json
	"$FG_PY" -c 'import json, sys
for e in json.load(open(sys.argv[1]))["entries"]:
    if e["prefix"] == sys.argv[2] and not e["expired"]:
        print(e["scope"], e["rule"] or "-"); break
else:
    print("none")' "$FG_TMP/deny.json" "$1"
}

# client_start SECS: client.py for SECS in the background, into client.out
client_start() {
	fg_bg c "$FG_PY" "$FG_TMP/client.py" "$SERVER" "$TPORT" "$1" > "$FG_TMP/client.out" 2>&1
	CPID=$FG_BG_PID
}
counts() { awk '{ n[$2]++ } END { printf "%d %d", n["ok"], n["fail"] }' "$FG_TMP/client.out"; }
# client_wait: until it ends; its connections in okc and failc
client_wait() {
	while kill -0 "$CPID" 2> /dev/null; do sleep 0.2; done
	read -r okc failc < <(counts)
}
# drill SECS: the client for SECS in the background, the spoofed flood
# for FLOOD_S from 1 s on; prints nothing, leaves client.out, flood.json;
# the frames sent in sent, the client's connections in okc and failc, the
# seconds from the flood's start to the escalation in ESC_AT ("" if none)
drill() {
	client_start "$1"
	sleep 1
	FT0=$(date +%s.%N)
	fg_ns_exec x "$FGEN" -i v0 --dst-mac "$MAC2" -s "$CLIENT" -d "$SERVER" --dport 53 \
		-r "$RATE" -t "$FLOOD_S" --json > "$FG_TMP/flood.json" 2> "$FG_TMP/flood.err" &
	FGP=$!
	ESC_AT=""
	local n=0
	while [ $n -lt $((FLOOD_S * 10)) ]; do
		if [ "$(entry_of "$CLIENT/32")" != none ]; then
			ESC_AT=$(awk -v a="$FT0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
			break
		fi
		sleep 0.1; n=$((n + 1))
	done
	wait "$FGP"
	client_wait
	sent=$(fg_json_get "$FG_TMP/flood.json" packets)
}

# --- scope: rule (the default) -------------------------------------------------------------
g0=$(fg_stat "$PIN" _global rt_deny); d0=$(fg_stat "$PIN" dns rt_deny); w0=$(fg_stat "$PIN" web rt_deny)
drill $((FLOOD_S + 3))
expect "scope rule: $RATE spoofed datagrams/s carrying $CLIENT escalate it" "[ -n '$ESC_AT' ]" \
	"$sent sent in $FLOOD_S s" "escalated" "${ESC_AT:-not} s after the flood began"
check_cmp "scope rule: the entry is scoped to the UDP rule" "$(entry_of "$CLIENT/32")" = "rule dns"
expect "scope rule: the real client's TCP to the other rule passes throughout" \
	"[ $failc = 0 ] && [ $okc -ge $(( (FLOOD_S + 3) * 5 * 6 / 10 )) ]" \
	"a connection every 0.2 s for $((FLOOD_S + 3)) s" "all complete" "$okc ok, $failc failed"
dd=$(( $(fg_stat "$PIN" dns rt_deny) - d0 ))
expect "scope rule: the spoofed flood after the escalation is rt_deny on the dns row" "[ $dd -gt 0 ]" \
	"$sent sent" "> 0" "$dd"
check_cmp "scope rule: no rt_deny on the web row" "$(( $(fg_stat "$PIN" web rt_deny) - w0 ))" = 0
check_cmp "scope rule: no rt_deny on the global row (nothing denied before the rules)" \
	"$(( $(fg_stat "$PIN" _global rt_deny) - g0 ))" = 0
check "the daemon logged the scope" \
	grep -q "escalating $CLIENT/32 (rule dns): .*for this rule's traffic only" "$DLOG"
if "$FG" deny list > "$FG_TMP/deny.txt" 2>&1 && grep -q "^$CLIENT/32 .* deny  rule" "$FG_TMP/deny.txt" &&
   grep -q "rule dns (id [0-9]*) only; by floodgated (escalation)" "$FG_TMP/deny.txt"; then
	ok "deny list shows the scope (SCOPE rule, the rule's name)"
else
	bad "deny list shows the scope" "$(one_line < "$FG_TMP/deny.txt")"
fi
fg_json_check "deny list --json with a scoped entry" rtlist "$FG_TMP/deny.json"
"$FG" deny del "$CLIENT/32" > "$FG_TMP/del.out" 2>&1
check_cmp "deny del removes the scoped entry" "$(entry_of "$CLIENT/32")" = none
SR="$sent sent, escalated after ${ESC_AT:-?} s, client $okc ok / $failc failed, dns rt_deny $dd"

# --- scope: address: the whole address is denied ----------------------------------------------
write_policy address
"$FG" reload > "$FG_TMP/reload.out" 2>&1 || bad "reload with scope: address" "$(one_line < "$FG_TMP/reload.out")"
sleep 4	# the throttle log forgets the source (3 s quiet) before the next stretch
g0=$(fg_stat "$PIN" _global rt_deny)
drill $((FLOOD_S + 3))
expect "scope address: the spoofed flood escalates the client's address" "[ -n '$ESC_AT' ]" \
	"$sent sent" "escalated" "${ESC_AT:-not} s after the flood began"
check_cmp "scope address: the entry denies the whole address" "$(entry_of "$CLIENT/32")" = "address -"
# the connections after the escalation fail (the entry lasts 60 s)
late=$(awk -v e="${ESC_AT:-99}" '$1 > e + 1.5 { n[$2]++ } END { printf "%d %d", n["ok"], n["fail"] }' "$FG_TMP/client.out")
read -r lok lfail <<< "$late"
expect "scope address: the real client's TCP fails once its address is denied" \
	"[ $lok = 0 ] && [ $lfail -ge 3 ]" "connections from 1.5 s after the escalation on" \
	"all fail" "$lok ok, $lfail failed (in all $okc ok, $failc failed)"
gd=$(( $(fg_stat "$PIN" _global rt_deny) - g0 ))
check_cmp "scope address: rt_deny on the global row" "$gd" -gt 0
SA="$sent sent, escalated after ${ESC_AT:-?} s, client after it $lok ok / $lfail failed, global rt_deny $gd"
"$FG" deny del "$CLIENT/32" > /dev/null 2>&1
client_start 1.5
client_wait
check_cmp "after deny del the client connects again" "$failc $((okc > 0))" = "0 1"
echo "# scope rule:    $SR"
echo "# scope address: $SA"

fg_daemon_stop TERM
fg_bg_stop "$SPID" TERM
fg_finish
