#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# End to end: floodgated and the floodgate CLI on one end of a veth pair in
# two namespaces made here, with a pin dir of our own. Checks status, stats,
# check, bypass, mode, reload (valid, invalid), metrics, kill -9 + restart
# (adoption keeps counters), SIGTERM and detach leaving nothing behind.
# Needs root. Cleans up its namespaces, pin dir and daemon (by PID) on exit.
# Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
OUT=${OUTPUT:-.output}
FGD=$OUT/floodgated
FG=$OUT/floodgate
FGEN=$OUT/fgen

pass=0; fail=0; skip=0
ok()   { echo "ok - $1"; pass=$((pass + 1)); }
bad()  { echo "FAIL - $1${2:+: $2}"; fail=$((fail + 1)); }
skp()  { echo "skip - $1: $2"; skip=$((skip + 1)); }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
summary() { echo "$pass passed, $fail failed, $skip skipped"; }

if [ "$(id -u)" != 0 ]; then
	skp e2e_daemon "needs root"; summary; exit 0
fi
for b in "$FGD" "$FG"; do
	if [ ! -x "$b" ]; then skp e2e_daemon "$b not built"; summary; exit 0; fi
done

NS_A=fgd$$a            # sender
NS_B=fgd$$b            # floodgated's side
PIN=/sys/fs/bpf/fg-test-$$
TMP=$(mktemp -d /tmp/fg-e2e.XXXXXX)
DPID=
export FLOODGATE_PIN_DIR=$PIN

cleanup() {
	if [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null; then
		kill -TERM "$DPID" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$DPID" 2>/dev/null
	fi
	if [ -d "$PIN" ]; then
		rm -f "$PIN"/link_* "$PIN"/fg_* 2>/dev/null
		rmdir "$PIN" 2>/dev/null
	fi
	ip netns del "$NS_A" 2>/dev/null
	ip netns del "$NS_B" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf

inb() { nsenter --net=/run/netns/"$NS_B" "$@"; }
ina() { nsenter --net=/run/netns/"$NS_A" "$@"; }

ip netns add "$NS_A" && ip netns add "$NS_B" || { bad setup "ip netns add"; summary; exit 1; }
ip -n "$NS_A" link set lo up; ip -n "$NS_B" link set lo up
ip -n "$NS_A" link add v0 type veth peer name v1 netns "$NS_B"
ip -n "$NS_A" addr add 10.77.0.1/24 dev v0
ip -n "$NS_B" addr add 10.77.0.2/24 dev v1
ip -n "$NS_A" link set v0 up; ip -n "$NS_B" link set v1 up
MAC=$(ip -n "$NS_B" -br link show v1 | awk '{print $3}')
PORT=$((20000 + $$ % 20000))

cat > "$TMP/policy.yaml" <<YAML
interfaces: [v1]
max_sources: 4096
metrics: "127.0.0.1:$PORT"
rules:
  - name: icmp-echo
    match: {proto: icmp, icmp_type: 8}
    per_source: {rate: 5/s, burst: 5}
  - name: udp-any
    match: {proto: udp}
    per_source: {rate: 100/s, burst: 100}
YAML

start_daemon() {
	# nsenter execs floodgated (no fork for --net), so $! is the daemon
	nsenter --net=/run/netns/"$NS_B" "$FGD" --config "$TMP/policy.yaml" --pin-dir "$PIN" \
		--foreground "$@" >> "$TMP/daemon.log" 2>&1 &
	DPID=$!
	for _ in $(seq 50); do
		[ -e "$PIN/link_v1" ] && "$FG" status 2>/dev/null | grep -q "pid $DPID" && return 0
		kill -0 "$DPID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# stats column for a rule: stat RULE OUTCOME-COLUMN(2=pass 3=drop 4=shadow 7=bypass)
stat() { "$FG" stats | awk -v r="$1" -v c="$2" '$1 == r { print $c }'; }

# ICMP echo requests from 10.77.0.1: fgen if built, else nothing to send with
send_icmp() {
	ina "$FGEN" -i v0 -d 10.77.0.2 -s 10.77.0.1 --icmp --dst-mac "$MAC" -n "$1" -r 2000 \
		> /dev/null 2>&1
}
have_gen=1
[ -x "$FGEN" ] || have_gen=0

# --- check and usage ---------------------------------------------------------------
check "check: valid file exits 0" bash -c "'$FG' check '$TMP/policy.yaml' > /dev/null"
printf 'rules:\n  - name: x\n    match: {proto: tcpp}\n' > "$TMP/bad.yaml"
out=$("$FG" check "$TMP/bad.yaml" 2>&1); rc=$?
if [ $rc = 1 ] && echo "$out" | grep -qE "bad.yaml:[0-9]+:[0-9]+"; then ok "check: invalid file exits 1 with file:line:col"
else bad "check: invalid file" "rc=$rc out=$out"; fi
"$FG" frobnicate > /dev/null 2>&1; check "usage: unknown command exits 2" [ $? = 2 ]
"$FG" sta > /dev/null 2>&1; check "usage: ambiguous prefix exits 2" [ $? = 2 ]
"$FG" status > /dev/null 2>&1; check "status without a pin dir exits 1" [ $? = 1 ]
"$FG" reload > /dev/null 2>&1; check "reload without a pin dir exits 1" [ $? = 1 ]

# --- start -------------------------------------------------------------------------------
if ! start_daemon; then
	bad "floodgated starts" "$(tail -5 "$TMP/daemon.log")"
	summary; exit 1
fi
ok "floodgated starts and pins link_v1"
check "status names the daemon and the interface" \
	bash -c "'$FG' status | grep -q 'interface: v1'"
out=$(inb "$FGD" --config "$TMP/policy.yaml" --pin-dir "$PIN" --foreground 2>&1); rc=$?
if [ $rc = 1 ] && echo "$out" | grep -q "already running"; then ok "second floodgated on the same pin dir is refused"
else bad "second floodgated on the same pin dir" "rc=$rc $out"; fi
check "an XDP program is attached to v1" bash -c "ip -n $NS_B link show v1 | grep -q xdp"

# --- traffic and counters ------------------------------------------------------------------
if [ $have_gen = 1 ]; then
	send_icmp 300
	p=$(stat icmp-echo 2); d=$(stat icmp-echo 3)
	if [ "${p:-0}" -ge 5 ] && [ "${d:-0}" -ge 200 ]; then ok "icmp flood: burst passes, rest dropped (pass $p drop $d)"
	else bad "icmp flood counters" "pass=$p drop=$d"; fi
	check "top lists 10.77.0.1 under icmp-echo" bash -c "'$FG' top | grep -q '10.77.0.1/32 .*icmp-echo'"
	check "stats --json is JSON" bash -c "'$FG' stats --json | python3 -c 'import json,sys; json.load(sys.stdin)'"
	check "top --json is JSON" bash -c "'$FG' top --json | python3 -c 'import json,sys; json.load(sys.stdin)'"
	sleep 1.5
	check "daemon logged the throttled source" grep -q "throttling 10.77.0.1" "$TMP/daemon.log"
else
	skp "traffic checks" "$FGEN not built"
fi

# --- metrics ---------------------------------------------------------------------------------
if command -v curl > /dev/null; then
	m=$(inb curl -s "http://127.0.0.1:$PORT/metrics")
	if echo "$m" | grep -q 'floodgate_packets_total{rule="icmp-echo",outcome="drop"}' &&
	   echo "$m" | grep -q '^floodgate_policy_version 1'; then ok "metrics endpoint serves counters"
	else bad "metrics endpoint" "$(echo "$m" | head -3)"; fi
else
	skp "metrics" "no curl"
fi

# --- bypass ------------------------------------------------------------------------------------
"$FG" bypass on --for 2s > /dev/null 2>&1
check "bypass on --for 2s shows in status" bash -c "'$FG' status | grep -q 'bypass:    ON for'"
if [ $have_gen = 1 ]; then
	b0=$(stat _global 7); send_icmp 100; b1=$(stat _global 7)
	check "bypass counts packets as bypass" [ $((b1 - b0)) -ge 100 ]
fi
sleep 2.3
check "bypass expires by itself" bash -c "'$FG' status | grep -q 'bypass:    off'"
"$FG" bypass on > /dev/null 2>&1 && "$FG" bypass off > /dev/null 2>&1
check "bypass on/off" bash -c "'$FG' status | grep -q 'bypass:    off'"
"$FG" bypass sideways > /dev/null 2>&1; check "bypass with a bad argument exits 2" [ $? = 2 ]

# --- mode --------------------------------------------------------------------------------------
"$FG" mode shadow > /dev/null 2>&1
check "mode shadow" bash -c "'$FG' status | grep -q 'mode:      shadow'"
if [ $have_gen = 1 ]; then
	sleep 1.2; s0=$(stat icmp-echo 4); send_icmp 200; s1=$(stat icmp-echo 4)
	check "shadow counts would-be drops" [ $((s1 - s0)) -ge 100 ]
fi
"$FG" mode enforce > /dev/null 2>&1
check "mode enforce" bash -c "'$FG' status | grep -q 'mode:      enforce'"
"$FG" mode shadow --rule icmp-echo > /dev/null 2>&1
check "per-rule shadow" bash -c "'$FG' status | grep -q 'icmp-echo  *limit (shadow)'"
"$FG" mode enforce --rule icmp-echo > /dev/null 2>&1
"$FG" mode shadow --rule no-such-rule > /dev/null 2>&1; check "per-rule mode of an unknown rule exits 1" [ $? = 1 ]

# --- reload --------------------------------------------------------------------------------------
v0=$("$FG" status | sed -nE 's/^policy: +version ([0-9]+).*/\1/p')
cp "$TMP/policy.yaml" "$TMP/good.yaml"
sed -i 's|rate: 5/s, burst: 5|rate: 50/s, burst: 50|' "$TMP/policy.yaml"
printf '  - name: syn\n    match: {proto: tcp, tcp_flags: syn}\n    per_source: {rate: 1/s, burst: 1}\n' >> "$TMP/policy.yaml"
drop_before=$(stat icmp-echo 3)
check "reload (valid) exits 0" bash -c "'$FG' reload > /dev/null"
v1=$("$FG" status | sed -nE 's/^policy: +version ([0-9]+).*/\1/p')
check "reload bumps the policy version ($v0 -> $v1)" [ "$v1" -gt "$v0" ]
check "reload logs the changed rate" grep -q "icmp-echo: per_source rate 5 -> 50" "$TMP/daemon.log"
check "reload logs the added rule" grep -q "rule syn added" "$TMP/daemon.log"
check "a surviving rule keeps its counters" [ "$(stat icmp-echo 3)" -ge "${drop_before:-0}" ]
check "status lists the new rule" bash -c "'$FG' status | grep -q '  syn '"
echo "rules: [ {name: broken" >> "$TMP/policy.yaml"
"$FG" reload > "$TMP/reload.out" 2>&1; rc=$?
check "reload (invalid) exits 1 with file:line:col" bash -c "[ $rc = 1 ] && grep -qE 'policy.yaml:[0-9]+:[0-9]+' '$TMP/reload.out'"
kill -HUP "$DPID"; sleep 1
check "daemon rejects an invalid file on SIGHUP and keeps running" \
	bash -c "grep -q 'running policy is unchanged' '$TMP/daemon.log' && kill -0 $DPID"
v2=$("$FG" status | sed -nE 's/^policy: +version ([0-9]+).*/\1/p')
check "invalid reload leaves the policy version ($v2)" [ "$v2" = "$v1" ]
sed 's/max_sources: 4096/max_sources: 8192/' "$TMP/good.yaml" > "$TMP/policy.yaml"
kill -HUP "$DPID"; sleep 1
check "max_sources change on reload is refused" grep -q "max_sources changed from 4096 to 8192" "$TMP/daemon.log"
cp "$TMP/good.yaml" "$TMP/policy.yaml"

# --- kill -9, the filter stays, restart adopts ------------------------------------------------
tot_before=$(( $(stat icmp-echo 2) + $(stat icmp-echo 3) ))
kill -KILL "$DPID"; wait "$DPID" 2>/dev/null; DPID=
check "after SIGKILL the link stays pinned" [ -e "$PIN/link_v1" ]
check "after SIGKILL status says the daemon is not running" \
	bash -c "'$FG' status | grep -q 'daemon:    not running'"
"$FG" reload > /dev/null 2>&1; check "reload with a dead daemon exits 1" [ $? = 1 ]
if [ $have_gen = 1 ]; then
	send_icmp 100
	tot_dead=$(( $(stat icmp-echo 2) + $(stat icmp-echo 3) ))
	check "the filter keeps counting without the daemon" [ "$tot_dead" -ge $((tot_before + 100)) ]
else
	tot_dead=$tot_before
fi
if start_daemon; then
	ok "floodgated restarts over the pinned state"
	check "restart adopted the pinned link" grep -q "adopted pinned link" "$TMP/daemon.log"
	tot_after=$(( $(stat icmp-echo 2) + $(stat icmp-echo 3) ))
	check "counters survive the restart ($tot_dead -> $tot_after)" [ "$tot_after" -ge "$tot_dead" ]
else
	bad "floodgated restarts over the pinned state" "$(tail -3 "$TMP/daemon.log")"
fi

# --- detach ---------------------------------------------------------------------------------
"$FG" detach > /dev/null 2>&1; check "detach refuses while the daemon runs" [ $? = 1 ]
kill -KILL "$DPID"; wait "$DPID" 2>/dev/null; DPID=
check "detach with a dead daemon exits 0" bash -c "'$FG' detach 2> /dev/null"
check "detach leaves no pin dir" [ ! -e "$PIN" ]
check "detach leaves no XDP program on v1" bash -c "! ip -n $NS_B link show v1 | grep -q xdp"

# SIGTERM detaches by itself
if start_daemon; then
	kill -TERM "$DPID"; wait "$DPID" 2>/dev/null; DPID=
	check "SIGTERM detaches and unpins" bash -c "[ ! -e '$PIN' ] && ! ip -n $NS_B link show v1 | grep -q xdp"
	# --keep leaves it attached; detach cleans up
	start_daemon --keep
	kill -TERM "$DPID"; wait "$DPID" 2>/dev/null; DPID=
	check "--keep leaves the filter attached on SIGTERM" [ -e "$PIN/link_v1" ]
	"$FG" detach > /dev/null 2>&1
	check "detach after --keep leaves nothing" bash -c "[ ! -e '$PIN' ] && ! ip -n $NS_B link show v1 | grep -q xdp"
else
	bad "restart for SIGTERM checks" "$(tail -3 "$TMP/daemon.log")"
fi

check "nothing left pinned" [ ! -e "$PIN" ]
if [ "$fail" != 0 ]; then echo "--- daemon log"; cat "$TMP/daemon.log"; fi
summary
[ "$fail" = 0 ]
