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
# Every field the script keeps is written hostile once: the bucket's tok, ts,
# sum and its marks vt, rt, rb; a node's demand and a ghost's; a ghost's
# expiry; each key replaced by a string. The windows are measured as they
# were (a loaded machine stretches them). The default run measures 2 s after
# each write (about 50 s in all); FG_GAMEDAY=1 measures 5 s after each and
# writes five more values (a node's own expiry among them). Needs root.
# Cleans up its namespaces, daemons, pin dirs and Redis.
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
. tests/fleet_lib.sh
fl_init "$FGD" "$FG" "$FGEN"

RATE=1500; BURST=1500; FLOOD=1500	# per host: 3 x the fleet's share each
L=0.4				# the lease (2 x the 200 ms interval)
T=2				# seconds measured after each write
[ "${FG_GAMEDAY:-0}" = 1 ] && T=5
SOCK=$FG_TMP/redis.sock

fl_hosts 231
fl_redis_up "$SOCK"
fl_hosts_start "unix:$SOCK" <<EOF
  - name: fl
    match: {proto: udp, dport: 9}
    fleet: {rate: $RATE/s, burst: $BURST, on_loss: local}
EOF
ok "three floodgated (pids ${FL_DPID[1]} ${FL_DPID[2]} ${FL_DPID[3]}), one fleet rule of $RATE/s"

# all_status: status --json of every host into $FG_TMP/sN.json
all_status() { local n; for n in 1 2 3; do fl_status "${FL_PIN[n]}" "$FG_TMP/s$n.json"; done; }
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
sleep 1.5	# the bucket's burst spent (3,000/s net drain): a saturated fleet

noports() { local n; for n in 1 2 3; do printf '%s ' "$(fl_noports "h$n")"; done; echo; }
deglines() { grep -c "fleet rule fl: $2:" "$FG_TMP/h$1.log"; }
# repairs: "R T": the repairs every host's engine counted, and its
# rounds that timed out (a reply lost: a repair Redis made in it is
# counted by no node), summed
repairs() {
	local n r=0 t=0 v u
	for n in 1 2 3; do
		fl_status "${FL_PIN[n]}" "$FG_TMP/r$n.json"
		read -r v u < <(fl_rule_get "$FG_TMP/r$n.json" fl repairs timeouts)
		case $v in '' | *[!0-9]*) v=0 ;; esac
		case $u in '' | *[!0-9]*) u=0 ;; esac
		r=$((r + v)); t=$((t + u))
	done
	echo "$r $t"
}
LOST=0
# the bounds over a window measured as it was (a loaded machine stretches it):
# share over the shortest it can have been, the fleet over the longest
share_for() { awk -v w="$1" 'BEGIN { printf "%d", '"$RATE"' / 3 * (w - '"$L"') * 0.85 }'; }
lim_for() { awk -v w="$1" 'BEGIN { printf "%d", '"$BURST"' + '"$RATE"' * w + '"$RATE"' * 2 * '"$L"' }'; }

# drill WHAT CMD...: one hostile write, judged at the receivers and in status
drill() {
	local what=$1 n a b adm tot=0 line="" low=0 d0=() h0=() r0 t0; shift
	for n in 1 2 3; do d0[n]=$(deglines "$n" degraded); h0[n]=$(deglines "$n" healed); done
	read -r r0 t0 < <(repairs)
	local ta0 ta1 tb0 tb1 wlo whi share lim
	ta0=$(fl_now); read -r -a a < <(noports); ta1=$(fl_now)
	fl_cli "$@" > "$FG_TMP/write.out" 2>&1 || bad "$what: the write" "$(one_line < "$FG_TMP/write.out")"
	# the status file is written once a tick (1 s), degraded holds 10
	# intervals and at least 3 s: each host's status must say it within 3 s
	local seen=(x 0 0 0) k t_end reasons=""
	t_end=$(awk -v t="$(fl_now)" 'BEGIN { print t + 3 }')
	while awk -v t="$(fl_now)" -v e="$t_end" 'BEGIN { exit !(t < e) }'; do
		for k in 1 2 3; do
			fl_status "${FL_PIN[k]}" "$FG_TMP/s$k.json"
			if [ "${seen[k]}" = 0 ] && [ "$(fl_rule_get "$FG_TMP/s$k.json" fl degraded)" = true ] &&
			   [ "$(fg_json_get "$FG_TMP/s$k.json" fleet.degraded)" = true ]; then
				seen[k]=1; reasons+="h$k: $(fl_rule_get "$FG_TMP/s$k.json" fl degraded_reason); "
			fi
		done
		[ "${seen[*]}" = "x 1 1 1" ] && break
		sleep 0.1
	done
	expect "$what: every host's status says degraded, with the repair, at once" \
		"[ '${seen[*]}' = 'x 1 1 1' ]" "$*" "degraded true on h1 h2 h3 within 3 s" \
		"seen h1 ${seen[1]} h2 ${seen[2]} h3 ${seen[3]}: $reasons"
	sleep "$(awk -v t0="$ta1" -v t="$(fl_now)" 'BEGIN { r = '"$T"' - (t - t0); print (r > 0) ? r : 0 }')"
	tb0=$(fl_now); read -r -a b < <(noports); tb1=$(fl_now)
	wlo=$(awk -v a="$ta1" -v b="$tb0" 'BEGIN { printf "%.2f", b - a }')
	whi=$(awk -v a="$ta0" -v b="$tb1" 'BEGIN { printf "%.2f", b - a }')
	share=$(share_for "$wlo"); lim=$(lim_for "$whi")
	for n in 1 2 3; do
		adm=$(( b[n - 1] - a[n - 1] )); tot=$((tot + adm)); line+="h$n $adm "
		[ "$adm" -ge "$share" ] || low=1
	done
	expect "$what: each host admitted its share over ${wlo} s (rate / 3 after the first lease)" \
		"[ $low = 0 ]" "$FLOOD/s to each host" ">= $share each" "$line"
	expect "$what: the fleet within burst + rate x ${whi} s + rate x 2L" "[ $tot -le $lim ]" \
		"$((3 * FLOOD))/s" "<= $lim" "$tot"
	if wait_all degraded false 60; then
		ok "$what: healed (degraded false on every host)"
	else
		bad "$what: heals" "degraded $(all_rule degraded)"
	fi
	# after the heal, so that every host's status file holds its count
	local r1 t1; read -r r1 t1 < <(repairs)
	if [ "$r1" -le "$r0" ] && [ "$t1" -gt "$t0" ]; then
		LOST=$((LOST + 1))
		skip "$what: the repair counted" "no node counted it; $((t1 - t0)) round(s) timed out meanwhile (a reply lost on a loaded machine)"
	else
		expect "$what: the repair was counted (the hosts' repairs summed)" "[ $r1 -gt $r0 ]" \
			"one write" "> $r0" "$r1 (timeouts +$((t1 - t0)))"
	fi
	line=""
	for n in 1 2 3; do
		line+="h$n $(( $(deglines "$n" degraded) - d0[n] ))/$(( $(deglines "$n" healed) - h0[n] )) "
	done
	check_cmp "$what: each host logged it once and its end once (degraded/healed)" \
		"$line" = "h1 1/1 h2 1/1 h3 1/1 "
}

# every field of every key, once
NW=0
w() { NW=$((NW + 1)); drill "$@"; }
w "b.sum 1e300 (the issue's drill)" HSET "$BKEY" sum 1e300
w "b.tok NaN" HSET "$BKEY" tok nan
w "b.tok 1e300 (above the burst)" HSET "$BKEY" tok 1e300
w "b.ts in the far future" HSET "$BKEY" ts 1e300
w "b.vt in the far future (no verification)" HSET "$BKEY" vt 1e300
w "b.rt in the far future (a repair that never ages)" HSET "$BKEY" rt 1e300
w "b.rb not a set of repairs" HSET "$BKEY" rb 1e300
w "d: h1's demand 1e300" HSET "$DKEY" h1 1e300
w "d: a ghost node's demand 1e300" HSET "$DKEY" ghost 1e300
w "n: a ghost node expiring never" ZADD "$NKEY" +inf ghost
if [ "${FG_GAMEDAY:-0}" = 1 ]; then
	# more values of the same fields
	w "b.sum negative" HSET "$BKEY" sum -1
	w "b.sum not a number" HSET "$BKEY" sum lots
	w "b.tok -1e300" HSET "$BKEY" tok -1e300
	w "d: h1's demand negative" HSET "$DKEY" h1 -5
	w "n: h1 expiring in 1e300 us" ZADD "$NKEY" 1e300 h1
else
	skip "more values of the same fields (sum -1 and 'lots', tok -1e300, a demand of -5, h1 expiring in 1e300 us)" "FG_GAMEDAY=1"
fi
w "b replaced by a string" EVAL "redis.call('DEL', KEYS[1]); return redis.call('SET', KEYS[1], 'x')" 1 "$BKEY"
w "d replaced by a string" EVAL "redis.call('DEL', KEYS[1]); return redis.call('SET', KEYS[1], 'x')" 1 "$DKEY"
w "n replaced by a string" EVAL "redis.call('DEL', KEYS[1]); return redis.call('SET', KEYS[1], 'x')" 1 "$NKEY"

all_status
read -r r1 r2 r3 < <(all_rule repairs)
check "the repairs were counted ($r1 + $r2 + $r3 by h1, h2, h3; $NW writes, $LOST replies lost)" \
	bash -c "[ $((r1 + r2 + r3)) -ge $((NW - LOST)) ]"
for n in 1 2 3; do [ -n "${FL_DPID[n]}" ] && fg_bg_stop "${FL_DPID[n]}" TERM; done
FG_DPID=
fl_redis_stop
fg_finish
