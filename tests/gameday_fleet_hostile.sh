#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Hostile values in Redis (issue 22, item 2): three hosts, each a namespace
# with its own floodgated, one fleet rule (1,500/s, burst 1,500), one
# redis-server on a Unix socket started here, each host flooded at 1,500/s
# (4,500/s in all) for the whole run. One write into the rule's keys at a
# time, each field made hostile once, as in the issue's drill (`HSET
# floodgate:{RULE.NS}:b sum 1e300` let 0 of 22,500 through at all three
# hosts, for good, while status said ok). For each write, judged at the
# receivers (UDP datagrams delivered to a closed port, /proc/net/snmp):
#   - each host admits at least its documented share, rate / 3, over the
#     window after the first lease (docs/fleet.md section 4: a single
#     write holds a node below its share for at most one lease), less 15 %
#     for a loaded machine;
#   - the fleet admits at most burst + rate x T + rate x 2L (section 3);
#   - every host's status says the fleet is degraded, with the repair, at
#     once; each host logs it once and logs its end once; then it heals.
# Needs root. Cleans up its namespaces, daemons, pin dirs and Redis.
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
. tests/fleet_lib.sh
fl_init "$FGD" "$FG" "$FGEN"

RATE=1500; BURST=1500; FLOOD=1500	# per host: 3 x the fleet's share each
L=0.4				# the lease (2 x the 200 ms interval)
T=2.5				# seconds measured after each write
SOCK=$FG_TMP/redis.sock

for n in 1 2 3; do
	if ! { fg_ns_create "h$n" && fg_ns_create "g$n" && fg_ns_quiet "h$n" && fg_ns_quiet "g$n" &&
	       fg_veth_create "g$n" v0 "h$n" h0 &&
	       fg_ns_addr "g$n" v0 "10.231.$n.1/24" && fg_ns_addr "h$n" h0 "10.231.$n.2/24"; }; then
		bad setup "namespaces and veth pairs"; fg_finish
	fi
done
MAC=(x "$(fg_ns_mac h1 h0)" "$(fg_ns_mac h2 h0)" "$(fg_ns_mac h3 h0)")
if ! fl_redis_unix "$SOCK"; then
	bad "redis-server on $SOCK" "$(tail -3 "$FL_REDIS_LOG" | one_line)"; fg_finish
fi
DPID=(x); PIN=(x)
for n in 1 2 3; do
	PIN[n]=$(fg_pin "h$n")
	fl_policy "$FG_TMP/h$n.yaml" "h$n" "unix:$SOCK" h0 200ms <<EOF
  - name: fl
    match: {proto: udp, dport: 9}
    fleet: {rate: $RATE/s, burst: $BURST, on_loss: local}
EOF
	if ! fg_daemon_start "h$n" "${PIN[n]}" "$FG_TMP/h$n.yaml" "$FG_TMP/h$n.log"; then
		bad "floodgated on h$n starts" "$(tail -5 "$FG_TMP/h$n.log" | one_line)"; fg_finish
	fi
	DPID[n]=$FG_DPID
done
ok "three floodgated (pids ${DPID[1]} ${DPID[2]} ${DPID[3]}), one fleet rule of $RATE/s"

# all_status: status --json of every host into $FG_TMP/sN.json
all_status() { local n; for n in 1 2 3; do fl_status "${PIN[n]}" "$FG_TMP/s$n.json"; done; }
# all_rule KEY: fl's KEY on every host, "v1 v2 v3"
all_rule() { local n; for n in 1 2 3; do printf '%s ' "$(fl_rule_get "$FG_TMP/s$n.json" fl "$1")"; done; echo; }
# wait_all KEY VALUE TENTHS: until every host's fl KEY is VALUE
wait_all() {
	local n=$3
	while [ "$n" -gt 0 ]; do
		all_status
		[ "$(all_rule "$1")" = "$2 $2 $2 " ] && return 0
		sleep 0.1; n=$((n - 1))
	done
	return 1
}
if wait_all nodes 3 100 && wait_all state ok 50; then ok "every engine is ok and counts 3 nodes"
else bad "engines ok with 3 nodes" "states $(all_rule state), nodes $(all_rule nodes)"; fg_finish; fi
BKEY=$(fl_rule_get "$FG_TMP/s1.json" fl key)
DKEY=${BKEY%:b}:d
NKEY=${BKEY%:b}:n

for n in 1 2 3; do
	fg_bg "g$n" "$FGEN" -i v0 --dst-mac "${MAC[n]}" -s "10.231.$n.1" -d "10.231.$n.2" \
		--dport 9 -r "$FLOOD" -t 3600 --json > "$FG_TMP/flood-$n.json" 2>&1
done
sleep 3	# the bucket's burst spent: a saturated fleet

noports() { local n; for n in 1 2 3; do printf '%s ' "$(fl_noports "h$n")"; done; echo; }
deglines() { grep -c "fleet rule fl: $2:" "$FG_TMP/h$1.log"; }
SHARE=$(awk 'BEGIN { printf "%d", '"$RATE"' / 3 * ('"$T"' - '"$L"') * 0.85 }')
LIM=$(awk 'BEGIN { printf "%d", '"$BURST"' + '"$RATE"' * '"$T"' + '"$RATE"' * 2 * '"$L"' }')

# drill WHAT CMD...: one hostile write, judged at the receivers and in status
drill() {
	local what=$1 n a b adm tot=0 line="" low=0 d0=() h0=(); shift
	for n in 1 2 3; do d0[n]=$(deglines "$n" degraded); h0[n]=$(deglines "$n" healed); done
	read -r -a a < <(noports)
	fl_cli "$@" > "$FG_TMP/write.out" 2>&1 || bad "$what: the write" "$(one_line < "$FG_TMP/write.out")"
	# the status file is written once a tick (1 s), degraded holds 10
	# intervals (2 s): each host's status must say it within 1.5 s
	local seen=(x 0 0 0) k t_end reasons=""
	t_end=$(awk -v t="$(fl_now)" 'BEGIN { print t + 1.5 }')
	while awk -v t="$(fl_now)" -v e="$t_end" 'BEGIN { exit !(t < e) }'; do
		for k in 1 2 3; do
			fl_status "${PIN[k]}" "$FG_TMP/s$k.json"
			if [ "${seen[k]}" = 0 ] && [ "$(fl_rule_get "$FG_TMP/s$k.json" fl degraded)" = true ] &&
			   [ "$(fg_json_get "$FG_TMP/s$k.json" fleet.degraded)" = true ]; then
				seen[k]=1; reasons+="h$k: $(fl_rule_get "$FG_TMP/s$k.json" fl degraded_reason); "
			fi
		done
		[ "${seen[*]}" = "x 1 1 1" ] && break
		sleep 0.1
	done
	expect "$what: every host's status says degraded, with the repair, at once" \
		"[ '${seen[*]}' = 'x 1 1 1' ]" "$*" "degraded true on h1 h2 h3 within 1.5 s" \
		"seen h1 ${seen[1]} h2 ${seen[2]} h3 ${seen[3]}: $reasons"
	sleep "$(awk -v t0="$t_end" -v t="$(fl_now)" 'BEGIN { r = '"$T"' - 1.5 + (t0 - t); print (r > 0) ? r : 0 }')"
	read -r -a b < <(noports)
	for n in 1 2 3; do
		adm=$(( b[n - 1] - a[n - 1] )); tot=$((tot + adm)); line+="h$n $adm "
		[ "$adm" -ge "$SHARE" ] || low=1
	done
	expect "$what: each host admitted its share over ${T} s (rate / 3 after the first lease)" \
		"[ $low = 0 ]" "$FLOOD/s to each host" ">= $SHARE each" "$line"
	expect "$what: the fleet within burst + rate x T + rate x 2L" "[ $tot -le $LIM ]" \
		"$((3 * FLOOD))/s" "<= $LIM" "$tot"
	if wait_all degraded false 60; then
		ok "$what: healed (degraded false on every host)"
	else
		bad "$what: heals" "degraded $(all_rule degraded)"
	fi
	line=""
	for n in 1 2 3; do
		line+="h$n $(( $(deglines "$n" degraded) - d0[n] ))/$(( $(deglines "$n" healed) - h0[n] )) "
	done
	check_cmp "$what: each host logged it once and its end once (degraded/healed)" \
		"$line" = "h1 1/1 h2 1/1 h3 1/1 "
}

drill "b.sum 1e300 (the issue's drill)" HSET "$BKEY" sum 1e300
drill "b.sum negative" HSET "$BKEY" sum -1
drill "b.sum not a number" HSET "$BKEY" sum lots
drill "b.tok NaN" HSET "$BKEY" tok nan
drill "b.tok -1e300" HSET "$BKEY" tok -1e300
drill "b.ts in the far future" HSET "$BKEY" ts 1e300
drill "b.vt in the far future (no verification)" HSET "$BKEY" vt 1e300
drill "d: h1's demand 1e300" HSET "$DKEY" h1 1e300
drill "d: a ghost node's demand 1e300" HSET "$DKEY" ghost 1e300
drill "n: a ghost node expiring never" ZADD "$NKEY" +inf ghost
drill "b replaced by a string" EVAL "redis.call('DEL', KEYS[1]); return redis.call('SET', KEYS[1], 'x')" 1 "$BKEY"
drill "d replaced by a string" EVAL "redis.call('DEL', KEYS[1]); return redis.call('SET', KEYS[1], 'x')" 1 "$DKEY"
drill "n replaced by a string" EVAL "redis.call('DEL', KEYS[1]); return redis.call('SET', KEYS[1], 'x')" 1 "$NKEY"

all_status
read -r r1 r2 r3 < <(all_rule repairs)
check "the repairs were counted ($r1 + $r2 + $r3 by h1, h2, h3; 13 writes)" \
	bash -c "[ $((r1 + r2 + r3)) -ge 13 ]"
for n in 1 2 3; do [ -n "${DPID[n]}" ] && fg_bg_stop "${DPID[n]}" TERM; done
FG_DPID=
fl_redis_stop
fg_finish
