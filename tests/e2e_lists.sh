#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# End to end: the runtime lists (floodgate allow|deny add|del|list) with real
# frames through a veth pair between two namespaces made here, counted at the
# receiver's UDP stack (/proc/net/snmp Udp NoPorts: every datagram delivered
# to the closed port 9) and in floodgate's own counters. A deny stops a flood
# at once; it ends by itself with no daemon running; entries survive a
# reload and a daemon restart; the daemon's tick removes expired entries; an
# allow lets a file-denied source through; bad input is refused and changes
# nothing, the bound included.
# Needs root. Cleans up its namespaces, pin dir and daemon (by PID) on exit.
# Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
fg_init --root --pin lists "$FGD" "$FG" "$FGEN"

# a (senders) and b (floodgated's side), veth v0 <-> v1
fg_pair -q a v0 10.78.0.1/24 b v1 10.78.0.2/24
FLOODER=10.78.0.1
DENIED=10.78.0.200	# in the file's deny list

cat > "$FG_TMP/policy.yaml" <<YAML
interfaces: [v1]
max_sources: 4096
deny: [10.78.0.128/25]
rules:
  - name: udp9
    match: {proto: udp, dport: 9}
    per_source: {rate: 100000/s, burst: 100000}
YAML

start_daemon() { fg_daemon_start b "$PIN" "$FG_TMP/policy.yaml" "$DLOG" "$@"; }
noports() { ip netns exec "$(fg_ns_name b)" awk '/^Udp: [0-9]/ { print $3 }' /proc/net/snmp; }
gstat() { fg_stat "$PIN" _global "$1"; }	# a counter of the global row
# counted SRC COUNTER: one second of SRC's flood; prints "sent delivered growth-of-COUNTER"
counted() {
	local c0 c1 sent got
	c0=$(gstat "$2")
	read -r sent got < <(delivered "$1" 1)
	c1=$(gstat "$2")
	echo "$sent $got $((c1 - c0))"
}
# flood SRC SECS: 2000 frames/s from SRC to port 9; prints the frames sent
flood() {
	fg_ns_exec a "$FGEN" -i v0 --dst-mac "$MAC" -d 10.78.0.2 -s "$1" --dport 9 -r 2000 -t "$2" \
		--json 2>/dev/null | fg_json_get - packets
}
# delivered SRC SECS: "SENT DELIVERED" (delivered counted at the receiver)
delivered() {
	local n0 sent
	n0=$(noports)
	sent=$(flood "$1" "$2")
	sleep 0.2
	echo "$sent $(( $(noports) - n0 ))"
}
# list_json LIST: `floodgate LIST list --json` into $FG_TMP/LIST.json
list_json() { "$FG" "$1" list --json > "$FG_TMP/$1.json" 2> "$FG_TMP/$1.err"; }

if ! start_daemon; then
	bad "floodgated starts" "$(tail -5 "$DLOG")"
	fg_finish
fi
ok "floodgated starts on v1"

# --- a flood, then deny add stops it at once --------------------------------------------
read -r sent got < <(delivered $FLOODER 1)
expect "the flood is delivered before any runtime entry" "[ $got -ge $((sent * 98 / 100)) ] && [ $sent -gt 1000 ]" \
	"$sent" "all delivered" "$got delivered"

# the entry works without a daemon: kill it first, the pinned filter keeps enforcing
fg_daemon_stop KILL
out=$("$FG" deny add $FLOODER/32 --for 3s --comment "incident 42" 2>&1); rc=$?
t_add=$(date +%s.%N)
check_cmp "deny add $FLOODER/32 --for 3s with no daemon exits 0" "$rc" = 0
read -r sent got dd < <(counted $FLOODER rt_deny)
expect "the denied flood is dropped at once (receiver)" "[ $got -le 2 ] && [ $sent -gt 1000 ]" \
	"$sent" "0 delivered" "$got delivered"
check_cmp "each dropped frame is counted as rt_deny" "$dd" -ge "$sent"
if list_json deny; then
	fg_json_check "deny list --json" rtlist "$FG_TMP/deny.json"
	check_cmp "deny list: the entry" "$(fg_json_get "$FG_TMP/deny.json" entries.0.prefix \
		entries.0.list entries.0.expired)" = "$FLOODER/32 deny false"
	check_cmp "deny list: its comment" "$(fg_json_get "$FG_TMP/deny.json" entries.0.comment)" = "incident 42"
	check_cmp "deny list: who added it" "$(fg_json_get "$FG_TMP/deny.json" entries.0.who | cut -c1-12)" = \
		"uid $(id -u) ($(id -un))"
	left=$(fg_json_get "$FG_TMP/deny.json" entries.0.expires_in_s)
	expect "deny list: its time left" "awk 'BEGIN { exit !($left > 0 && $left <= 3) }'" "--for 3s" \
		"0 < left <= 3" "$left"
else
	bad "deny list --json" "$(cat "$FG_TMP/deny.err")"
fi
check "deny add says for how long" bash -c "echo '$out' | grep -q 'on the runtime deny list for 3s'"

# it ends by itself: the program judges the time, nobody removes the entry
sleep "$(awk -v t="$t_add" -v now="$(date +%s.%N)" 'BEGIN { d = t + 3.3 - now; print (d > 0 ? d : 0) }')"
# the event is counted in the row that judged the packet (udp9's): sum the rows
e0=$(fg_stat_sum "$PIN" ev:rt_expired)
read -r sent got < <(delivered $FLOODER 1)
e1=$(fg_stat_sum "$PIN" ev:rt_expired)
expect "after 3 s the flood is delivered again, no daemon running" "[ $got -ge $((sent * 98 / 100)) ]" \
	"$sent" "all delivered" "$got delivered"
check_cmp "the expired entry is counted as rt_expired by the program" "$((e1 - e0))" -ge "$sent"
list_json deny
check_cmp "deny list shows it as expired (and removes it)" \
	"$(fg_json_get "$FG_TMP/deny.json" entries.0.prefix entries.0.expired)" = "$FLOODER/32 true"
list_json deny
check_cmp "deny list: gone afterwards" "$(fg_json_get "$FG_TMP/deny.json" entries.0 ipv4)" = "0 0"

# --- entries survive a daemon restart and a reload ----------------------------------------------
"$FG" deny add $FLOODER/32 --comment "until deleted" > /dev/null 2>&1
if start_daemon; then
	ok "floodgated restarts over the pinned state"
else
	bad "floodgated restarts" "$(tail -3 "$DLOG")"; fg_finish
fi
read -r sent got < <(delivered $FLOODER 1)
expect "after the restart the entry still drops the flood" "[ $got -le 2 ] && [ $sent -gt 1000 ]" \
	"$sent" "0 delivered" "$got delivered"
check "reload exits 0" bash -c "'$FG' reload > /dev/null 2>&1"
list_json deny
check_cmp "after the reload deny list still has it, until deleted" \
	"$(fg_json_get "$FG_TMP/deny.json" entries.0.prefix entries.0.expires_in_s)" = "$FLOODER/32 null"
read -r sent got < <(delivered $FLOODER 1)
expect "after the reload the entry still drops the flood" "[ $got -le 2 ] && [ $sent -gt 1000 ]" \
	"$sent" "0 delivered" "$got delivered"
fg_daemon_stop KILL
start_daemon || bad "floodgated restarts a second time" "$(tail -3 "$DLOG")"
"$FG" deny del $FLOODER/32 > /dev/null 2>&1
check_cmp "deny del exits 0" "$?" = 0
read -r sent got < <(delivered $FLOODER 1)
expect "after deny del the flood is delivered" "[ $got -ge $((sent * 98 / 100)) ]" \
	"$sent" "all delivered" "$got delivered"

# the daemon's tick removes expired entries (list would show one it had not removed as expired)
"$FG" deny add 198.51.100.0/24 --for 1s > /dev/null 2>&1
sleep 2.5
list_json deny
check_cmp "the daemon's tick removed the expired entry" "$(fg_json_get "$FG_TMP/deny.json" entries.0)" = 0

# --- allow lets a file-denied source through ----------------------------------------------------
read -r sent got ddn < <(counted $DENIED deny)
expect "the file's deny list drops $DENIED" "[ $got -le 2 ] && [ $ddn -ge $sent ]" "$sent" \
	"0 delivered, all counted deny" "$got delivered, $ddn deny"
check "allow add $DENIED/32 exits 0" bash -c "'$FG' allow add $DENIED/32 --for 1m --comment partner > /dev/null 2>&1"
read -r sent got da < <(counted $DENIED rt_allow)
expect "runtime allow lets the file-denied source through" "[ $got -ge $((sent * 98 / 100)) ]" \
	"$sent" "all delivered" "$got delivered"
check_cmp "each is counted as rt_allow" "$da" -ge "$sent"
list_json allow
fg_json_check "allow list --json" rtlist "$FG_TMP/allow.json"
check_cmp "allow list shows it" "$(fg_json_get "$FG_TMP/allow.json" list entries.0.prefix entries.0.comment)" = \
	"allow $DENIED/32 partner"
if "$FG" stats --json > "$FG_TMP/stats.json" 2>&1; then
	fg_json_check "stats --json with the new outcomes and event" stats "$FG_TMP/stats.json"
fi

# --- bad input: refused with a reason, nothing changes -------------------------------------------
# the lists as JSON without the time left, which moves
lists_now() {
	local l
	for l in allow deny; do
		"$FG" $l list --json 2>&1 | sed -E 's/"expires_in_s":[0-9.]+/"expires_in_s":T/g'
	done
}
before=$(lists_now)
refused() {	# refused NAME RC PATTERN CMD...: exits RC and says PATTERN
	local name=$1 want=$2 pat=$3 out rc; shift 3
	out=$("$@" 2>&1); rc=$?
	if [ "$rc" = "$want" ] && echo "$out" | grep -qE "$pat"; then ok "$name: exit $rc, \"$(echo "$out" | one_line 120)\""
	else bad "$name" "expected exit $want and /$pat/, measured exit $rc: $(echo "$out" | one_line 200)"; fi
}
refused "bad address" 2 "not an IPv4 or IPv6 address" "$FG" deny add 10.1.2.300/32
refused "bad prefix length" 2 "prefix length must be 0..32" "$FG" deny add 10.0.0.0/33
refused "IPv6 prefix length" 2 "0..128" "$FG" deny add 2001:db8::/129
refused "bad duration" 2 "not a duration" "$FG" deny add 10.9.0.0/16 --for 5x
refused "zero duration" 2 "not a duration" "$FG" deny add 10.9.0.0/16 --for 0s
refused "too long a duration" 2 "at most 366d" "$FG" deny add 10.9.0.0/16 --for 400d
refused "too long a comment" 2 "at most 63 fit" "$FG" deny add 10.9.0.0/16 --comment "$(printf 'x%.0s' $(seq 70))"
refused "a control character in the comment" 2 "printable ASCII" "$FG" deny add 10.9.0.0/16 --comment "$(printf 'a\tb')"
refused "no prefix" 2 "needs one PREFIX" "$FG" deny add
refused "unknown subcommand" 2 "expected add, del or list" "$FG" deny remove 10.9.0.0/16
refused "--for on del" 2 "takes no --for" "$FG" deny del 10.9.0.0/16 --for 1m
refused "the other list" 1 "runtime allow list: 'floodgate allow del $DENIED/32' first" \
	"$FG" deny add $DENIED/32
refused "del of an absent entry" 1 "not on the runtime deny list" "$FG" deny del 10.9.0.0/16
refused "del on the wrong list" 1 "on the runtime allow list, not on the deny list" "$FG" deny del $DENIED/32
check "bad input changed no list (allow and deny list --json as before)" [ "$(lists_now)" = "$before" ]
out=$("$FG" deny add 10.9.1.2/16 2>&1)
check "host bits are masked, and said so" bash -c "echo '$out' | grep -q 'host bits set: using 10.9.0.0/16'"
"$FG" deny del 10.9.0.0/16 > /dev/null 2>&1

# --- the bound: FG_RT_MAX IPv4 entries, one more is refused ---------------------------------------
# the allow entry above ends by itself after 1m, and a fill that takes longer
# (a loaded machine) then had room for one more: the bound counts it
"$FG" allow del $DENIED/32 > /dev/null 2>&1
list_json deny
max=$(fg_json_get "$FG_TMP/deny.json" max_per_family)
have=$(fg_json_get "$FG_TMP/deny.json" ipv4)	# both lists count
t0=$SECONDS
i=0; fails=0
while [ $((have + i)) -lt "$max" ]; do
	"$FG" deny add "100.64.$((i / 256)).$((i % 256))/32" > /dev/null 2>&1 || fails=$((fails + 1))
	i=$((i + 1))
done
check_cmp "filled the IPv4 family to $max entries ($i adds in $((SECONDS - t0)) s)" "$fails" = 0
refused "entry $((max + 1)) refused" 1 "hold $max IPv4 entries already.*delete some first" \
	"$FG" deny add 100.65.0.0/16
list_json deny
check_cmp "nothing added by the refused one" "$(fg_json_get "$FG_TMP/deny.json" ipv4)" = "$max"
check "IPv6 has its own bound" bash -c "'$FG' deny add 2001:db8:77::/48 > /dev/null 2>&1"
fg_daemon_stop TERM
check "SIGTERM with the lists full detaches and unpins everything" [ ! -e "$PIN" ]
fg_finish
