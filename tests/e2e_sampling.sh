#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# End to end: drop sampling against sources sent in turn, with the real
# daemon and real frames (tools/fgen --sources N cycles SRC..SRC+N-1) through
# a veth pair between two namespaces made here. Every source over its rate
# must get sampled drops (top --json), which is what reports it to the
# daemon (a throttle event), so what it tracks and escalates; and the
# samples must still add up to about the rule's exact drop count (stats
# --json). With a fixed place in each 16 drops, 32 sources in turn left 14
# of them never sampled (FG_DROP_SAMPLED, include/floodgate.h).
# Needs root. Cleans up its namespaces, pin dir and daemon (by PID) on exit.
# Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
fg_init --root --pin smp "$FGD" "$FG" "$FGEN"
fg_pair -q a v0 10.77.0.1/24 b v1 10.77.0.2/24
cat > "$FG_TMP/policy.yaml" <<YAML
interfaces: [v1]
max_sources: 4096
rules:
  - name: udp7
    match: {proto: udp, dport: 7}
    per_source: {rate: 100/s, burst: 100, prefix_v4: 32}
YAML
fg_daemon_up b "$FG_TMP/policy.yaml" "floodgated starts"
ok "floodgated starts"

# "N SUM" for the sources of /24 PREFIX. in top.json: how many have sampled drops, their sum
sampled_in() {
	"$FG_PY" -c 'import json, sys
s = [e["drops_sampled"] for e in json.load(open(sys.argv[1]))["sources"]
     if e["source"].startswith(sys.argv[2]) and e["drops_sampled"] > 0]
print(len(s), sum(s))' "$FG_TMP/top.json" "$1"
}

# N sources in turn, 500/s each (5x the rule's rate), for 5 s; each from its own /24
for n in 32 40; do
	net=10.77.$n.
	d0=$(fg_stat "$PIN" udp7 drop)
	fg_ns_exec a "$FGEN" -i v0 --dst-mac "$MAC" -d 10.77.0.2 --dport 7 -r $((500 * n)) -t 5 \
		-s "${net}1" --sources "$n" --json > /dev/null 2>&1
	drops=$(( $(fg_stat "$PIN" udp7 drop) - d0 ))
	if ! "$FG" top -n 1000 --json > "$FG_TMP/top.json" 2> "$FG_TMP/top.err"; then
		bad "$n sources: top --json" "$(one_line 200 < "$FG_TMP/top.err")"
		continue
	fi
	read -r got sum < <(sampled_in "$net")
	check_cmp "$n sources in turn, each 5x over its rate for 5 s: every one has sampled drops" \
		"$got" = "$n"
	check_near "$n sources: the samples add up to the rule's drops ($drops)" "$sum" "$drops" 10
done

fg_daemon_stop TERM
check "SIGTERM detaches and unpins" [ ! -e "$PIN" ]
fg_finish
