#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The daemon's own cost at a million sources (docs/operators-guide.md, "The
# daemon's own cost"). floodgated runs on one end of a veth pair in
# namespaces made here; tools/fgfill fills its tables through
# BPF_PROG_TEST_RUN of the attached program. Asserts what does not depend on
# the machine's speed:
#   1. the source table entries the daemon reads a second (its own counter)
#      and its bpf() syscalls a second (strace -c, if installed) stay within
#      the per-tick budget, and do not grow from 10k to 1M tracked sources;
#   2. `floodgate status` reads no table: its figures are the daemon's count;
#   3. the throttle log still says "throttling" and "no longer throttling"
#      for real throttled sources (IPv4 and IPv6) among 1M idle ones;
#   4. a spray of throttled sources adds at most the ring's cap of events
#      (FG_TEV_BURST + FG_TEV_RATE a second); the rest are counted as
#      tev_capped.
# Prints the daemon's CPU share (utime+stime over DC_CPU_SECS, default 10)
# and the time of status and top, as figures, not asserted.
# DC_MAX (default 1048576): max_sources. Needs root.
# Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
FGFILL=$FG_OUT/fgfill
fg_init --root --pin dcost "$FGD" "$FG" "$FGFILL"

MAX=${DC_MAX:-1048576}
CPU_SECS=${DC_CPU_SECS:-10}
TEV_RATE=4096 TEV_BURST=4096	# include/floodgate.h FG_TEV_RATE, FG_TEV_BURST
# per tick at most (user/daemon/srcwatch.h): 8192 IPv4 sets and 4096 IPv6 sets of 8
# ways, 4096 re-checks of 8 ways
READS_MAX=$((8192 * 8 + 4096 * 8 + 4096 * 8))

fg_pair a v0 10.78.0.1/24 b v1 10.78.0.2/24
PORT=$((20000 + $$ % 20000))

# idle: fast rules that fill the tables without dropping; spray: sources
# in 10.200/16 and 2001:db8:200::/48 that a few packets throttle
cat > "$FG_TMP/policy.yaml" <<YAML
interfaces: [v1]
max_sources: $MAX
metrics: "127.0.0.1:$PORT"
admission: {rate: 10000000/s, burst: 1000000}  # the fill's pace, not the limiter's
rules:
  - name: spray
    match: {proto: icmp, icmp_type: 8, src: [10.200.0.0/16]}
    per_source: {rate: 100/s, burst: 2}
  - name: spray6
    match: {proto: icmpv6, icmp_type: 128, src: ["2001:db8:200::/48"]}
    per_source: {rate: 100/s, burst: 2}
  - name: idle
    match: {proto: icmp, icmp_type: 8}
    per_source: {rate: 100000/s, burst: 100}
  - name: idle6
    match: {proto: icmpv6, icmp_type: 128}
    per_source: {rate: 100000/s, burst: 100}
YAML

metric() {	# metric NAME: its value on the daemon's page
	fg_ns_exec b curl -s "http://127.0.0.1:$PORT/metrics" | awk -v n="$1" '$1 == n { print $2 }'
}
fill() {	# fill ARGS: fgfill into our pin dir; its JSON in $FG_TMP/fill.json
	"$FGFILL" -p "$PIN" "$@" > "$FG_TMP/fill.json" 2> "$FG_TMP/fill.err"
}
# reads_rate SECS: table entries the daemon read a second, over SECS
reads_rate() {
	local r0 r1
	r0=$(metric floodgate_daemon_source_reads_total); sleep "$1"
	r1=$(metric floodgate_daemon_source_reads_total)
	echo $(( (${r1:-0} - ${r0:-0}) / $1 ))
}
# bpf_rate SECS: the daemon's bpf() syscalls a second (strace -c), or -1
bpf_rate() {
	local n
	command -v strace > /dev/null || { echo -1; return; }
	timeout -s INT "$1" strace -c -f -e trace=bpf -p "$FG_DPID" -o "$FG_TMP/strace.txt" 2> /dev/null
	n=$(awk '$NF == "bpf" { print $4 }' "$FG_TMP/strace.txt")	# % seconds usecs/call calls
	echo $(( ${n:-0} / $1 ))
}
# status_bpf: bpf() calls of one `floodgate status`, or -1 without strace
status_bpf() {
	command -v strace > /dev/null || { echo -1; return; }
	strace -f -e trace=bpf -o "$FG_TMP/status.strace" "$FG" --pin-dir "$PIN" status > /dev/null 2>&1
	grep -c 'bpf(' "$FG_TMP/status.strace"
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$FG_DPID/stat"; }
ms_of() {	# ms_of CMD...: wall ms of CMD (output dropped)
	local t0 t1
	t0=$(date +%s%N); "$@" > /dev/null 2>&1; t1=$(date +%s%N)
	echo $(( (t1 - t0) / 1000000 ))
}

if ! command -v curl > /dev/null; then
	skip "daemon cost" "no curl to read the daemon's metrics"; fg_finish
fi
fg_daemon_up b "$FG_TMP/policy.yaml" "floodgated starts"
ok "floodgated starts with max_sources $MAX"
sleep 1.5

# --- 1. reads per second at 10k and at 1M sources ----------------------------------------
fill -4 -n 10000 -s 10.128.0.0
check_cmp "10k IPv4 idle sources sent, all passed" "$(fg_json_get "$FG_TMP/fill.json" pass)" = 10000
R10=$(reads_rate 4); S10=$(bpf_rate 4); ST10=$(status_bpf)
echo "# 10k sources: $R10 table entries read a second, $S10 bpf() calls a second"
check_cmp "10k sources: entries read a second within the tick's budget" "$R10" -le "$READS_MAX"

N4=$((MAX - MAX / 16))	# what the set-associative table takes without full sets refusing
N6=$((MAX - MAX / 16))	# the LRU keeps its per-CPU slack
fill -4 -n "$N4" -s 10.0.0.0; p4=$(fg_json_get "$FG_TMP/fill.json" pass)
echo "# IPv4 fill: $(cat "$FG_TMP/fill.json")"
echo "# figure: top $(ms_of "$FG" --pin-dir "$PIN" top) ms at ~1M IPv4 sources, no IPv6"
fill -6 -n "$N6" -s 2001:db8:1::1; p6=$(fg_json_get "$FG_TMP/fill.json" pass)
echo "# IPv6 fill: $(cat "$FG_TMP/fill.json")"
check_cmp "IPv4 fill: $N4 sources passed" "$p4" = "$N4"
check_cmp "IPv6 fill: $N6 sources passed" "$p6" = "$N6"
sleep 2
R1M=$(reads_rate 4); S1M=$(bpf_rate 4)
echo "# ~1M+1M sources: $R1M table entries read a second, $S1M bpf() calls a second"
check_cmp "1M sources: entries read a second within the tick's budget" "$R1M" -le "$READS_MAX"
check_cmp "entries read a second do not grow with the sources (10k: $R10)" "$R1M" -le $((R10 * 3 / 2 + 8192))
if [ "$S1M" -ge 0 ]; then
	# a tick: stats and names row by row, policy, ctl, one batch: none per source
	check_cmp "bpf() calls a second do not grow with the sources (10k: $S10)" "$S1M" -le $((S10 + 10))
else
	skip "bpf() calls a second" "no strace"
fi

# --- 2. status reads the daemon's count, not the tables ------------------------------------
# fg_src4's pass takes 16 ticks at 1M; fg_src6's (a batch of 4096 a tick)
# MAX / 4096 ticks: IPv4 is waited for, IPv6 only printed
n=0
while [ $n -lt 30 ]; do
	"$FG" --pin-dir "$PIN" status --json > "$FG_TMP/status.json" 2>/dev/null
	read -r c4 c6 < <(fg_json_get "$FG_TMP/status.json" sources.ipv4 sources.ipv6)
	[ "${c4:-0}" -ge $((N4 * 8 / 10)) ] && break
	sleep 1; n=$((n + 1))
done
echo "# status after ${n} s: $c4 IPv4, $c6 IPv6 sources (the IPv6 pass takes $((MAX / 4096)) s)"
# (a full set refuses or takes over a way: fewer ways than sources at 94%)
check_cmp "status: the daemon's count of IPv4 sources (80% of the $N4 sent at least)" \
	"${c4:-0}" -ge $((N4 * 8 / 10))
check_cmp "status: at most the table's $MAX ways" "${c4:-0}" -le "$MAX"
ST1M=$(status_bpf)
if [ "$ST1M" -ge 0 ]; then
	# (it also walks the system's program ids, which other programs change)
	check_cmp "status: as many bpf() calls at 1M sources as at 10k ($ST10)" "$ST1M" -le $((ST10 + 20))
else
	skip "status: bpf() calls" "no strace"
fi
ST_MS=$(ms_of "$FG" --pin-dir "$PIN" status)
TOP_MS=$(ms_of "$FG" --pin-dir "$PIN" top)
echo "# figures: status $ST_MS ms, top $TOP_MS ms at $c4 IPv4 + $c6 IPv6 sources"

# --- 3. the throttle log among 1M idle sources ---------------------------------------------
fill -4 -n 3 -s 10.200.0.1 -r 40
fill -6 -n 1 -s 2001:db8:200::1 -r 40
if fg_wait_for "$DLOG" "throttling 10.200.0.3 \(rule spray\)" 40; then
	ok "throttle log: 'throttling 10.200.0.3 (rule spray)' among 1M idle sources"
else
	bad "throttle log: throttling 10.200.0.3" "$(grep -c throttling "$DLOG") throttle lines"
fi
check "throttle log: the IPv6 one too" fg_wait_for "$DLOG" "throttling 2001:db8:200::\S* \(rule spray6\)" 40
if fg_wait_for "$DLOG" "no longer throttling 10.200.0.3 \(rule spray\)" 80; then
	ok "throttle log: 'no longer throttling 10.200.0.3' once it stopped"
else
	bad "throttle log: no longer throttling 10.200.0.3" "$(grep throttl "$DLOG" | tail -3 | one_line)"
fi
check "throttle log: the IPv6 one stops too" \
	fg_wait_for "$DLOG" "no longer throttling 2001:db8:200::\S* \(rule spray6\)" 80

# --- 4. the ring's cap under a spray --------------------------------------------------------
e0=$(metric floodgate_throttle_events_total)
c0=$(fg_event "$PIN" spray tev_capped)
t0=$(date +%s%N)
fill -4 -n 30000 -s 10.200.16.0 -r 20
t1=$(date +%s%N)
sleep 2.5	# two ticks: the daemon drains the ring
e1=$(metric floodgate_throttle_events_total)
c1=$(fg_event "$PIN" spray tev_capped)
secs=$(( (t1 - t0) / 1000000000 + 4 ))
got=$(( ${e1:-0} - ${e0:-0} )); capped=$(( c1 - c0 ))
echo "# spray: 30000 throttled sources in $(( (t1 - t0) / 1000000 )) ms: $got events, $capped capped"
check_cmp "spray: events within the ring's cap (burst + rate x ${secs} s)" "$got" -le $((TEV_BURST + TEV_RATE * secs))
check_cmp "spray: the refused events are counted (tev_capped)" "$capped" -gt 0
check "spray: the throttle log's line limit holds (suppressed, counted)" \
	grep -qE "throttle log: suppressed [0-9]+ messages" "$DLOG"
check "the daemon survives it all" kill -0 "$FG_DPID"

# --- figures: the daemon's CPU at ~1M + 1M sources ------------------------------------------
k0=$(cpu_ticks); sleep "$CPU_SECS"; k1=$(cpu_ticks)
hz=$(getconf CLK_TCK)
echo "# figure: floodgated CPU $(awk -v d=$((k1 - k0)) -v hz="$hz" -v s="$CPU_SECS" \
	'BEGIN { printf "%.2f", 100 * d / hz / s }')% of a core over ${CPU_SECS} s ($((k1 - k0)) ticks)"

fg_daemon_stop
check "nothing left pinned" bash -c "! ls '$PIN' 2>/dev/null | grep -q ."
fg_finish
