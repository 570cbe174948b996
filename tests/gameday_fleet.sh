#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Fleet game day (issue 10, docs/fleet.md sections 3 and 4): partitions and
# faults under a steady flood. Two hosts h1, h2 (namespaces, a floodgated
# each on its own veth and pin dir), a redis-server in its own namespace rd
# reached over one veth per host (so the path can be cut), three fleet
# rules that differ only in on_loss (open, closed, local), each flooded at
# 2x its fleet rate from both hosts' generators for the whole run. Drills:
#   1. Redis killed (SIGKILL), 3 s, then started again (empty)
#   2. Redis SIGSTOPped 3 s (slow, not dead), then SIGCONT
#   3. the network path to Redis cut 3 s (both hosts' links down), then up
#   4. Redis restarted empty at once (shorter than a lease)
#   5. a floodgated SIGKILLed mid-flood, restarted 3 s later
# Each checks: on_loss behaves as documented once the lease ran out (open
# passes all, closed none, local each host's static share) and is counted
# (FG_EV_FLEET_LOSS, fallbacks, fallback seconds, one log line on entry and
# one on exit); the fleet's admissions stay within the documented bound;
# recovery gives no burst; the daemon never blocks (status answers at once,
# its tick runs: a fresh throttle-log line during the outage) and the data
# path never stops deciding. FG_GAMEDAY=1 adds long outages (20 s) and a
# partial partition (one host cut off while the other keeps Redis).
# Needs root. Cleans up its namespaces, daemons, pin dirs and Redis.
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
. tests/fleet_lib.sh
fl_init "$FGD" "$FG" "$FGEN"
LONG=${FG_GAMEDAY:-0}; [ "$LONG" = 1 ] || LONG=0

RATE=300; BURST=900		# every fleet rule: a burst of 3 s of rate, so a burst shows
FLOOD=600			# frames/s per rule per host: 2x the fleet rate from each, 4x in all
IVAL=0.2; LEASE=0.4		# lease_interval default, lease = 2 intervals
O=$(awk -v r=$RATE -v l=$LEASE 'BEGIN { print r * 2 * l }')	# outstanding bound rate * 2L
OUT_S=3				# outage length
[ "$LONG" = 1 ] && OUT_S=20
RULES=(fl-open fl-closed fl-local)
PORT=([0]=9001 [1]=9002 [2]=9003)
RD_ADDR=(x 10.241.1.1 10.241.2.1)

# --- topology -----------------------------------------------------------------------
setup() {
	fg_ns_create rd && fg_ns_quiet rd || return 1
	for n in 1 2; do
		fg_ns_create "h$n" && fg_ns_create "g$n" && fg_ns_quiet "h$n" && fg_ns_quiet "g$n" &&
		fg_veth_create "g$n" v0 "h$n" h0 && fg_veth_create rd "r$n" "h$n" rdl &&
		fg_ns_addr "g$n" v0 "10.240.$n.1/24" && fg_ns_addr "h$n" h0 "10.240.$n.2/24" &&
		fg_ns_addr rd "r$n" "${RD_ADDR[n]}/24" && fg_ns_addr "h$n" rdl "10.241.$n.2/24" || return 1
	done
}
setup || { bad setup "namespaces and veth pairs"; fg_finish; }
MAC=(x "$(fg_ns_mac h1 h0)" "$(fg_ns_mac h2 h0)")
if ! fl_redis_tcp rd 0.0.0.0 6379; then
	bad "redis-server in namespace rd" "$(tail -3 "$FL_REDIS_LOG" | one_line)"; fg_finish
fi
ok "redis-server (pid $FL_REDIS_PID) in its own namespace, one veth to each host"

DPID=(x); PIN=(x)
start_daemon() {	# start_daemon N
	local n=$1
	fg_daemon_start "h$n" "${PIN[n]}" "$FG_TMP/h$n.yaml" "$FG_TMP/h$n.log" || return 1
	DPID[n]=$FG_DPID
}
for n in 1 2; do
	PIN[n]=$(fg_pin "h$n")
	fl_policy "$FG_TMP/h$n.yaml" "h$n" "redis://${RD_ADDR[n]}:6379" h0 200ms <<EOF
  - name: fl-open
    match: {proto: udp, dport: 9001}
    fleet: {rate: $RATE/s, burst: $BURST, on_loss: open}
  - name: fl-closed
    match: {proto: udp, dport: 9002}
    fleet: {rate: $RATE/s, burst: $BURST, on_loss: closed}
  - name: fl-local
    match: {proto: udp, dport: 9003}
    fleet: {rate: $RATE/s, burst: $BURST, on_loss: local}
  - name: thr
    match: {proto: udp, dport: 9009}
    per_source: {rate: 5/s, burst: 5}
EOF
	start_daemon "$n" || { bad "floodgated on h$n starts" "$(tail -5 "$FG_TMP/h$n.log" | one_line)"; fg_finish; }
done
ok "floodgated on h1 (pid ${DPID[1]}) and h2 (pid ${DPID[2]})"

# --- measuring --------------------------------------------------------------------------
# snap TAG: both hosts' counters and frames received on h0, and the time
# before the first read and after the last (a loaded machine stretches the
# reads: four CLI and ip calls, 0.1-0.3 s under load)
snap() {
	local n
	fl_now > "$FG_TMP/$1.t0"
	for n in 1 2; do
		fg_ns_rx "h$n" h0 > "$FG_TMP/$1-h$n.rx"
		fg_snap "${PIN[n]}" "$FG_TMP/$1-h$n.json"
	done
	fl_now > "$FG_TMP/$1.t"
}
tsec() { cat "$FG_TMP/$1.t"; }
# dt A B: from the end of snapshot A to the end of B (what two-sided
# checks and the log lines use); dt_hi A B: the longest window a counter
# of A..B can span, from A's first read to B's last, for upper bounds
dt() { awk -v a="$(tsec "$1")" -v b="$(tsec "$2")" 'BEGIN { printf "%.3f", b - a }'; }
dt_hi() { awk -v a="$(cat "$FG_TMP/$1.t0")" -v b="$(tsec "$2")" 'BEGIN { printf "%.3f", b - a }'; }
# d A B HOST RULE FIELD: counter growth on one host
d() { echo $(( $(fg_stat "$FG_TMP/$2-h$3.json" "$4" "$5") - $(fg_stat "$FG_TMP/$1-h$3.json" "$4" "$5") )); }
# fd A B RULE FIELD: growth over the fleet
fd() { echo $(( $(d "$1" "$2" 1 "$3" "$4") + $(d "$1" "$2" 2 "$3" "$4") )); }

# leased_all [HOSTS]: every fleet rule of the hosts spends a lease again (the
# program's own view, read from fg_lease); 1 after 5 s
leased_all() {
	local n r t=100 all
	while [ $t -gt 0 ]; do
		all=1
		for n in ${1:-1 2}; do
			fl_status "${PIN[n]}" "$FG_TMP/lw.json"
			for r in "${RULES[@]}"; do
				[ "$(fl_rule_get "$FG_TMP/lw.json" "$r" program)" = leased ] || all=0
			done
		done
		[ $all = 1 ] && return 0
		sleep 0.05; t=$((t - 1))
	done
	return 1
}
engine() { fl_status "${PIN[$1]}" "$FG_TMP/eng.json"; fl_rule_get "$FG_TMP/eng.json" "$2" "${@:3}"; }
loglines() { grep -c "fleet rule $2: $3:" "$FG_TMP/h$1.log"; }

# --- the flood: every rule, both hosts, the whole run ------------------------------------
for n in 1 2; do
	for k in 0 1 2; do
		fg_bg "g$n" "$FGEN" -i v0 --dst-mac "${MAC[n]}" -s "10.240.$n.1" -d "10.240.$n.2" \
			--dport "${PORT[k]}" -r "$FLOOD" -t 3600 --json > "$FG_TMP/flood-$n-$k.json" 2>&1
	done
done
sleep 3		# leases flowing, buckets drained: a saturated fleet
if leased_all; then ok "under the flood every rule on both hosts spends a lease"
else bad "leases under the flood" "$(one_line 500 < "$FG_TMP/lw.json")"; fi
declare -A KEY
for r in "${RULES[@]}"; do KEY[$r]=$(fl_rule_get "$FG_TMP/lw.json" "$r" key); done

PROBE=0
# probe_tick N: the daemon on hN still ticks: a new source starts dropping on
# rule thr and the throttle log says so within 3 s
probe_tick() {
	local n=$1 src pid
	PROBE=$((PROBE + 1)); src=10.250.$n.$PROBE
	fg_ns_exec "g$n" "$FGEN" -i v0 --dst-mac "${MAC[n]}" -s "$src" -d "10.240.$n.2" \
		--dport 9009 -r 300 -t 1 > /dev/null 2>&1 &
	pid=$!
	if fg_wait_for "$FG_TMP/h$n.log" "throttling $src \(rule thr\)" 40; then
		ok "$DRILL: h$n's tick keeps running during the outage (throttle log: throttling $src)"
	else
		bad "$DRILL: h$n's throttle log during the outage" "no 'throttling $src' in 4 s"
	fi
	wait "$pid"
}
# status_fast N: status answers within 1 s and the daemon's fleet status is fresh
status_fast() {
	local n=$1 t0 t1 age
	t0=$(fl_now); fl_status "${PIN[n]}" "$FG_TMP/sf.json"; t1=$(fl_now)
	age=$(fg_json_get "$FG_TMP/sf.json" fleet.updated_s_ago)
	expect "$DRILL: h$n status answers at once, the daemon's fleet view is fresh" \
		"awk -v a=$t0 -v b=$t1 -v g='$age' 'BEGIN { exit !(b - a < 1 && g < 2.5) }'" \
		"status --json" "< 1 s, updated < 2.5 s ago" \
		"$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f s", b - a }'), updated $age s ago"
}

# local_share SECS OFFERED: what on_loss local admits on one host, rate / 2
# nodes over SECS, or everything when the generator offered less (a starved
# generator on a busy machine)
local_share() {
	awk -v w="$1" -v t="$2" 'BEGIN { e = '"$RATE"' / 2 * w; if (t < e) e = t; printf "%d", e + 0.5 }'
}

# during_outage A B: on_loss as documented over a fallback window [A, B]
during_outage() {
	local a=$1 b=$2 w n p dr tot exp
	w=$(dt "$a" "$b")
	for n in 1 2; do
		p=$(d "$a" "$b" $n fl-open pass); dr=$(d "$a" "$b" $n fl-open drop)
		expect "$DRILL: h$n on_loss open passes everything after the lease ran out (${w} s)" \
			"[ $dr = 0 ] && [ $p -gt 0 ]" "$(d "$a" "$b" $n fl-open total)" "0 drops" "$p passed, $dr dropped"
		p=$(d "$a" "$b" $n fl-closed pass); tot=$(d "$a" "$b" $n fl-closed total)
		expect "$DRILL: h$n on_loss closed drops everything after the lease ran out (${w} s)" \
			"[ $p = 0 ] && [ $tot -gt 0 ]" "$tot" "0 passed" "$p passed"
		p=$(d "$a" "$b" $n fl-local pass); tot=$(d "$a" "$b" $n fl-local total)
		exp=$(local_share "$w" "$tot")
		expect "$DRILL: h$n on_loss local admits its static share, rate / 2 nodes (${w} s)" \
			"awk -v p=$p -v e=$exp 'BEGIN { d = p - e; if (d < 0) d = -d; exit !(d <= e * 0.15 + 10) }'" \
			"$tot" "$exp +- 15 %" "$p"
		for r in "${RULES[@]}"; do
			[ "$(d "$a" "$b" $n "$r" ev:fleet_loss)" -gt 0 ] || bad "$DRILL: h$n $r: no fleet_loss events counted"
		done
	done
}

# bound A B [EXTRA]: the fleet's admissions over [A, B] within burst +
# rate x T + O (docs/fleet.md section 3), T the longest the counters can
# span (dt_hi); for local and closed (open is unbounded by choice)
bound() {
	local a=$1 b=$2 w r adm lim over extra=${3:-0}
	w=$(dt_hi "$a" "$b")
	for r in fl-local fl-closed; do
		adm=$(fd "$a" "$b" "$r" pass)
		lim=$(awk -v w="$w" -v x="$extra" 'BEGIN { printf "%d", '"$BURST"' + '"$RATE"' * w + '"$O"' + x }')
		over=$(awk -v a="$adm" -v w="$w" 'BEGIN { printf "%+d", a - '"$RATE"' * w }')
		expect "$DRILL: fleet $r over ${w} s within burst + rate x T + O${3:+ + the cut-off node share}" \
			"[ $adm -le $lim ]" "$(fd "$a" "$b" "$r" total)" "<= $lim" "$adm (rate x T $over)"
	done
}

# bucket_snap TAG: each rule's fleet bucket in Redis (tokens), now
bucket_snap() {
	local r
	for r in "${RULES[@]}"; do
		fl_cli HGET "${KEY[$r]}" tok | awk '{ printf "%d\n", $1 }' > "$FG_TMP/$1-$r.tok"
	done
}
tok() { cat "$FG_TMP/$1-$2.tok" 2>/dev/null || echo 0; }

# clamped TAG: after a repair the bucket holds about one interval's refill
# (the script's recovering clamp; a bucket recreated empty): no burst to give
clamped() {
	local r t lim
	lim=$(awk 'BEGIN { printf "%d", 2 * '"$RATE"' * '"$IVAL"' }')
	for r in "${RULES[@]}"; do
		t=$(tok "$1" "$r")
		expect "$DRILL: $r's fleet bucket right after the repair (Redis HGET tok)" \
			"[ $t -le $lim ]" "a bucket of burst $BURST" "<= 2 x rate x I = $lim" "$t tokens"
	done
}

# no_burst A B: after a repair the fleet admits no more than what the
# bucket held at A (bucket_snap A), the refill rate x T, what the nodes held
# at A, O <= rate x W (docs/fleet.md section 3: a saturated fleet, W = 2L),
# and what the programs admitted under on_loss in the window (a late round
# lets a lease run out; counted as fleet_loss, 0 when none did). T is the
# longest the counters can span (dt_hi). O is not rate x I: nodes hold one
# interval's grants only while every round is on time, and W is there for
# the round that comes late, as rounds do on a loaded machine.
no_burst() {
	local a=$1 b=$2 w r adm lim loss t
	w=$(dt_hi "$a" "$b")
	for r in "${RULES[@]}"; do
		adm=$(fd "$a" "$b" "$r" pass)
		t=$(tok "$a" "$r")
		loss=0
		[ "$r" = fl-closed ] || loss=$(fd "$a" "$b" "$r" ev:fleet_loss)
		lim=$(awk -v w="$w" -v t="$t" -v l="$loss" \
			'BEGIN { printf "%d", '"$RATE"' * w + '"$O"' + t + l }')
		expect "$DRILL: no burst after the repair, $r over ${w} s (a fresh bucket would add $BURST)" \
			"[ $adm -le $lim ]" "$(fd "$a" "$b" "$r" total)" \
			"<= rate x T + O + bucket $t + on_loss $loss = $lim" \
			"$adm (h1 $(d "$a" "$b" 1 "$r" pass) + h2 $(d "$a" "$b" 2 "$r" pass))"
	done
}

# deciding A B: on each host the program decided every frame that arrived
# (pass or drop, all rows; against the veth's rx counter, which XDP drops
# are part of), and every rule kept seeing its flood
deciding() {
	local a=$1 b=$2 w n r rx dec lo
	w=$(dt "$a" "$b")
	lo=$(awk -v w="$w" 'BEGIN { printf "%d", '"$FLOOD"' * w * 0.25 }')
	for n in 1 2; do
		rx=$(( $(cat "$FG_TMP/$b-h$n.rx") - $(cat "$FG_TMP/$a-h$n.rx") ))
		dec=$(( $(fg_stat_sum "$FG_TMP/$b-h$n.json" total) - $(fg_stat_sum "$FG_TMP/$a-h$n.json" total) ))
		# the counters and rx_packets are read some ms apart: 2 % + 60 frames
		expect "$DRILL: h$n's program decided every frame that arrived over ${w} s" \
			"awk -v a=$dec -v b=$rx 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= b * 0.02 + 60) }'" \
			"$rx received on h0" "$rx +- 2 % + 60" "$dec decided"
		for r in "${RULES[@]}"; do
			[ "$(d "$a" "$b" $n "$r" total)" -ge "$lo" ] ||
				bad "$DRILL: h$n $r decided only $(d "$a" "$b" $n "$r" total) frames in $w s (the generator starved?)"
		done
	done
}

# counted N FALLBACKS0 SECONDS0: the engine counted one more fallback, its
# time and the reason. The spell starts when the lease ran out (0.4 s after
# the fault at the latest) and ends at the first answer, before the program
# leased again (snapshot d): within [fault..repair] - 1 s .. [fault..d]
counted() {
	local n=$1 fb0=$2 fs0=$3 fb fs reason ds lo hi
	read -r fb fs < <(engine "$n" fl-local fallbacks fallback_s)
	reason=$(engine "$n" fl-local last_error)
	ds=$(awk -v a="$fs0" -v b="$fs" 'BEGIN { printf "%.2f", b - a }')
	lo=$(awk -v t="$(dt "$DRILL-a" "$DRILL-c")" 'BEGIN { printf "%.2f", t - 1 }')
	hi=$(dt "$DRILL-a" "$DRILL-d")
	expect "$DRILL: h$n fl-local fallback counted (fallbacks, seconds, reason)" \
		"[ $fb = $((fb0 + 1)) ] && awk -v s=$ds 'BEGIN { exit !(s >= $lo && s <= $hi) }'" \
		"an outage of $OUT_S s" "fallbacks $((fb0 + 1)), $lo..$hi s more in fallback" \
		"fallbacks $fb, +$ds s (total $fs), reason: $reason"
}

# logged_once N EV0 REC0 RULE: one fallback line and one recovered line more
logged_once() {
	local n=$1 f0=$2 r0=$3 r=$4 f1 r1
	f1=$(loglines "$n" "$r" fallback); r1=$(loglines "$n" "$r" recovered)
	expect "$DRILL: h$n logged $r's fallback once on entry and once on exit" \
		"[ $((f1 - f0)) = 1 ] && [ $((r1 - r0)) = 1 ]" "one outage" "1 and 1" \
		"$((f1 - f0)) fallback, $((r1 - r0)) recovered: $(grep "fleet rule $r: fallback:" "$FG_TMP/h$n.log" | tail -1 | cut -c1-160)"
}

# outage_drill NAME CAUSE RESTORE: the common timeline of a Redis-wide fault
outage_drill() {
	DRILL=$1
	local cause=$2 restore=$3 n fb0=() fs0=() lf=() lr=() rest
	for n in 1 2; do
		read -r "fb0[n]" "fs0[n]" < <(engine "$n" fl-local fallbacks fallback_s)
		lf[n]=$(loglines "$n" fl-local fallback); lr[n]=$(loglines "$n" fl-local recovered)
	done
	snap "$DRILL-a"
	eval "$cause"
	sleep 1		# the lease (0.4 s) ran out everywhere
	snap "$DRILL-b"
	status_fast 1
	probe_tick 2
	rest=$(awk -v o=$OUT_S -v t="$(dt "$DRILL-a" "$DRILL-b")" 'BEGIN { r = o - t - 1.2; print (r > 0) ? r : 0.1 }')
	sleep "$rest"
	snap "$DRILL-c"
	eval "$restore"
	leased_all || bad "$DRILL: leases again within 5 s of the repair"
	snap "$DRILL-d"; bucket_snap "$DRILL-d"
	sleep 1.5
	snap "$DRILL-e"
	during_outage "$DRILL-b" "$DRILL-c"
	bound "$DRILL-a" "$DRILL-e"
	clamped "$DRILL-d"
	no_burst "$DRILL-d" "$DRILL-e"
	deciding "$DRILL-a" "$DRILL-e"
	sleep 1.1	# one tick: the engine's counters in the status file
	for n in 1 2; do
		counted "$n" "${fb0[n]}" "${fs0[n]}"
		logged_once "$n" "${lf[n]}" "${lr[n]}" fl-local
	done
	echo "# $DRILL: fleet admitted over $(dt "$DRILL-a" "$DRILL-e") s: open $(fd "$DRILL-a" "$DRILL-e" fl-open pass), closed $(fd "$DRILL-a" "$DRILL-e" fl-closed pass), local $(fd "$DRILL-a" "$DRILL-e" fl-local pass); rate x T = $(awk -v w="$(dt "$DRILL-a" "$DRILL-e")" 'BEGIN { printf "%d", '"$RATE"' * w }'); recovery window $(dt "$DRILL-d" "$DRILL-e") s: open $(fd "$DRILL-d" "$DRILL-e" fl-open pass), closed $(fd "$DRILL-d" "$DRILL-e" fl-closed pass), local $(fd "$DRILL-d" "$DRILL-e" fl-local pass)"
}

# shellcheck disable=SC2317 # called through outage_drill's eval
links() {	# links up|down
	local n
	for n in 1 2; do ip -n "$(fg_ns_name rd)" link set "r$n" "$1"; done
}

# --- 1. Redis killed ------------------------------------------------------------------------
outage_drill "redis killed" "fl_redis_stop KILL" "fl_redis_restart"
reason=$(engine 1 fl-local last_error)
case "$reason" in *refused*|*reset*|*"Broken pipe"*|*closed*) ok "redis killed: the last error names the failure: $reason" ;;
*) bad "redis killed: last error" "$reason" ;; esac
check_cmp "redis killed, then answering: no error now (the outage's is history)" "$(engine 1 fl-local reason)" = null

# --- 2. Redis SIGSTOPped: slow, not dead -------------------------------------------------------
to0=$(engine 1 fl-local timeouts)
outage_drill "redis SIGSTOP" "kill -STOP $FL_REDIS_PID" "kill -CONT $FL_REDIS_PID"
read -r to1 < <(engine 1 fl-local timeouts)
rmax=$(fg_json_get "$FG_TMP/eng.json" fleet.round_max_ms)
expect "redis SIGSTOP: rounds ended at the deadline (30 ms), counted as timeouts" \
	"[ $to1 -gt $to0 ] && awk -v m=$rmax 'BEGIN { exit !(m < 60) }'" "a frozen server" \
	"timeouts > $to0, longest round < 60 ms" "timeouts $to1, longest round $rmax ms"

# --- 3. the network path cut ---------------------------------------------------------------------
outage_drill "path cut" "links down" "links up"

# --- 4. Redis restarted empty, at once -------------------------------------------------------------
DRILL="redis restarted empty"
snap "$DRILL-a"
fl_redis_stop KILL; fl_redis_restart || bad "$DRILL: redis-server starts again"
leased_all || bad "$DRILL: leases again within 5 s of the restart"
snap "$DRILL-d"; bucket_snap "$DRILL-d"
sleep 2
snap "$DRILL-e"
clamped "$DRILL-d"
no_burst "$DRILL-d" "$DRILL-e"
bound "$DRILL-a" "$DRILL-e"
deciding "$DRILL-a" "$DRILL-e"
keys=$(fl_cli --scan --pattern 'floodgate:*:b' | wc -l)
check_cmp "$DRILL: the three rules' buckets were recreated (empty: these nodes held leases from them)" "$keys" -eq 3
echo "# $DRILL: recovery window $(dt "$DRILL-d" "$DRILL-e") s: open $(fd "$DRILL-d" "$DRILL-e" fl-open pass), closed $(fd "$DRILL-d" "$DRILL-e" fl-closed pass), local $(fd "$DRILL-d" "$DRILL-e" fl-local pass) (rate x T = $(awk -v w="$(dt "$DRILL-d" "$DRILL-e")" 'BEGIN { printf "%d", '"$RATE"' * w }'), a fresh bucket would add $BURST)"

# --- 5. a floodgated SIGKILLed mid-flood -----------------------------------------------------------
DRILL="daemon SIGKILL"
snap "$DRILL-a"
fg_bg_stop "${DPID[1]}" KILL
DPID[1]=
sleep 1		# its lease (0.4 s) ran out in the program
snap "$DRILL-b"
fl_status "${PIN[1]}" "$FG_TMP/dead.json"
read -r dmn < <(fg_json_get "$FG_TMP/dead.json" fleet.daemon)
read -r prog lol < <(fl_rule_get "$FG_TMP/dead.json" fl-local program on_loss)
expect "$DRILL: without a daemon status reads the program's state from fg_lease" \
	"[ '$dmn' = false ] && [ '$prog' = on_loss ] && [ '$lol' = local ]" "no daemon on h1" \
	"daemon false, program on_loss, on_loss local" "daemon $dmn, program $prog, on_loss $lol"
sleep 2
snap "$DRILL-c"
# h1 alone, in the program: the same on_loss behaviour as with a daemon
w=$(dt "$DRILL-b" "$DRILL-c")
p=$(d "$DRILL-b" "$DRILL-c" 1 fl-closed pass); ev=$(d "$DRILL-b" "$DRILL-c" 1 fl-closed ev:fleet_loss)
expect "$DRILL: h1's lease ran out in the program: on_loss closed drops, counted as fleet_loss" \
	"[ $p = 0 ] && [ $ev -gt 0 ]" "$(d "$DRILL-b" "$DRILL-c" 1 fl-closed total)" "0 passed, fleet_loss > 0" "$p passed, $ev fleet_loss"
dr=$(d "$DRILL-b" "$DRILL-c" 1 fl-open drop)
check_cmp "$DRILL: h1's on_loss open passes everything without a daemon (drops in ${w} s)" "$dr" -eq 0
p=$(d "$DRILL-b" "$DRILL-c" 1 fl-local pass)
exp=$(local_share "$w" "$(d "$DRILL-b" "$DRILL-c" 1 fl-local total)")
check_near "$DRILL: h1's on_loss local: its static share (rate / 2 nodes) without a daemon, of $(d "$DRILL-b" "$DRILL-c" 1 fl-local total) offered" "$p" "$exp" 15
# h2 keeps Redis and, once h1's demand expired, the whole rate: the fleet
# admits rate + h1's local share (docs/fleet.md: a partial outage)
bound "$DRILL-a" "$DRILL-c" "$(awk -v w="$(dt_hi "$DRILL-a" "$DRILL-c")" 'BEGIN { print '"$RATE"' / 2 * w }')"
fg_daemon_start h1 "${PIN[1]}" "$FG_TMP/h1.yaml" "$FG_TMP/h1.log" ||
	bad "$DRILL: floodgated on h1 restarts" "$(tail -5 "$FG_TMP/h1.log" | one_line)"
DPID[1]=$FG_DPID
if grep -q "adopted pinned state" "$FG_TMP/h1.log" &&
   grep -q "fleet rule fl-local: adopted a pinned lease that ran out" "$FG_TMP/h1.log"; then
	ok "$DRILL: the restarted daemon adopted the pin dir and the fleet leases"
else
	bad "$DRILL: adoption" "$(grep -E 'adopt' "$FG_TMP/h1.log" | tail -4 | one_line)"
fi
leased_all 1 || bad "$DRILL: h1 leases again after the restart"
snap "$DRILL-d"; bucket_snap "$DRILL-d"
sleep 1.5
snap "$DRILL-e"
no_burst "$DRILL-d" "$DRILL-e"
p=$(d "$DRILL-d" "$DRILL-e" 1 fl-closed pass)
check_cmp "$DRILL: after the restart h1's closed rule admits its share again" "$p" -gt 0

# --- long: a partial partition (h1 cut off, h2 keeps Redis) -------------------------------------------
if [ "$LONG" = 1 ]; then
	DRILL="partial partition"
	snap "$DRILL-a"
	ip -n "$(fg_ns_name rd)" link set r1 down
	sleep 1
	snap "$DRILL-b"
	sleep "$OUT_S"
	snap "$DRILL-c"
	ip -n "$(fg_ns_name rd)" link set r1 up
	leased_all || bad "$DRILL: leases again after the repair"
	snap "$DRILL-d"; bucket_snap "$DRILL-d"; sleep 1.5; snap "$DRILL-e"
	w=$(dt "$DRILL-b" "$DRILL-c")
	p=$(d "$DRILL-b" "$DRILL-c" 1 fl-closed pass)
	check_cmp "$DRILL: cut-off h1's closed rule admits nothing" "$p" -eq 0
	bound "$DRILL-a" "$DRILL-c" "$(awk -v w="$(dt_hi "$DRILL-a" "$DRILL-c")" 'BEGIN { print '"$RATE"' / 2 * w }')"
	no_burst "$DRILL-d" "$DRILL-e"
else
	skip "partial partition and 20 s outages" "FG_GAMEDAY=1"
fi

# late rounds (a stalled host) let a lease run out between two answers:
# counted, reported; none is expected on an idle machine
for n in 1 2; do
	fl_status "${PIN[n]}" "$FG_TMP/end.json"
	line=""
	for r in "${RULES[@]}"; do line+="$r $(fl_rule_get "$FG_TMP/end.json" "$r" lapses lapse_s) "; done
	echo "# h$n lease lapses (count, seconds) since its last start: $line"
done
FG_DPID=
for n in 1 2; do [ -n "${DPID[n]}" ] && fg_bg_stop "${DPID[n]}" TERM; done
fl_redis_stop
fg_finish
