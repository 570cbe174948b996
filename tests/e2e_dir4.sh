#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# End to end: a threat feed of a million /32s, past the IPv4 lists' block
# budget (include/floodgate.h, "the block budget"), through the real CLI and
# daemon in two namespaces made here. `floodgate check` and the daemon's log
# say how many /24 ranges the trie answers, so does a metrics gauge; frames
# from a listed source in a range that kept its block, from one in a range
# the trie answers, and from an unlisted source in that range get the right
# verdict (counted deny / pass).
# Needs root. Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
fg_init --root --pin dir4 "$FGD" "$FG" "$FGEN"

fg_ns_create g && fg_ns_create r && fg_ns_quiet g && fg_ns_quiet r &&
	fg_veth_create g g0 r r0 && fg_ns_addr g g0 10.87.0.1/24 && fg_ns_addr r r0 10.87.0.2/24 ||
	{ bad setup "namespaces and veth pair"; fg_finish; }
MAC=$(fg_ns_mac r r0)
MPORT=$((30000 + $$ % 20000))

# Kept: three /32s in 10.1.2.0/24 (more than any random /24 is likely to
# hold, and the lowest address). Trie: one /32 in 222.255.255.0/24, the
# highest address of a one-prefix /24. The million random /32s avoid both /8s.
KEPT=10.1.2.5
TRIE=222.255.255.9
UNLISTED=222.255.255.10
awk -v mport=$MPORT 'BEGIN { srand(11); printf "interfaces: [r0]\nmax_sources: 4096\nmetrics: \"127.0.0.1:%d\"\ndeny: [10.1.2.5,10.1.2.6,10.1.2.7,222.255.255.9", mport;
	for (i = 0; i < 1000000; i++)
		printf ",%d.%d.%d.%d", 11 + int(rand() * 211), int(rand() * 256), int(rand() * 256), int(rand() * 256);
	print "]\nrules:\n  - {name: udp9, match: {proto: udp, dport: 9}, per_source: {rate: 100000/s, burst: 100000}}" }' \
	> "$FG_TMP/p.yaml"

NOTE='/24 ranges answered by the trie: the block budget is 131072'
"$FG" check "$FG_TMP/p.yaml" > "$FG_TMP/check.out" 2>&1; rc=$?
check_cmp "check of a million /32s: exit 0" "$rc" = 0
check "check says how many /24 ranges the trie answers" grep -q "$NOTE" "$FG_TMP/check.out"
if ! FG_START_TENTHS=600 fg_daemon_start r "$PIN" "$FG_TMP/p.yaml" "$DLOG"; then
	bad "floodgated starts with a million /32s" "$(tail -5 "$DLOG" | one_line)"
	fg_finish
fi
ok "floodgated starts with a million /32s (not refused)"
check "the daemon's log says how many /24 ranges the trie answers" grep -q "start: IPv4 lists: .*$NOTE" "$DLOG"
metric() {	# metric NAME: its value on the daemon's page
	fg_ns_exec r curl -s "http://127.0.0.1:$MPORT/metrics" | awk -v n="$1" '$1 == n { print $2 }'
}
logged=$(sed -nE 's|.*start: IPv4 lists: ([0-9]+) blocks.*; ([0-9]+) of [0-9]+ /24 ranges.*|\1 \2|p' "$DLOG")
n=50
while [ -z "$(metric floodgate_ipv4_list_blocks)" ] && [ $n -gt 0 ]; do sleep 0.1; n=$((n - 1)); done
check_cmp "metrics: the blocks and the /24 ranges the trie answers, as logged" \
	"$(metric floodgate_ipv4_list_blocks) $(metric 'floodgate_ipv4_list_trie{range="24"}')" = "$logged"

# figures: the kernel's memlock figures (bytes) of the trie (it counts leaves only, not the
# intermediate nodes: floodgate.h, "Prefix capacity"), the active blocks and fg_dir4
mem() { bpftool -j map show "$@" 2>/dev/null | fg_json_get - bytes_memlock; }
inner=$(bpftool -j map dump pinned "$PIN/fg_blk4" 2>/dev/null | "$FG_PY" -c '
import json, sys
ids = [int.from_bytes(bytes(int(b, 16) for b in e["value"]), "little") for e in json.load(sys.stdin)]
print(max(ids, default=0))' 2>/dev/null)
echo "# figures: fg_pfx4 (1M prefixes) $(mem pinned "$PIN/fg_pfx4") B, fg_blk4 inner map (id ${inner:-?}) $(mem id "${inner:-0}") B, fg_dir4 (2 slots) $(mem pinned "$PIN/fg_dir4") B"

# sent SRC N: N frames from SRC; prints "deny-growth pass-growth" (the
# global row's deny, rule udp9's pass)
sent() {
	local d0 p0
	d0=$(fg_stat "$PIN" _global deny); p0=$(fg_stat "$PIN" udp9 pass)
	fg_ns_exec g "$FGEN" -i g0 -d 10.87.0.2 -s "$1" --udp --dport 9 --dst-mac "$MAC" \
		-n "$2" -r 20000 > /dev/null 2>&1
	sleep 0.2
	echo "$(( $(fg_stat "$PIN" _global deny) - d0 )) $(( $(fg_stat "$PIN" udp9 pass) - p0 ))"
}
N=500
read -r d p <<< "$(sent $KEPT $N)"
expect "a listed source in a range with its block: denied" "[ $d -ge $((N * 95 / 100)) ] && [ $p = 0 ]" \
	"$N from $KEPT" "deny >= 95%, pass 0" "deny +$d, pass +$p"
read -r d p <<< "$(sent $TRIE $N)"
expect "a listed source in a range the trie answers: denied" "[ $d -ge $((N * 95 / 100)) ] && [ $p = 0 ]" \
	"$N from $TRIE" "deny >= 95%, pass 0" "deny +$d, pass +$p"
read -r d p <<< "$(sent $UNLISTED $N)"
expect "an unlisted source in that range: passed by its rule" "[ $p -ge $((N * 95 / 100)) ] && [ $d = 0 ]" \
	"$N from $UNLISTED" "pass >= 95%, deny 0" "deny +$d, pass +$p"

fg_daemon_stop
fg_finish
