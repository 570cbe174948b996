#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Game day, adversarial traffic: real frames over a veth pair between two
# namespaces made here, floodgated attached to the receiving end.
#   1. spoofed random-source UDP and SYN floods (hping3 --rand-source and
#      fgen --random) against per-source and aggregate rules, with an
#      allowlisted and a well-behaved client sending alongside
#   2. the eviction attack: max_sources 1024, a throttled source, a spray of
#      5x the table in spoofed sources, the source resumes: no fresh burst
#      (and a control with admission opened up, to show the drill can see
#      an eviction)
#   3. evasion: VLAN, QinQ, three tags, IPv6 extension-header chains (8 and
#      9), IPv4 options, non-first fragments at a port rule, tiny and
#      truncated frames, jumbo frames (MTU 9000, multi-buffer XDP)
#   4. a hot key: one source from both CPUs at once, admission exact
# Counts come from floodgate's own counters (what it saw) and, for the
# clients, from an AF_PACKET counter behind XDP on the receiving side.
# Durations are short by default; FG_GAMEDAY=1 makes them long.
# Needs root. Removes everything it made; fails if anything is left.
# Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/gameday_lib.sh
gd_init

if [ "$GD_LONG" = 1 ]; then T=15; else T=3; fi
HPING=$(command -v hping3 || true)

gd_pair || { bad "setup: namespaces and veth pair"; fg_finish; }

# admission of a policy file as floodgate computes it: "RATE BURST"
admission_of() {
	"$FG" --verbose check "$1" | sed -nE 's/.*admission: +([0-9.e+]+) new sources.*inc ([0-9]+), tau ([0-9]+).*/\1 \2 \3/p' |
		awk '{ printf "%s %d\n", $1, $3 / $2 }'
}
# awk arithmetic: calc EXPR
calc() { awk "BEGIN { printf \"%d\", ($1) }"; }
calcf() { awk "BEGIN { printf \"%.3f\", ($1) }"; }

# poll_start ROW [ADDR RATE]: sample a stats row in the background, every
# 0.2 ms (fgdump watch: first/last packet times as floodgate's counters saw
# them), and with ADDR that source's bucket of a rule at RATE/s; poll_end
# stops it once the row is quiet for 0.3 s and reduces the samples to
# "T_upper T_lower total pass drop gap_ms win_s win_pass win_read_ms
# win_tat_pkts win_in_debt" in $GD_TMP/poll.out (see POLL_PY)
poll_start() {
	rm -f "$GD_TMP/poll.stop"
	POLL_RATE=${3:-0}
	"$FGDUMP" --pin-dir "$GD_PIN" watch "$1" "$GD_TMP/poll.stop" --quiet 0.3 ${2:+--source "$2"} \
		> "$GD_TMP/poll.samples" 2> "$GD_TMP/poll.err" &
	POLL_PID=$!
	sleep 0.3
}
# From the samples "BEFORE AFTER TOTAL PASS DROP COARSE TAT" (ns, counts, time
# units): t0 = the last read that still showed the starting total and t0n
# the read after it (the first packet came in [t0, t0n]); t1p = the last
# read before the final total showed and t1 the first read that showed it
# (the last packet came in [t1p, t1]). T_upper = t1 - t0 and T_lower =
# t1p - t0n bound the time between floodgate's first and last packet;
# counts are deltas; gap_ms is the longest time the row stood still in
# between (an idle sender loses bucket tokens beyond burst/rate). The window
# is the flood 0.5 s in from both ends: its length on the program's own
# clock (CLOCK_MONOTONIC_COARSE), its pass delta, how long the counter reads
# took, and with a bucket the packets its tat advanced by (tat moves by
# 1/rate per admitted packet while it stays ahead of now) and whether it was
# ahead of now (in debt) at both reads (2: the bucket could not be read).
POLL_PY=$(cat <<'PY'
import sys
rows = [[int(x) for x in l.split()] for l in open(sys.argv[1]) if l.strip()]
rate = float(sys.argv[2])
base = rows[0]
start = base[2]
t0 = base[1]
t0n = t1 = t1p = last_change = None
last_total, prev, gap, t = start, t0, 0, base
for r in rows[1:]:
    now, tot = r[1], r[2]
    if tot == start:
        t0 = now
    elif t0n is None:
        t0n = now
    if tot != last_total:
        if last_change is not None and prev - last_change > gap:
            gap = prev - last_change
        last_total, t = tot, r
        t1, t1p, last_change = now, prev, now
    prev = now
win = "0 0 0 0 0"
if t1 is not None and t0n is not None and t1p - t0n > 1.2e9:
    a = min((r for r in rows[1:] if r[0] >= t0n + 5e8), key=lambda r: r[0])
    z = max((r for r in rows[1:] if r[1] <= t1p - 5e8), key=lambda r: r[1])
    tp = indebt = 0
    if rate > 0 and (a[6] < 0 or z[6] < 0):
        indebt = 2
    elif rate > 0:
        inc = round((10**9 << 6) / rate)
        tp = round((z[6] - a[6]) / inc)
        indebt = int(a[6] > (a[5] << 6) and z[6] > (z[5] << 6))
    win = "%.6f %d %.3f %d %d" % ((z[5] - a[5]) / 1e9, z[3] - a[3],
                                  ((a[1] - a[0]) + (z[1] - z[0])) / 2e6, tp, indebt)
if t1 is None:
    print(0, 0, 0, 0, 0, 0, win)
else:
    print("%.6f %.6f %d %d %d %.1f %s" % ((t1 - t0) / 1e9, max(0, t1p - t0n) / 1e9,
                                      rows[-1][2] - start, t[3] - base[3], t[4] - base[4],
                                      gap / 1e6, win))
PY
)
poll_end() {
	touch "$GD_TMP/poll.stop"
	wait "$POLL_PID" 2>/dev/null	# not in a subshell: it must be our child
	"$GD_PY" -c "$POLL_PY" "$GD_TMP/poll.samples" "$POLL_RATE" > "$GD_TMP/poll.out" 2>&1
	if ! grep -qE '^[0-9.]+ [0-9.]+ [0-9]+ [0-9]+ [0-9]+ [0-9.]+ [0-9.]+ -?[0-9]+ [0-9.]+ -?[0-9]+ [012]$' "$GD_TMP/poll.out"; then
		echo "# counter poll failed: $(cat "$GD_TMP/poll.err" "$GD_TMP/poll.out" | one_line 600)"
		echo "0 0 0 -1 -1 0 0 0 0 0 0" > "$GD_TMP/poll.out"
	fi
}

# hping_flood SECONDS ARGS: hping3 --flood in tx; prints packets transmitted
hping_flood() {
	local secs=$1; shift
	intx timeout -s INT "$secs" "$HPING" --flood "$@" "$GD_RX_IP" > "$GD_TMP/hping.out" 2>&1
	sed -nE 's/^([0-9]+) packets transmitted.*/\1/p' "$GD_TMP/hping.out" | tail -n 1
}

# =========================================================================
# 1. spoofed floods against per-source and aggregate rules, clients alongside
# =========================================================================
CLIENT_ALLOW=10.213.0.1		# tx's own address, allowlisted
CLIENT_PLAIN=10.213.0.3		# not listed, keeps within its own limit
gd_policy floods <<'YAML'
max_sources: 65536
allow: [10.213.0.1/32]
rules:
  - name: dns-agg
    match: {proto: udp, dport: 53}
    per_source: {rate: 100/s, burst: 100}
    aggregate: {rate: 2000/s, burst: 1000}
  - name: syn-agg
    match: {proto: tcp, dport: 80, tcp_flags: syn}
    per_source: {rate: 10/s, burst: 10}
    aggregate: {rate: 1000/s, burst: 500}
  - name: udp-src
    match: {proto: udp, dport: 5353}
    per_source: {rate: 100/s, burst: 100}
  - name: syn-src
    match: {proto: tcp, dport: 22, tcp_flags: syn}
    per_source: {rate: 10/s, burst: 20}
YAML
read -r INS_RATE INS_BURST <<< "$(admission_of "$GD_TMP/floods.yaml")"
echo "# floods policy: admission $INS_RATE new sources/s, burst $INS_BURST (automatic)"

# agg_check NAME RULE RATE BURST SENT: the aggregate holds over the flood.
# T is the time between the last counter read before the first packet and
# the first read after the last one (an upper bound of the time floodgate
# saw packets); the coarse clock (4 ms ticks) may admit up to rate x 4 ms
# + 1 more. It must also admit something like its rate: at least half of
# rate x T (the flood is much faster than the rate, so less means the
# aggregate starves its own traffic).
agg_check() {
	local name=$1 rule=$2 rate=$3 burst=$4 sent=$5 secs slo tot p d gap lim low
	poll_end; read -r secs slo tot p d gap < "$GD_TMP/poll.out"
	lim=$(calc "$rate * $secs + $burst + $rate * 0.004 + 1")
	low=$(calc "$rate * $secs / 2")
	expect "$name: aggregate $rate/s burst $burst holds over T=${secs}s" \
		"[ $p -le $lim ] && [ $p -ge $low ] && [ $d -gt 0 ]" \
		"$sent (floodgate saw $tot)" "$low <= pass <= $lim = rate*T+burst+rate*4ms+1" "pass $p drop $d"
}

# the clients come in over a second veth pair into the same namespace, with
# floodgate on both ends (one set of maps): a flood that fills gdr0's XDP
# ring drops frames before floodgate sees them, which would be charged to
# the clients otherwise
fg_veth_create tx gdt1 rx gdr1 && fg_ns_addr tx gdt1 10.214.0.1/24 && fg_ns_addr rx gdr1 10.214.0.2/24 ||
	bad "setup: second veth pair for the clients"
MAC1=$(fg_ns_mac rx gdr1)
if ! gd_start floods "/sys/fs/bpf/fg-gd$$-floods" --interface gdr0 --interface gdr1; then
	bad "floods: floodgated starts" "$(tail -3 "$GD_LOG")"
else
	fg_snap "$GD_PIN"
	ID_DNS=$(fg_rule_id "$FG_SNAP" dns-agg); ID_SYN=$(fg_rule_id "$FG_SNAP" syn-agg)

	# the well-behaved client has had its bucket for a while when the flood
	# comes (new sources during a flood are admission limited, by design)
	intx "$FGEN" -i gdt1 --dst-mac "$MAC1" -d 10.214.0.2 -s "$CLIENT_PLAIN" --dport 5353 -n 5 > /dev/null 2>&1
	intx "$FGEN" -i gdt1 --dst-mac "$MAC1" -d 10.214.0.2 -s "$CLIENT_PLAIN" --syn --dport 22 -n 2 > /dev/null 2>&1
	sleep 1

	for proto in udp syn; do
		if [ "$proto" = udp ]; then
			agg_rule=dns-agg; agg_id=$ID_DNS; agg_rate=2000; agg_burst=1000; agg_port=53
			src_rule=udp-src; src_port=5353; hp_args=(--udp); fg_args=(--udp)
			client_rate=40; src_rate=100; src_burst=100
		else
			agg_rule=syn-agg; agg_id=$ID_SYN; agg_rate=1000; agg_burst=500; agg_port=80
			src_rule=syn-src; src_port=22; hp_args=(-S); fg_args=(--syn)
			client_rate=5; src_rate=10; src_burst=20
		fi
		if [ -z "$HPING" ]; then
			skip "$proto hping3 --rand-source flood" "hping3 not installed (tools/deps.sh gameday)"
		else
			sleep 1.2	# the aggregate refills
			# the client is an established one: it has a bucket when the
			# flood starts. (One idle through the previous round's sprays
			# may have seen its full bucket's way reused; coming back during
			# a spoofed flood it would compete for admission with the spray,
			# as any new source does, by design.)
			intx "$FGEN" -i gdt1 --dst-mac "$MAC1" -d 10.214.0.2 -s "$CLIENT_PLAIN" "${fg_args[@]}" \
				--dport "$src_port" -n 2 > /dev/null 2>&1
			fg_snap "$GD_PIN"; a0=$(fg_stat "$FG_SNAP" _global allow); ins0=$(fg_stat "$FG_SNAP" "$src_rule" ev:insert)
			sp0=$(fg_stat "$FG_SNAP" "$src_rule" pass); so0=$(fg_stat "$FG_SNAP" "$src_rule" ev:overflow)
			rm -f "$GD_TMP/cnt.stop" "$GD_TMP/cnt.stop.ready"
			inrx "$GD_PY" "$GD_TMP/gd_raw.py" count gdr1 "$GD_TMP/cnt.stop" \
				"$CLIENT_ALLOW" "$CLIENT_PLAIN" > "$GD_TMP/cnt.out" 2>&1 &
			cnt_pid=$!
			fg_wait_for "$GD_TMP/cnt.stop.ready" . 50
			poll_start "$agg_id"
			# two floods at once, to the aggregate rule and to the
			# per-source rule; both clients send alongside
			intx timeout -s INT "$T" "$HPING" --flood "${hp_args[@]}" --rand-source \
				-p "$src_port" "$GD_RX_IP" > "$GD_TMP/hping2.out" 2>&1 &
			hp2=$!
			intx "$FGEN" -i gdt1 --dst-mac "$MAC1" -d 10.214.0.2 "${fg_args[@]}" -s "$CLIENT_ALLOW" \
				--dport "$agg_port" -r 200 -t "$T" --json > "$GD_TMP/ca.json" 2> "$GD_TMP/ca.err" &
			ca=$!
			intx "$FGEN" -i gdt1 --dst-mac "$MAC1" -d 10.214.0.2 "${fg_args[@]}" -s "$CLIENT_PLAIN" \
				--dport "$src_port" -r "$client_rate" -t "$T" --json > "$GD_TMP/cp.json" 2> "$GD_TMP/cp.err" &
			cp=$!
			sent=$(hping_flood "$T" "${hp_args[@]}" --rand-source -p "$agg_port")
			wait "$hp2" "$ca" "$cp"
			sent2=$(sed -nE 's/^([0-9]+) packets transmitted.*/\1/p' "$GD_TMP/hping2.out" | tail -n 1)
			agg_check "$proto flood (hping3 --rand-source) on $agg_rule" "$agg_rule" "$agg_rate" "$agg_burst" "${sent:-?}"
			sleep 0.3; touch "$GD_TMP/cnt.stop"; wait "$cnt_pid"
			fg_snap "$GD_PIN"
			sa=$(fg_json_get "$GD_TMP/ca.json" packets); sp=$(fg_json_get "$GD_TMP/cp.json" packets)
			ra=$(awk -v a="$CLIENT_ALLOW" '$1 == a { print $2 }' "$GD_TMP/cnt.out")
			rp=$(awk -v a="$CLIENT_PLAIN" '$1 == a { print $2 }' "$GD_TMP/cnt.out")
			al=$(( $(fg_stat "$FG_SNAP" _global allow) - a0 ))
			# allowlisted: counted as allow and delivered. A random
			# spoofed source can hit 10.213.0.1 too (1 in 2^32 a packet)
			expect "$proto flood: allowlisted client $CLIENT_ALLOW gets through" \
				"[ ${ra:-0} -ge $((sa * 99 / 100)) ] && [ $al -ge $((sa * 99 / 100)) ] && [ $al -le $((sa + 2)) ]" \
				"$sa" "allow ~= delivered ~= $sa (>= 99%)" "allow $al, delivered ${ra:-?}"
			expect "$proto flood: client $CLIENT_PLAIN within its limit ($client_rate/s < $src_rate/s) gets through" \
				"[ ${rp:-0} -ge $((sp * 99 / 100)) ] && [ $sp -gt 0 ]" \
				"$sp" "delivered >= 99% of $sp" "delivered ${rp:-?}"
			# the per-source rule under a random-source flood: new
			# buckets only at the admission rate, the rest shares the
			# overflow bucket (its limit = the per-source limit)
			read -r ins so sp2 <<< "$(( $(fg_stat "$FG_SNAP" "$src_rule" ev:insert) - ins0 )) $(( $(fg_stat "$FG_SNAP" "$src_rule" ev:overflow) - so0 )) $(( $(fg_stat "$FG_SNAP" "$src_rule" pass) - sp0 ))"
			lim=$(calc "$INS_RATE * ($T + 0.5) + $INS_BURST + 1")
			expect "$proto flood (hping3 --rand-source) on $src_rule: new buckets at most the admission rate" \
				"[ $ins -le $lim ] && [ $so -gt 0 ]" "${sent2:-?}" \
				"inserts <= admission*(T+0.5s)+burst = $lim, rest overflow" "inserts $ins, overflow $so"
			# a spoofed source that repeats passes again from its
			# bucket: hping3 draws sources from rand(), so allow the
			# birthday count n^2/2^31 of repeats
			rep=$(calc "${sent2:-0} * ${sent2:-0} / 2147483648 + 1")
			lim2=$(calc "$ins + $sp + $src_rate * ($T + 0.5) + $src_burst + $rep")
			expect "$proto flood on $src_rule: admitted at most one per new bucket + overflow rate + client" \
				"[ $sp2 -le $lim2 ]" "${sent2:-?}" "pass <= inserts+client+overflow rate*(T+0.5)+burst+repeats $rep = $lim2" "pass $sp2"
		fi

		# fgen --random: spoofed sources in 10.60.0.0/16 on the aggregate rule
		sleep 1.2
		poll_start "$agg_id"
		sent=$(gd_fgen -d "$GD_RX_IP" "${fg_args[@]}" --dport "$agg_port" --random -s 10.60.0.0/16 -t "$T")
		agg_check "$proto flood (fgen --random /16) on $agg_rule" "$agg_rule" "$agg_rate" "$agg_burst" "$sent"
	done
	gd_stop
fi

# =========================================================================
# 2. the eviction attack
# =========================================================================
VICTIM=10.213.0.5
# evict_run NAME ADMISSION_LINE: throttle VICTIM, spray 5x the table, resume.
# Leaves "first_pass resume_pass resume_sent elapsed_s victim_key_kept
# inserts spray_sent insert_fail_at_resume" in $GD_TMP/NAME.res
evict_run() {
	local name=$1 p0 p1 p2 t0 t1 s kept ins sent f0 f1
	echo "x" > "$GD_TMP/$name.res"
	gd_policy_one "$name" 1024 slow 7 1/s 50 "$2"
	gd_start "$name" || { echo "start failed: $(tail -2 "$GD_LOG")" > "$GD_TMP/$name.res"; return 1; }
	t0=$(date +%s.%N)
	gd_fgen -d "$GD_RX_IP" -s "$VICTIM" --dport 7 -n 200 > /dev/null
	sleep 0.1; fg_snap "$GD_PIN"; p1=$(fg_stat "$FG_SNAP" slow pass)
	# 5 x 1024 spoofed sources, each twice, in turn
	s=$(gd_fgen -d "$GD_RX_IP" -s 10.70.0.0 --sources 5120 --dport 7 -n 10240)
	sleep 0.1; fg_snap "$GD_PIN"; p2=$(fg_stat "$FG_SNAP" slow pass); ins=$(fg_stat "$FG_SNAP" slow ev:insert); f0=$(fg_stat "$FG_SNAP" slow ev:insert_fail)
	kept=$("$FGDUMP" --pin-dir "$GD_PIN" bucket4 "$VICTIM" slow | fg_json_get - found)
	case "$kept" in true) kept=yes ;; false) kept=no ;; *) kept=unknown ;; esac
	sent=$(gd_fgen -d "$GD_RX_IP" -s "$VICTIM" --dport 7 -n 100)
	t1=$(date +%s.%N)
	sleep 0.1; fg_snap "$GD_PIN"; p0=$(fg_stat "$FG_SNAP" slow pass); f1=$(fg_stat "$FG_SNAP" slow ev:insert_fail)
	echo "$p1 $((p0 - p2)) $sent $(calcf "$t1 - $t0") $kept $ins $s $((f1 - f0))" > "$GD_TMP/$name.res"
	gd_stop
}
evict_run evict ""
read -r e_first e_resume e_sent e_secs e_kept e_ins e_spray e_fail < "$GD_TMP/evict.res"
if [ -z "${e_fail:-}" ]; then
	bad "eviction attack: run failed: $(cat "$GD_TMP/evict.res")"
else
	expect "eviction: victim $VICTIM throttled (rate 1/s burst 50)" "[ $e_first -ge 50 ] && [ $e_first -le 52 ]" \
		200 "pass 50 (+1 per second)" "pass $e_first"
	lim=$(calc "$e_secs + 1")
	expect "eviction: after $e_spray spoofed frames from 5120 sources (5x max_sources), the victim gets no fresh burst" \
		"[ $e_resume -le $lim ]" "$e_sent" \
		"pass <= refill 1/s x ${e_secs}s + 1 = $lim (a fresh burst is 50)" \
		"pass $e_resume, victim's bucket kept: $e_kept, new buckets admitted: $e_ins"
fi
# without the admission limit the spray churns the IPv4 table at full speed:
# the set-associative table still only ever takes a full bucket's way, so
# the throttled victim keeps its bucket (by construction, not by the limit)
evict_run evictctl "admission: {rate: 1000000/s, burst: 100000}"
read -r c_first c_resume c_sent c_secs c_kept c_ins c_spray c_fail < "$GD_TMP/evictctl.res"
if [ -z "${c_fail:-}" ]; then
	bad "eviction, admission opened up: run failed: $(cat "$GD_TMP/evictctl.res")"
else
	lim=$(calc "$c_secs + 1")
	expect "eviction, admission opened up (1000000/s): $c_ins new buckets, the victim's bucket is still never taken" \
		"[ $c_resume -le $lim ] && [ $c_kept = yes ]" "$c_sent" \
		"pass <= $lim, bucket kept (a fresh burst is 50)" \
		"pass $c_resume, victim's bucket kept: $c_kept"
fi

# =========================================================================
# 3. evasion
# =========================================================================
gd_policy evasion <<'YAML'
max_sources: 65536
malformed: drop
rules:
  - name: svc
    match: {proto: udp, dport: 9}
    per_source: {rate: 10/s, burst: 10}
  - name: svc-syn
    match: {proto: tcp, dport: 9, tcp_flags: syn}
    per_source: {rate: 10/s, burst: 10}
  - name: bulk-bytes
    match: {proto: udp, dport: 10}
    per_source: {rate: 100KB/s, burst: 100KB}
YAML
# (no fragments: key: the implicit rule's default, 100/s burst 200)
N=300; [ "$GD_LONG" = 1 ] && N=3000
if ! gd_start evasion; then
	bad "evasion: floodgated starts" "$(tail -3 "$GD_LOG")"
else
	src_n=20
	# limited NAME RULE RATE BURST FGEN-ARGS: N frames of one fresh source must
	# all land in RULE's row, at most burst + rate x elapsed passed
	limited() {
		local name=$1 rule=$2 rate=$3 burst=$4 ev=${EV:-}; shift 4
		local src=10.213.1.$src_n; src_n=$((src_n + 1))
		case "$*" in *"$GD_RX_IP6"*) src=fd00:213::1:$src_n ;; esac
		fg_snap "$GD_PIN"; local r0 p0 g0 e0 t0 sent r1 p1 g1 e1 secs lim txd
		r0=$(fg_stat "$FG_SNAP" "$rule" total); p0=$(fg_stat "$FG_SNAP" "$rule" pass); g0=$(fg_stat_sum "$FG_SNAP" total)
		[ -n "$ev" ] && e0=$(fg_stat "$FG_SNAP" "$rule" "ev:$ev")
		t0=$(date +%s.%N)
		if [ -n "${RAW:-}" ]; then
			read -r sent _ <<< "$(intx "$GD_PY" "$GD_TMP/gd_raw.py" send gdt0 "$RAW" "$N" "$src" "$GD_RX_IP" 9 64 "$GD_MAC")"
			echo '{}' > "$GD_TMP/fgen.json"
		else
			sent=$(gd_fgen -s "$src" -n "$N" "$@")
		fi
		sleep 0.2
		secs=$(calcf "$(date +%s.%N) - $t0")
		txd=$(fg_json_get "$GD_TMP/fgen.json" tx_dropped)
		fg_snap "$GD_PIN"; r1=$(fg_stat "$FG_SNAP" "$rule" total); p1=$(fg_stat "$FG_SNAP" "$rule" pass); g1=$(fg_stat_sum "$FG_SNAP" total)
		lim=$(calc "$burst + $rate * $secs + 1")
		local got=$((r1 - r0)) all=$((g1 - g0)) pass=$((p1 - p0)) evs=""
		[ -n "$ev" ] && evs=", $ev events $(( $(fg_stat "$FG_SNAP" "$rule" "ev:$ev") - e0 ))"
		# every frame that left the veth is in the rule's row
		expect "$name: charged to rule $rule, limited" \
			"[ $sent -gt 0 ] && [ $got -ge $((sent - txd)) ] && [ $got -le $all ] && [ $pass -le $lim ]${ev:+ && [ $(( $(fg_stat "$FG_SNAP" "$rule" "ev:$ev") - e0 )) -eq $got ]}" \
			"$sent (veth dropped $txd)" "all in $rule, pass <= $lim" "$got of $all in $rule, pass $pass$evs"
	}
	# malformed NAME FGEN-ARGS: counted as malformed (dropped), nowhere else
	malformed() {
		local name=$1; shift
		fg_snap "$GD_PIN"; local m0 g0 p0 sent m1 g1 p1 txd
		m0=$(fg_stat "$FG_SNAP" _global malformed); g0=$(fg_stat_sum "$FG_SNAP" total); p0=$(fg_stat_sum "$FG_SNAP" pass)
		if [ -n "${RAW:-}" ]; then
			read -r sent _ <<< "$(intx "$GD_PY" "$GD_TMP/gd_raw.py" send gdt0 "$RAW" "$N" 10.213.1.99 "$GD_RX_IP" 9 64 "$GD_MAC")"
			echo '{}' > "$GD_TMP/fgen.json"
		else
			case "$*" in *"$GD_RX_IP6"*) s=fd00:213::1:99 ;; *) s=10.213.1.99 ;; esac
			sent=$(gd_fgen -s "$s" -n "$N" "$@")
		fi
		sleep 0.2
		txd=$(fg_json_get "$GD_TMP/fgen.json" tx_dropped)
		fg_snap "$GD_PIN"; m1=$(fg_stat "$FG_SNAP" _global malformed); g1=$(fg_stat_sum "$FG_SNAP" total); p1=$(fg_stat_sum "$FG_SNAP" pass)
		expect "$name: malformed, dropped" \
			"[ $sent -gt 0 ] && [ $((m1 - m0)) -ge $((sent - txd)) ] && [ $((m1 - m0)) -eq $((g1 - g0)) ] && [ $((p1 - p0)) -eq 0 ]" \
			"$sent (veth dropped $txd)" "all malformed, none passed" "malformed $((m1 - m0)) of $((g1 - g0)), passed $((p1 - p0))"
	}
	# tagged frames from AF_PACKET, not fgen: fgen's live frames recycle
	# pages, and the receiving stack untags a passed frame in place, so a
	# recycled frame goes out again with its MACs moved over its tag (seen
	# here as non-IP): a generator artifact, not floodgate's
	RAW=udp-vlan:100 limited "802.1Q-tagged UDP flood" svc 10 10
	RAW=udp-vlan:100:200 limited "QinQ (802.1ad + 802.1Q) UDP flood" svc 10 10
	RAW=syn-vlan:100:200 limited "QinQ SYN flood" svc-syn 10 10
	RAW=udp-vlan:100:200:300 malformed "three VLAN tags"
	limited "IPv4 with 40 bytes of options" svc 10 10 -d "$GD_RX_IP" --ip-options 40
	limited "IPv6, 8 extension headers (the most allowed)" svc 10 10 -d "$GD_RX_IP6" --ext-hdrs 8
	malformed "IPv6, 9 extension headers" -d "$GD_RX_IP6" --ext-hdrs 9
	malformed "IPv6, 16 extension headers" -d "$GD_RX_IP6" --ext-hdrs 16
	EV=frag limited "IPv4 non-first fragments at the port-limited service (dport 9)" fragments 100 200 \
		-d "$GD_RX_IP" --frag-offset 1480
	EV=frag limited "IPv6 non-first fragments at the port-limited service" fragments 100 200 \
		-d "$GD_RX_IP6" --frag-offset 1480
	EV=frag limited "IPv4 fragments with options at offset 8" fragments 100 200 \
		-d "$GD_RX_IP" --ip-options 8 --frag-offset 8

	# tiny and truncated frames, raw from AF_PACKET
	for kind in eth-only ip4-trunc ip4-badlen udp-trunc tcp-badoff ip6-trunc; do
		fg_snap "$GD_PIN"; m0=$(fg_stat "$FG_SNAP" _global malformed); g0=$(fg_stat_sum "$FG_SNAP" total); p0=$(fg_stat_sum "$FG_SNAP" pass)
		read -r sent flen <<< "$(intx "$GD_PY" "$GD_TMP/gd_raw.py" send gdt0 "$kind" 100 10.213.1.98 "$GD_RX_IP" 9 64 "$GD_MAC" 2>&1)"
		sleep 0.2
		fg_snap "$GD_PIN"; m1=$(fg_stat "$FG_SNAP" _global malformed); g1=$(fg_stat_sum "$FG_SNAP" total); p1=$(fg_stat_sum "$FG_SNAP" pass)
		expect "truncated frame ($kind, $flen bytes): malformed, dropped" \
			"[ ${sent:-0} -gt 0 ] && [ $((m1 - m0)) -eq $sent ] && [ $((g1 - g0)) -eq $sent ] && [ $((p1 - p0)) -eq 0 ]" \
			"${sent:-?}" "$sent malformed, none passed" "malformed $((m1 - m0)) of $((g1 - g0)), passed $((p1 - p0))"
	done

	# jumbo frames: MTU 9000 on both ends while attached (floodgate is
	# xdp.frags: a multi-buffer frame is parsed and charged whole)
	if ip -n "$(fg_ns_name rx)" link set gdr0 mtu 9000 2>"$GD_TMP/mtu.err" &&
	   ip -n "$(fg_ns_name tx)" link set gdt0 mtu 9000 2>>"$GD_TMP/mtu.err"; then
		ok "jumbo: MTU 9000 set on the veth pair with floodgate attached"
		for spec in "svc 9 8000 100 packets" "bulk-bytes 10 8000 50 bytes"; do
			read -r rule port flen cnt unit <<< "$spec"
			fg_snap "$GD_PIN"; r0=$(fg_stat "$FG_SNAP" "$rule" total); p0=$(fg_stat "$FG_SNAP" "$rule" pass)
			b0=$(fg_stat "$FG_SNAP" "$rule" bytes:pass); g0=$(fg_stat_sum "$FG_SNAP" total)
			t0=$(date +%s.%N)
			read -r sent fl <<< "$(intx "$GD_PY" "$GD_TMP/gd_raw.py" send gdt0 udp-jumbo "$cnt" 10.213.1.97 "$GD_RX_IP" "$port" "$flen" "$GD_MAC" 2>&1)"
			sleep 0.2
			secs=$(calcf "$(date +%s.%N) - $t0")
			fg_snap "$GD_PIN"; r1=$(fg_stat "$FG_SNAP" "$rule" total); p1=$(fg_stat "$FG_SNAP" "$rule" pass)
			b1=$(fg_stat "$FG_SNAP" "$rule" bytes:pass); g1=$(fg_stat_sum "$FG_SNAP" total)
			if [ "$unit" = packets ]; then
				lim=$(calc "10 + 10 * $secs + 1"); what="pass <= $lim frames"; got=$((p1 - p0))
			else
				# 100 KB burst + 100 KB/s: whole frames of $fl bytes
				lim=$(calc "100000 + 100000 * $secs + $fl"); what="pass bytes <= $lim"; got=$((b1 - b0))
			fi
			# every frame counted once, in its rule; the kernel's own IPv6
			# chatter after the MTU change (an MLD report) may add a frame or two
			expect "jumbo $fl-byte frames ($unit rule $rule)" \
				"[ ${sent:-0} -gt 0 ] && [ $((r1 - r0)) -eq $sent ] && [ $((g1 - g0)) -ge $sent ] && [ $((g1 - g0)) -le $((sent + 2)) ] && [ $got -le $lim ] && [ $((p1 - p0)) -ge 1 ]" \
				"${sent:-?}" "all $sent in $rule, $what" \
				"$((r1 - r0)) in $rule of $((g1 - g0)), pass $((p1 - p0)) frames / $((b1 - b0)) bytes"
		done
	else
		bad "jumbo: MTU 9000 on the veth pair: $(cat "$GD_TMP/mtu.err")"
	fi
	ip -n "$(fg_ns_name rx)" link set gdr0 mtu 1500 2>/dev/null
	ip -n "$(fg_ns_name tx)" link set gdt0 mtu 1500 2>/dev/null
	gd_stop
fi

# =========================================================================
# 4. a hot key: one source from both CPUs at once
# =========================================================================
HOT_RATE=50000; HOT_BURST=10000
gd_policy_one hot 65536 hot 9 "$HOT_RATE/s" "$HOT_BURST"
if [ "$(nproc)" -lt 2 ]; then
	skip "hot key" "needs 2 CPUs"
elif ! gd_start hot; then
	bad "hot key: floodgated starts" "$(tail -3 "$GD_LOG")"
else
	fg_snap "$GD_PIN"; hid=$(fg_rule_id "$FG_SNAP" hot)
	poll_start "$hid" 10.213.0.77 "$HOT_RATE"
	intx "$FGEN" -i gdt0 --dst-mac "$GD_MAC" -d "$GD_RX_IP" -s 10.213.0.77 --cpu 0 -t "$T" --json > "$GD_TMP/h0.json" 2> "$GD_TMP/h0.err" &
	h0=$!
	intx "$FGEN" -i gdt0 --dst-mac "$GD_MAC" -d "$GD_RX_IP" -s 10.213.0.77 --cpu 1 -t "$T" --json > "$GD_TMP/h1.json" 2> "$GD_TMP/h1.err" &
	h1=$!
	wait "$h0" "$h1"
	poll_end; read -r secs slo tot p d gap wsecs wpass wread wtat windebt < "$GD_TMP/poll.out"
	s0=$(fg_json_get "$GD_TMP/h0.json" packets); s1=$(fg_json_get "$GD_TMP/h1.json" packets)
	fg_snap "$GD_PIN"; cont=$(fg_stat "$FG_SNAP" hot ev:contended)
	# the whole flood: floodgate saw its first and last packet between
	# T_lower and T_upper apart (counter reads before/after, see
	# POLL_PY); the coarse clock ticks every 4 ms: + rate x 4 ms + 1. Below
	# that only by the tokens lost while the bucket was full and the
	# senders paused (their start), so: no more than rate*T+burst.
	tol=$(calc "$HOT_RATE * 0.004 + 1")
	hi=$(calc "$HOT_RATE * $secs + $HOT_BURST + $tol")
	expect "hot key: 10.213.0.77 from CPU 0 and CPU 1 at once, rate $HOT_RATE/s burst $HOT_BURST, T in [$slo, $secs] s" \
		"[ $p -le $hi ] && [ $p -ge $((HOT_BURST)) ] && [ $s0 -gt 0 ] && [ $s1 -gt 0 ]" \
		"$s0 + $s1 (floodgate saw $tot)" "pass <= $hi (rate*T+burst+rate*4ms+1)" \
		"pass $p, drop $d, contended $cont, longest pause in arrivals ${gap} ms"
	# exactness: a window inside the flood (0.5 s in from both ends). Every
	# admitted packet moves the bucket's tat by exactly 1/rate while the
	# bucket is in debt, so the pass counter must grow by what tat moved:
	# a double spend between CPUs would pass more. Each end reads the row,
	# then tat, inside its timed read, so each end's skew is at most rate x
	# its read time; the two can add: -+ rate x (both read times) + 2 (a
	# packet per CPU between its tat CAS and its counter).
	# Each admission sets tat = max(tat, now) + 1/rate, so pass <= tat
	# advance always; equal when the bucket never went idle in the window,
	# which needs every pause in arrivals below burst/rate.
	if [ "$wsecs" = 0 ]; then
		skip "hot key window" "the flood was too short for a window (T=$secs s)"
	elif [ "$windebt" = 2 ]; then
		skip "hot key window" "cannot read the source's bucket (fgdump watch --source): exactness not measured"
	elif [ "$windebt" != 1 ]; then
		skip "hot key window" "the bucket was not in debt at both ends of the window (senders paused): exactness not measurable this run"
	else
		ttol=$(calc "$HOT_RATE * 2 * $wread / 1000 + 2")	# wread: the mean of the two, ms
		idle_ms=$(calc "$HOT_BURST * 1000 / $HOT_RATE")
		if awk -v g="$gap" -v m="$idle_ms" 'BEGIN { exit !(g < m) }'; then
			expect "hot key: admission exact over a ${wsecs}s window (pass counter vs bucket tat)" \
				"[ $wpass -ge $((wtat - ttol)) ] && [ $wpass -le $((wtat + ttol)) ]" \
				"$s0 + $s1" "pass = tat advance / (1/rate) = $wtat -+ $ttol (reads ${wread} ms each on average)" "pass $wpass"
		else
			expect "hot key: no double spend over a ${wsecs}s window (pass counter vs bucket tat; senders paused ${gap} ms > burst/rate ${idle_ms} ms, so only <=)" \
				"[ $wpass -le $((wtat + ttol)) ]" \
				"$s0 + $s1" "pass <= tat advance / (1/rate) = $wtat + $ttol (reads ${wread} ms each on average)" "pass $wpass"
		fi
	fi
	gd_stop
fi

fg_finish
