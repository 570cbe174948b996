#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Game day, failures: floodgated on one end of a veth pair made here, a
# flood running from the other end, and things going wrong:
#   1. SIGKILL of the daemon during a flood: enforcement goes on, a restart
#      adopts the state, counters are not reset
#   2. SIGKILL during reloads (at several points after SIGHUP): the same
#   3. bpffs not mounted (private mount namespace): floodgated mounts it
#   4. the interface deleted while attached, then created again
#   5. the source table full: on_full overflow / open / closed and their
#      events (insert_limited, overflow, full_open, full_closed)
#   6. a second daemon on the same pin dir: refused, the first untouched
# FG_GAMEDAY=1 repeats and lengthens. Needs root. Removes everything it
# made; fails if anything is left. Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/gameday_lib.sh
gd_init

if [ "$GD_LONG" = 1 ]; then RELOAD_KILLS="0 0.001 0.002 0.005 0.01 0.02 0.05 0.1 0.2"; else RELOAD_KILLS="0 0.002 0.01 0.05"; fi

gd_pair || { bad "setup: namespaces and veth pair"; fg_finish; }

gd_policy_flood base

# flood_start SECONDS: one source flooding dport 9 in the background
flood_start() {
	intx "$FGEN" -i gdt0 --dst-mac "$GD_MAC" -d "$GD_RX_IP" -s 10.213.0.9 -t "$1" --json \
		> "$GD_TMP/flood.json" 2> "$GD_TMP/flood.err" &
	FLOOD_PID=$!
	FLOOD_END=$((SECONDS + $1))
	sleep 0.3
}
flood_wait() { wait "$FLOOD_PID" 2>/dev/null; FLOOD_PID=; }
# flood_alive SECONDS: a new flood of SECONDS if the last one ended or ends
# within 2 s, the window a check after it needs (a loaded machine takes
# longer between kill and restart than the flood was sized for)
flood_alive() {
	[ -n "$FLOOD_PID" ] && kill -0 "$FLOOD_PID" 2>/dev/null &&
		[ $((FLOOD_END - SECONDS)) -gt 2 ] && return 0
	flood_wait
	flood_start "$1"
}
drops() { fg_snap "$GD_PIN"; fg_stat "$FG_SNAP" flood drop; }
tot() { fg_snap "$GD_PIN"; fg_stat "$FG_SNAP" flood total; }
daemon_state() { "$FG" --pin-dir "$GD_PIN" status 2>&1 | sed -nE 's/^daemon: +//p'; }

# =========================================================================
# 1. SIGKILL during a flood
# =========================================================================
if ! gd_start base; then
	bad "kill -9: floodgated starts: $(tail -3 "$GD_LOG")"
else
	flood_start 4
	d0=$(drops)
	fg_daemon_stop KILL
	sleep 0.5; d1=$(drops); st=$(daemon_state)
	sleep 0.5; d2=$(drops)
	expect "kill -9 during a flood: the filter keeps dropping with the daemon dead" \
		"[ $d1 -gt $d0 ] && [ $d2 -gt $d1 ]" "flood from 10.213.0.9" "drops increase" \
		"drops $d0 at the kill, $d1 at +0.5 s, $d2 at +1 s; status: $st"
	expect "kill -9: status says the daemon is not running" "echo '$st' | grep -q 'not running'" \
		"-" "daemon: not running" "daemon: $st"
	t_before=$(tot)
	if gd_start base "$GD_PIN"; then
		t_after=$(tot); flood_alive 2; d3=$(drops); sleep 0.5; d4=$(drops)
		expect "kill -9: restart adopts the pinned state" "grep -q 'adopted pinned' '$GD_LOG'" \
			"-" "log: adopted pinned link/state" "$(grep -c 'adopted' "$GD_LOG") adoption lines"
		expect "kill -9: counters survive the restart" "[ $t_after -ge $t_before ]" \
			"-" "total after >= before" "before $t_before, after $t_after"
		expect "kill -9: the restarted daemon keeps enforcing" "[ $d4 -gt $d3 ]" \
			"flood" "drops increase" "$d3 -> $d4"
	else
		bad "kill -9: restart: $(tail -3 "$GD_LOG")"
	fi
	flood_wait
	gd_stop
fi

# =========================================================================
# 2. SIGKILL during a reload
# =========================================================================
cp "$GD_TMP/base.yaml" "$GD_TMP/reload.yaml"
if ! gd_start reload; then
	bad "kill -9 in reload: floodgated starts: $(tail -3 "$GD_LOG")"
else
	flood_start $((3 * $(echo "$RELOAD_KILLS" | wc -w) + 2))
	i=0
	for delay in $RELOAD_KILLS; do
		i=$((i + 1))
		# alternate the rate so every reload changes something
		if [ $((i % 2)) = 1 ]; then r=200; else r=100; fi
		sed -i -E "s|rate: [0-9]+/s, burst: 100|rate: $r/s, burst: 100|" "$GD_TMP/reload.yaml"
		v0=$("$FG" --pin-dir "$GD_PIN" status | sed -nE 's/^policy: +version ([0-9]+).*/\1/p')
		t0=$(tot)
		flood_alive 3
		kill -HUP "$FG_DPID"; sleep "$delay"; fg_daemon_stop KILL
		d1=$(drops); sleep 0.4; d2=$(drops); t1=$(tot)
		st=$("$FG" --pin-dir "$GD_PIN" status 2>&1)
		v1=$(echo "$st" | sed -nE 's/^policy: +version ([0-9]+).*/\1/p')
		expect "kill -9 ${delay}s after SIGHUP: enforcement goes on with the daemon dead" \
			"[ $d2 -gt $d1 ] && [ $t1 -ge $t0 ] && [ -n '$v1' ]" "flood" \
			"drops increase, a readable policy (old or new)" \
			"drops $d1 -> $d2, policy version $v0 -> ${v1:-unreadable}"
		mark=$(wc -l < "$GD_TMP/reload.log")
		# the file in force after the restart: applied again (a new version), or
		# kept as pinned because the killed daemon's apply of v1 had finished:
		# version v1 logged as active, or, for a kill between the apply and
		# that line (the modules' reload hooks), the digest the daemon saves
		# once the apply is all in force and removes before any apply writes
		# (user/maps/pdigest.h), recording v1
		done1=0; kept=0
		head -n "$mark" "$GD_TMP/reload.log" | grep -q "reload: policy version ${v1:-x} active" && done1=1
		grep -qx "version ${v1:-x}" "$(fg_state_file policy "$GD_PIN")" 2>/dev/null && done1=1
		if gd_start reload "$GD_PIN"; then
			t2=$(tot); flood_alive 2; d3=$(drops); sleep 0.4; d4=$(drops)
			v2=$("$FG" --pin-dir "$GD_PIN" status | sed -nE 's/^policy: +version ([0-9]+).*/\1/p')
			tail -n +$((mark + 1)) "$GD_TMP/reload.log" | grep -q "kept, not rewritten" && kept=1
			expect "kill -9 ${delay}s after SIGHUP: restart adopts, counters kept, enforcing" \
				"[ $t2 -ge $t1 ] && [ $d4 -gt $d3 ] && { [ ${v2:-0} -gt ${v1:-0} ] || [ ${v2:-0} = ${v1:-0} -a $kept = 1 -a $done1 = 1 ]; }" "flood" \
				"total not reset, drops increase, the file in force: version above $v1, or $v1 kept after its reload finished" \
				"total $t1 -> $t2, drops $d3 -> $d4, version ${v2:-?}, kept $kept, apply of $v1 finished (logged or digest saved) $done1"
		else
			bad "kill -9 ${delay}s after SIGHUP: restart: $(tail -3 "$GD_LOG")"
			break
		fi
	done
	flood_wait
	gd_stop
fi

# =========================================================================
# 3. bpffs not mounted
# =========================================================================
# floodgated(8): "On start it mounts bpffs on /sys/fs/bpf if nothing is
# mounted there." A private mount namespace without bpffs; the daemon runs
# in it (and in rx for the network).
sed 's/max_sources: 4096/max_sources: 1024/' "$GD_TMP/base.yaml" > "$GD_TMP/nobpffs.yaml"
PRIV_PIN=$(fg_pin private)
gd_start_nobpffs "$GD_TMP/nobpffs.yaml" "$PRIV_PIN" "$GD_TMP/nobpffs.log"
up=0
for _ in $(seq 50); do
	grep -q "started;" "$GD_TMP/nobpffs.log" && { up=1; break; }
	kill -0 "$PRIV_DPID" 2>/dev/null || break
	sleep 0.1
done
if [ $up = 1 ]; then
	inmnt() { nsenter --mount="/proc/$PRIV_DPID/ns/mnt" "$@"; }
	FG_ABS=$(readlink -f "$FG")
	mnt=$(inmnt findmnt -n -o FSTYPE /sys/fs/bpf 2>&1)
	gd_fgen -d "$GD_RX_IP" -s 10.213.0.9 -n 300 > /dev/null
	sleep 0.2
	inmnt "$FG_ABS" --pin-dir "$PRIV_PIN" stats --json > "$GD_TMP/private.json" 2>&1
	pdrop=$(fg_stat "$GD_TMP/private.json" flood drop 2>/dev/null)
	expect "bpffs not mounted: floodgated mounts it and runs" \
		"[ '$mnt' = bpf ] && [ ${pdrop:-0} -ge 100 ] && [ ! -e '$PRIV_PIN' ]" "300 frames" \
		"bpf mounted in its namespace, the flood limited, nothing in the host's bpffs" \
		"fs type '$mnt', drops ${pdrop:-?}, host pin dir $([ -e "$PRIV_PIN" ] && echo present || echo absent)"
	fg_bg_stop "$PRIV_DPID"
	expect "bpffs not mounted: SIGTERM detaches" \
		"! ip -n $(fg_ns_name rx) link show gdr0 | grep -q xdp" "-" "no XDP left on gdr0" \
		"$(ip -n "$(fg_ns_name rx)" link show gdr0 | grep -c xdp) xdp lines"
	mountpoint -q /sys/fs/bpf && ok "bpffs not mounted: the host's /sys/fs/bpf is untouched: expected mounted, measured mounted" ||
		bad "bpffs not mounted: the host's /sys/fs/bpf is no longer mounted"
else
	bad "bpffs not mounted: floodgated did not start: $(tail -3 "$GD_TMP/nobpffs.log")"
	fg_bg_stop "$PRIV_DPID" KILL
fi

# =========================================================================
# 4. the interface deleted while attached, then created again
# =========================================================================
# floodgated(8), INTERFACES: the kernel severs a bpf_link whose device goes
# away. The daemon checks its links every second: it logs the loss, unpins
# the severed link, keeps maps and counters, and attaches again as soon as
# an interface of that name exists. A daemon restarted over a pin dir that
# holds a severed link (it was killed meanwhile) attaches anew too.
if ! gd_start base; then
	bad "interface deleted: floodgated starts: $(tail -3 "$GD_LOG")"
else
	gd_fgen -d "$GD_RX_IP" -s 10.213.0.9 -n 300 > /dev/null; sleep 0.2
	t0=$(tot)
	ip -n "$(fg_ns_name rx)" link del gdr0
	sleep 1.5
	alive=no; kill -0 "$FG_DPID" 2>/dev/null && alive=yes
	t1=$(tot)
	logged=no; grep -q 'gdr0: interface deleted' "$GD_LOG" && logged=yes
	expect "interface deleted: the daemon stays, counters kept, the loss logged, the severed link unpinned" \
		"[ $alive = yes ] && [ $t1 -ge $t0 ] && [ $logged = yes ] && [ ! -e '$GD_PIN/link_gdr0' ]" "-" \
		"daemon alive, counters kept, logged, link pin removed" \
		"daemon alive: $alive, total $t0 -> $t1, logged: $logged, link pin $([ -e "$GD_PIN/link_gdr0" ] && echo present || echo absent)"
	st=$("$FG" --pin-dir "$GD_PIN" status 2>&1 | grep -E '^interface' | head -1)
	echo "# status after the delete: $st"
	expect "interface deleted: status says it is not attached" "echo '$st' | grep -q 'NOT attached'" "-" \
		"NOT attached" "$st"
	# the same names again
	fg_veth_create tx gdt0 rx gdr0 && fg_ns_addr tx gdt0 "$GD_TX_IP/24" && fg_ns_addr rx gdr0 "$GD_RX_IP/24"
	GD_MAC=$(fg_ns_mac rx gdr0)
	sleep 2	# the daemon looks every second
	att=$(ip -n "$(fg_ns_name rx)" link show gdr0 | grep -c 'prog/xdp')
	d0=$(drops); gd_fgen -d "$GD_RX_IP" -s 10.213.0.10 -n 300 > /dev/null; sleep 0.2; d1=$(drops)
	echo "# recreated gdr0 with the daemon still running: XDP attached: $att, 300 frames -> $((d1 - d0)) dropped"
	expect "interface recreated: the running daemon re-attached and enforces" \
		"[ $att -ge 1 ] && [ $((d1 - d0)) -ge 100 ]" "300 from a fresh source (rate 100/s burst 100)" \
		">= 100 dropped" "XDP attached: $att, dropped $((d1 - d0)); log: $(grep -E 'gdr0' "$GD_LOG" | tail -1)"
	# delete it again and kill the daemon before it can notice: the
	# restart finds a severed pinned link
	ip -n "$(fg_ns_name rx)" link del gdr0
	fg_daemon_stop KILL
	fg_veth_create tx gdt0 rx gdr0 && fg_ns_addr tx gdt0 "$GD_TX_IP/24" && fg_ns_addr rx gdr0 "$GD_RX_IP/24"
	GD_MAC=$(fg_ns_mac rx gdr0)
	# restart over the pinned state (SIGKILL: SIGTERM would unpin and make
	# the restart a fresh start), the documented recovery after a crash
	if gd_start base "$GD_PIN"; then
		att=$(ip -n "$(fg_ns_name rx)" link show gdr0 | grep -c 'prog/xdp')
		d0=$(drops); t2=$(tot)
		sent=$(gd_fgen -d "$GD_RX_IP" -s 10.213.0.11 -n 300); sleep 0.2
		d1=$(drops); t3=$(tot)
		expect "interface recreated: a restarted daemon attaches to the new interface and enforces" \
			"[ $att -ge 1 ] && [ $((t3 - t2)) -ge $((sent * 9 / 10)) ] && [ $((d1 - d0)) -ge 100 ]" \
			"$sent from a fresh source (rate 100/s burst 100)" ">= 100 dropped, all counted" \
			"XDP attached: $att, counted $((t3 - t2)), dropped $((d1 - d0)); log: $(grep -E 'gdr0' "$GD_LOG" | tail -1)"
	else
		# a daemon restarted over the pin dir must protect the interface
		# that now carries the name; nothing is attached meanwhile
		att=$(ip -n "$(fg_ns_name rx)" link show gdr0 | grep -c 'prog/xdp')
		bad "interface recreated: a restarted daemon attaches to the new interface and enforces: sent -, expected start, XDP on gdr0, measured start failed (exit 1), XDP attached: $att; log: $(grep -E 'cannot|severed' "$GD_LOG" | tail -1)"
	fi
	gd_stop
fi

# =========================================================================
# 5. the source table full: on_full
# =========================================================================
# RULE:DPORT[:ON_FULL] of the three rules, each 1/s burst 5 per source on udp
# DPORT (ovf: on_full's default, overflow)
FULL_RULES="ovf:101 open:102:open closed:103:closed"
{
	echo "max_sources: 1024"
	echo "rules:"
	for r in $FULL_RULES; do
		IFS=: read -r rule port on_full <<< "$r"
		fg_policy_rule "$rule" "proto: udp, dport: $port" "rate: 1/s, burst: 5" \
			${on_full:+"on_full: $on_full"}
	done
} | gd_policy full
FULL_KEYS="total pass drop ev:insert ev:insert_limited ev:insert_fail ev:overflow ev:full_open ev:full_closed"
# admission (automatic): 1024 / (2 x 5 s refill), burst 64
if ! gd_start full; then
	bad "table full: floodgated starts: $(tail -3 "$GD_LOG")"
else
	n=3000; [ "$GD_LONG" = 1 ] && n=20000
	base=20
	for r in $FULL_RULES; do
		IFS=: read -r rule port _ <<< "$r"
		fg_snap "$GD_PIN"
		for k in $FULL_KEYS; do
			eval "b_${k#ev:}=$(fg_stat "$FG_SNAP" $rule $k)"
		done
		t0=$(date +%s.%N)
		sent=$(gd_fgen -d "$GD_RX_IP" -s "10.$base.0.0" --sources "$n" --dport "$port" -n "$n")
		secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
		base=$((base + 1)); sleep 0.2
		fg_snap "$GD_PIN"
		for k in $FULL_KEYS; do
			v=$(fg_stat "$FG_SNAP" $rule $k); eval "b=\$b_${k#ev:}"; eval "x_${k#ev:}=$((v - b))"
		done
		# shellcheck disable=SC2154
		# why a source got no bucket: admission (insert_limited) or a full
		# table (insert_fail); each such packet counts one of them and one
		# on_full event
		x_nob=$((x_insert_limited + x_insert_fail))
		got="seen $x_total, pass $x_pass, drop $x_drop, insert $x_insert, insert_limited $x_insert_limited, insert_fail $x_insert_fail, overflow $x_overflow, full_open $x_full_open, full_closed $x_full_closed"
		case $rule in
		ovf)
			# limited sources share the overflow bucket (1/s burst 5)
			lim=$(awk -v s="$secs" 'BEGIN { printf "%d", 5 + s + 1 }')
			expect "table full, on_full overflow: $n new sources" \
				"[ $x_nob -gt 0 ] && [ $x_overflow -eq $x_nob ] && [ $x_insert -ge 1 ] && [ $x_pass -le $((x_insert + lim)) ]" \
				"$sent" "insert_limited+insert_fail = overflow events, pass <= inserts + $lim" "$got" ;;
		open)
			expect "table full, on_full open: $n new sources" \
				"[ $x_nob -gt 0 ] && [ $x_full_open -eq $x_nob ] && [ $x_pass -eq $x_total ]" \
				"$sent" "insert_limited+insert_fail = full_open events, all passed" "$got" ;;
		closed)
			expect "table full, on_full closed: $n new sources" \
				"[ $x_nob -gt 0 ] && [ $x_full_closed -eq $x_nob ] && [ $x_drop -eq $x_full_closed ] && [ $x_pass -eq $x_insert ]" \
				"$sent" "insert_limited+insert_fail = full_closed events = drops; each admitted source passes" "$got" ;;
		esac
	done
	gd_stop
fi

# =========================================================================
# 6. a second daemon on the same pin dir
# =========================================================================
if ! gd_start base; then
	bad "second daemon: floodgated starts: $(tail -3 "$GD_LOG")"
else
	first=$FG_DPID
	flood_start 3
	v0=$("$FG" --pin-dir "$GD_PIN" status | sed -nE 's/^policy: +version ([0-9]+).*/\1/p')
	# a different policy, even a different max_sources: still refused
	sed 's/max_sources: 4096/max_sources: 8192/; s|100/s|5/s|' "$GD_TMP/base.yaml" > "$GD_TMP/second.yaml"
	for cfg in base second; do
		d0=$(drops)
		out=$(inrx timeout 10 "$FGD" --config "$GD_TMP/$cfg.yaml" --pin-dir "$GD_PIN" --foreground 2>&1); rc=$?
		sleep 0.3; d1=$(drops)
		"$FG" --pin-dir "$GD_PIN" status > "$GD_TMP/second.status" 2>&1
		v1=$(sed -nE 's/^policy: +version ([0-9]+).*/\1/p' "$GD_TMP/second.status")
		# the reason that matters is the live daemon: floodgated(8) "refuses
		# to start while another live floodgated owns the pin dir"
		expect "second floodgated ($cfg.yaml) on the same pin dir: refused, naming the running daemon" \
			"[ $rc = 1 ] && echo '$out' | grep -q 'already running'" "-" \
			"exit 1, 'floodgated (pid $first) is already running'" "exit $rc: $(echo "$out" | tail -1)"
		expect "second floodgated ($cfg.yaml): the first keeps running untouched" \
			"kill -0 $first && grep -q 'pid $first' '$GD_TMP/second.status' && [ '$v1' = '$v0' ] && [ $d1 -gt $d0 ] && [ -e '$GD_PIN/link_gdr0' ]" \
			"flood" "first alive and owner, policy version $v0, link pinned, drops increase" \
			"alive: $(kill -0 "$first" 2>/dev/null && echo yes || echo no), version $v1, drops $d0 -> $d1"
	done
	flood_wait
	gd_stop
fi

fg_finish
