#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Fleet-wide limits end to end (issue 10, docs/fleet.md): three hosts, each
# a namespace with its own floodgated on its own veth and pin dir, one
# redis-server started here on a Unix socket (Unix sockets cross network
# namespaces), one fleet rule. Generators g1..g3 flood their host at
# different rates; admission is counted at each receiver's UDP stack
# (/proc/net/snmp Udp NoPorts) and by floodgate's own counters. Checks:
#   - the fleet admits burst + rate x T within 5 %, split roughly by demand;
#   - with one node idle the other two share the budget, the idle one holds
#     nothing;
#   - the Redis traffic (INFO commandstats, EVALSHA calls / s) stays within
#     the documented nodes x rules / interval, whatever the packet rate;
#   - status and metrics show the fleet; shadow and the kill switch work on a
#     fleet rule; a reload keeps an unchanged engine and restarts an edited
#     one on new keys; SIGTERM hands the leases back and withdraws the node
#     at once.
# Needs root. Cleans up its namespaces, daemons, pin dirs and Redis.
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
. tests/fleet_lib.sh
fl_init "$FGD" "$FG" "$FGEN"

RATE=1000; BURST=1000		# the fleet rule, packets
IVAL_S=0.2			# lease_interval: the default, 200ms
T1=20; T2=10			# flood seconds, phase 1 (three nodes) and 2 (one idle)
DEM=(0 3000 1500 500)		# g1..g3, frames/s: 5x the fleet rate in all
NODES=3; RULES=1
SOCK=$FG_TMP/redis.sock
RUN_GLOB="/run/floodgate/${FG_PIN_PREFIX##*/}"

fl_hosts 230
fl_redis_up "$SOCK"
ok "redis-server (pid $FL_REDIS_PID) on unix:$SOCK"

fl_hosts_start "unix:$SOCK" --metrics 127.0.0.1:9464 <<EOF
  - name: fleet-udp
    match: {proto: udp, dport: 9}
    fleet: {rate: $RATE/s, burst: $BURST, on_loss: local}
EOF
ok "three floodgated (pids ${FL_DPID[1]} ${FL_DPID[2]} ${FL_DPID[3]}) on h1/h2/h3, one pin dir each"

# every engine answered by Redis and counting three nodes
wait_fleet_ok() {
	local n t=50 st nodes
	while [ $t -gt 0 ]; do
		local all=1
		for n in 1 2 3; do
			fl_status "${FL_PIN[n]}" "$FG_TMP/st$n.json"
			read -r st nodes < <(fl_rule_get "$FG_TMP/st$n.json" fleet-udp state nodes)
			[ "$st" = ok ] && [ "$nodes" = "$NODES" ] || all=0
		done
		[ $all = 1 ] && return 0
		sleep 0.2; t=$((t - 1))
	done
	return 1
}
if wait_fleet_ok; then
	ok "status: every node's engine is ok and counts $NODES nodes"
else
	bad "status: engines ok with $NODES nodes" "$(cat "$FG_TMP"/st*.json | one_line 600)"
fi
fg_json_check "status --json with a fleet rule" status "$FG_TMP/st1.json"
read -r fnode fredis < <(fg_json_get "$FG_TMP/st1.json" fleet.node fleet.redis)
check_cmp "status names the node" "$fnode" = h1
check_cmp "status names the Redis URL" "$fredis" = "unix:$SOCK"

# flood N RATE SECS: fgen from gN to hN's port 9, JSON into $FG_TMP/fgen-N.json
flood() {
	fg_ns_exec "g$1" "$FGEN" -i v0 --dst-mac "${MAC[$1]}" -s "10.230.$1.1" -d "10.230.$1.2" \
		--dport 9 -r "$2" -t "$3" --json > "$FG_TMP/fgen-$1.json" 2> "$FG_TMP/fgen-$1.err"
}
# pass counters of every host, "p1 p2 p3"
passes() {
	local n
	for n in 1 2 3; do printf '%s ' "$(fg_stat "${FL_PIN[n]}" fleet-udp pass)"; done
	echo
}
noports() {
	local n
	for n in 1 2 3; do printf '%s ' "$(fl_noports "h$n")"; done
	echo
}
# phase NAME SECS NODE... : flood from the given generators at once, then
# sets ADM[n] (received at hN), PASS[n] (floodgate's pass), SENT[n], T (s)
phase() {
	local secs=$1 n pids=() e; shift
	local -a n0 p0 n1 p1
	read -r -a n0 < <(noports); read -r -a p0 < <(passes)
	for n in "$@"; do
		flood "$n" "${DEM[n]}" "$secs" &
		pids+=("$!")
	done
	wait "${pids[@]}"
	sleep 0.3	# frames still in the peers' rings
	read -r -a n1 < <(noports); read -r -a p1 < <(passes)
	T=0
	for n in 1 2 3; do
		ADM[n]=$(( n1[n - 1] - n0[n - 1] )); PASS[n]=$(( p1[n - 1] - p0[n - 1] )); SENT[n]=0
	done
	for n in "$@"; do
		read -r "SENT[n]" e < <(fg_json_get "$FG_TMP/fgen-$n.json" packets elapsed_s)
		T=$(awk -v a="$T" -v b="$e" 'BEGIN { print (b > a) ? b : a }')
	done
}
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b ? 100 * a / b : 0 }'; }
# split_check NAME N...: each listed node's part of the admitted total is
# its part of the demand within 5 percentage points
split_check() {
	local name=$1 n tot=0 dem=0 got want line="" good=1; shift
	for n in "$@"; do tot=$((tot + ADM[n])); dem=$((dem + DEM[n])); done
	for n in "$@"; do
		got=$(pct "${ADM[n]}" "$tot"); want=$(pct "${DEM[n]}" "$dem")
		line+="h$n ${got}% (demand ${want}%) "
		awk -v g="$got" -v w="$want" 'BEGIN { d = g - w; exit !(d <= 5 && d >= -5) }' || good=0
	done
	if [ $good = 1 ]; then ok "$name split by demand within 5 points: $line"
	else bad "$name split by demand within 5 points" "$line"; fi
}

# --- 1. three nodes at 3000, 1500 and 500/s -------------------------------------
c0=$(fl_evalsha_calls); t0=$(fl_now)
phase "$T1" 1 2 3
c1=$(fl_evalsha_calls); t1=$(fl_now)
tot=$((ADM[1] + ADM[2] + ADM[3])); ptot=$((PASS[1] + PASS[2] + PASS[3]))
exp=$(awk -v t="$T" 'BEGIN { printf "%d", '"$BURST"' + '"$RATE"' * t + 0.5 }')
check_near "fleet, 3 nodes, ${T} s at ${DEM[1]}+${DEM[2]}+${DEM[3]}/s (sent $((SENT[1] + SENT[2] + SENT[3]))): admitted at the receivers (burst + rate x T)" \
	"$tot" "$exp" 5
if [ "$ptot" -ge "$tot" ] && within "$tot" "$ptot" 1; then
	ok "receivers got what floodgate passed: $tot received, $ptot passed"
else
	bad "receivers vs floodgate's pass counters" "$tot received, $ptot passed"
fi
split_check "3 nodes" 1 2 3
rps=$(awk -v c="$((c1 - c0))" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", c / (b - a) }')
fig=$(awk -v n=$NODES -v r=$RULES -v i=$IVAL_S 'BEGIN { printf "%.1f", n * r / i }')
expect "Redis EVALSHA/s during a $((SENT[1] + SENT[2] + SENT[3]))-frame flood (nodes x rules / interval = $fig)" \
	"awk -v x=$rps -v f=$fig 'BEGIN { exit !(x <= f * 1.1 && x >= f * 0.7) }'" \
	"$((c1 - c0)) calls in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s" \
	"<= $fig/s (+10 %)" "$rps/s"

# --- 2. h3 idle: h1 and h2 share the budget ------------------------------------------
sleep 2		# the bucket refills to its burst; h3's tokens are taken back
fl_status "${FL_PIN[3]}" "$FG_TMP/idle0.json"
g0=$(fl_rule_get "$FG_TMP/idle0.json" fleet-udp granted)
( sleep 5; fl_status "${FL_PIN[3]}" "$FG_TMP/idle1.json"; fl_status "${FL_PIN[1]}" "$FG_TMP/busy1.json" ) &
probe=$!
phase "$T2" 1 2
wait "$probe"
fl_status "${FL_PIN[3]}" "$FG_TMP/idle2.json"
g1=$(fl_rule_get "$FG_TMP/idle2.json" fleet-udp granted)
read -r share3 tok3 nodes3 < <(fl_rule_get "$FG_TMP/idle1.json" fleet-udp share tokens nodes)
share1=$(fl_rule_get "$FG_TMP/busy1.json" fleet-udp share)
exp=$(awk -v t="$T" 'BEGIN { printf "%d", '"$BURST"' + '"$RATE"' * t + 0.5 }')
check_near "fleet, h3 idle, ${T} s at ${DEM[1]}+${DEM[2]}/s: h1 + h2 admitted (burst + rate x T)" \
	"$((ADM[1] + ADM[2]))" "$exp" 5
check_cmp "idle h3 received nothing" "${ADM[3]}" -eq 0
split_check "h3 idle" 1 2
expect "idle h3 mid-flood: share 0, no tokens, still one of $NODES nodes" \
	"awk -v s='$share3' -v t='$tok3' -v n='$nodes3' 'BEGIN { exit !(s == 0 && t == 0 && n == $NODES) }'" \
	"nothing to h3" "share 0, tokens 0, nodes $NODES" "share $share3, tokens $tok3, nodes $nodes3"
check_cmp "idle h3 was granted nothing during phase 2" "$((g1 - g0))" -eq 0
expect "busy h1's share mid-flood (demand 3000 of 4500)" \
	"awk -v s='$share1' 'BEGIN { exit !(s >= 0.6 && s <= 0.73) }'" "3000/s and 1500/s" "0.667" "$share1"

# --- 3. Redis load while idle, status, metrics ---------------------------------------------
c0=$(fl_evalsha_calls); t0=$(fl_now)
sleep 3
c1=$(fl_evalsha_calls); t1=$(fl_now)
rps=$(awk -v c="$((c1 - c0))" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", c / (b - a) }')
expect "Redis EVALSHA/s with no traffic: the same figure ($fig/s): lease traffic follows nodes x rules, not packets" \
	"awk -v x=$rps -v f=$fig 'BEGIN { exit !(x <= f * 1.1 && x >= f * 0.7) }'" \
	"no frames" "<= $fig/s (+10 %)" "$rps/s"
"$FG" --pin-dir "${FL_PIN[1]}" status > "$FG_TMP/status.txt" 2>&1
if grep -q '^fleet: *node h1, redis unix:' "$FG_TMP/status.txt" &&
   grep -qE '^  fleet-udp +leased: ' "$FG_TMP/status.txt"; then
	ok "status text: the fleet line and the rule's lease"
else
	bad "status text" "$(one_line 400 < "$FG_TMP/status.txt")"
fi
fg_ns_exec h1 curl -sf --max-time 5 http://127.0.0.1:9464/metrics > "$FG_TMP/metrics.txt"
sleep 1.2	# one more tick: the page is rendered per tick
fg_ns_exec h1 curl -sf --max-time 5 http://127.0.0.1:9464/metrics > "$FG_TMP/metrics.txt"
if grep -q '^floodgate_fleet_state{rule="fleet-udp",state="ok"} 1$' "$FG_TMP/metrics.txt" &&
   grep -q '^floodgate_fleet_nodes{rule="fleet-udp"} 3$' "$FG_TMP/metrics.txt" &&
   grep -qE '^floodgate_fleet_granted_total\{rule="fleet-udp"\} [1-9]' "$FG_TMP/metrics.txt" &&
   grep -qE '^floodgate_fleet_round_seconds [0-9.]+$' "$FG_TMP/metrics.txt"; then
	ok "metrics: fleet state ok, 3 nodes, grants, round time"
else
	bad "metrics" "$(grep fleet "$FG_TMP/metrics.txt" | head -20 | one_line 600)"
fi

# --- 4. shadow, the kill switch and reload on a fleet rule ---------------------------------
"$FG" --pin-dir "${FL_PIN[1]}" mode shadow > /dev/null 2>&1 || bad "mode shadow on h1"
phase 2 1
sh=$(( $(fg_stat "${FL_PIN[1]}" fleet-udp shadow) ))
expect "shadow on h1: everything delivered, the fleet's refusals counted as would-drop" \
	"[ ${ADM[1]} -ge $((SENT[1] * 99 / 100)) ] && [ $sh -gt 0 ] && [ ${PASS[1]} -lt $((SENT[1] / 2)) ]" \
	"${SENT[1]}" "all delivered, passes at the fleet's rate" "${ADM[1]} delivered, ${PASS[1]} passed, would-drop $sh so far"
"$FG" --pin-dir "${FL_PIN[1]}" mode enforce > /dev/null 2>&1 || bad "mode enforce on h1"
fl_status "${FL_PIN[1]}" "$FG_TMP/by0.json"
o0=$(fl_rule_get "$FG_TMP/by0.json" fleet-udp offered)
"$FG" --pin-dir "${FL_PIN[1]}" bypass on > /dev/null 2>&1 || bad "bypass on h1"
b0=$(fg_stat "${FL_PIN[1]}" _global bypass)
phase 2 1
b1=$(fg_stat "${FL_PIN[1]}" _global bypass)
"$FG" --pin-dir "${FL_PIN[1]}" bypass off > /dev/null 2>&1 || bad "bypass off h1"
fl_status "${FL_PIN[1]}" "$FG_TMP/by1.json"
o1=$(fl_rule_get "$FG_TMP/by1.json" fleet-udp offered)
expect "kill switch on h1: everything passes untouched, no demand reaches the fleet" \
	"[ ${ADM[1]} -ge $((SENT[1] * 99 / 100)) ] && [ $((b1 - b0)) -ge ${ADM[1]} ] && [ $((o1 - o0)) = 0 ]" \
	"${SENT[1]}" "all delivered as bypass, offered +0" \
	"${ADM[1]} delivered, bypass +$((b1 - b0)), offered +$((o1 - o0))"

# reload: an unchanged fleet keeps its engine; an edited rule gets a new one (new keys)
fl_status "${FL_PIN[1]}" "$FG_TMP/rl0.json"
read -r key0 rounds0 < <(fl_rule_get "$FG_TMP/rl0.json" fleet-udp key rounds)
"$FG" --pin-dir "${FL_PIN[1]}" reload > "$FG_TMP/reload.out" 2>&1 || bad "reload h1 (unchanged)" "$(one_line < "$FG_TMP/reload.out")"
sleep 1.2
fl_status "${FL_PIN[1]}" "$FG_TMP/rl1.json"
read -r key1 rounds1 st1 < <(fl_rule_get "$FG_TMP/rl1.json" fleet-udp key rounds state)
expect "reload, fleet unchanged: the same engine leases on (same key, rounds go on)" \
	"[ '$key1' = '$key0' ] && [ $rounds1 -gt $rounds0 ] && [ '$st1' = ok ] && ! grep -q 'restarting the lease engine' '$FG_TMP/h1.log'" \
	"SIGHUP" "key $key0, rounds > $rounds0, ok" "key $key1, rounds $rounds1, $st1"
sed -i "s|rate: $RATE/s, burst: $BURST|rate: $((2 * RATE))/s, burst: $BURST|" "$FG_TMP/h1.yaml"
"$FG" --pin-dir "${FL_PIN[1]}" reload > "$FG_TMP/reload.out" 2>&1 || bad "reload h1 (edited)" "$(one_line < "$FG_TMP/reload.out")"
fg_wait_for "$FG_TMP/h1.log" "fleet: node h1, redis .* 1 rule" 30
sleep 1.2
fl_status "${FL_PIN[1]}" "$FG_TMP/rl2.json"
read -r key2 st2 nodes2 < <(fl_rule_get "$FG_TMP/rl2.json" fleet-udp key state nodes)
expect "reload, fleet rule edited (rate x2): a new engine on new keys, alone in its bucket" \
	"[ '$key2' != '$key0' ] && [ '$st2' = ok ] && [ '$nodes2' = 1 ] && grep -q 'restarting the lease engine' '$FG_TMP/h1.log' && [ \$(fl_cli ZSCORE '${key0%:b}:n' h1 | wc -w) = 0 ]" \
	"rate $((2 * RATE))/s" "a new key, ok, 1 node, h1 gone from the old bucket" "key $key2, $st2, $nodes2 nodes"

# --- 5. SIGTERM: leases handed back, node withdrawn at once -------------------------------
key=$(fl_rule_get "$FG_TMP/st1.json" fleet-udp key)
nkey=${key%:b}:n
for n in 1 2 3; do
	fg_bg_stop "${FL_DPID[n]}" TERM || bad "floodgated on h$n exits 0 on SIGTERM"
done
FG_DPID=
left=$(fl_cli ZCARD "$nkey")
check_cmp "after SIGTERM every node left the fleet at once (ZCARD $nkey)" "$left" -eq 0
if grep -q "fleet: leases handed back" "$FG_TMP/h1.log"; then
	ok "h1 logged that it handed its lease back"
else
	bad "h1's release" "$(grep -i fleet "$FG_TMP/h1.log" | tail -3 | one_line)"
fi
# shellcheck disable=SC2086
stale=$(ls -d $RUN_GLOB* 2>/dev/null)
check_cmp "no fleet status file left in /run/floodgate" "${stale:-none}" = none
fl_redis_stop
fg_finish
