#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# `make bench`: floodgate against the parse+count+drop floor, an nftables
# netdev-ingress meter and iptables hashlimit. Run as root after `make`.
#
#   1. micro     BPF_PROG_TEST_RUN on one CPU, ns per packet (tools/fgbench.c)
#   2. sweep     the curves: cost against sources (1 to 4M), rules (1 to the
#                most the compiler takes) and prefixes (0 to 1M), and the
#                shedding figures, each point next to the floor (fgbench sweep)
#   3. live      64-byte frames through a veth pair into a namespace,
#                generator (fgen) and receiver on one core, CPU per packet,
#                at a few source counts (floodgate, floor, nftables, hashlimit)
#   3b. synauth  a spoofed SYN flood answered by floodgate's syn_auth
#                responder, by the kernel's own cookies (tcp_syncookies=2) and
#                by nftables synproxy: CPU ns per SYN answered, SYN-ACKs counted
#   4. accuracy  one source at 10x its rate from both CPUs
#   5. daemon    floodgated's CPU (utime + stime over a window) at 10k, 100k
#                and 1M tracked sources of each family (one daemon: the IPv6
#                points have the IPv4 sources beside them), each table filled
#                through its own program until it holds the count (fgbench
#                fill --tracked); status and top latency there (best of 3)
#   6. dispatch  floodgate inside libxdp's dispatcher next to alone, or the
#                reason this kernel cannot build one (fgbench dispatch)
#   7. memory    map bytes per tracked source: each of the daemon's tables
#                offered as many distinct sources as it has ways, memlock
#                over what it then holds (part daemon)
#   9. tables    issue 25: 1,000 and 10,000 active sources in a table sized
#                for them (TABLE) and in one of BIG_TABLE: through test-run
#                (fgbench sweep --table) and live (as part live), the two
#                sizes interleaved, live three runs of each a pass, the
#                cheapest of each; goal: at 1,000 the big table within 5%
#   8. start     floodgated's start-up against policy size (one rule, 0 to
#                1M deny /24s): a fresh start, an adopting restart after
#                SIGKILL (the running program kept), and one that loads and
#                swaps anyway (FLOODGATE_ADOPT_RELOAD=1); wall time until the
#                background start returns, i.e. fg_meta names the daemon
#  10. saack     BPF_PROG_TEST_RUN: a verified client's TCP ACK on a syn_auth
#                rule (the program with syn_auth's steps, the fast path)
#                against the same ACK on the same rule without syn_auth, in
#                the default load and in the syn_auth load, ratio per pass:
#                the median of 31 rounds, each a short run of the three
#                instances in rotating order (fgbench synauth); goal: 10%
# Every figure is min/median/max over BENCH_PASSES interleaved passes: pass 1
# runs every competitor, then pass 2 runs them all again, ...
#
# Environment (defaults fit in ~20 minutes here):
#   BENCH_PASSES=3   BENCH_SECONDS=3 (live run)   BENCH_ACC_SECONDS=5
#   BENCH_CPU=1 (the core under test)   BENCH_REPEAT=1048576 (micro)
#   BENCH_PROFILE=1 (perf profiles of floodgate)  BENCH_OUT=results
#   BENCH_DAEMON_SECONDS=10 (daemon CPU window)
#   BENCH_QUICK=1   one pass, short runs, sweeps to 100k sources and 10k
#                   prefixes, live at 1 and 1,000 sources, daemon to 100k,
#                   no profiles (a few minutes; the figures are rough)
#   BENCH_SWEEP_FILE=F   the sweep part's curves from F, the output of an
#                   fgbench sweep run with the same options (tests/e2e_bench.sh)
#   BENCH_TABLES_SOURCES="1000 10000"   part tables' active source counts
#   BENCH_PARTS="micro sweep live synauth acc daemon dispatch profile start tables saack": only those
#                   parts run; the goals of the others print MISSED (not run)
#
# Everything it makes (two namespaces and their veth pair, the nft table and
# iptables rules inside them, a floodgate pin dir, background processes) is
# removed on exit, also on failure or Ctrl-C.
set -u
cd "$(dirname "$0")/.."
. tools/netns.sh

QUICK=${BENCH_QUICK:-0}
if [ "$QUICK" = 1 ]; then
	PASSES=${BENCH_PASSES:-1}; SECS=${BENCH_SECONDS:-1}; ACC_SECS=${BENCH_ACC_SECONDS:-2}
	REPEAT=${BENCH_REPEAT:-262144}; PROFILE=${BENCH_PROFILE:-0}
	DWIN=${BENCH_DAEMON_SECONDS:-3}; LIVE_SRC="1 1000"; DAEMON_PTS="10000 100000"
	START_PTS=${BENCH_START_PTS:-0 10000}
	SWEEP_ARGS=(--quick)
else
	PASSES=${BENCH_PASSES:-3}; SECS=${BENCH_SECONDS:-3}; ACC_SECS=${BENCH_ACC_SECONDS:-5}
	REPEAT=${BENCH_REPEAT:-1048576}; PROFILE=${BENCH_PROFILE:-1}
	DWIN=${BENCH_DAEMON_SECONDS:-10}; LIVE_SRC="1 1000 10000 100000"
	DAEMON_PTS="10000 100000 1000000"
	START_PTS=${BENCH_START_PTS:-0 10000 100000 1000000}
	SWEEP_ARGS=()
fi
PARTS=" ${BENCH_PARTS:-micro sweep live synauth acc daemon dispatch profile start tables saack} "
CPU=${BENCH_CPU:-1}
OUT=${BENCH_OUT:-results}
part() { [[ $PARTS == *" $1 "* ]]; }
DAEMON_TABLE=2097152	# daemon curve: max_sources, a power of two (so as many ways); 1M of each family at half load
O=.output
RATE=2		# per source, packets/s: every flooding source is far over it
BURST=4
TABLE=65536	# per-source table of every competitor; 100k sources overfill it
BIG_TABLE=1048576	# part tables: the table configured for a million sources
TABLES_SRC=${BENCH_TABLES_SOURCES:-1000 10000}	# part tables: active sources (the goal's: 1,000)
ACC_RATE=10000	# accuracy: one source at 10x this, from both CPUs
ACC_BURST=1000
GEN_RATE=100000000	# fgen -r: far above what it reaches, so never paced (see README-bench)
OTHER_CPU=$(( CPU == 0 ? 1 : 0 ))

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
for b in "$O/fgbench" "$O/fgen" "$O/fgprof" "$O/floodgated" "$O/floodgate"; do
	[ -x "$b" ] || { echo "bench: $b missing; run make" >&2; exit 1; }
done
for t in nft iptables-legacy gnuplot python3 ethtool; do
	command -v "$t" >/dev/null || { echo "bench: $t missing (tools/deps.sh bench)" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/fgbench.XXXXXX)
PIN=/sys/fs/bpf/fgbench-$$
FG_NS_PREFIX=fgb$$-
FGD_PID=
XDP_PID=
GEN_PID=
cleanup() {
	local p
	for p in $FGD_PID $XDP_PID $GEN_PID ${SRV_PID:-}; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	# the start part's daemons are not our children: wait until gone (5 s at most)
	for p in $(seq 50); do [ -n "$FGD_PID" ] && kill -0 "$FGD_PID" 2>/dev/null || break; sleep 0.1; done
	fg_ns_cleanup
	[ -e "$PIN" ] && "$O/floodgate" detach --pin-dir "$PIN" >/dev/null 2>&1
	[ -e "$PIN" ] && rm -rf "$PIN"
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'cleanup; trap - EXIT; exit 130' INT
trap 'cleanup; trap - EXIT; exit 143' TERM
mkdir -p "$OUT"
RAW=$WORK/raw.jsonl
: > "$RAW"
log() { printf 'bench: %s\n' "$*" >&2; }

# --- policies ------------------------------------------------------------------
# The realistic policy: 16 rules (TCP, UDP, ICMP; the benchmark frame, UDP
# to port 9, is matched by the last UDP rule, after every other UDP entry
# was tried), 10,000 allow and 10,000 deny prefixes spread over the IPv4
# space (/16../32, never covering 10.0.0.0/8, where the test sources are).
gen_realistic() {
	awk -v seed=42 'BEGIN {
		srand(seed)
		print "max_sources: 65536"
		for (l = 0; l < 2; l++) {
			print (l ? "deny:" : "allow:")
			n = 0
			while (n < 10000) {
				a = int(rand() * 223) + 1
				if (a == 10 || a == 127) continue
				plen = 16 + int(rand() * 17)
				b = int(rand() * 256); c = int(rand() * 256); d = int(rand() * 256)
				printf "  - %d.%d.%d.%d/%d\n", a, b, c, d, plen
				n++
			}
		}
		print "rules:"
		print "  - {name: ssh-syn, match: {proto: tcp, dport: 22, tcp_flags: syn}, per_source: {rate: 10/s, burst: 20}}"
		print "  - {name: http-syn, match: {proto: tcp, dport: [80, 443], tcp_flags: syn}, per_source: {rate: 100/s, burst: 200}}"
		print "  - {name: smtp, match: {proto: tcp, dport: 25}, per_source: {rate: 50/s, burst: 100}}"
		print "  - {name: tcp-rst, match: {proto: tcp, tcp_flags: rst}, per_source: {rate: 100/s, burst: 100}}"
		print "  - {name: tcp-other, match: {proto: tcp}, per_source: {rate: 100000/s, burst: 200000}}"
		print "  - {name: dns-refl, match: {proto: udp, sport: [53, 123, 1900, 11211]}, per_source: {rate: 1000/s, burst: 2000, prefix_v4: 24}, aggregate: {rate: 50000/s, burst: 100000}}"
		print "  - {name: dns-query, match: {proto: udp, dport: 53}, per_source: {rate: 200/s, burst: 400}}"
		print "  - {name: ntp, match: {proto: udp, dport: 123}, per_source: {rate: 10/s, burst: 20}}"
		print "  - {name: quic, match: {proto: udp, dport: 443}, per_source: {rate: 20000/s, burst: 40000}}"
		print "  - {name: syslog, match: {proto: udp, dport: 514}, per_source: {rate: 1000/s, burst: 2000}}"
		print "  - {name: wireguard, match: {proto: udp, dport: 51820}, per_source: {rate: 100000/s, burst: 100000}}"
		print "  - {name: udp-high, match: {proto: udp, sport: 1024-1100, dport: 1024-1100}, per_source: {rate: 5000/s, burst: 5000}}"
		print "  - {name: udp-any, match: {proto: udp}, per_source: {rate: 100/s, burst: 200}}"
		print "  - {name: icmp-echo, match: {proto: icmp, icmp_type: 8}, per_source: {rate: 100/s, burst: 200}}"
		print "  - {name: icmpv6-echo, match: {proto: icmpv6, icmp_type: 128}, per_source: {rate: 100/s, burst: 200}}"
		print "  - {name: esp, match: {proto: 50}, per_source: {rate: 100000/s, burst: 100000}}"
	}' > "$WORK/realistic.yaml"
}

# The live policy: the same rate and burst per source as nft and iptables.
cat > "$WORK/live.yaml" <<EOF
max_sources: $TABLE
rules:
  - name: flood
    match: {proto: udp}
    per_source: {rate: $RATE/s, burst: $BURST}
EOF
sed "s/^max_sources: .*/max_sources: $BIG_TABLE/" "$WORK/live.yaml" > "$WORK/livebig.yaml"
cat > "$WORK/acc.yaml" <<EOF
max_sources: $TABLE
rules:
  - name: flood
    match: {proto: udp}
    per_source: {rate: $ACC_RATE/s, burst: $ACC_BURST}
EOF

# --- 1. micro -------------------------------------------------------------------
gen_realistic
T_START=$(date +%s)
printf '{"kind":"run","quick":%s,"parts":"%s","passes":%s,"repeat":%s,"live_seconds":%s,"daemon_seconds":%s,"daemon_table":%s,"cpu":%s}\n' \
	"$([ "$QUICK" = 1 ] && echo true || echo false)" "$(echo $PARTS)" "$PASSES" "$REPEAT" "$SECS" "$DWIN" "$DAEMON_TABLE" "$CPU" >> "$RAW"
if part micro; then
	log "micro: $PASSES interleaved passes on CPU $CPU (repeat $REPEAT and 4x, twice each, per figure)"
	if ! "$O/fgbench" micro --policy "$WORK/realistic.yaml" --cpu "$CPU" --passes "$PASSES" \
			--repeat "$REPEAT" >> "$RAW"; then
		log "micro failed"; exit 1
	fi
fi

# --- 10. saack: a verified client's ACK (BPF_PROG_TEST_RUN, beside micro) -------
if part saack; then
	log "saack: a verified client's ACK against the same rule without syn_auth, $PASSES passes"
	if ! "$O/fgbench" synauth --cpu "$CPU" --passes "$PASSES" --repeat "$REPEAT" >> "$RAW"; then
		log "saack failed"; exit 1
	fi
fi

# --- 2. sweep: the curves ---------------------------------------------------------
if part sweep && [ -n "${BENCH_SWEEP_FILE:-}" ]; then
	log "sweep: the curves of $BENCH_SWEEP_FILE (fgbench sweep's output), not measured again"
	cat "$BENCH_SWEEP_FILE" >> "$RAW" || { log "cannot read $BENCH_SWEEP_FILE"; exit 1; }
elif part sweep; then
	log "sweep: sources, rules, prefixes, shedding; $PASSES passes a point, each next to the floor"
	if ! "$O/fgbench" sweep --cpu "$CPU" --passes "$PASSES" --repeat "$REPEAT" "${SWEEP_ARGS[@]}" >> "$RAW"; then
		log "sweep failed"; exit 1
	fi
fi

# --- 3. live --------------------------------------------------------------------
fg_ns_create g
fg_ns_create r
fg_veth_create g veth0 r veth1
fg_ns_addr g veth0 10.200.0.1/24
fg_ns_addr r veth1 10.200.0.2/24
ip -n "$(fg_ns_name r)" route add default dev veth1
# NAPI on the receiver for the stack-only competitors (see KERNEL-FACTS.md)
ip netns exec "$(fg_ns_name r)" ethtool -K veth1 gro on >/dev/null
RNS=$(fg_ns_name r)

cpu_busy() {	# jiffies (USER_HZ) the core under test was not idle
	awk -v c="cpu$CPU" '$1 == c { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat
}
udp_in() {	# datagrams that reached UDP in the receiver (delivered + no port + errors)
	fg_ns_exec r awk '/^Udp:/ { if (h) { print $2 + $3 + $4; exit } h = 1 }' /proc/net/snmp
}

# bg_start VAR LOG MARKER WHAT CMD...: CMD in the receiver's namespace on
# OTHER_CPU, output to LOG, its PID in VAR; waits until MARKER shows in LOG,
# else logs WHAT and LOG. nsenter directly (not the fg_ns_exec function):
# $! must be CMD's PID.
bg_start() {
	local var=$1 out=$2 marker=$3 what=$4
	shift 4
	nsenter --net="$(fg_ns_path r)" taskset -c "$OTHER_CPU" "$@" > "$out" 2>&1 &
	printf -v "$var" %s "$!"
	fg_wait_for "$out" "$marker" 100 || { log "$what:"; cat "$out" >&2; return 1; }
}
bg_stop() {	# bg_stop VAR: TERM the process whose PID VAR holds, wait for it, empty VAR
	kill -TERM "${!1}" 2>/dev/null
	wait "${!1}" 2>/dev/null
	printf -v "$1" %s ""
}
start_fgd() {	# start_fgd POLICY: floodgated on veth1 with its own pin dir
	# the old log goes first, or the wait could read the last daemon's lines
	rm -f "$WORK/fgd.log"
	bg_start FGD_PID "$WORK/fgd.log" "started; " "floodgated did not start" \
		"$O/floodgated" -c "$1" -p "$PIN" -i veth1 -f
}
stop_fgd() { bg_stop FGD_PID; }
fg_passed() {	# packets floodgate passed in rule "flood"
	"$O/floodgate" stats --json --pin-dir "$PIN" |
		python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(r["packets"]["pass"] for r in d["rules"] if r["rule"]=="flood"))'
}

# setup COMP / teardown COMP; the XDP baselines run in fgbench xdp
start_xdp() {
	bg_start XDP_PID "$WORK/xdp.out" "^ready" "fgbench xdp failed" "$O/fgbench" xdp -i veth1 --prog "$@"
}
stop_xdp() { bg_stop XDP_PID; }
setup() {
	case $1 in
	bare) start_xdp bare_drop ;;
	floor) start_xdp floor ;;
	simple) start_xdp simple --rate "$RATE" --burst "$BURST" ;;
	none) : ;;
	nft) ip netns exec "$RNS" nft -f - <<EOF
table netdev fgbench {
	set meter4 {
		type ipv4_addr
		size $TABLE
		flags dynamic
	}
	chain in {
		type filter hook ingress device "veth1" priority 0; policy accept;
		ip protocol udp update @meter4 { ip saddr limit rate over $RATE/second burst $BURST packets } drop
	}
}
EOF
	;;
	ipt) ip netns exec "$RNS" iptables-legacy -t raw -A PREROUTING -i veth1 -p udp \
		-m hashlimit --hashlimit-above "$RATE/sec" --hashlimit-burst "$BURST" \
		--hashlimit-mode srcip --hashlimit-name fgbench --hashlimit-htable-size "$TABLE" \
		--hashlimit-htable-max "$TABLE" --hashlimit-htable-expire 60000 -j DROP ;;
	fg|tsmall) start_fgd "$WORK/live.yaml" ;;
	tbig) start_fgd "$WORK/livebig.yaml" ;;
	esac
}
teardown() {
	case $1 in
	bare|floor|simple) stop_xdp ;;
	none) : ;;
	nft) ip netns exec "$RNS" nft delete table netdev fgbench ;;
	ipt) ip netns exec "$RNS" iptables-legacy -t raw -F PREROUTING ;;
	fg|tsmall|tbig) stop_fgd ;;
	esac
}

# xdp_map FILE: the map of the program on veth1 (fgprof map), for part
# profile's profile by line; an empty FILE if there is none
xdp_map() {
	local id
	id=$(ip -n "$RNS" -d link show veth1 | sed -nE 's/.*prog\/xdp id ([0-9]+).*/\1/p' | head -1)
	: > "$1"
	[ -n "$id" ] && "$O/fgprof" map --prog-id "$id" > "$1" 2>> "$WORK/fgprof.err"
}
# profile_lines PERFDATA MAP OUT: perf's samples by source line (fgprof report)
profile_lines() {
	if [ -s "$2" ]; then
		perf script -i "$1" -G -F ip 2>/dev/null | "$O/fgprof" report --map "$2" --top 40 > "$3" ||
			log "profile by line: fgprof report failed"
	else
		log "profile by line: no map of the program (see $WORK/fgprof.err)"
	fi
}

# live_run COMP NSRC PASS [SECONDS] [perf output]
live_run() {
	local comp=$1 n=$2 pass=$3 secs=${4:-$SECS} perf=${5:-} src u0 u1 b0 b1 gen fgp=null cnt=null pp=
	setup "$comp" || return 1
	src=(-s 10.100.0.1)
	[ "$n" -gt 1 ] && src+=(--sources "$n")
	u0=$(udp_in)
	sleep 0.2
	if [ -n "$perf" ]; then
		perf record -q -e cpu-clock -C "$CPU" -g -o "$perf" -- sleep $((secs + 1)) >/dev/null 2>&1 &
		pp=$!
		# the program's map for the profile by line, while it is loaded
		xdp_map "$perf.map"
		sleep 0.5
	fi
	b0=$(cpu_busy)
	gen=$(fg_ns_exec g "$O/fgen" -i veth0 -d 10.200.0.2 --peer-ns "$RNS" --peer-dev veth1 \
		--cpu "$CPU" -t "$secs" -r "$GEN_RATE" "${src[@]}" --json)
	b1=$(cpu_busy)
	[ -n "$pp" ] && wait "$pp"
	sleep 0.3	# let the receiver's backlog drain
	u1=$(udp_in)
	case $comp in fg|tsmall|tbig) fgp=$(fg_passed) ;; esac
	teardown "$comp"
	[ "$comp" = floor ] && cnt=$(sed -n 's/.*"count":\([0-9]*\).*/\1/p' "$WORK/xdp.out")
	printf '{"kind":"live","comp":"%s","sources":%s,"pass":%s,"gen":%s,"busy_jiffies":%s,"hz":%s,"udp_passed":%s,"fg_passed":%s,"floor_count":%s,"rate":%s,"burst":%s,"table":%s}\n' \
		"$comp" "$n" "$pass" "$gen" $((b1 - b0)) "$(getconf CLK_TCK)" $((u1 - u0)) "$fgp" "$cnt" "$RATE" "$BURST" \
		"$([ "$comp" = tbig ] && echo "$BIG_TABLE" || echo "$TABLE")" >> "$RAW"
}

# bare twice, first and last: the generator's share is the faster of the two
# (a run disturbed by other load only ever costs more; one such bare run,
# dearer than that pass's floodgate, left a pass with no net figure).
# At 1 and 1,000 sources, where the goals take floodgate net of the
# generator (a difference of two figures ~45 ns apart out of ~190), bare
# and floodgate run three times each, spread over the pass, and the pass
# takes the cheapest of each: one disturbed run (2026-11-30: floodgate 194
# against 189 ns, bare 139 against 148) moved that pass's net ratio from
# ~12x to 9.6x. The floor runs three times too, beside floodgate's runs:
# the 1-source goal takes each pass's cheapest of both (pass_min below).
COMPS="bare floor fg simple nft ipt none bare"
COMPS_NET="bare fg floor simple nft bare fg floor ipt none fg floor simple bare"
for pass in $(seq 1 "$PASSES"); do
	part live || break
	for n in $LIVE_SRC; do
		comps=$COMPS
		[ "$n" -le 1000 ] && comps=$COMPS_NET
		for comp in $comps; do
			log "live pass $pass/$PASSES: $comp, $n sources"
			live_run "$comp" "$n" "$pass" || { log "live run $comp failed"; exit 1; }
		done
	done
done

# --- 9. tables: the same 1,000 sources in a small and a big table -----------------
# Each pass runs both three times, alternating, and takes the cheapest run of
# each (as the live part's 1,000-source point): a run disturbed by other load
# only ever costs more. Recorded as part live's records, comps tsmall and
# tbig (apart from part live's fg, whose goals they must not move).
for pass in $(seq 1 "$PASSES"); do
	part tables || break
	for n in $TABLES_SRC; do
		for tab in "$TABLE" "$BIG_TABLE"; do
			log "tables pass $pass/$PASSES: test-run, $n sources, table $tab"
			"$O/fgbench" sweep --curve sources --point "$n" --table "$tab" --cpu "$CPU" \
				--passes 1 --repeat "$REPEAT" >> "$RAW" || { log "tables: fgbench sweep failed"; exit 1; }
		done
	done
	for n in $TABLES_SRC; do
		for comp in tsmall tbig tsmall tbig tsmall tbig; do
			log "tables pass $pass/$PASSES: $comp, $n sources"
			live_run "$comp" "$n" "$pass" || { log "tables run $comp failed"; exit 1; }
		done
	done
done
# --- 3b. synauth: the cost of answering a spoofed SYN flood ----------------------
# The same veth pair and core as live; fgen floods SYNs to a listener
# (10.200.0.2:8080, python, backlog 1024) from random sources of
# 10.99.0.0/16, kept attached in native mode on veth0 (--native --drop-rx),
# so that veth0 takes what the receiver answers (XDP_TX frames need NAPI
# there) and drops it in XDP: veth0's rx_queue_0_xdp_packets counts the
# SYN-ACKs that actually came back, whoever sent them. Responders:
#   sa_fg    floodgate, rule `syn_auth: cookie` (caps far above the flood)
#   sa_kern  no floodgate, the kernel's own cookies: tcp_syncookies=2
#   sa_nft   nftables synproxy (SYNs notrack, synproxy in input; tcp_loose 0)
#   bare     XDP_DROP on veth1, no answer: the generator's own share
# A run's figure: the core's busy time (cpu_busy: user+system+irq+softirq)
# less the same pass's bare run's time per frame for the SYNs delivered
# (veth1's rx_packets: what reached the responder; fgen's sent less
# tx_dropped came out 0.1% below the answers counted back),
# divided by the SYN-ACKs that came back (a responder answering fewer SYNs
# is not cheaper per answer). The receiver's default route goes via
# 10.200.0.1 for the part, with a permanent neighbour entry (the stack's
# answers need one, and veth0 drops ARP while fgen runs; the live part's
# on-link route keeps its ICMP from leaving): both are put back after.
# fgen runs unpaced here (no -r): a -r call is up to a tenth of the rate's
# frames, 70 s at the kernel's pace. The part takes about 5 x SECONDS a pass.
SA_PORT=8080
SA_COMPS="bare sa_fg sa_kern sa_nft bare"
cat > "$WORK/synauth.yaml" <<POLICY
max_sources: $TABLE
syn_auth: {reply_rate: {rate: 100000000/s, burst: 10000000}, reply_per_prefix: {rate: 100000000/s, burst: 10000000}}
rules:
  - name: syn
    match: {proto: tcp, dport: $SA_PORT, tcp_flags: syn}
    syn_auth: cookie
    per_source: {rate: $RATE/s, burst: $BURST}
POLICY
SRV_PID=
sa_nft_ok=1
sa_answers() {	# SYN-ACKs veth0 (the generator's side) took in XDP
	fg_ns_exec g ethtool -S veth0 | awk '$1 == "rx_queue_0_xdp_packets:" { print $2; f = 1 } END { if (!f) print 0 }'
}
sa_nstat() { fg_ns_exec r nstat -az "$1" | awk -v k="$1" '$1 == k { print $2 }'; }
sa_setup() {
	case $1 in
	bare) start_xdp bare_drop ;;
	sa_fg) start_fgd "$WORK/synauth.yaml" ;;
	sa_kern) fg_ns_exec r sysctl -qw net.ipv4.tcp_syncookies=2 ;;
	# the table first: it loads conntrack, whose sysctls appear with it
	sa_nft) ip netns exec "$RNS" nft -f - <<NFT
table inet fgbsyn {
	chain pre {
		type filter hook prerouting priority raw; policy accept;
		tcp dport $SA_PORT tcp flags syn notrack
	}
	chain in {
		type filter hook input priority filter; policy accept;
		tcp dport $SA_PORT ct state invalid,untracked synproxy mss 1460 wscale 7 timestamp sack-perm
		ct state invalid drop
	}
}
NFT
		[ $? = 0 ] || return 1
		fg_ns_exec r sysctl -qw net.netfilter.nf_conntrack_tcp_loose=0 ||
			{ ip netns exec "$RNS" nft delete table inet fgbsyn; return 1; }
		;;
	esac
}
sa_teardown() {
	case $1 in
	bare) stop_xdp ;;
	sa_fg) stop_fgd ;;
	sa_kern) fg_ns_exec r sysctl -qw net.ipv4.tcp_syncookies=1 ;;
	sa_nft) ip netns exec "$RNS" nft delete table inet fgbsyn
		fg_ns_exec r sysctl -qw net.netfilter.nf_conntrack_tcp_loose=1 ;;
	esac
}
sa_run() {	# sa_run COMP PASS
	local comp=$1 pass=$2 a0 a1 b0 b1 s0 s1 r0 r1 gen own=null
	if ! sa_setup "$comp"; then
		[ "$comp" = sa_nft ] || return 1
		log "synauth: nftables synproxy does not run here; left out"
		sa_nft_ok=0
		return 0
	fi
	s0=$(sa_nstat TcpExtSyncookiesSent)
	a0=$(sa_answers)
	r0=$(fg_ns_stat r veth1 rx_packets)
	sleep 0.2
	b0=$(cpu_busy)
	gen=$(fg_ns_exec g "$O/fgen" -i veth0 -d 10.200.0.2 --peer-ns "$RNS" --peer-dev veth1 \
		--native --drop-rx --cpu "$CPU" -t "$SECS" --syn --dport "$SA_PORT" \
		-s 10.99.0.0/16 --random --json)
	b1=$(cpu_busy)
	sleep 0.3	# answers still on their way
	a1=$(sa_answers)
	r1=$(fg_ns_stat r veth1 rx_packets)
	s1=$(sa_nstat TcpExtSyncookiesSent)
	[ "$comp" = sa_fg ] && own=$("$O/floodgate" status --json --pin-dir "$PIN" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["syn_auth"]["syn_answered"])')
	sa_teardown "$comp"
	printf '{"kind":"synauth","comp":"%s","pass":%s,"gen":%s,"busy_jiffies":%s,"hz":%s,"answers":%s,"received":%s,"kernel_cookies":%s,"fg_answered":%s}\n' \
		"$comp" "$pass" "$gen" $((b1 - b0)) "$(getconf CLK_TCK)" $((a1 - a0)) $((r1 - r0)) $((s1 - s0)) "$own" >> "$RAW"
}
if part synauth; then
	ip -n "$RNS" neigh replace 10.200.0.1 lladdr "$(fg_ns_mac g veth0)" dev veth1 nud permanent
	ip -n "$RNS" route replace default via 10.200.0.1 dev veth1
	bg_start SRV_PID "$WORK/srv.out" "^listening" "the listener did not start" python3 -c '
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.200.0.2", '"$SA_PORT"')); s.listen(1024); print("listening", flush=True)
while True: time.sleep(60)' || exit 1
	for pass in $(seq 1 "$PASSES"); do
		for comp in $SA_COMPS; do
			[ "$comp" = sa_nft ] && [ "$sa_nft_ok" = 0 ] && continue
			log "synauth pass $pass/$PASSES: $comp"
			sa_run "$comp" "$pass" || { log "synauth run $comp failed"; exit 1; }
		done
	done
	bg_stop SRV_PID
	ip -n "$RNS" route replace default dev veth1
	ip -n "$RNS" neigh del 10.200.0.1 dev veth1
fi

# --- 4. accuracy -----------------------------------------------------------------
# Generator A (CPU 0) floods for ACC_SECS+1 s at 5x the rate; B (CPU 1)
# joins 0.5 s later for ACC_SECS s at 5x: 10x while both run, never below 5x.
# The flood lasts exactly A's run, which fgen times from its first frame.
for pass in $(seq 1 "$PASSES"); do
	part acc || break
	log "accuracy pass $pass/$PASSES: 1 source at 10x $ACC_RATE/s from both CPUs, ${ACC_SECS}s"
	start_fgd "$WORK/acc.yaml" || exit 1
	u0=$(udp_in)
	nsenter --net="$(fg_ns_path g)" "$O/fgen" -i veth0 -d 10.200.0.2 --peer-ns "$RNS" --peer-dev veth1 --cpu 0 \
		-s 10.100.0.1 -r $((5 * ACC_RATE)) -t $((ACC_SECS + 1)) --json > "$WORK/accA" &
	a=$!
	GEN_PID=$a
	sleep 0.5
	fg_ns_exec g "$O/fgen" -i veth0 -d 10.200.0.2 --peer-ns "$RNS" --peer-dev veth1 --cpu 1 \
		-s 10.100.0.1 -r $((5 * ACC_RATE)) -t "$ACC_SECS" --json > "$WORK/accB"
	wait "$a"
	GEN_PID=
	sleep 0.3
	u1=$(udp_in)
	fgp=$(fg_passed)
	stop_fgd
	printf '{"kind":"acc","pass":%s,"a":%s,"b":%s,"fg_passed":%s,"udp_passed":%s,"rate":%s,"burst":%s}\n' \
		"$pass" "$(cat "$WORK/accA")" "$(cat "$WORK/accB")" "$fgp" $((u1 - u0)) "$ACC_RATE" "$ACC_BURST" >> "$RAW"
done

# --- 5. daemon: floodgated's CPU against tracked sources ----------------------------
# One daemon for both families: the IPv6 points have the IPv4 sources
# beside them. Each point is filled until the table holds its count (fgbench
# fill --tracked), not merely offered it. The fill is a burst of new sources
# far above the automatic admission limit (max_sources / (2 T_refill)), which
# would refuse most of it as it refuses a spoofed spray: this policy opens
# the limit, as the figure is the daemon's cost at N tracked, not admission.
# Last, each table is offered as many distinct sources as it has ways
# (memfill): what it then holds is the memory figure's denominator.
cat > "$WORK/daemon.yaml" <<EOF
max_sources: $DAEMON_TABLE
admission: {rate: 1000000000/s, burst: 100000000}
rules:
  - name: flood
    match: {proto: udp}
    per_source: {rate: 100/s, burst: 10}
EOF
proc_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }	# utime + stime, all threads
ms_of() {	# ms_of CMD...: wall ms of CMD, -1 if it fails (its output in $WORK/ms.out)
	local t0 t1
	t0=$(date +%s%N)
	"$@" > "$WORK/ms.out" 2>&1 || { echo -1; return; }
	t1=$(date +%s%N)
	echo $(( (t1 - t0) / 1000000 ))
}
ms_best() {	# ms_best CMD...: the best of 3 ms_of CMD (load only ever adds), -1 if one fails
	local i t best=
	for i in 1 2 3; do
		t=$(ms_of "$@")
		[ "$t" -lt 0 ] && { echo -1; return; }
		[ -z "$best" ] || [ "$t" -lt "$best" ] && best=$t
	done
	echo "$best"
}
declare -A NEXT=([4]=0 [6]=0)	# per family: the index of the next new source
daemon_fill() {	# daemon_fill FAM fgbench-fill-options...: the fill's JSON line in $FILL; NEXT moves on
	FILL=$("$O/fgbench" fill --pin-dir "$PIN" -i veth1 --family "$1" --start "${NEXT[$1]}" "${@:2}") ||
		{ log "fgbench fill failed; floodgated said:"; cat "$WORK/fgd.log" >&2; return 1; }
	NEXT[$1]=$(sed -n 's/.*"next":\([0-9]*\).*/\1/p' <<<"$FILL")
}
if part daemon; then
	start_fgd "$WORK/daemon.yaml" || exit 1
	for fam in 4 6; do
		for n in $DAEMON_PTS; do
			log "daemon: IPv$fam, filling until $n sources are tracked, then floodgated's CPU over ${DWIN}s"
			daemon_fill "$fam" --tracked "$n" || exit 1
			sleep 2		# the daemon's first walks after the fill
			t0=$(proc_ticks "$FGD_PID"); w0=$(date +%s%N)
			sleep "$DWIN"
			t1=$(proc_ticks "$FGD_PID"); w1=$(date +%s%N)
			sms=$(ms_best "$O/floodgate" status --json --pin-dir "$PIN"); cp "$WORK/ms.out" "$WORK/status.json"
			tms=$(ms_best "$O/floodgate" top --json -n 10 --pin-dir "$PIN")
			src=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["sources"]))' "$WORK/status.json" 2>/dev/null || echo null)
			printf '{"kind":"daemon","family":%s,"target":%s,"fill":%s,"ticks":%s,"hz":%s,"window_ns":%s,"status_ms":%s,"top_ms":%s,"sources_after":%s,"status_at":%s}\n' \
				"$fam" "$n" "$FILL" $((t1 - t0)) "$(getconf CLK_TCK)" $((w1 - w0)) "$sms" "$tms" "$src" "$(date +%s)" >> "$RAW"
		done
	done
	for fam in 4 6; do
		log "memory: IPv$fam, offering the table as many distinct sources as it has ways ($DAEMON_TABLE)"
		if [ "${NEXT[$fam]}" -lt "$DAEMON_TABLE" ]; then
			daemon_fill "$fam" --sources $((DAEMON_TABLE - NEXT[$fam])) || exit 1
		fi
		printf '{"kind":"memfill","family":%s,"offered":%s,"ways":%s,"fill":%s}\n' \
			"$fam" "${NEXT[$fam]}" "$DAEMON_TABLE" "$FILL" >> "$RAW"
	done
	# the daemon's walk publishes its count once a pass (srcwatch.h: a
	# slice of the sets a tick): how long until status agrees with the table
	if [ "$QUICK" != 1 ]; then
		want=$(sed -n 's/.*"tracked4":\([0-9]*\),"tracked6":\([0-9]*\).*/\1 \2/p' <<<"$FILL")
		t0=$(date +%s)
		while :; do
			got=$("$O/floodgate" status --json --pin-dir "$PIN" |
				python3 -c 'import json,sys; s=json.load(sys.stdin)["sources"]; print(s["ipv4"], s["ipv6"])')
			[ "$got" = "$want" ] || [ $(($(date +%s) - t0)) -ge 200 ] && break
			sleep 2
		done
		printf '{"kind":"walkcheck","table":[%s],"counted":[%s],"waited_s":%s}\n' \
			"${want// /,}" "${got// /,}" $(($(date +%s) - t0)) >> "$RAW"
	fi
	stop_fgd
fi

# --- 6. dispatch: floodgate inside libxdp's dispatcher ------------------------------
if part dispatch; then
	log "dispatch: floodgate alone and inside libxdp's dispatcher on veth1"
	nsenter --net="$(fg_ns_path r)" taskset -c "$CPU" "$O/fgbench" dispatch -i veth1 --repeat "$REPEAT" >> "$RAW" ||
		{ log "fgbench dispatch failed"; exit 1; }
fi

# --- profiles ---------------------------------------------------------------------
if part profile && [ "$PROFILE" = 1 ] && command -v perf >/dev/null; then
	for n in 1 100000; do
		log "profile: floodgate, $n sources (perf record -e cpu-clock -C $CPU -g)"
		live_run fg "$n" 0 "$SECS" "$WORK/perf-$n.data" || exit 1
		perf report -i "$WORK/perf-$n.data" --stdio --no-children --sort symbol 2>/dev/null |
			grep -E '^ +[0-9.]+%' | head -25 > "$OUT/profile-fg-$n.txt"
		profile_lines "$WORK/perf-$n.data" "$WORK/perf-$n.data.map" "$OUT/profile-lines-fg-$n.txt"
	done
	log "profile: micro, realistic policy"
	perf record -q -e cpu-clock -C "$CPU" -g -o "$WORK/perf-micro.data" -- \
		"$O/fgbench" micro --policy "$WORK/realistic.yaml" --cpu "$CPU" --passes 1 \
		--repeat "$REPEAT" --only fg_realistic >/dev/null 2> "$WORK/micro-prof.err" &
	pp=$!
	# the figure's program is loaded once its warm-up is done: map it then
	: > "$WORK/perf-micro.map"
	for _ in $(seq 1 600); do
		id=$(sed -n 's/.*runs program id \([0-9]*\).*/\1/p' "$WORK/micro-prof.err")
		[ -n "$id" ] && { "$O/fgprof" map --prog-id "$id" > "$WORK/perf-micro.map" 2>> "$WORK/fgprof.err"; break; }
		kill -0 "$pp" 2>/dev/null || break
		sleep 0.1
	done
	wait "$pp"
	perf report -i "$WORK/perf-micro.data" --stdio --no-children --sort symbol 2>/dev/null |
		grep -E '^ +[0-9.]+%' | head -25 > "$OUT/profile-micro-realistic.txt"
	profile_lines "$WORK/perf-micro.data" "$WORK/perf-micro.map" "$OUT/profile-lines-micro-realistic.txt"
	grep -v '"kind":"live","comp":"fg","sources":[0-9]*,"pass":0' "$RAW" > "$RAW.tmp" && mv "$RAW.tmp" "$RAW"
fi

# --- 8. start: start-up time against policy size ------------------------------------
# One rule, max_sources 65,536, N deny /24s; each pass: fresh, adopting
# (kept), adopting with FLOODGATE_ADOPT_RELOAD=1; ms until the background
# start returns (the daemon says so once fg_meta names it).
gen_start_policy() {	# gen_start_policy N FILE
	awk -v n="$1" 'BEGIN {
		print "interfaces: [veth1]"
		print "max_sources: 65536"
		# /24s from 32.0.0.0, a flow list: a million fit the file size limit (16 MB)
		if (n) printf "deny: ["
		for (i = 0; i < n; i++)
			printf "%s%d.%d.%d.0/24", i ? "," : "", 32 + int(i / 65536), int(i / 256) % 256, i % 256
		if (n) print "]"
		print "rules:"
		print "  - {name: flood, match: {proto: udp}, per_source: {rate: 100/s, burst: 200}}"
	}' > "$2"
}
start_ms() {	# start_ms VAR POLICY [ENV=...]: ms of one background start in VAR; FGD_PID after
	local var=$1 pol=$2 ms
	shift 2
	ms=$(ms_of nsenter --net="$(fg_ns_path r)" env "$@" "$O/floodgated" -c "$pol" -p "$PIN" --keep)
	[ "$ms" -ge 0 ] || { log "start: floodgated failed:"; cat "$WORK/ms.out" >&2; }
	FGD_PID=$("$O/floodgate" status --json --pin-dir "$PIN" 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["daemon"]["pid"] or "")' 2>/dev/null)
	printf -v "$var" %s "$ms"
}
kill_fgd() {	# kill_fgd [SIGNAL]: KILL (the filter stays pinned) the daemon, wait until it is gone
	[ -n "$FGD_PID" ] && kill "-${1:-KILL}" "$FGD_PID" 2>/dev/null
	while [ -n "$FGD_PID" ] && kill -0 "$FGD_PID" 2>/dev/null; do sleep 0.05; done
	FGD_PID=
}
if part start; then
	for n in $START_PTS; do
		gen_start_policy "$n" "$WORK/start.yaml"
		for p in $(seq 1 "$PASSES"); do
			log "start: $n prefixes, pass $p: fresh, adopting, adopting with a reload of the program"
			start_ms f "$WORK/start.yaml"; kill_fgd
			start_ms a "$WORK/start.yaml"; kill_fgd
			start_ms r "$WORK/start.yaml" FLOODGATE_ADOPT_RELOAD=1
			kill_fgd TERM	# --keep: it leaves the filter pinned; detach removes it
			"$O/floodgate" detach --pin-dir "$PIN" > /dev/null 2>&1
			printf '{"kind":"start","prefixes":%s,"pass":%s,"fresh_ms":%s,"adopt_ms":%s,"adopt_reload_ms":%s,"load":"%s"}\n' \
				"$n" "$p" "$f" "$a" "$r" "$(cut -d' ' -f1-3 /proc/loadavg)" >> "$RAW"
		done
	done
fi

# --- report -------------------------------------------------------------------------
printf '{"kind":"duration","seconds":%s}\n' $(( $(date +%s) - T_START )) >> "$RAW"
cp "$RAW" "$OUT/bench-raw.jsonl"
python3 tools/bench_report.py "$RAW" "$OUT" || exit 1
gnuplot -e "dir='$OUT'; outfile='$OUT/bench.png'" tools/bench_plot.gp || exit 1
log "wrote $OUT/bench.json $OUT/bench.txt $OUT/bench.png"
