#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# End to end: the adaptive shedder (issue 11, docs/shedding.md) in two
# namespaces made here. floodgated on r0 runs four UDP rules, one per tier,
# with shortened timings (interval 200ms, delay 600ms, ramp 3s, decay 3s,
# orphan 1s). With the file signal held at 0.95: nothing before the delay,
# then best-effort, bulk and normal in that order, each full before the
# next starts, critical never (fractions from status --json, shed counts
# per rule from traffic); the kill switch holds it at zero; at 0.5 it
# decays to zero; SIGKILLed while shedding, the program's own deadline
# brings the shed rule's drops to zero; a real signal (accept_queue of a
# listener that never accepts, its backlog filled) makes it shed.
# FG_GAMEDAY=1 adds 100 samples of a signal alternating 0.78/0.82. Needs root. Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/shed_lib.sh
shed_init shed 88

# policy SIGNAL [extra shedding: lines]
policy() {
	cat <<YAML
interfaces: [r0]
max_sources: 4096
metrics: "127.0.0.1:$MPORT"
rules:
  - {name: crit, match: {proto: udp, dport: 1000}, per_source: {rate: 100000/s, burst: 50000}, tier: critical}
  - {name: norm, match: {proto: udp, dport: 1001}, per_source: {rate: 100000/s, burst: 50000}, tier: normal}
  - {name: bulk, match: {proto: udp, dport: 1002}, per_source: {rate: 100000/s, burst: 50000}, tier: bulk}
  - {name: be, match: {proto: udp, dport: 1003}, per_source: {rate: 100000/s, burst: 50000}, tier: best-effort}
shedding:
  signal: "$1"
  interval: 200ms
  delay: 600ms
  ramp: 3s
  decay: 3s
  orphan: 1s
  good: 0.7
  bad: 0.8
YAML
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
stat() { fg_stat "$PIN" "$1" "$2"; }
# wait_amount OP VALUE TENTHS: until status's shedding.amount OP VALUE; 0/1
wait_amount() {
	local n=$3 a
	while [ "$n" -gt 0 ]; do
		a=$(sj amount)
		awk -v a="$a" -v v="$2" "BEGIN { exit !(a $1 v) }" && return 0
		sleep 0.1; n=$((n - 1))
	done
	return 1
}

setsig 0.5
policy "file:$SIG" > "$FG_TMP/p.yaml"
shed_start "$FG_TMP/p.yaml" skip "floodgated starts with a shedding: section"
"$FG" status --json > "$FG_TMP/status.json" 2>&1
fg_json_check "status --json with shedding" status "$FG_TMP/status.json"
check_cmp "status: controller, signal, phase at 0.5" \
	"$(fg_json_get "$FG_TMP/status.json" shedding.controller shedding.signal shedding.tiers)" \
	= "true file:$SIG 3"
sleep 0.5
check_cmp "at 0.5: idle, nothing shed" "$(sj phase amount shed.best-effort)" = "idle 0 0"

# --- onset: nothing before the delay --------------------------------------------------------
t0=$(now); setsig 0.95
first=
while :; do
	a=$(sj amount); e=$(elapsed "$t0")
	if awk -v a="$a" 'BEGIN { exit !(a > 0) }'; then first=$e; break; fi
	awk -v e="$e" 'BEGIN { exit !(e > 3) }' && break
	sleep 0.05
done
# The delay counts sampled pressure: each sample above bad adds the time
# since the one before, so a point signal (a file) that rose somewhere
# within an interval starts shedding between delay - interval (0.4 s) and
# delay + interval after the rise; status polls add their own lag.
expect "0.95: shedding starts only after the delay (600ms of sampled pressure)" \
	"[ -n '$first' ] && awk 'BEGIN { exit !($first >= 0.4 && $first < 1.6) }'" \
	"signal 0.95 from t=0" "first amount > 0 at 0.4..1.6 s" "${first:-never} s"
check_cmp "0.95: the controller counted the delay (pressure_s at the first growth)" \
	"$(awk -v p="$(sj pressure_s)" 'BEGIN { print (p >= 0.6) ? "over" : p }')" = over

# --- best-effort partly shed, held in the dead zone: counts by traffic ------------------------
wait_amount '>=' 0.3 40
setsig 0.75; sleep 0.5
read -r a1 fbe fbu fno fcr <<< "$(sj amount shed.best-effort shed.bulk shed.normal shed.critical)"
sleep 0.6
a2=$(sj amount)
check_cmp "dead zone (0.75): the amount holds" "$a2" = "$a1"
expect "best-effort partly shed, the others untouched" \
	"awk 'BEGIN { exit !($fbe > 0 && $fbe < 1 && $fbu == 0 && $fno == 0 && $fcr == 0) }'" \
	"0.95 then 0.75" "0 < best-effort < 1, bulk = normal = critical = 0" \
	"best-effort $fbe bulk $fbu normal $fno critical $fcr"
for r in crit norm bulk be; do eval "s0_$r=$(stat $r shed)"; done
t0_be=$(stat be total)
N=4000
for p in 1000 1001 1002 1003; do send $p $N; done
nbe=$(( $(stat be total) - t0_be ))
dbe=$(( $(stat be shed) - s0_be )); dbu=$(( $(stat bulk shed) - s0_bulk ))
dno=$(( $(stat norm shed) - s0_norm )); dcr=$(( $(stat crit shed) - s0_crit ))
# binomial: within 5 sigma of N * f
expect "traffic: best-effort shed in its fraction" \
	"awk 'BEGIN { m = $nbe * $fbe; s = sqrt($nbe * $fbe * (1 - $fbe)); d = $dbe - m; exit !($nbe > 0 && d * d <= 25 * s * s + 1) }'" \
	"$N to each rule, $nbe best-effort arrived" "best-effort shed ~ $nbe x $fbe (5 sigma)" "$dbe"
check_cmp "traffic: bulk, normal, critical shed nothing" "$dbu $dno $dcr" = "0 0 0"

# --- on to full shed: tier order, critical never ------------------------------------------------
setsig 0.95
: > "$FG_TMP/ramp"
for _ in $(seq 1 120); do
	sj amount shed.best-effort shed.bulk shed.normal shed.critical >> "$FG_TMP/ramp"
	tail -1 "$FG_TMP/ramp" | awk '{ exit !($1 >= 3) }' && break
	sleep 0.05
done
viol=$(awk 'prev != "" && $1 < prev { print "amount fell " prev " -> " $1 }
	$3 > 0 && $2 < 1 { print "bulk " $3 " with best-effort " $2 }
	$4 > 0 && $3 < 1 { print "normal " $4 " with bulk " $3 }
	$5 != 0 { print "critical " $5 }
	{ prev = $1 }' "$FG_TMP/ramp" | head -3 | one_line)
check_cmp "ramp: monotone, each tier full before the next, critical 0 ($(wc -l < "$FG_TMP/ramp") samples)" \
	"${viol:-none}" = none
np=$(awk '$3 > 0 && $3 < 1' "$FG_TMP/ramp" | wc -l); nn=$(awk '$4 > 0 && $4 < 1' "$FG_TMP/ramp" | wc -l)
expect "ramp: bulk and normal seen partly shed (progressive)" "[ $np -ge 1 ] && [ $nn -ge 1 ]" \
	"status every 50ms" ">= 1 partial sample each" "bulk $np, normal $nn"
check_cmp "full shed: amount 3, growing or held at full" "$(sj amount shed.normal shed.critical)" = "3 1 0"
# per rule: (what arrived, what was shed), what arrived as the receiver counts it
fg_snap "$PIN" "$FG_TMP/s0.json"
N=2000
for p in 1000 1001 1002 1003; do send $p $N; done
fg_snap "$PIN" "$FG_TMP/s1.json"
d() { echo $(( $(fg_stat "$FG_TMP/s1.json" "$1" "$2") - $(fg_stat "$FG_TMP/s0.json" "$1" "$2") )); }
line=
for r in crit norm bulk be; do line+="$r $(d $r total)/$(d $r shed)/$(d $r pass) "; done
expect "full shed: normal, bulk, best-effort shed every packet that arrived, critical none" \
	"echo '$line' | awk '{ for (i = 1; i < NF; i += 2) { split(\$(i + 1), a, \"/\"); if (a[1] < $N * 0.95) exit 1;
		if (\$i == \"crit\" && (a[2] != 0 || a[3] != a[1])) exit 1;
		if (\$i != \"crit\" && a[2] != a[1]) exit 1 } }'" \
	"$N to each rule" "arrived >= 95%; crit shed 0 and all passed; others all shed" "$line"
if command -v curl > /dev/null; then
	sleep 1.1	# the page is rendered once a second
	fg_ns_exec r curl -s "http://127.0.0.1:$MPORT/metrics" > "$FG_TMP/metrics"
	got=$(grep -E '^floodgate_shed_(fraction\{tier="(best-effort|critical)"\}|amount|controller|held) ' \
		"$FG_TMP/metrics" | one_line)
	check_cmp "metrics: the controller, its amount, the fraction per tier" "$got" = \
		'floodgate_shed_controller 1 floodgate_shed_amount 3.000000 floodgate_shed_held 0 floodgate_shed_fraction{tier="best-effort"} 1.000000'
	check "metrics: shed packets per rule (outcome shed)" \
		grep -qE '^floodgate_packets_total\{rule="be",outcome="shed"\} [1-9]' "$FG_TMP/metrics"
else
	skip "metrics" "no curl"
fi
for t in best-effort bulk normal; do
	check_cmp "log: tier $t entered once" "$(grep -c "tier $t: shedding starts" "$DLOG")" = 1
done

# --- shadow: the controller runs, nothing is shed, would-sheds are counted ------------------------
{ policy "file:$SIG"; echo "  mode: shadow"; } > "$FG_TMP/p.yaml"
kill -HUP "$FG_DPID"; sleep 0.6
check_cmp "shadow (reload): the amount is kept, fg_shed.shadow set" "$(sj amount shadow)" = "3 true"
fg_snap "$PIN" "$FG_TMP/s0.json"; send 1003 1000; fg_snap "$PIN" "$FG_TMP/s1.json"
check_cmp "shadow: best-effort shed 0, shed_shadow all that arrived" \
	"$(d be shed) $(d be shed_shadow)" = "0 $(d be total)"
check_cmp "shadow: status --json says so: shed 0, not_shedding shadow, thresholds 1" \
	"$(sj shed.best-effort not_shedding thresholds.best-effort)" = "0 shadow 1"
check "status (text) shows the signal and the fractions" \
	bash -c "'$FG' status | grep -q 'shedding:  signal file:$SIG = 0.950, growing' && '$FG' status | grep -q 'best-effort 100.0% (shadow: counted as would-shed'"
policy "file:$SIG" > "$FG_TMP/p.yaml"
kill -HUP "$FG_DPID"; sleep 0.6
check_cmp "enforce again (reload)" "$(sj amount shadow)" = "3 false"

# --- kill switch: held at zero, starts again through the delay ------------------------------------
"$FG" bypass on > /dev/null 2>&1
check_cmp "bypass: status --json at once: nothing shed, not_shedding bypass" \
	"$(sj shed.best-effort not_shedding)" = "0 bypass"
sleep 0.5
check_cmp "bypass: held at zero" "$(sj hold amount shed.best-effort)" = "bypass 0 0"
"$FG" bypass off > /dev/null 2>&1
sleep 0.3
check_cmp "bypass off: pending again, not resumed at full" "$(sj amount)" = 0

# --- relief: decay to zero ----------------------------------------------------------------------
wait_amount '>=' 1.5 60
setsig 0.5; t0=$(now)
if wait_amount '==' 0 60; then ok "0.5: decays to zero in $(elapsed "$t0") s (decay 3s for 3 tiers)"
else bad "0.5: decays to zero" "amount $(sj amount) after $(elapsed "$t0") s"; fi
for r in norm bulk be; do eval "s0_$r=$(stat $r shed)"; done
for p in 1001 1002 1003; do send $p 1000; done
check_cmp "after decay: nothing shed" \
	"$(( $(stat norm shed) - s0_norm + $(stat bulk shed) - s0_bulk + $(stat be shed) - s0_be ))" = 0

# --- SIGKILL while shedding: the program decays it by itself ---------------------------------------
setsig 0.95
wait_amount '>=' 1 60
fg_daemon_stop KILL; tk=$(now)
# hold 2 x 200ms, then linear over 2^30 ns (orphan 1s): zero 1.47 s after the
# last write. The deadline is read from the map after the kill: read before
# it, the daemon's next sample (every 0.2 s) could still move it later.
# status reads it at some instant before it returns, so the elapsed time
# taken after it makes the bound late, never early.
read -r left <<< "$(sj decays_in_s)"
bound=$(awk -v l="$left" -v e="$(elapsed "$tk")" 'BEGIN { printf "%.2f", l + e + 0.005 }')
expect "SIGKILL: the orphan deadline is at most 2 x 200 ms + 2^30 ns after the kill" \
	"awk -v l='$left' 'BEGIN { exit !(l > 0 && l <= 1.474) }'" "status after the kill" \
	"0 < decays_in_s <= 1.474" "$left s"
s0=$(stat be shed); send 1003 500; s1=$(stat be shed)
check_cmp "right after SIGKILL best-effort is still shed (of 500)" "$((s1 - s0))" -gt 0
# probes of 500 best-effort packets until 1 s past the bound: every probe
# that starts after the bound must shed nothing
zero_at=; late_shed=0; late=0
while awk -v e="$(elapsed "$tk")" -v b="$bound" 'BEGIN { exit !(e < b + 1) }'; do
	e0=$(elapsed "$tk"); s0=$(stat be shed); send 1003 500; s1=$(stat be shed)
	[ -z "$zero_at" ] && [ $((s1 - s0)) = 0 ] && zero_at=$e0
	if awk -v e="$e0" -v b="$bound" 'BEGIN { exit !(e >= b) }'; then
		late=$((late + 1)); late_shed=$((late_shed + s1 - s0))
	fi
	sleep 0.05
done
expect "SIGKILL: the shed tier's drops stop by the deadline ($bound s after the kill)" \
	"[ $late -ge 2 ] && [ $late_shed = 0 ]" "500 best-effort packets per probe" \
	"0 shed in every probe after $bound s" \
	"$late_shed shed in $late probes after it; first probe without any at ${zero_at:-never} s"
sleep 0.5
check_cmp "status after SIGKILL: no controller, fractions zero" \
	"$(sj controller shed.best-effort decays_in_s)" = "false 0 0"

# --- a real signal: a listener's accept queue --------------------------------------------------------
policy "accept_queue:$APORT" > "$FG_TMP/pa.yaml"
cat > "$FG_TMP/listen.py" <<'PY'
import os, socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
print("listening", flush=True)
while not os.path.exists(sys.argv[2]):      # accepts nothing until told to drain
    time.sleep(0.05)
s.settimeout(0.2)
kept = []
while True:
    try:
        kept.append(s.accept()[0])
    except socket.timeout:
        pass
PY
cat > "$FG_TMP/fill.py" <<'PY'
import socket, sys, time
c = []
for _ in range(int(sys.argv[2])):
    k = socket.socket(); k.setblocking(False)
    k.connect_ex(("127.0.0.1", int(sys.argv[1]))); c.append(k)
print("filled", flush=True)
time.sleep(float(sys.argv[3]))
PY
fg_bg r "$FG_PY" "$FG_TMP/listen.py" "$APORT" "$FG_TMP/drain" > "$FG_TMP/listen.out" 2>&1
fg_wait_for "$FG_TMP/listen.out" listening 50
fg_daemon_up r "$FG_TMP/pa.yaml" "floodgated restarts (adopts) with accept_queue:$APORT"
sleep 0.5
check_cmp "accept_queue, empty: value 0, nothing shed" "$(sj signal value amount)" = "accept_queue:$APORT 0 0"
fg_bg r "$FG_PY" "$FG_TMP/fill.py" "$APORT" 12 30 > "$FG_TMP/fill.out" 2>&1
FILL=$FG_BG_PID
fg_wait_for "$FG_TMP/fill.out" filled 50
if wait_amount '>' 0 40; then
	read -r v ph <<< "$(sj value phase)"
	ok "accept queue full (value $v): the shedder acts (phase $ph)"
	wait_amount '>=' 0.3 40
	s0=$(stat be shed); send 1003 2000; s1=$(stat be shed)
	check_cmp "accept queue full: best-effort packets shed (of 2000)" "$((s1 - s0))" -gt 0
else
	bad "accept queue full: the shedder acts" "$(sj value phase amount)"
fi
touch "$FG_TMP/drain"
if wait_amount '==' 0 60; then ok "accept queue drained ($(sj value)): decays to zero"
else bad "accept queue drained: decays to zero" "$(sj value phase amount)"; fi

# --- gameday: a noisy signal at one threshold -----------------------------------------------------
if [ "${FG_GAMEDAY:-0}" = 1 ]; then
	setsig 0.78
	policy "file:$SIG" > "$FG_TMP/pa.yaml"	# the file this daemon reads
	kill -HUP "$FG_DPID"; sleep 0.5
	check_cmp "gameday: reload to the file signal" "$(sj signal amount)" = "file:$SIG 0"
	: > "$FG_TMP/noise"
	for i in $(seq 1 100); do
		if [ $((i % 2)) = 0 ]; then setsig 0.82; else setsig 0.78; fi
		sleep 0.2
		echo "$(now) $(sj amount)" >> "$FG_TMP/noise"
	done
	# dS/dt <= k_up (u - bad) = 5/s x 0.02 = 0.1/s, plus one sample (0.02), never down
	viol=$(awk 'NR > 1 && ($2 < p - 1e-9 || $2 - p > 0.1 * ($1 - t) + 0.02 + 1e-6) { print p " -> " $2 }
		{ t = $1; p = $2 }' "$FG_TMP/noise" | head -3 | one_line)
	check_cmp "gameday: 0.78/0.82 every sample: never down, at most 0.1/s (final $(tail -1 "$FG_TMP/noise" | cut -d' ' -f2))" \
		"${viol:-none}" = none
else
	skip "gameday: 0.78/0.82 alternation" "FG_GAMEDAY=1 runs it"
fi

fg_daemon_stop TERM
check_cmp "SIGTERM: exits 0" "$?" = 0
check "SIGTERM removes the state file" [ ! -e "$FG_TMP/shed-$(echo "${PIN#/}" | tr / _).state" ]
fg_finish
