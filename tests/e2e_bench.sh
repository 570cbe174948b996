#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Smoke test of the benchmark's new parts, with no timing assertion (the
# figures are only printed; their ratios are for `make bench` to judge):
#   1. fgbench sweep --quick: every curve has its points, each point its
#      floodgate and floor figures, the rules points drop by the frame's
#      rule, the 50% shed point sheds about half, bad options are refused;
#   1b. fgbench synauth: its four figures a pass with the verdicts expected
#      (a verified client's ACK passes by the fast path, an unverified
#      one is dropped), a ratio a pass against each plain figure;
#   2. fgbench fill and dispatch against a real floodgated in a namespace:
#      the sources it sends are tracked, a dispatcher is measured or the
#      reason it cannot be built is given;
#   3. tools/bench.sh in quick mode with the parts that need no generator:
#      bench.json's schema (strictly parsed), every goal [met] or [MISSED]
#      with a value, the chart and its data files written.
# Needs root. Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
FGBENCH=$FG_OUT/fgbench
fg_init --root --pin bench "$FGBENCH" "$FGD" "$FG"

# What every check_py's Python starts with: json, sys, and nodup, the
# object_pairs_hook that refuses a duplicate key.
CHECK_PY_PRELUDE=$(cat <<'PY'
import json, sys
def nodup(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate key in %s" % keys)
    return dict(pairs)
PY
)

# check_py NAME FILE: run the Python on stdin (after CHECK_PY_PRELUDE) over
# FILE; it prints one line per check, "OK what" or "BAD what: detail".
check_py() {
	local name=$1 file=$2 line
	while IFS= read -r line; do
		case $line in
		OK\ *) ok "$name: ${line#OK }" ;;
		BAD\ *) bad "$name: ${line#BAD }" ;;
		*) bad "$name: unexpected output" "$line" ;;
		esac
	done < <({ printf '%s\n' "$CHECK_PY_PRELUDE"; cat; } | "$FG_PY" - "$file" 2>&1)
}

# --- 1. sweep -------------------------------------------------------------------------
if "$FGBENCH" sweep --quick --passes 1 --repeat 4096 --cpu 0 > "$FG_TMP/sweep.jsonl" 2> "$FG_TMP/sweep.err"; then
	ok "fgbench sweep --quick exits 0"
else
	bad "fgbench sweep --quick" "$(one_line < "$FG_TMP/sweep.err")"
fi
check_py sweep "$FG_TMP/sweep.jsonl" <<'PY'
L = []
for i, l in enumerate(open(sys.argv[1])):
    try:
        L.append(json.loads(l, object_pairs_hook=nodup))
    except ValueError as e:
        print(f"BAD line {i + 1} is not one JSON object without duplicate keys: {e}")
        sys.exit(0)
print(f"OK {len(L)} lines, each one JSON object without duplicate keys")
lim = [r for r in L if r["kind"] == "limits"]
if len(lim) == 1 and isinstance(lim[0]["rules_accepted"], int) and 1 <= lim[0]["rules_accepted"] <= lim[0]["max_rules"]:
    print(f"OK limits: {lim[0]['rules_accepted']} rules accepted of FG_MAX_RULES {lim[0]['max_rules']}")
else:
    print(f"BAD limits line: {lim}")
    sys.exit(0)
C = [r for r in L if r["kind"] == "curve"]
bad = [r for r in C if not all(isinstance(r.get(k), (int, float)) for k in ("x", "pass", "ns", "kernel_ns", "floor_ns", "ratio"))]
print(("BAD curve lines missing a number: %s" % bad[:1]) if bad or not C else f"OK {len(C)} curve lines, each with x, pass, ns, kernel_ns, floor_ns, ratio")
def xs(c):
    return [r["x"] for r in C if r["curve"] == c]
want = {"sources": [1, 1000, 10000, 100000],
        "rules": [n for n in (1, 4, 16, 64, 256, 1024) if n < lim[0]["rules_accepted"]] + [lim[0]["rules_accepted"]],
        "prefixes": [0, 1000, 10000], "shed": [0, 1, 2, 3]}
for c, w in want.items():
    print(("OK" if xs(c) == w else "BAD") + f" {c} curve points: expected {w}, got {xs(c)}")
src = [r for r in C if r["curve"] == "sources"]
print(("OK" if src and all(k in r for r in src for k in ("raw_ns", "harness_ns", "table")) and
       all(r["table"] >= 4 * r["x"] for r in src) else "BAD") +
      " sources points carry raw_ns, harness_ns and a table of at least 4 ways a source")
chk = [r for r in L if r["kind"] == "check"]
rc = [r for r in chk if r["what"].startswith("rules curve")]
print(("OK" if len(rc) == len(want["rules"]) and all(r["row"] == r["want_row"] and r["outcome"] == "drop" for r in rc) else "BAD") +
      f" rules points: the frame's rule (last) dropped the frames at every point: {[(r['rules'], r['row'], r['want_row'], r['outcome']) for r in rc]}")
names = [r.get("name") for r in C if r["curve"] == "shed"]
print(("OK" if names == ["plain", "pooled", "tier_shed_0", "tier_shed_50"] else "BAD") + f" shed figures: {names}")
sh = {r["what"][len("shed share of "):]: r for r in chk if r["what"].startswith("shed share of ")}
s50 = sh.get("tier_shed_50", {}).get("share", -1)
print(("OK" if 0.45 <= s50 <= 0.55 else "BAD") + f" the bulk tier at 50% shed sheds about half: share {s50}")
z = [sh.get(k, {}).get("shed", -1) for k in ("plain", "pooled", "tier_shed_0")]
print(("OK" if z == [0, 0, 0] else "BAD") + f" plain, pooled and the tier at 0% shed nothing: {z}")
nb = [r for r in chk if r["what"].startswith("frames without a prefilled bucket during the 1-source")]
print(("OK" if nb and nb[0]["count"] == 0 else "BAD") + f" 1-source point: every packet hit its prefilled bucket (frames without one {nb and nb[0]['count']})")
PY

# --- 1b. synauth: a verified client's ACK against the same rule without syn_auth ---------
if "$FGBENCH" synauth --passes 2 --repeat 4096 --cpu 0 > "$FG_TMP/synauth.jsonl" 2> "$FG_TMP/synauth.err"; then
	ok "fgbench synauth exits 0"
else
	bad "fgbench synauth" "$(one_line < "$FG_TMP/synauth.err")"
fi
check_py synauth "$FG_TMP/synauth.jsonl" <<'PY'
L = [json.loads(l, object_pairs_hook=nodup) for l in open(sys.argv[1])]
mic = [r for r in L if r["kind"] == "micro"]
names = sorted({r["name"] for r in mic})
want = ["plain_ack", "sa_load_plain_ack", "sa_unverified_ack", "sa_verified_ack"]
print(("OK" if names == want and len(mic) == 8 else "BAD") + f" four figures a pass, two passes: {names}, {len(mic)} lines")
bad = [(r["name"], r["retval"], r["expect"]) for r in mic if r["retval"] != r["expect"]]
print(("OK" if not bad else "BAD") + f" every figure's verdict as expected (the verified ACK passes, the unverified one is dropped): {bad or 'all'}")
rat = [r for r in L if r["kind"] == "sa_ratio"]
print(("OK" if len(rat) == 4 and all(r["kernel"] > 0 for r in rat) else "BAD") + f" a ratio per pass against each plain figure: {len(rat)}")
chk = [r for r in L if r["kind"] == "check" and r["what"].startswith("synauth:")]
c = chk[0] if chk else {}
print(("OK" if c.get("pass", 0) > 0 and c.get("cookie_valid", -1) == 0 else "BAD") + f" the verified ACKs passed with no cookie judged valid (the fast path): {c}")
PY

"$FGBENCH" sweep --curve nonsense > /dev/null 2> "$FG_TMP/err"; rc=$?
check_cmp "fgbench sweep --curve nonsense: usage error" "$rc" -eq 2
check "the error names the curves" grep -q "sources|rules|prefixes|shed|all" "$FG_TMP/err"
"$FGBENCH" fill --family 4 --sources 10 > /dev/null 2> "$FG_TMP/err"; rc=$?
check_cmp "fgbench fill without --pin-dir and -i: usage error" "$rc" -eq 2
"$FGBENCH" fill --pin-dir "$FG_TMP/none" -i lo --family 4 --sources 10 > /dev/null 2> "$FG_TMP/err"; rc=$?
check_cmp "fgbench fill on a pin dir with no link: fails" "$rc" -eq 1
check "... and says which link it looked for" grep -q "link_lo" "$FG_TMP/err"
"$FGBENCH" fill --pin-dir "$FG_TMP/none" -i lo --family 5 --sources 10 > /dev/null 2> "$FG_TMP/err"; rc=$?
check_cmp "fgbench fill --family 5: refused" "$rc" -eq 2
"$FGBENCH" fill --pin-dir "$FG_TMP/none" -i lo --family 4 > /dev/null 2> "$FG_TMP/err"; rc=$?
check_cmp "fgbench fill with neither --sources nor --tracked: usage error" "$rc" -eq 2
check "... and says it needs one of them" grep -q -- "--sources N or --tracked T" "$FG_TMP/err"

# --- 2. fill and dispatch against a real daemon --------------------------------------------
if ! { fg_ns_create r && fg_ns_create g && fg_veth_create g veth0 r veth1 &&
       fg_veth_create g vd0 r vd1; }; then
	bad setup "cannot create namespaces and veth pairs"; fg_finish
fi
cat > "$FG_TMP/daemon.yaml" <<EOF
max_sources: 65536
interfaces: [veth1]
rules:
  - name: flood
    match: {proto: udp}
    per_source: {rate: 100/s, burst: 10}
EOF
if fg_daemon_start r "$PIN" "$FG_TMP/daemon.yaml" "$DLOG"; then
	ok "floodgated started on veth1"
else
	bad "floodgated did not start" "$(tail -n 3 "$DLOG" | one_line)"; fg_finish
fi
fill() { "$FGBENCH" fill --pin-dir "$PIN" -i veth1 "$@" 2> "$FG_TMP/fill.err"; }
j=$(fill --family 4 --sources 1000)
check_cmp "fill 1,000 IPv4 sources: 1,000 tracked" "$(fg_json_get - tracked4 <<<"$j")" -eq 1000
j=$(fill --family 6 --sources 500 --start 7)
check_cmp "fill 500 IPv6 sources: 500 tracked" "$(fg_json_get - tracked6 <<<"$j")" -eq 500
check_cmp "... the IPv4 ones still tracked" "$(fg_json_get - tracked4 <<<"$j")" -eq 1000
j=$(fill --family 4 --sources 1000)
check_cmp "fill the same 1,000 IPv4 sources again: no new bucket" "$(fg_json_get - tracked4 <<<"$j")" -eq 1000
check_cmp "fill reports the map memory" "$(fg_json_get - memlock6 <<<"$j")" -gt 0
sleep 0.2	# the admission limit (16,384 new keys/s, burst 1,638 here) refills
j=$(fill --family 4 --tracked 2000 --start 1000)
check_cmp "fill --tracked 2,000 with 1,000 held: 2,000 tracked" "$(fg_json_get - tracked4 <<<"$j")" -eq 2000
check_cmp "... after 1,000 new sources, the index after them 2,000" "$(fg_json_get - sent next <<<"$j")" = "1000 2000"
check_cmp "... each one inserted, none refused" "$(fg_json_get - inserted insert_limited insert_fail <<<"$j")" = "1000 0 0"
j=$(fill --family 4 --tracked 10 --start 2000)
check_cmp "fill --tracked below what the table holds: nothing sent" "$(fg_json_get - sent rounds tracked4 <<<"$j")" = "0 0 2000"
# far faster than the admission limit: what it refuses is counted, not tracked
j=$(fill --family 4 --sources 20000 --start 2000)
read -r ins lim fail t4 <<<"$(fg_json_get - inserted insert_limited insert_fail tracked4 <<<"$j")"
check_cmp "a burst of 20,000 new sources: the admission limit refuses some" "$lim" -gt 0
check_cmp "... every frame inserted, refused or without a way" "$((ins + lim + fail))" -eq 20000
check_cmp "... the table holds exactly the inserted ones more" "$t4" -eq $((2000 + ins))
# status answers from the daemon's walk (a pass a tick at this size): give it a few ticks
st6() { "$FG" status --json --pin-dir "$PIN" | fg_json_get - sources.ipv6; }
for _ in $(seq 30); do [ "$(st6)" = 500 ] && break; sleep 0.2; done
check_cmp "status agrees, once the daemon's walk has passed: IPv6 sources" "$(st6)" -eq 500
fg_daemon_stop

fg_ns_exec r "$FGBENCH" dispatch -i vd1 --repeat 4096 > "$FG_TMP/dispatch.json" 2> "$FG_TMP/dispatch.err"; rc=$?
check_cmp "fgbench dispatch exits 0" "$rc" -eq 0
check_py dispatch "$FG_TMP/dispatch.json" <<'PY'
L = [json.loads(l) for l in open(sys.argv[1])]
d = L[0] if len(L) == 1 and L[0].get("kind") == "dispatch" else None
if not d:
    print(f"BAD one dispatch line expected: {L}")
    sys.exit(0)
print(("OK" if isinstance(d.get("exclusive_ns"), float) else "BAD") + " the exclusive figure is there")
if d["built"]:
    print(("OK" if d.get("dispatcher_ns", 0) > 0 and "added_ns" in d else "BAD") + f" dispatcher built and measured: {d}")
else:
    print(("OK" if d.get("why") and "dispatcher_ns" not in d else "BAD") + f" no dispatcher here, no figure for it, and the reason: {d.get('why')}")
PY
check "nothing left attached to vd1" bash -c "! ip -n $(fg_ns_name r) link show vd1 | grep -q xdp"

# --- 3. the report, quick, without the generator's parts ------------------------------------
miss=
for t in nft iptables-legacy gnuplot ethtool; do command -v "$t" > /dev/null || miss="$miss $t"; done
if [ -n "$miss" ]; then
	skip "tools/bench.sh report" "missing:$miss (tools/deps.sh bench)"
else
	# its pin dir and namespaces are named by its PID
	# the sweep of part 1 again, unless game day: the curves are part 1's
	sweep_file=
	[ "${FG_GAMEDAY:-0}" = 1 ] || [ ! -s "$FG_TMP/sweep.jsonl" ] || sweep_file=$FG_TMP/sweep.jsonl
	BENCH_SWEEP_FILE=$sweep_file BENCH_QUICK=1 BENCH_PARTS="sweep daemon dispatch" BENCH_REPEAT=4096 \
		BENCH_DAEMON_SECONDS=1 BENCH_OUT="$FG_TMP/out" tools/bench.sh > "$FG_TMP/bench.out" 2>&1 &
	bpid=$!
	wait "$bpid"; rc=$?
	FG_LOGS+=("$FG_TMP/bench.out")
	check_cmp "tools/bench.sh, quick, sweep daemon dispatch: exits 0" "$rc" -eq 0
	check "bench.sh left no pin dir" test ! -e "/sys/fs/bpf/fgbench-$bpid"
	check "bench.sh left no namespace" bash -c "! ip netns list | grep -q '^fgb$bpid-'"
	for f in bench.json bench.txt bench.png bench-sources.dat bench-rules.dat bench-prefixes.dat bench-daemon.dat bench-live-sources.dat; do
		check "bench.sh wrote $f" test -s "$FG_TMP/out/$f"
	done
	check_py report "$FG_TMP/out/bench.json" <<'PY'
try:
    r = json.load(open(sys.argv[1]), object_pairs_hook=nodup)
except ValueError as e:
    print(f"BAD bench.json does not parse strictly: {e}")
    sys.exit(0)
top = {"schema", "config", "duration_s", "micro", "ratios", "curves", "limits", "shed", "live", "live_ratios",
       "synauth", "synauth_ratios", "saack", "accuracy", "daemon", "dispatch", "memory", "checks", "goals"}
print(("OK" if set(r) == top and r["schema"] == 2 else "BAD") + f" top-level keys: {sorted(set(r) ^ top) or 'as expected'}")
print(("OK" if set(r["curves"]) == {"sources", "rules", "prefixes", "shed"} else "BAD") + f" curves: {sorted(r['curves'])}")
pt = [e for c in r["curves"].values() for e in c.values()]
print(("OK" if pt and all(all(k in e[s] for k in ("min", "median", "max", "n")) for e in pt for s in ("ns", "floor_ns")) else "BAD") +
      " every curve point has min/median/max of floodgate and of the floor")
d = r["daemon"]
print(("OK" if sorted((x["family"], x["target"]) for x in d) == [(4, 10000), (4, 100000), (6, 10000), (6, 100000)] else "BAD") +
      f" daemon points: {[(x['family'], x['target']) for x in d]}")
print(("OK" if all(x["tracked"] >= 0.99 * x["target"] and x["cpu_pct"] >= 0 and x["status_ms"] >= 0 and x["top_ms"] >= 0 for x in d) else "BAD") +
      " every daemon point: the sources tracked, CPU, status and top times")
print(("OK" if all(x["tracked"] >= x["target"] and x["offered"] >= x["tracked"] for x in d) else "BAD") +
      f" every daemon point holds at least its target, offered at least as many: {[(x['tracked'], x['offered']) for x in d]}")
v6 = [x["tracked_other"] for x in d if x["family"] == 6]
print(("OK" if v6 and all(t >= 100000 for t in v6) else "BAD") + f" the IPv6 points have the IPv4 sources beside them: {v6}")
M = r["memory"]
print(("OK" if sorted(m["family"] for m in M) == [4, 6] and all(m["offered"] == m["ways"] == r["config"]["daemon_table"] and
       0.5 * m["ways"] < m["tracked"] <= m["offered"] and abs(m["bytes_per_tracked"] - m["memlock"] / m["tracked"]) < 1e-6 for m in M) else "BAD") +
      f" memory: each table offered as many sources as ways, per tracked = memlock / held: {[(m['map'], m['tracked'], m['offered']) for m in M]}")
print(("OK" if r["dispatch"] and isinstance(r["dispatch"]["built"], bool) else "BAD") + " dispatch figure or reason")
G = r["goals"]
print(("OK" if G and all(isinstance(g["met"], bool) and isinstance(g["value"], str) and g["value"] for g in G) else "BAD") +
      f" {len(G)} goals, each met or missed with a value")
want = ["live 1 source(s): floodgate <= 1.3x floor", "live 1000 source(s): floodgate no dearer than the simplest per-source limiter",
        "nftables meter >= 10x floodgate", "realistic policy <= 3x floor", "1,000,000 random sources <= 100 ns",
        "IPv4 <= 64 bytes", "IPv6 <= 64 bytes", "at least 256 rules", "1% of a core at 1,000,000 tracked IPv4",
        "1% of a core at 1,000,000 tracked IPv6", "floodgate status < 100 ms", "floodgate top < 100 ms",
        "1,000 live sources in a table of 1,048,576 within 5%",
        "SYN responder >= 5x cheaper per SYN answered"]
missing = [w for w in want if not any(w in g["goal"] for g in G)]
print(("OK" if not missing else "BAD") + f" the issue's goals are all printed: missing {missing or 'none'}")
nr = [g for g in G if ("live" in g["goal"] and "source(s)" in g["goal"]) or g["goal"].startswith("tables:") or g["goal"].startswith("synauth:") or g["goal"].startswith("saack:")]
print(("OK" if nr and all(not g["met"] and "not measured" in g["value"] for g in nr) else "BAD") +
      " goals of parts that did not run are MISSED and say so")
PY
	check "bench.txt prints the goals" grep -q '^  \[\(met\|MISSED\)\] ' "$FG_TMP/out/bench.txt"
fi

# --- 4. the report of a full run (the committed one): the live goals' paths -----------------
# The quick run above has no live part; results/bench-raw.jsonl is a full
# run's records, so its report goes through every goal's arithmetic.
if python3 tools/bench_report.py results/bench-raw.jsonl "$FG_TMP/full" > "$FG_TMP/full.out" 2>&1; then
	ok "tools/bench_report.py reports the committed full run"
	check_py "report of the full run" "$FG_TMP/full/bench.json" <<'PY'
import re
r = json.load(open(sys.argv[1]))
G = {g["goal"]: g for g in r["goals"]}
live = [g for t, g in G.items() if t.startswith("live ") and "not measured" not in g["value"]]
print(("OK" if len(live) >= 4 else "BAD") + f" {len(live)} live goals measured in the committed run")
one = [g for t, g in G.items() if t.startswith("live 1 source(s): floodgate <= 1.3x floor")]
print(("OK" if one and re.search(r"own cost [+-]\d+ ns over the floor, so 1.3x holds on a floor of \d+ ns", one[0]["value"]) else "BAD") +
      " the 1-source goal gives floodgate's own cost over the floor and the floor it needs")
nft = [g for t, g in G.items() if "nftables meter >= 10x" in t]
print(("OK" if len(nft) == 2 and all(re.search(r"net [\d.]+x \(\+\d+ vs \+\d+ ns over the generator\)", g["value"]) for g in nft) else "BAD") +
      " each nft goal gives both net costs of each pass")
PY
else
	bad "tools/bench_report.py reports the committed full run" "$(tail -3 "$FG_TMP/full.out" | one_line 300)"
fi
# --- 5. fgprof: a loaded program's map, and samples by source line ----------------------------
FGPROF=$FG_OUT/fgprof
# micro's realistic policy needs a rule for its frame and a prefix past /24
printf '%s\n' "max_sources: 65536" "deny:" "  - 203.0.113.64/26" "rules:" \
	"  - {name: udp-any, match: {proto: udp}, per_source: {rate: 100/s, burst: 200}}" > "$FG_TMP/prof.yaml"
"$FGBENCH" micro --policy "$FG_TMP/prof.yaml" --cpu 0 --passes 1 --only fg_throttled \
	--repeat 100000000 > /dev/null 2> "$FG_TMP/prof.err" &
fg_bg_adopt "$!"
ppid=$FG_BG_PID
id=
for _ in $(seq 1 300); do
	id=$(sed -n 's/.*fg_throttled runs program id \([0-9]*\).*/\1/p' "$FG_TMP/prof.err")
	[ -n "$id" ] && break
	kill -0 "$ppid" 2>/dev/null || break
	sleep 0.1
done
check "fgbench micro --only names the figure's program" test -n "$id"
if [ -n "$id" ]; then
	"$FGPROF" map --prog-id "$id" > "$FG_TMP/prof.map" 2> "$FG_TMP/prof.map.err"
	check_cmp "fgprof map of the loaded program exits 0" "$?" -eq 0
fi
fg_bg_stop "$ppid" KILL
check_cmp "fgprof map: the main function is floodgate" \
	"$(awk -F '\t' '$1 == "func" { print $4; exit }' "$FG_TMP/prof.map" 2>/dev/null)" = floodgate
check_cmp "fgprof map: jited lines of floodgate.bpf.c" \
	"$(awk -F '\t' '$1 == "line" && $3 ~ /^floodgate\.bpf\.c:[0-9]+$/' "$FG_TMP/prof.map" 2>/dev/null | wc -l)" -gt 50
# samples made from the map: two at one line, one at a line of another
# file, one just past the line's address, one outside every function
read -r a1 w1 < <(awk -F '\t' '$1 == "line" && $3 ~ /^floodgate\.bpf\.c:/ { print $2, $3; exit }' "$FG_TMP/prof.map")
read -r a2 w2 < <(awk -F '\t' '$1 == "line" && $3 ~ /^fg_parse\.h:/ { print $2, $3; exit }' "$FG_TMP/prof.map")
if [ -n "${a1:-}" ] && [ -n "${a2:-}" ]; then
	printf '%s\n%s\n%s\n%x\n1\n' "$a1" "$a1" "$a2" "$((0x$a1 + 1))" > "$FG_TMP/prof.samples"
	"$FGPROF" report --map "$FG_TMP/prof.map" < "$FG_TMP/prof.samples" > "$FG_TMP/prof.rep" 2>&1
	check_cmp "fgprof report exits 0" "$?" -eq 0
	check "fgprof report: 5 samples, 4 in the program" grep -q '^5 samples, 4 in the program (80.0%)$' "$FG_TMP/prof.rep"
	# a sample just past a line's first instruction is that line's, unless the next line starts there
	n1=$(awk -F '\t' -v a="$(printf '%x' "$((0x$a1 + 1))")" '$1 == "line" && $2 == a' "$FG_TMP/prof.map" | wc -l)
	want1=$([ "$n1" = 0 ] && echo 75.0 || echo 50.0)
	check "fgprof report: $w1 has $want1% by line" grep -qE "^ +$want1%  $w1 " "$FG_TMP/prof.rep"
	check "fgprof report: $w2 has 25.0% by line" grep -qE "^ +25.0%  $w2 " "$FG_TMP/prof.rep"
	check "fgprof report: fg_parse.h has 25.0% by file" grep -qE '^ +25.0%  fg_parse.h *$' "$FG_TMP/prof.rep"
else
	bad "fgprof: lines of floodgate.bpf.c and fg_parse.h in the map" "$(head -3 "$FG_TMP/prof.map" | one_line 200)"
fi
"$FGPROF" map --prog-id 4294967295 > /dev/null 2> "$FG_TMP/prof.bad"
check_cmp "fgprof map of no program exits 1" "$?" -eq 1
check "fgprof map of no program says why" grep -q 'program 4294967295: ' "$FG_TMP/prof.bad"
"$FGPROF" report < /dev/null > /dev/null 2>&1
check_cmp "fgprof report without --map exits 2" "$?" -eq 2
printf 'nonsense\n' > "$FG_TMP/prof.badmap"
"$FGPROF" report --map "$FG_TMP/prof.badmap" < /dev/null > /dev/null 2> "$FG_TMP/prof.bad"
check_cmp "fgprof report on a bad map exits 1" "$?" -eq 1
check "fgprof report on a bad map names its line" grep -q 'prof.badmap:1: not a map line' "$FG_TMP/prof.bad"

fg_finish
