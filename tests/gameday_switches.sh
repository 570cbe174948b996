#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Game day, the switches and the policy's growth (issue 8, items 1, 2, 4, 9):
# floodgated on one end of a veth pair made here, a flood from the other.
#   a. the kill switch never waits: bypass and mode while another process
#      holds the pin dir's lock, and while the daemon is SIGSTOPped in the
#      middle of a reload of a million prefixes: each takes effect in < 0.5 s
#   b. prefix lists grow: a reload from 10 to 1,000,000 prefixes succeeds,
#      and after SIGKILL a restart adopting the pinned state with that file
#      starts and enforces
#   c. the file's mode is what runs: an adoption applies the file's enforce
#      over a shadow state; a CLI override survives a reload and a restart,
#      `mode file` clears it, a new rule inherits none; status shows both
#   d. every rule replaced in one reload: 256 rules (257 with fragments) all
#      renamed under a flood: one reload, the untouched rule's counters kept,
#      not one flood packet unmatched
#   e. an adopting restart with max_sources changed in the file stays up,
#      keeps enforcing the pinned policy, says why in the log and status,
#      and a reload after fixing the file applies it
# Needs root. Removes everything it made; fails if anything is left.
# Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/gameday_lib.sh	# sources tests/lib.sh
gd_init

LIMIT_MS=500		# the kill switch's promise
FLOOD_SRC=10.213.0.9	# the flood's source
DENY_SRC=26.66.63.7	# inside the last of the million denied /24s
NPFX=1000000

gd_pair || { bad "setup: namespaces and veth pair"; fg_finish; }

# --- helpers ---------------------------------------------------------------------

# timed CMD...: run CMD (output to $GD_TMP/timed.out); T_MS its wall time, T_RC its status
timed() {
	local t0
	t0=$(date +%s%N)
	"$@" > "$GD_TMP/timed.out" 2>&1
	T_RC=$?
	T_MS=$((($(date +%s%N) - t0) / 1000000))
}

# flood_start [DPORT [RATE]]: FLOOD_SRC floods udp DPORT (9) at RATE (5000/s) until flood_stop
flood_start() {
	fg_bg tx "$FGEN" -i gdt0 --dst-mac "$GD_MAC" -d "$GD_RX_IP" -s "$FLOOD_SRC" \
		--dport "${1:-9}" -r "${2:-5000}" -t 120 --json > "$GD_TMP/flood.json" 2> "$GD_TMP/flood.err"
	FLOOD_PID=$FG_BG_PID
	sleep 0.3
}
flood_stop() { [ -n "${FLOOD_PID:-}" ] && fg_bg_stop "$FLOOD_PID" INT; FLOOD_PID=; }

# stat_of RULE FIELD: one counter of the current pin dir
stat_of() { fg_stat "$GD_PIN" "$1" "$2"; }
# moved RULE FIELD SECONDS: how much the counter grew over SECONDS
moved() {
	local a b
	a=$(stat_of "$1" "$2"); sleep "$3"; b=$(stat_of "$1" "$2")
	echo $((b - a))
}
version() { "$FG" --pin-dir "$GD_PIN" status 2>/dev/null | sed -nE 's/^policy: +version ([0-9]+).*/\1/p'; }
status_json() { "$FG" --pin-dir "$GD_PIN" status --json > "$GD_TMP/status.json" 2> "$GD_TMP/status.err"; }
sj() { fg_json_get "$GD_TMP/status.json" "$@"; }

# reload_wait V: until the daemon logs policy version V active (tenths in $2, default 300)
reload_wait() { fg_wait_for "$GD_LOG" "reload: policy version $1 active" "${2:-300}"; }

# denied_from_last NAME: 200 frames from DENY_SRC, paced in small batches next
# to the flood (the veth's ring holds 256): at least 95 % of them denied
denied_from_last() {
	local n0 n1 sent
	n0=$(stat_of _global deny)
	sent=$(gd_fgen -d "$GD_RX_IP" -s "$DENY_SRC" -n 200 -r 2000 --batch 16)
	sleep 0.3
	n1=$(stat_of _global deny)
	expect "$1" "[ $((n1 - n0)) -ge $((${sent:-200} * 95 / 100)) ] && [ $((n1 - n0)) -le ${sent:-200} ]" \
		"${sent:-?} from $DENY_SRC (in the last /24)" "95 % to 100 % denied" "denied +$((n1 - n0))"
}

# proc_state PID: R, S, T (stopped), ...
proc_state() { awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null; }

# the switch drill under one condition: bypass on, bypass off, mode shadow, mode file
switch_drill() {
	local what=$1 b d s
	timed "$FG" --pin-dir "$GD_PIN" bypass on
	expect "$what: bypass on takes effect in < $LIMIT_MS ms" "[ $T_RC = 0 ] && [ $T_MS -lt $LIMIT_MS ]" \
		"floodgate bypass on" "exit 0 in < $LIMIT_MS ms" "exit $T_RC in $T_MS ms: $(one_line 120 < "$GD_TMP/timed.out")"
	b=$(moved _global bypass 0.4); d=$(moved flood drop 0.4)
	expect "$what: with bypass on the flood passes, counted as bypass" "[ $b -gt 500 ] && [ $d = 0 ]" \
		"flood 5000/s" "bypass counter moving, no drops" "bypass +$b in 0.4 s, drops +$d in 0.4 s"
	timed "$FG" --pin-dir "$GD_PIN" bypass off
	d=$(moved flood drop 0.4)
	expect "$what: bypass off takes effect in < $LIMIT_MS ms, drops resume" \
		"[ $T_RC = 0 ] && [ $T_MS -lt $LIMIT_MS ] && [ $d -gt 500 ]" "floodgate bypass off" \
		"exit 0 in < $LIMIT_MS ms, drops moving" "exit $T_RC in $T_MS ms, drops +$d in 0.4 s"
	timed "$FG" --pin-dir "$GD_PIN" mode shadow
	s=$(moved flood shadow 0.4); d=$(moved flood drop 0.4)
	expect "$what: mode shadow takes effect in < $LIMIT_MS ms" \
		"[ $T_RC = 0 ] && [ $T_MS -lt $LIMIT_MS ] && [ $s -gt 500 ] && [ $d = 0 ]" "floodgate mode shadow" \
		"exit 0 in < $LIMIT_MS ms, would-drops count as shadow, no drops" \
		"exit $T_RC in $T_MS ms, shadow +$s, drops +$d in 0.4 s"
	timed "$FG" --pin-dir "$GD_PIN" mode file
	d=$(moved flood drop 0.4)
	expect "$what: mode file takes effect in < $LIMIT_MS ms, drops resume" \
		"[ $T_RC = 0 ] && [ $T_MS -lt $LIMIT_MS ] && [ $d -gt 500 ]" "floodgate mode file" \
		"exit 0 in < $LIMIT_MS ms, drops moving" "exit $T_RC in $T_MS ms, drops +$d in 0.4 s"
	timed "$FG" --pin-dir "$GD_PIN" mode shadow --rule flood
	s=$(moved flood shadow 0.4)
	"$FG" --pin-dir "$GD_PIN" mode file --rule flood > /dev/null 2>&1
	expect "$what: mode shadow --rule takes effect in < $LIMIT_MS ms" \
		"[ $T_RC = 0 ] && [ $T_MS -lt $LIMIT_MS ] && [ $s -gt 500 ]" "floodgate mode shadow --rule flood" \
		"exit 0 in < $LIMIT_MS ms, shadow moving" "exit $T_RC in $T_MS ms, shadow +$s in 0.4 s"
}

# --- policies ---------------------------------------------------------------------

RULE_FLOOD='  - name: flood
    match: {proto: udp, dport: 9}
    per_source: {rate: 100/s, burst: 100}'
small_deny=$(for i in $(seq 0 9); do printf '%s11.0.%d.0/24' "$([ "$i" = 0 ] || echo ', ')" "$i"; done)
gd_policy small <<YAML
max_sources: 4096
deny: [$small_deny]
rules:
$RULE_FLOOD
YAML
# NPFX distinct /24s from 11.0.0.0 on: 11.0.0.0/24 ... 26.66.63.0/24
t0=$(date +%s%N)
awk -v n=$NPFX 'BEGIN { printf "interfaces: [gdr0]\nmax_sources: 4096\ndeny: [";
	for (i = 0; i < n; i++)
		printf "%s%d.%d.%d.0/24", (i ? ", " : ""), 11 + int(i / 65536), int(i / 256) % 256, i % 256;
	print "]\nrules:" }' > "$GD_TMP/big.yaml"
echo "$RULE_FLOOD" >> "$GD_TMP/big.yaml"
sed 's|rate: 100/s, burst: 100|rate: 200/s, burst: 100|' "$GD_TMP/big.yaml" > "$GD_TMP/big2.yaml"
echo "# generated 2 policies of $NPFX prefixes ($(stat -c %s "$GD_TMP/big.yaml") bytes each) in $((($(date +%s%N) - t0) / 1000000)) ms"

# =========================================================================
# a1. the kill switch while another process holds the pin dir's lock
# =========================================================================
if ! gd_start small; then
	bad "a: floodgated starts: $(tail -3 "$GD_LOG")"
	fg_finish
fi
flood_start
flock "$GD_PIN" sleep 60 &
LOCK_PID=$!
sleep 0.2
if flock -n "$GD_PIN" true; then
	bad "a: the pin dir is locked by 'flock DIR sleep'" "flock -n got it"
else
	ok "a: the pin dir is locked by another process (flock DIR sleep 60, pid $LOCK_PID)"
	switch_drill "a: lock held"
fi
# flock(1) holds the lock while its child runs: end the child (by PID), flock follows
for pid in $(ps -o pid= --ppid "$LOCK_PID"); do kill "$pid" 2>/dev/null; done
wait "$LOCK_PID" 2>/dev/null

# =========================================================================
# b1. a reload from 10 to 1,000,000 prefixes
# =========================================================================
cp "$GD_TMP/small.yaml" "$GD_TMP/small.orig.yaml"
cp "$GD_TMP/big.yaml" "$GD_TMP/small.yaml"	# the daemon's --config
v0=$(version)
t0=$(date +%s%N)
kill -HUP "$FG_DPID"
if reload_wait $((v0 + 1)); then
	reload_ms=$((($(date +%s%N) - t0) / 1000000))
	ok "b: reload from 10 to $NPFX prefixes succeeds: version $v0 -> $((v0 + 1)) in $reload_ms ms"
	echo "# $(grep -E 'reload: prefix entries' "$GD_LOG" | tail -1)"
	denied_from_last "b: the millionth prefix is enforced"
else
	bad "b: reload from 10 to $NPFX prefixes" "$(grep -E 'reload' "$GD_LOG" | tail -3 | one_line 300)"
fi

# =========================================================================
# a2. the kill switch while the daemon is stopped in the middle of a reload
# =========================================================================
cp "$GD_TMP/big2.yaml" "$GD_TMP/small.yaml"
v1=$(version)
kill -HUP "$FG_DPID"
locked=0
for _ in $(seq 200); do	# until the reload holds the lock (after parsing the file)
	if ! flock -n "$GD_PIN" true; then locked=1; break; fi
	sleep 0.02
done
kill -STOP "$FG_DPID"
for _ in $(seq 40); do [ "$(proc_state "$FG_DPID")" = T ] && break; sleep 0.05; done
st=$(proc_state "$FG_DPID")
if [ $locked = 1 ] && [ "$st" = T ] && ! flock -n "$GD_PIN" true; then
	ok "a: floodgated stopped (state $st) while its reload of $NPFX prefixes holds the lock"
	switch_drill "a: daemon stopped mid-reload"
	timed "$FG" --pin-dir "$GD_PIN" status
	expect "a: status answers with the daemon stopped" "[ $T_RC = 0 ] && [ $T_MS -lt 2000 ]" \
		"floodgate status" "exit 0" "exit $T_RC in $T_MS ms"
else
	bad "a: stop the daemon mid-reload" "lock seen: $locked, state: $st"
fi
kill -CONT "$FG_DPID"
if reload_wait $((v1 + 1)); then
	ok "b: the stopped reload completes after SIGCONT: version $((v1 + 1))"
	check "b: the reload log compares with what is in force: 0 prefix changes, the new rate" \
		bash -c "! grep -q 'reload: prefix entries: IPv4 $NPFX' '$GD_LOG' && grep -q 'flood: per_source rate 100 -> 200' '$GD_LOG'"
else
	bad "b: the stopped reload completes" "$(grep -E 'reload' "$GD_LOG" | tail -3 | one_line 300)"
fi

# =========================================================================
# b2. SIGKILL, then a restart adopting the pinned state with the big file
# =========================================================================
fg_daemon_stop KILL
t0=$(date +%s%N)
if FG_START_TENTHS=600 gd_start small "$GD_PIN"; then
	adopt_ms=$((($(date +%s%N) - t0) / 1000000))
	ok "b: restart adopting $NPFX pinned prefixes with the $NPFX-prefix file starts in $adopt_ms ms"
	d=$(moved flood drop 0.5)
	expect "b: the adopted filter enforces the rule" "[ $d -gt 500 ]" "flood 5000/s" \
		"drops moving" "drops +$d in 0.5 s"
	denied_from_last "b: the adopted filter enforces the millionth prefix"
else
	bad "b: restart adopting $NPFX prefixes" "$(tail -3 "$GD_LOG" | one_line 300)"
fi
flood_stop
gd_stop
rm -f "$GD_TMP/big.yaml" "$GD_TMP/big2.yaml"

# =========================================================================
# c. the file's mode is what runs; CLI overrides on top, until cleared
# =========================================================================
gd_policy modes <<YAML
max_sources: 4096
mode: shadow
rules:
$RULE_FLOOD
  - name: other
    match: {proto: tcp}
    per_source: {rate: 100/s, burst: 100}
YAML
if ! gd_start modes; then
	bad "c: floodgated starts: $(tail -3 "$GD_LOG")"
	fg_finish
fi
flood_start
status_json
check_cmp "c: the file says shadow: mode, mode_file" "$(sj mode mode_file)" = "shadow shadow"
fg_daemon_stop KILL
sed -i 's/^mode: shadow/mode: enforce/' "$GD_TMP/modes.yaml"
if gd_start modes "$GD_PIN"; then
	status_json
	d=$(moved flood drop 0.4)
	expect "c: adoption applies the file's enforce over the pinned shadow" \
		"[ '$(sj mode mode_file mode_override)' = 'enforce enforce null' ] && [ $d -gt 500 ]" \
		"restart with mode: enforce" "mode enforce, no override, drops moving" \
		"mode, mode_file, mode_override: $(sj mode mode_file mode_override); drops +$d in 0.4 s"
	check "c: the adoption logs the mode against what was in force" \
		grep -q "adopt: global mode shadow -> enforce" "$GD_LOG"
else
	bad "c: restart with mode: enforce" "$(tail -3 "$GD_LOG" | one_line 300)"
fi
"$FG" --pin-dir "$GD_PIN" mode shadow > /dev/null 2>&1
"$FG" --pin-dir "$GD_PIN" mode shadow --rule other > /dev/null 2>&1
status_json
check_cmp "c: a global override: mode, mode_file, mode_override" \
	"$(sj mode mode_file mode_override)" = "shadow enforce shadow"
check_cmp "c: a rule override: other's mode, mode_file, override" \
	"$(sj policy.rules.1.name policy.rules.1.mode policy.rules.1.mode_file policy.rules.1.override)" = \
	"other shadow enforce shadow"
check "c: status says the CLI override and what the file says" \
	bash -c "'$FG' --pin-dir '$GD_PIN' status | grep -E '^mode: +shadow \\(CLI override.*the file says enforce'"
v=$(version)
sed -i 's|rate: 100/s, burst: 100}|rate: 100/s, burst: 101}|' "$GD_TMP/modes.yaml"
kill -HUP "$FG_DPID"
if reload_wait $((v + 1)) 100; then
	status_json
	s=$(moved flood shadow 0.4)
	expect "c: the overrides survive a reload" \
		"[ '$(sj mode_override policy.rules.1.override)' = 'shadow shadow' ] && [ $s -gt 500 ]" \
		"reload of a changed file" "overrides kept, flood counted as shadow" \
		"mode_override $(sj mode_override), other's override $(sj policy.rules.1.override); shadow +$s in 0.4 s"
	check "c: the reload log says the override keeps shadow" \
		grep -q "reload: a CLI override keeps the global mode shadow (the file says enforce" "$GD_LOG"
else
	bad "c: reload with overrides" "$(tail -3 "$GD_LOG" | one_line 300)"
fi
fg_daemon_stop KILL
if gd_start modes "$GD_PIN"; then
	status_json
	check_cmp "c: the overrides survive a restart (adoption)" \
		"$(sj mode mode_file mode_override policy.rules.1.override)" = "shadow enforce shadow shadow"
else
	bad "c: restart with overrides" "$(tail -3 "$GD_LOG" | one_line 300)"
fi
"$FG" --pin-dir "$GD_PIN" mode file > /dev/null 2>&1
"$FG" --pin-dir "$GD_PIN" mode file --rule other > /dev/null 2>&1
status_json
d=$(moved flood drop 0.4)
expect "c: mode file clears the overrides" \
	"[ '$(sj mode mode_override policy.rules.1.mode policy.rules.1.override)' = 'enforce null enforce null' ] && [ $d -gt 500 ]" \
	"floodgate mode file; mode file --rule other" "the file's enforce, no overrides, drops moving" \
	"$(sj mode mode_override policy.rules.1.mode policy.rules.1.override); drops +$d in 0.4 s"
# a removed rule's override does not come back with a new rule of that name
"$FG" --pin-dir "$GD_PIN" mode shadow --rule other > /dev/null 2>&1
cp "$GD_TMP/modes.yaml" "$GD_TMP/modes.full.yaml"
head -n "$(grep -n 'name: other' "$GD_TMP/modes.yaml" | cut -d: -f1)" "$GD_TMP/modes.yaml" | sed '$d' > "$GD_TMP/modes.cut.yaml"
cp "$GD_TMP/modes.cut.yaml" "$GD_TMP/modes.yaml"
v=$(version); kill -HUP "$FG_DPID"; reload_wait $((v + 1)) 100
cp "$GD_TMP/modes.full.yaml" "$GD_TMP/modes.yaml"
v=$(version); kill -HUP "$FG_DPID"
if reload_wait $((v + 1)) 100; then
	status_json
	check_cmp "c: a rule removed with an override and added again inherits none" \
		"$(sj policy.rules.1.name policy.rules.1.override)" = "other null"
else
	bad "c: remove and add a rule" "$(tail -3 "$GD_LOG" | one_line 300)"
fi
flood_stop
gd_stop

# =========================================================================
# d. every rule replaced in one reload, under a flood
# =========================================================================
# rules_file PREFIX: 256 rules PREFIX0..PREFIX255 on udp ports 1000..1255 (the
# policy's 257th rule is the implicit fragments)
rules_file() {
	echo "max_sources: 4096"
	echo "rules:"
	for i in $(seq 0 255); do
		printf '  - name: %s%d\n    match: {proto: udp, dport: %d}\n    per_source: {rate: 100000/s, burst: 100000}\n' \
			"$1" "$i" $((1000 + i))
	done
}
rules_file old | gd_policy rules
if ! gd_start rules; then
	bad "d: floodgated starts with 257 rules: $(tail -3 "$GD_LOG")"
	fg_finish
fi
gd_fgen -d "$GD_RX_IP" -s "$FLOOD_SRC" --frag-offset 64 -n 50 > /dev/null
sleep 0.2
f0=$(stat_of fragments total)
fid=$(fg_rule_id "$GD_PIN" fragments)
oid=$(fg_rule_id "$GD_PIN" old0)
flood_start 1000 2000
sleep 0.5
v=$(version)
rules_file new | gd_policy rules
kill -HUP "$FG_DPID"
reload_wait $((v + 1)) 100; rc=$?
sleep 0.5
flood_stop
sleep 0.2
fg_snap "$GD_PIN"
sent=$(fg_json_get "$GD_TMP/flood.json" packets)
# old0's row after its id was freed: not listed by stats, not reused yet (fgdump reads it)
touch "$GD_TMP/watch.stop"
o=$("$FGDUMP" -p "$GD_PIN" watch "$oid" "$GD_TMP/watch.stop" | tail -n 1 | awk '{ print $3 }')
o=${o:-0}
n=$(fg_stat "$FG_SNAP" new0 total)
nid=$(fg_rule_id "$FG_SNAP" new255)
expect "d: one reload renames all 256 rules (257 with fragments)" \
	"[ $rc = 0 ] && [ '$(version)' = $((v + 1)) ] && ! grep -q 'no free rule id' '$GD_LOG'" \
	"a file with 256 new names" "version $((v + 1)), no refusal" \
	"reload wait $rc, version $(version), ids: new255 is $nid"
expect "d: no flood packet unmatched across the reload" \
	"[ ${sent:-0} -gt 1000 ] && [ $o -gt 0 ] && [ $n -gt 0 ] && [ $((o + n)) = ${sent:-0} ]" \
	"${sent:-?} packets to port 1000 at 2000/s" "old0 + new0 = sent, both > 0" \
	"old0 $o (before), new0 $n (after), sum $((o + n))"
f1=$(fg_stat "$FG_SNAP" fragments total)
expect "d: the untouched rule keeps its id and counters" \
	"[ $(fg_rule_id "$FG_SNAP" fragments) = $fid ] && [ $f1 -ge $f0 ] && [ $f0 -ge 50 ]" \
	"50 fragments before" "fragments: same id, counters >= 50" \
	"id $fid -> $(fg_rule_id "$FG_SNAP" fragments), total $f0 -> $f1"
status_json
check_cmp "d: status lists 257 named rules, ids above 511 included" \
	"$(fg_json_get "$GD_TMP/status.json" policy.rules.255.name) $([ "${nid:-0}" -ge 512 ] && echo high-id)" = "new255 high-id"
gd_stop

# =========================================================================
# e. an adopting restart with a file it cannot apply stays up (issue 8 item 2)
# =========================================================================
gd_policy_flood sizes
if ! gd_start sizes; then
	bad "e: floodgated starts: $(tail -3 "$GD_LOG" | one_line 300)"
else
	v0=$(version)
	fg_daemon_stop KILL
	sed -i 's/^max_sources: 4096/max_sources: 8192/' "$GD_TMP/sizes.yaml"
	if ! gd_start sizes "$GD_PIN"; then
		bad "e: an adopting restart with max_sources changed stays up" \
			"it exited: $(tail -3 "$GD_LOG" | one_line 300)"
	else
		d0=$(stat_of flood drop)
		sent=$(gd_fgen -d "$GD_RX_IP" -s 10.213.0.77 -n 300); sleep 0.2
		d1=$(stat_of flood drop)
		expect "e: an adopting restart with max_sources changed stays up and enforces the pinned policy" \
			"kill -0 $FG_DPID && [ '$(version)' = '$v0' ] && [ $((d1 - d0)) -ge 100 ]" \
			"$sent from a fresh source (rate 100/s, burst 100); max_sources 4096 -> 8192 in the file" \
			"daemon up, version $v0 kept, >= 100 dropped" \
			"version $(version), dropped $((d1 - d0))"
		"$FG" --pin-dir "$GD_PIN" status > "$GD_TMP/e.status" 2>&1
		status_json
		expect "e: it says why, once in the log and in status" \
			"[ \$(grep -c 'was NOT applied: .*max_sources' '$GD_LOG') = 1 ] && grep -q 'the file $GD_TMP/sizes.yaml was NOT applied: .*max_sources' '$GD_TMP/e.status' && grep -q max_sources <<< \"\$(fg_json_get '$GD_TMP/status.json' file_not_applied)\"" \
			"-" "one log line, status text and file_not_applied in JSON naming max_sources" \
			"$(grep -F 'NOT applied' "$GD_LOG" | head -1 | one_line 160); status: $(grep -F 'NOT applied' "$GD_TMP/e.status" | one_line 160)"
		sed -i -e 's/^max_sources: 8192/max_sources: 4096/' -e 's/burst: 100}/burst: 50}/' "$GD_TMP/sizes.yaml"
		timed "$FG" --pin-dir "$GD_PIN" reload
		rc=$T_RC
		"$FG" --pin-dir "$GD_PIN" status > "$GD_TMP/e.status" 2>&1
		status_json
		expect "e: a reload after fixing the file applies it" \
			"[ $rc = 0 ] && [ '$(version)' = $((v0 + 1)) ] && ! grep -q 'NOT applied' '$GD_TMP/e.status' && [ \"\$(fg_json_get '$GD_TMP/status.json' file_not_applied)\" = null ]" \
			"max_sources back to 4096, burst 50" "reload exit 0, version $((v0 + 1)), nothing NOT applied" \
			"exit $rc ($(one_line 160 < "$GD_TMP/timed.out")), version $(version), file_not_applied $(fg_json_get "$GD_TMP/status.json" file_not_applied)"
	fi
	gd_stop
fi

echo "# figures: bypass/mode under a held lock and under a stopped reload < $LIMIT_MS ms each (above); reload 10 -> $NPFX prefixes ${reload_ms:-?} ms; adoption with $NPFX prefixes ${adopt_ms:-?} ms"
fg_finish
