#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# `make bench`: floodgate against the parse+count+drop floor, an nftables
# netdev-ingress meter and iptables hashlimit. Run as root after `make`.
#
#   1. micro     BPF_PROG_TEST_RUN on one CPU, ns per packet (tools/fgbench.c)
#   2. live      64-byte frames through a veth pair into a namespace,
#                generator (fgen) and receiver on one core, CPU per packet
#   3. accuracy  one source at 10x its rate from both CPUs
#   4. memory    map bytes per tracked source at 1M sources (from micro)
# Every figure is min/median/max over BENCH_PASSES interleaved passes: pass 1
# runs every competitor, then pass 2 runs them all again, ...
#
# Environment (defaults fit in ~10 minutes here):
#   BENCH_PASSES=3   BENCH_SECONDS=3 (live run)   BENCH_ACC_SECONDS=5
#   BENCH_CPU=1 (the core under test)   BENCH_REPEAT=1048576 (micro)
#   BENCH_PROFILE=1 (perf profiles of floodgate)  BENCH_OUT=results
#
# Everything it makes (two namespaces and their veth pair, the nft table and
# iptables rules inside them, a floodgate pin dir, background processes) is
# removed on exit, also on failure or Ctrl-C.
set -u
cd "$(dirname "$0")/.."
. tools/netns.sh

PASSES=${BENCH_PASSES:-3}
SECS=${BENCH_SECONDS:-3}
ACC_SECS=${BENCH_ACC_SECONDS:-5}
CPU=${BENCH_CPU:-1}
REPEAT=${BENCH_REPEAT:-1048576}
PROFILE=${BENCH_PROFILE:-1}
OUT=${BENCH_OUT:-results}
O=.output
RATE=2		# per source, packets/s: every flooding source is far over it
BURST=4
TABLE=65536	# per-source table of every competitor; 100k sources overfill it
ACC_RATE=10000	# accuracy: one source at 10x this, from both CPUs
ACC_BURST=1000
GEN_RATE=100000000	# fgen -r: far above what it reaches, so never paced (see README-bench)
OTHER_CPU=$(( CPU == 0 ? 1 : 0 ))

[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
for b in "$O/fgbench" "$O/fgen" "$O/floodgated" "$O/floodgate"; do
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
	for p in $FGD_PID $XDP_PID $GEN_PID; do kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
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
cat > "$WORK/acc.yaml" <<EOF
max_sources: $TABLE
rules:
  - name: flood
    match: {proto: udp}
    per_source: {rate: $ACC_RATE/s, burst: $ACC_BURST}
EOF

# --- 1. micro -------------------------------------------------------------------
gen_realistic
log "micro: $PASSES interleaved passes on CPU $CPU (repeat $REPEAT and 4x, twice each, per figure)"
if ! "$O/fgbench" micro --policy "$WORK/realistic.yaml" --cpu "$CPU" --passes "$PASSES" \
		--repeat "$REPEAT" >> "$RAW"; then
	log "micro failed"; exit 1
fi

# --- 2. live --------------------------------------------------------------------
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

start_fgd() {	# start_fgd POLICY: floodgated on veth1 with its own pin dir
	# nsenter directly (not the fg_ns_exec function): $! must be the daemon's PID
	nsenter --net="$(fg_ns_path r)" taskset -c "$OTHER_CPU" "$O/floodgated" -c "$1" -p "$PIN" -i veth1 -f \
		> "$WORK/fgd.log" 2>&1 &
	FGD_PID=$!
	fg_wait_for "$WORK/fgd.log" "attached" 100 || { log "floodgated did not start:"; cat "$WORK/fgd.log" >&2; return 1; }
}
stop_fgd() {
	kill -TERM "$FGD_PID" 2>/dev/null
	wait "$FGD_PID" 2>/dev/null
	FGD_PID=
}
fg_passed() {	# packets floodgate passed in rule "flood"
	"$O/floodgate" stats --json --pin-dir "$PIN" |
		python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(r["packets"]["pass"] for r in d["rules"] if r["rule"]=="flood"))'
}

# setup COMP / teardown COMP; the XDP baselines run in fgbench xdp
start_xdp() {
	nsenter --net="$(fg_ns_path r)" taskset -c "$OTHER_CPU" "$O/fgbench" xdp -i veth1 --prog "$1" > "$WORK/xdp.out" 2>&1 &
	XDP_PID=$!
	fg_wait_for "$WORK/xdp.out" "^ready" 100 || { log "fgbench xdp failed:"; cat "$WORK/xdp.out" >&2; return 1; }
}
stop_xdp() {
	kill -TERM "$XDP_PID" 2>/dev/null
	wait "$XDP_PID" 2>/dev/null
	XDP_PID=
}
setup() {
	case $1 in
	bare) start_xdp bare_drop ;;
	floor) start_xdp floor ;;
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
	fg) start_fgd "$WORK/live.yaml" ;;
	esac
}
teardown() {
	case $1 in
	bare|floor) stop_xdp ;;
	none) : ;;
	nft) ip netns exec "$RNS" nft delete table netdev fgbench ;;
	ipt) ip netns exec "$RNS" iptables-legacy -t raw -F PREROUTING ;;
	fg) stop_fgd ;;
	esac
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
		sleep 0.5
	fi
	b0=$(cpu_busy)
	gen=$(fg_ns_exec g "$O/fgen" -i veth0 -d 10.200.0.2 --peer-ns "$RNS" --peer-dev veth1 \
		--cpu "$CPU" -t "$secs" -r "$GEN_RATE" "${src[@]}" --json)
	b1=$(cpu_busy)
	[ -n "$pp" ] && wait "$pp"
	sleep 0.3	# let the receiver's backlog drain
	u1=$(udp_in)
	[ "$comp" = fg ] && fgp=$(fg_passed)
	teardown "$comp"
	[ "$comp" = floor ] && cnt=$(sed -n 's/.*"count":\([0-9]*\).*/\1/p' "$WORK/xdp.out")
	printf '{"kind":"live","comp":"%s","sources":%s,"pass":%s,"gen":%s,"busy_jiffies":%s,"hz":%s,"udp_passed":%s,"fg_passed":%s,"floor_count":%s,"rate":%s,"burst":%s,"table":%s}\n' \
		"$comp" "$n" "$pass" "$gen" $((b1 - b0)) "$(getconf CLK_TCK)" $((u1 - u0)) "$fgp" "$cnt" "$RATE" "$BURST" "$TABLE" >> "$RAW"
}

COMPS="bare floor fg nft ipt none"
for pass in $(seq 1 "$PASSES"); do
	for n in 1 1000 100000; do
		for comp in $COMPS; do
			log "live pass $pass/$PASSES: $comp, $n sources"
			live_run "$comp" "$n" "$pass" || { log "live run $comp failed"; exit 1; }
		done
	done
done

# --- 3. accuracy -----------------------------------------------------------------
# Generator A (CPU 0) floods for ACC_SECS+1 s at 5x the rate; B (CPU 1)
# joins 0.5 s later for ACC_SECS s at 5x: 10x while both run, never below 5x.
# The flood lasts exactly A's run, which fgen times from its first frame.
for pass in $(seq 1 "$PASSES"); do
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

# --- profiles ---------------------------------------------------------------------
if [ "$PROFILE" = 1 ] && command -v perf >/dev/null; then
	for n in 1 100000; do
		log "profile: floodgate, $n sources (perf record -e cpu-clock -C $CPU -g)"
		live_run fg "$n" 0 "$SECS" "$WORK/perf-$n.data" || exit 1
		perf report -i "$WORK/perf-$n.data" --stdio --no-children --sort symbol 2>/dev/null |
			grep -E '^ +[0-9.]+%' | head -25 > "$OUT/profile-fg-$n.txt"
	done
	log "profile: micro, realistic policy"
	perf record -q -e cpu-clock -C "$CPU" -g -o "$WORK/perf-micro.data" -- \
		"$O/fgbench" micro --policy "$WORK/realistic.yaml" --cpu "$CPU" --passes 1 \
		--repeat "$REPEAT" --only fg_realistic >/dev/null 2>&1
	perf report -i "$WORK/perf-micro.data" --stdio --no-children --sort symbol 2>/dev/null |
		grep -E '^ +[0-9.]+%' | head -25 > "$OUT/profile-micro-realistic.txt"
	grep -v '"kind":"live","comp":"fg","sources":[0-9]*,"pass":0' "$RAW" > "$RAW.tmp" && mv "$RAW.tmp" "$RAW"
fi

# --- report -------------------------------------------------------------------------
cp "$RAW" "$OUT/bench-raw.jsonl"
python3 - "$RAW" "$OUT" <<'PY' || exit 1
import json, statistics, sys
raw, out = sys.argv[1], sys.argv[2]
L = [json.loads(l) for l in open(raw) if l.strip()]
def st(v):
    v = sorted(v)
    return {"min": v[0], "median": statistics.median(v), "max": v[-1], "n": len(v)} if v else None
res = {"config": {}, "micro": {}, "ratios": {}, "live": {}, "accuracy": None, "memory": [], "checks": [], "goals": []}
# micro: ns per packet; harness-net figures for the N-source runs
mic = {}
for r in L:
    if r["kind"] == "micro":
        mic.setdefault(r["name"], {})[r["pass"]] = r
for name, byp in mic.items():
    res["micro"][name] = dict(st([x["ns"] for x in byp.values()]), what=next(iter(byp.values()))["what"],
                              kernel_ns=st([x["kernel_ns"] for x in byp.values() if "kernel_ns" in x]),
                              verdict_ok=all(x["retval"] == x["expect"] for x in byp.values()))
# ratios of two figures measured back to back in each pass (fleet vs aggregate)
for r in L:
    if r["kind"] == "ratio":
        res["ratios"].setdefault(r["name"], {"num": r["num"], "den": r["den"], "by": r["by"], "v": []})["v"].append(r["ratio"])
for name, e in res["ratios"].items():
    e.update(st(e.pop("v")))
if "vary_floor" in mic and "floor" in mic:
    for name in [n for n in mic if n.startswith("fg_src") or n == "fg_vary_1"]:
        net = [mic[name][p]["ns"] - (mic["vary_floor"][p]["ns"] - mic["floor"][p]["ns"])
               for p in mic[name] if p in mic["vary_floor"] and p in mic["floor"]]
        res["micro"][name + "_net"] = dict(st(net), what=mic[name][1]["what"] + ", minus the harness (vary_floor - floor)", verdict_ok=True)
res["memory"] = [r for r in L if r["kind"] == "mem"]
res["checks"] = [r for r in L if r["kind"] in ("check", "prefill")]
# live
live = {}
for r in L:
    if r["kind"] != "live":
        continue
    g = r["gen"]
    deliv = g["packets"] - g.get("tx_dropped", 0)
    busy = r["busy_jiffies"] / r["hz"]
    passed = 0 if r["comp"] in ("bare", "floor") else r["udp_passed"]
    per_src = r["rate"] * g["elapsed_s"] + r["burst"]
    expect = r["sources"] * min(deliv / r["sources"], per_src)
    live.setdefault((r["comp"], r["sources"]), []).append({
        "cost_ns": busy * 1e9 / deliv, "wall_ns": g["elapsed_s"] * 1e9 / deliv,
        "busy_frac": busy / g["elapsed_s"], "pps": deliv / g["elapsed_s"], "delivered": deliv,
        "tx_dropped": g.get("tx_dropped", 0), "passed": passed, "drop_frac": 1 - passed / deliv,
        "expected_passed": expect, "limit_ratio": passed / expect if expect else None,
        "fg_passed": r["fg_passed"], "floor_count": r["floor_count"]})
comps = ["bare", "floor", "fg", "nft", "ipt", "none"]
names = {"bare": "bare XDP_DROP (generator share)", "floor": "parse+count+drop floor",
         "fg": "floodgate", "nft": "nftables netdev meter", "ipt": "iptables hashlimit (raw)",
         "none": "no filter (stack)"}
for (c, n), runs in live.items():
    bare = live.get(("bare", n))
    e = {k: st([x[k] for x in runs]) for k in ("cost_ns", "wall_ns", "busy_frac", "pps", "drop_frac", "limit_ratio")}
    if bare:
        e["net_cost_ns"] = st([x["cost_ns"] - st([b["cost_ns"] for b in bare])["median"] for x in runs])
    e["runs"] = runs
    res["live"].setdefault(c, {})[str(n)] = e
# accuracy
acc = []
for r in L:
    if r["kind"] == "acc":
        T = r["a"]["elapsed_s"]
        allowed = r["rate"] * T + r["burst"]
        acc.append({"T": T, "admitted": r["fg_passed"], "udp_passed": r["udp_passed"], "allowed": allowed,
                    "ratio": r["fg_passed"] / allowed,
                    "offered_pps": (r["a"]["packets"] + r["b"]["packets"]) / T})
if acc:
    res["accuracy"] = {"ratio": st([a["ratio"] for a in acc]), "runs": acc}
# goals
def med(c, n, k="cost_ns"):
    try: return res["live"][c][str(n)][k]["median"]
    except (KeyError, TypeError): return None
G = res["goals"]
def netr(a, b, n):  # ratio net of the generator's share, when the denominator is not noise
    g = med("bare", n)
    if g is None or (b - g) < 5:
        return "n/a (within noise of the bare run)"
    return f"{(a - g) / (b - g):.2f}x"
def goal(text, ok, value):
    G.append({"goal": text, "met": bool(ok), "value": value})
for n in (1, 1000):
    fg, fl, nf = med("fg", n), med("floor", n), med("nft", n)
    if fg and fl:
        goal(f"live {n} source(s): floodgate <= 1.3x floor (CPU/packet, generator included)", fg <= 1.3 * fl,
             f"{fg/fl:.2f}x ({fg:.0f} vs {fl:.0f} ns; net of generator {netr(fg, fl, n)})")
    if fg and nf:
        goal(f"live {n} source(s): floodgate >= 5x cheaper than nftables meter", nf >= 5 * fg,
             f"{nf/fg:.2f}x ({nf:.0f} vs {fg:.0f} ns; net of generator {netr(nf, fg, n)})")
fg, nf = med("fg", 100000), med("nft", 100000)
if fg and nf:
    lr = med("fg", 100000, "limit_ratio")
    goal("live 100,000 sources: floodgate >= 2.5x cheaper than nftables meter", nf >= 2.5 * fg,
         f"{nf/fg:.2f}x ({nf:.0f} vs {fg:.0f} ns; net of generator {netr(nf, fg, 100000)})")
    goal("live 100,000 sources (table 65,536): floodgate still limits (passed <= 1.25x per-source allowance)",
         lr is not None and lr <= 1.25, f"passed/allowance {lr:.3f}, drop fraction {med('fg',100000,'drop_frac'):.4f}")
m = res["micro"]
if "fg_realistic" in m and "floor" in m:
    a, b = m["fg_realistic"]["median"], m["floor"]["median"]
    goal("micro: throttled source, realistic policy <= 3x floor", a <= 3 * b, f"{a/b:.2f}x ({a:.1f} vs {b:.1f} ns)")
for name, e in res["ratios"].items():
    goal(f"micro: {e['num']} costs no more than {e['den']} (median ratio <= 1.05, {e['by']}, same pass)",
         e["median"] <= 1.05, f"{e['median']:.3f} (min {e['min']:.3f}, max {e['max']:.3f}, {e['n']} passes)")
if acc:
    worst = max(acc, key=lambda a: abs(a["ratio"] - 1))["ratio"]
    goal("accuracy: admitted / (rate x T + burst) within 1% (worst pass)", abs(worst - 1) <= 0.01, f"{worst:.4f}")
for mm in res["memory"]:
    if mm["map"] == "fg_src4":
        goal("memory: <= 64 bytes of map memory per tracked source (fg_src4 at 1M)", mm["bytes_per_tracked"] <= 64,
             f"{mm['bytes_per_tracked']:.1f} B/source ({mm['bytes_per_entry']:.1f} B/entry of {mm['max_entries']}; fg_src6 {[x for x in res['memory'] if x['map']=='fg_src6'][0]['bytes_per_entry']:.1f} B/entry)")
json.dump(res, open(f"{out}/bench.json", "w"), indent=1)
# table
T = []
f3 = lambda s, fmt="{:.1f}": "-" if not s else (fmt.format(s["min"]) + " / " + fmt.format(s["median"]) + " / " + fmt.format(s["max"]))
T.append("MICRO (BPF_PROG_TEST_RUN, 1 CPU, ns per packet, min / median / max)")
for k, v in res["micro"].items():
    T.append(f"  {k:18s} {f3(v):26s} {v['what']}" + ("" if v["verdict_ok"] else "  [UNEXPECTED VERDICT]"))
if res["ratios"]:
    T.append("  ratios, same pass (the kernel's ns per packet), min / median / max:")
    for k, e in res["ratios"].items():
        T.append(f"  {k:34s} {f3(e, '{:.3f}'):26s} {e['num']} / {e['den']}")
T.append("")
T.append("LIVE (64-byte frames, veth, generator + receiver on one core; CPU ns per delivered packet, min / median / max)")
T.append(f"  {'competitor':34s} {'sources':>7s}  {'cost ns (gen incl.)':24s} {'net of gen':10s} {'Mpps':>6s} {'drop frac':>9s} {'passed/allowance':>16s}")
for c in comps:
    for n in ("1", "1000", "100000"):
        e = res["live"].get(c, {}).get(n)
        if not e: continue
        net = e.get("net_cost_ns")
        lr = e["limit_ratio"]
        T.append(f"  {names[c]:34s} {n:>7s}  {f3(e['cost_ns'],'{:.0f}'):24s} {(str(round(net['median'])) if net else '-'):>10s} "
                 f"{e['pps']['median']/1e6:6.2f} {e['drop_frac']['median']:9.4f} {('-' if c in ('bare','floor','none') else format(lr['median'],'.3f')):>16s}")
T.append("")
if acc:
    T.append(f"ACCURACY  1 source at 10x {L[[r['kind'] for r in L].index('acc')]['rate']}/s from 2 CPUs: admitted/(rate*T+burst) = {f3(res['accuracy']['ratio'],'{:.4f}')}")
for mm in res["memory"]:
    T.append(f"MEMORY    {mm['map']}: {mm['memlock']} B memlock / {mm['max_entries']} entries = {mm['bytes_per_entry']:.1f} B/entry"
             + (f", {mm['bytes_per_tracked']:.1f} B per tracked source at {mm['entries']}" if mm['entries'] else ""))
T.append("")
T.append("GOALS")
for g in G:
    T.append(f"  [{'met' if g['met'] else 'MISSED'}] {g['goal']}: {g['value']}")
txt = "\n".join(T) + "\n"
open(f"{out}/bench.txt", "w").write(txt)
print(txt)
# gnuplot data: live medians with min/max, one block per source count; micro
with open(f"{out}/bench.dat", "w") as f:
    f.write("# competitor  then per source count (1, 1000, 100000): median min max CPU ns/packet\n")
    for c in comps:
        row = [names[c].split(" (")[0].replace(" ", "_")]
        for n in ("1", "1000", "100000"):
            e = res["live"].get(c, {}).get(n)
            row += [f"{e['cost_ns']['median']:.1f}", f"{e['cost_ns']['min']:.1f}", f"{e['cost_ns']['max']:.1f}"] if e else ["NaN"] * 3
        f.write(" ".join(row) + "\n")
with open(f"{out}/bench-micro.dat", "w") as f:
    f.write("# figure median min max (ns/packet)\n")
    for k in ("bare_drop", "floor", "fg_allowed", "fg_throttled", "fg_shadow", "fg_realistic", "fg_aggregate", "fg_fleet", "fg_src_1k_net", "fg_src_100k_net", "fg_src_1m_net"):
        if k in res["micro"]:
            v = res["micro"][k]
            f.write(f"{k} {v['median']:.2f} {v['min']:.2f} {v['max']:.2f}\n")
PY
gnuplot -e "datafile='$OUT/bench.dat'; microfile='$OUT/bench-micro.dat'; outfile='$OUT/bench.png'" tools/bench_plot.gp || exit 1
log "wrote $OUT/bench.json $OUT/bench.txt $OUT/bench.png"
