#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# End to end: the operator's shedding switch, `floodgate shed off|on`
# (issue 11, docs/shedding.md), through the CLI with the real daemon, in two
# namespaces made here. With the file signal at 0.95 best-effort is fully
# shed (a rule in a pool with shedding: off is not); `shed off` stops it at
# the next packet while quotas still drop, the controller is held at zero
# and says so (log, status, metrics) and never rewrites the switch; bad
# arguments are refused and change nothing; `shed on` resumes through the
# delay; the switch works with no daemon and a restarted daemon honours it.
# Needs root. Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/shed_lib.sh
shed_init shedoff 89

cat > "$FG_TMP/p.yaml" <<YAML
interfaces: [r0]
max_sources: 4096
metrics: "127.0.0.1:$MPORT"
pools:
  - {name: api, rate: 100000/s, burst: 50000, reserve: 20%}
  - {name: exempt, rate: 100000/s, burst: 50000, shedding: off}
rules:
  - {name: crit, match: {proto: udp, dport: 1000}, per_source: {rate: 100000/s, burst: 50000}, tier: critical, pool: api}
  - {name: be, match: {proto: udp, dport: 1003}, per_source: {rate: 100000/s, burst: 50000}, tier: best-effort}
  - {name: beq, match: {proto: udp, dport: 1004}, per_source: {rate: 10/s, burst: 100}, tier: best-effort}
  - {name: bex, match: {proto: udp, dport: 1005}, per_source: {rate: 100000/s, burst: 50000}, tier: best-effort, pool: exempt}
  - {name: beo, match: {proto: udp, dport: 1006}, tier: best-effort}
shedding:
  signal: "file:$SIG"
  interval: 200ms
  delay: 400ms
  ramp: 1s
  decay: 3s
  orphan: 1s
YAML
# wait_for TENTHS CMD...: until CMD succeeds; 0/1
wait_for() {
	local n=$1; shift
	while [ "$n" -gt 0 ]; do
		"$@" && return 0
		sleep 0.1; n=$((n - 1))
	done
	return 1
}
amount_ge() { awk -v a="$(sj amount)" -v v="$1" 'BEGIN { exit !(a >= v) }'; }
held_off() { [ "$(sj hold amount)" = "off 0" ]; }
# burst PORT N: N packets to PORT; "arrived shed pass drop" of its rule
burst() {
	local rule=$1 port=$2 n=$3
	fg_snap "$PIN" "$FG_TMP/a.json"; send "$port" "$n"; fg_snap "$PIN" "$FG_TMP/b.json"
	local f out=
	for f in total shed pass drop; do
		out+="$(( $(fg_stat "$FG_TMP/b.json" "$rule" "$f") - $(fg_stat "$FG_TMP/a.json" "$rule" "$f") )) "
	done
	echo "${out% }"
}
N=1000

setsig 0.95
shed_start "$FG_TMP/p.yaml" bad "floodgated starts with two pools, one exempt, and a file signal at 0.95"

# --- shedding active -------------------------------------------------------------------------
if ! wait_for 60 amount_ge 1; then
	bad "0.95: best-effort fully shed" "$(sj phase amount)"; fg_finish
fi
read -r arr shed pass drop <<< "$(burst be 1003 $N)"
expect "shedding on: best-effort shed in full" "[ $arr -ge $((N * 95 / 100)) ] && [ $shed = $arr ]" \
	"$N to be" "shed = arrived" "arrived $arr shed $shed pass $pass"
read -r arr shed pass drop <<< "$(burst bex 1005 $N)"
expect "shedding on: the exempt pool's best-effort rule is not shed" \
	"[ $arr -ge $((N * 95 / 100)) ] && [ $shed = 0 ] && [ $pass = $arr ]" \
	"$N to bex (pool exempt)" "shed 0, all pass" "arrived $arr shed $shed pass $pass"
read -r arr shed pass drop <<< "$(burst beo 1006 $N)"
expect "shedding on: a rule with only a tier (no limit) is shed in full" \
	"[ $arr -ge $((N * 95 / 100)) ] && [ $shed = $arr ] && [ $drop = 0 ]" \
	"$N to beo (tier: best-effort alone)" "shed = arrived, no drop" "arrived $arr shed $shed pass $pass drop $drop"
"$FG" status --json > "$FG_TMP/st.json" 2>&1
fg_json_check "status --json with pools" status "$FG_TMP/st.json"
check_cmp "status --json: the pools, exempt marked, off false" \
	"$(fg_json_get "$FG_TMP/st.json" shedding.pools.0.name shedding.pools.0.exempt shedding.pools.1.name shedding.pools.1.exempt shedding.off)" \
	= "api false exempt true false"
check_cmp "status --json: shed packets per rule, as stats --json counts them" \
	"$(fg_json_get "$FG_TMP/st.json" shedding.shed_pkts.be shedding.shed_pkts.bex)" = "$(fg_stat "$PIN" be shed) 0"
check "status (text) names the exempt pool" \
	bash -c "'$FG' status | grep -q 'pools: api (id [0-9]*), exempt (id [0-9]*, exempt: shedding: off)'"

# --- shed off: nothing shed at once, quotas still apply -------------------------------------
"$FG" shed off > "$FG_TMP/off.out" 2>&1; rc=$?
read -r fbe why <<< "$(sj shed.best-effort not_shedding)"
check_cmp "shed off: exit 0" "$rc" = 0
# status is what the program does now: it sheds nothing from the next
# packet, whatever thresholds are still pinned (issue 22, item 3)
check_cmp "shed off: status --json at once: best-effort shed 0, not_shedding off" "$fbe $why" = "0 off"
check "shed off: says what it did and what still applies" \
	grep -q "shedding off: no tier is shed from the next packet (it was shedding normal 0.0%, bulk 0.0%, best-effort 100.0%); pools, reserves and quotas still apply" "$FG_TMP/off.out"
read -r arr shed pass drop <<< "$(burst be 1003 $N)"
expect "shed off: best-effort no longer shed (at once, before any sample)" \
	"[ $arr -ge $((N * 95 / 100)) ] && [ $shed = 0 ] && [ $pass = $arr ]" \
	"$N to be, signal still 0.95" "shed 0, all pass" "arrived $arr shed $shed pass $pass"
read -r arr shed pass drop <<< "$(burst beo 1006 $N)"
expect "shed off: the rule with only a tier passes everything (no limit of its own)" \
	"[ $arr -ge $((N * 95 / 100)) ] && [ $shed = 0 ] && [ $drop = 0 ] && [ $pass = $arr ]" \
	"$N to beo" "all pass" "arrived $arr shed $shed pass $pass drop $drop"
read -r arr shed pass drop <<< "$(burst beq 1004 $N)"
expect "shed off: the quota still drops (burst 100 of $N)" \
	"[ $shed = 0 ] && [ $drop -ge $((arr - 150)) ] && [ $pass -ge 90 ] && [ $pass -le 150 ]" \
	"$N to beq (rate 10/s, burst 100)" "shed 0, ~100 pass, the rest dropped" \
	"arrived $arr shed $shed pass $pass drop $drop"
if wait_for 20 held_off; then ok "shed off: the controller is held at zero (hold off, amount 0)"
else bad "shed off: the controller is held at zero" "hold/amount $(sj hold amount)"; fi
check_cmp "shed off: the daemon logs it once" \
	"$(grep -c "switched off by the operator ('floodgate shed off'" "$DLOG")" = 1
sleep 1	# five samples at 0.95: the daemon must not undo the switch
check_cmp "shed off: still off after 5 samples (the daemon never writes off)" "$(sj off hold amount)" = "true off 0"
"$FG" status > "$FG_TMP/st.txt" 2>&1
check "status (text) while off: 'held at zero: off' and the OFF line" \
	bash -c "grep -q ', held at zero: off' '$FG_TMP/st.txt' && grep -q 'OFF: the operator switched shedding off' '$FG_TMP/st.txt'"
if command -v curl > /dev/null; then
	sleep 1.1	# the page is rendered once a second
	fg_ns_exec r curl -s "http://127.0.0.1:$MPORT/metrics" > "$FG_TMP/metrics"
	got=$(grep -E '^floodgate_shed_(off|held|pool_exempt\{[^}]*\}) ' "$FG_TMP/metrics" | one_line)
	check_cmp "metrics: off, held, the exempt pool" "$got" = \
		'floodgate_shed_off 1 floodgate_shed_pool_exempt{pool="api"} 0 floodgate_shed_pool_exempt{pool="exempt"} 1 floodgate_shed_held 1'
else
	skip "metrics" "no curl"
fi

# --- bad arguments: refused, nothing changed -----------------------------------------------
for args in "maybe" "" "on off" "--for 5m off" "OFF"; do
	# shellcheck disable=SC2086
	"$FG" shed $args > "$FG_TMP/bad.out" 2>&1; rc=$?
	check_cmp "shed ${args:-(no argument)}: refused as bad usage ($(one_line 80 < "$FG_TMP/bad.out"))" "$rc" = 2
done
check "shed maybe: the error names what is expected" \
	bash -c "'$FG' shed maybe 2>&1 | grep -q 'shed: \"maybe\": expected on or off'"
fg_ns_exec g "$FG" --pin-dir "$FG_PIN_PREFIX-none" shed on > "$FG_TMP/bad.out" 2>&1; rc=$?	# g runs no filter to discover
check_cmp "shed on with a pin dir that does not exist: exit 1, nothing created" \
	"$rc:$([ -e "$FG_PIN_PREFIX-none" ] && echo made)" = "1:"
check_cmp "after the refusals shedding is still off" "$(sj off hold)" = "true off"

# --- shed on: resumes through the delay ---------------------------------------------------
"$FG" shed on > "$FG_TMP/on.out" 2>&1; rc=$?
check_cmp "shed on: exit 0" "$rc" = 0
check "shed on: says it starts again through the delay" grep -q "shedding on: the controller starts again from zero" "$FG_TMP/on.out"
if wait_for 60 amount_ge 1; then ok "shed on: shedding resumes to full ($(sj hold amount))"
else bad "shed on: shedding resumes" "$(sj hold amount)"; fi
check_cmp "shed on: the daemon logs the end of the hold once" \
	"$(grep -c "the operator's 'floodgate shed off' is over" "$DLOG")" = 1
read -r arr shed pass drop <<< "$(burst be 1003 $N)"
expect "shed on: best-effort shed in full again" "[ $arr -ge $((N * 95 / 100)) ] && [ $shed = $arr ]" \
	"$N to be" "shed = arrived" "arrived $arr shed $shed pass $pass"

# --- no daemon: the switch works from the pins, a restarted daemon honours it ----------------
fg_daemon_stop KILL
"$FG" shed off > "$FG_TMP/off2.out" 2>&1; rc=$?
read -r fbe tbe why <<< "$(sj shed.best-effort thresholds.best-effort not_shedding)"
expect "no daemon, shed off: status says nothing is shed, the pinned thresholds as such" \
	"[ '$fbe' = 0 ] && [ '$why' = off ] && awk -v t='$tbe' 'BEGIN { exit !(t > 0) }'" \
	"shed off, the dead daemon's thresholds still pinned" "shed 0, not_shedding off, thresholds > 0" \
	"shed $fbe, not_shedding $why, thresholds $tbe"
check_cmp "no daemon: shed off works from the pins (exit 0)" "$rc" = 0
read -r arr shed pass drop <<< "$(burst be 1003 $N)"
expect "no daemon, shed off: the last thresholds shed nothing" \
	"[ $arr -ge $((N * 95 / 100)) ] && [ $shed = 0 ]" "$N to be" "shed 0" "arrived $arr shed $shed"
fg_daemon_up r "$FG_TMP/p.yaml" "floodgated restarts (adopts)"
if wait_for 20 held_off; then ok "restarted daemon: honours the switch (hold off, amount 0)"
else bad "restarted daemon: honours the switch" "$(sj hold amount)"; fi
sleep 1
read -r arr shed pass drop <<< "$(burst be 1003 $N)"
expect "restarted daemon, signal 0.95, shed off: nothing shed" \
	"[ $arr -ge $((N * 95 / 100)) ] && [ $shed = 0 ]" "$N to be" "shed 0" "arrived $arr shed $shed"
"$FG" shed on > /dev/null 2>&1
if wait_for 60 amount_ge 1; then ok "restarted daemon, shed on: shedding resumes ($(sj amount))"
else bad "restarted daemon, shed on: shedding resumes" "$(sj hold amount)"; fi

fg_daemon_stop TERM
check_cmp "SIGTERM: exits 0" "$?" = 0
fg_finish
