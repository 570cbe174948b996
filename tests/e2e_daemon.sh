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
. tests/lib.sh
fg_init --root --pin daemon "$FGD" "$FG"

# a (sender) and b (floodgated's side), veth v0 <-> v1
fg_pair a v0 10.77.0.1/24 b v1 10.77.0.2/24
NS_B=$(fg_ns_name b)
PORT=$((20000 + $$ % 20000))

cat > "$FG_TMP/policy.yaml" <<YAML
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

start_daemon() { fg_daemon_start b "$PIN" "$FG_TMP/policy.yaml" "$DLOG" "$@"; }
stat() { fg_stat "$PIN" "$1" "$2"; }	# stat RULE OUTCOME

# ICMP echo requests from 10.77.0.1: fgen if built, else nothing to send with
send_icmp() {
	fg_ns_exec a "$FGEN" -i v0 -d 10.77.0.2 -s 10.77.0.1 --icmp --dst-mac "$MAC" -n "$1" -r 2000 \
		> /dev/null 2>&1
}
have_gen=1
[ -x "$FGEN" ] || have_gen=0

# --- check and usage ---------------------------------------------------------------
check "check: valid file exits 0" bash -c "'$FG' check '$FG_TMP/policy.yaml' > /dev/null"
printf 'rules:\n  - name: x\n    match: {proto: tcpp}\n' > "$FG_TMP/bad.yaml"
out=$("$FG" check "$FG_TMP/bad.yaml" 2>&1); rc=$?
if [ $rc = 1 ] && echo "$out" | grep -qE "bad.yaml:[0-9]+:[0-9]+"; then ok "check: invalid file exits 1 with file:line:col"
else bad "check: invalid file" "rc=$rc out=$out"; fi
"$FG" frobnicate > /dev/null 2>&1; check_cmp "usage: unknown command exits 2" "$?" = 2
"$FG" sta > /dev/null 2>&1; check_cmp "usage: ambiguous prefix exits 2" "$?" = 2
"$FG" status > /dev/null 2>&1; check_cmp "status without a pin dir exits 1" "$?" = 1
"$FG" reload > /dev/null 2>&1; check_cmp "reload without a pin dir exits 1" "$?" = 1

# --- start -------------------------------------------------------------------------------
if ! start_daemon; then
	bad "floodgated starts" "$(tail -5 "$DLOG")"
	fg_finish
fi
ok "floodgated starts and pins link_v1"
check "status names the daemon and the interface" \
	bash -c "'$FG' status | grep -q 'interface: v1'"
# the new schemas: status --json, and top --json with "sources" once
if "$FG" status --json > "$FG_TMP/status.json" 2> "$FG_TMP/status.err"; then
	new_json=1
	fg_json_check "status --json" status "$FG_TMP/status.json"
	check_cmp "status --json: pin dir, daemon, interface" \
		"$(fg_json_get "$FG_TMP/status.json" pin_dir daemon.running daemon.pid interfaces.0.name interfaces.0.attached)" \
		= "$PIN true $FG_DPID v1 true"
else
	new_json=0
	skip "status --json schema" "status --json not in this build"
fi
out=$(fg_ns_exec b "$FGD" --config "$FG_TMP/policy.yaml" --pin-dir "$PIN" --foreground 2>&1); rc=$?
if [ $rc = 1 ] && echo "$out" | grep -q "already running"; then ok "second floodgated on the same pin dir is refused"
else bad "second floodgated on the same pin dir" "rc=$rc $out"; fi
check "an XDP program is attached to v1" bash -c "ip -n $NS_B link show v1 | grep -q xdp"

# --- traffic and counters ------------------------------------------------------------------
if [ $have_gen = 1 ]; then
	send_icmp 300
	p=$(stat icmp-echo pass); d=$(stat icmp-echo drop)
	expect "icmp flood: burst passes, rest dropped" "[ ${p:-0} -ge 5 ] && [ ${d:-0} -ge 200 ]" \
		300 "pass >= 5, drop >= 200" "pass $p drop $d"
	check "top lists 10.77.0.1 under icmp-echo" bash -c "'$FG' top | grep -q '10.77.0.1/32 .*icmp-echo'"
	"$FG" stats --json > "$FG_TMP/stats.json" 2>&1
	fg_json_check "stats --json" stats "$FG_TMP/stats.json"
	"$FG" top --json > "$FG_TMP/top.json" 2>&1
	if [ $new_json = 1 ]; then
		fg_json_check "top --json" top "$FG_TMP/top.json"
	else
		# this build's top --json writes "sources" twice: only that it parses
		check "top --json is JSON" "$FG_PY" -c 'import json,sys; json.load(open(sys.argv[1]))' "$FG_TMP/top.json"
		skip "top --json schema" "status --json not in this build"
	fi
	sleep 1.5
	check "daemon logged the throttled source" grep -q "throttling 10.77.0.1" "$DLOG"
else
	skip "traffic checks" "$FGEN not built"
fi

# --- metrics ---------------------------------------------------------------------------------
if command -v curl > /dev/null; then
	m=$(fg_ns_exec b curl -s "http://127.0.0.1:$PORT/metrics")
	if echo "$m" | grep -q 'floodgate_packets_total{rule="icmp-echo",outcome="drop"}' &&
	   echo "$m" | grep -q '^floodgate_policy_version 1'; then ok "metrics endpoint serves counters"
	else bad "metrics endpoint" "$(echo "$m" | head -3)"; fi
else
	skip "metrics" "no curl"
fi

# --- bypass ------------------------------------------------------------------------------------
"$FG" bypass on --for 2s > /dev/null 2>&1
check "bypass on --for 2s shows in status" bash -c "'$FG' status | grep -q 'bypass:    ON for'"
if [ $have_gen = 1 ]; then
	b0=$(stat _global bypass); send_icmp 100; b1=$(stat _global bypass)
	check_cmp "bypass counts packets as bypass" "$((b1 - b0))" -ge 100
fi
sleep 2.3
check "bypass expires by itself" bash -c "'$FG' status | grep -q 'bypass:    off'"
"$FG" bypass on > /dev/null 2>&1 && "$FG" bypass off > /dev/null 2>&1
check "bypass on/off" bash -c "'$FG' status | grep -q 'bypass:    off'"
"$FG" bypass sideways > /dev/null 2>&1; check_cmp "bypass with a bad argument exits 2" "$?" = 2

# --- mode --------------------------------------------------------------------------------------
"$FG" mode shadow > /dev/null 2>&1
check "mode shadow" bash -c "'$FG' status | grep -q 'mode:      shadow'"
if [ $have_gen = 1 ]; then
	sleep 1.2; s0=$(stat icmp-echo shadow); send_icmp 200; s1=$(stat icmp-echo shadow)
	check_cmp "shadow counts would-be drops" "$((s1 - s0))" -ge 100
fi
"$FG" mode enforce > /dev/null 2>&1
check "mode enforce" bash -c "'$FG' status | grep -q 'mode:      enforce'"
"$FG" mode shadow --rule icmp-echo > /dev/null 2>&1
check "per-rule shadow" bash -c "'$FG' status | grep -q 'icmp-echo  *limit (shadow)'"
"$FG" mode enforce --rule icmp-echo > /dev/null 2>&1
"$FG" mode shadow --rule no-such-rule > /dev/null 2>&1; check_cmp "per-rule mode of an unknown rule exits 1" "$?" = 1

# --- reload --------------------------------------------------------------------------------------
v0=$("$FG" status | sed -nE 's/^policy: +version ([0-9]+).*/\1/p')
cp "$FG_TMP/policy.yaml" "$FG_TMP/good.yaml"
sed -i 's|rate: 5/s, burst: 5|rate: 50/s, burst: 50|' "$FG_TMP/policy.yaml"
printf '  - name: syn\n    match: {proto: tcp, tcp_flags: syn}\n    per_source: {rate: 1/s, burst: 1}\n' >> "$FG_TMP/policy.yaml"
drop_before=$(stat icmp-echo drop)
check "reload (valid) exits 0" bash -c "'$FG' reload > /dev/null"
v1=$("$FG" status | sed -nE 's/^policy: +version ([0-9]+).*/\1/p')
check_cmp "reload bumps the policy version" "$v1" -gt "$v0"
check "reload logs the changed rate" grep -q "icmp-echo: per_source rate 5 -> 50" "$DLOG"
check "reload logs the added rule" grep -q "rule syn added" "$DLOG"
check_cmp "a surviving rule keeps its counters" "$(stat icmp-echo drop)" -ge "${drop_before:-0}"
check "status lists the new rule" bash -c "'$FG' status | grep -q '  syn '"
echo "rules: [ {name: broken" >> "$FG_TMP/policy.yaml"
"$FG" reload > "$FG_TMP/reload.out" 2>&1; rc=$?
check "reload (invalid) exits 1 with file:line:col" bash -c "[ $rc = 1 ] && grep -qE 'policy.yaml:[0-9]+:[0-9]+' '$FG_TMP/reload.out'"
kill -HUP "$FG_DPID"; sleep 1
check "daemon rejects an invalid file on SIGHUP and keeps running" \
	bash -c "grep -q 'running policy is unchanged' '$DLOG' && kill -0 $FG_DPID"
v2=$("$FG" status | sed -nE 's/^policy: +version ([0-9]+).*/\1/p')
check_cmp "invalid reload leaves the policy version" "$v2" = "$v1"
sed 's/max_sources: 4096/max_sources: 8192/' "$FG_TMP/good.yaml" > "$FG_TMP/policy.yaml"
kill -HUP "$FG_DPID"; sleep 1
check "max_sources change on reload is refused" grep -q "max_sources changed from 4096 to 8192" "$DLOG"
cp "$FG_TMP/good.yaml" "$FG_TMP/policy.yaml"

# --- kill -9, the filter stays, restart adopts ------------------------------------------------
tot_before=$(( $(stat icmp-echo pass) + $(stat icmp-echo drop) ))
fg_daemon_stop KILL
check "after SIGKILL the link stays pinned" [ -e "$PIN/link_v1" ]
check "after SIGKILL status says the daemon is not running" \
	bash -c "'$FG' status | grep -q 'daemon:    not running'"
"$FG" reload > /dev/null 2>&1; check_cmp "reload with a dead daemon exits 1" "$?" = 1
if [ $have_gen = 1 ]; then
	send_icmp 100
	tot_dead=$(( $(stat icmp-echo pass) + $(stat icmp-echo drop) ))
	check_cmp "the filter keeps counting without the daemon" "$tot_dead" -ge $((tot_before + 100))
else
	tot_dead=$tot_before
fi
if start_daemon; then
	ok "floodgated restarts over the pinned state"
	check "restart adopted the pinned link" grep -q "adopted pinned link" "$DLOG"
	tot_after=$(( $(stat icmp-echo pass) + $(stat icmp-echo drop) ))
	check_cmp "counters survive the restart" "$tot_after" -ge "$tot_dead"
else
	bad "floodgated restarts over the pinned state" "$(tail -3 "$DLOG")"
fi

# --- detach ---------------------------------------------------------------------------------
"$FG" detach > /dev/null 2>&1; check_cmp "detach refuses while the daemon runs" "$?" = 1
fg_daemon_stop KILL
check "detach with a dead daemon exits 0" bash -c "'$FG' detach 2> /dev/null"
check "detach leaves no pin dir" [ ! -e "$PIN" ]
check "detach leaves no XDP program on v1" bash -c "! ip -n $NS_B link show v1 | grep -q xdp"

# SIGTERM detaches by itself
if start_daemon; then
	fg_daemon_stop TERM
	check "SIGTERM detaches and unpins" bash -c "[ ! -e '$PIN' ] && ! ip -n $NS_B link show v1 | grep -q xdp"
	# --keep leaves it attached; detach cleans up
	start_daemon --keep
	fg_daemon_stop TERM
	check "--keep leaves the filter attached on SIGTERM" [ -e "$PIN/link_v1" ]
	"$FG" detach > /dev/null 2>&1
	check "detach after --keep leaves nothing" bash -c "[ ! -e '$PIN' ] && ! ip -n $NS_B link show v1 | grep -q xdp"
else
	bad "restart for SIGTERM checks" "$(tail -3 "$DLOG")"
fi

check "nothing left pinned" [ ! -e "$PIN" ]
fg_finish
