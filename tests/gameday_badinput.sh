#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Bad input, everywhere an operator can give it:
#   1. malformed policy files (tests/policies/bad/*.yaml, each with an
#      "# expect: LINE:COL: text" header, plus generated ones: empty, binary
#      garbage, > 16 MiB, deeply nested) against `floodgate check`: exit 1,
#      the error names file:line:col and says what is wrong;
#   2. the same files written over the config of a RUNNING floodgated (own
#      namespace, veth, pin dir) and then `floodgate reload` and SIGHUP:
#      exit 1, the policy version and fg_ctl unchanged, the daemon alive;
#   3. the CLI with bad arguments against that daemon: usage errors exit 2,
#      nothing changes;
#   4. --pin-dir pointing to a missing dir, a non-bpffs dir, a stale pin dir
#      (daemon killed), a pin dir from an incompatible ABI (a bpftool-made
#      fg_ctl with another value size; a real pin dir stamped ABI + 1).
# Needs root. Removes its namespace, pin dirs, temp dir and daemons (by PID)
# on exit. Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
fg_init --root "$FGD" "$FG"
FGD=$(realpath -m "$FGD")
FG=$(realpath -m "$FG")
BAD=tests/policies/bad
HAVE_BPFTOOL=1
command -v bpftool > /dev/null || HAVE_BPFTOOL=0

PIN=$(fg_pin live)                # the live daemon's
PIN_STALE=$(fg_pin stale)         # daemon SIGKILLed
PIN_ABI=$(fg_pin abi)             # bpftool-made fg_ctl, wrong value size
PIN_ABI2=$(fg_pin abi2)           # a real pin dir stamped with the next ABI
PIN_MISSING=$(fg_pin missing)
TMP=$FG_TMP
unset FLOODGATE_PIN_DIR

policy() {	# policy IFACE RATE > file
	cat <<YAML
interfaces: [$1]
max_sources: 4096
rules:
  - name: icmp-echo
    match: {proto: icmp, icmp_type: 8}
    per_source: {rate: ${2:-5}/s, burst: 5}
  - name: udp-any
    match: {proto: udp}
    per_source: {rate: 100/s, burst: 100}
YAML
}

# start_daemon PIN IFACE CONFIG LOG [args]: floodgated in $NS, PID in $DPID
start_daemon() {
	local pin=$1 cfg=$3 log=$4 rc; shift 4
	fg_daemon_start b "$pin" "$cfg" "$log" "$@"; rc=$?
	DPID=$FG_DPID
	return $rc
}

xdp_of() { ip -n "$NS" -d link show "$1" | grep -oE 'prog/xdp id [0-9]+'; }
version() { "$FG" --pin-dir "$1" status 2>/dev/null | sed -nE 's/^policy: +version ([0-9]+).*/\1/p'; }
ctl_dump() { bpftool map dump pinned "$1/fg_ctl" 2>&1; }
# everything the CLI can change, as text: fg_ctl, the active policy, rule modes
state() {
	{
		ctl_dump "$1"
		# what runs; not the note that the last file was refused (a refused reload sets it)
		"$FG" --pin-dir "$1" status 2>&1 | grep -vE '^sources:|was NOT applied: '
	}
}

# expect_of FILE: "LINE:COL: text" from its header
expect_of() { sed -nE 's/^# expect: (.*)$/\1/p' "$1" | head -n 1; }

# --- 1. floodgate check ------------------------------------------------------------------
# generated inputs: name, then what the error must contain after "file:"
: > "$TMP/empty.yaml"
printf 'rules:\0 []\n' > "$TMP/nul-byte.yaml"
# binary garbage: fixed bytes (reproducible), invalid UTF-8, NULs, control chars
printf '\x7fELF\x02\x01\x01\x00\x00\x00\xff\xfe\xfd\x00\x01\x02\x03\x80\x81\x82\n\x1b[0m\xc3\x28' \
	> "$TMP/garbage.yaml"
# > 16 MiB (sparse: the size alone must refuse it, before any parsing)
truncate -s $((16 * 1024 * 1024 + 1)) "$TMP/huge.yaml"
# 16 MiB exactly of valid comments: at the limit, so it is read and parsed
# (it is empty of content), and that must not take long either
"$FG_PY" -c "
import sys
line = b'#' + b'x' * 1022 + b'\n'
sys.stdout.buffer.write(line * (16 * 1024))" > "$TMP/limit.yaml"

for f in "$BAD"/*.yaml; do
	exp=$(expect_of "$f")
	if [ -z "$exp" ]; then bad "check $f" "no '# expect: LINE:COL: text' header"; continue; fi
	place=${exp%%: *}; text=${exp#*: }
	out=$("$FG" check "$f" 2>&1 > "$TMP/stdout"); rc=$?
	case "$out" in
	"$f:$place: "*"$text"*)
		if [ $rc = 1 ] && [ ! -s "$TMP/stdout" ]; then ok "check $(basename "$f"): exit 1, $f:$place: ...$text..."
		else bad "check $(basename "$f")" "exit $rc (expected 1), stdout $(wc -c < "$TMP/stdout") bytes; $out"; fi ;;
	*)	bad "check $(basename "$f")" "exit $rc, expected '$f:$place: ...$text...', got '$(echo "$out" | one_line)'" ;;
	esac
done

chk_gen() {	# chk_gen NAME FILE PATTERN(ERE, after "FILE") [TIMEOUT]
	local name=$1 f=$2 pat=$3 t=${4:-10} out rc t0=$SECONDS
	out=$(timeout "$t" "$FG" check "$f" 2>&1 > /dev/null); rc=$?
	if [ $rc = 124 ]; then
		bad "check $name" "still running after $t s ($(stat -c %s "$f") bytes)"
	elif [ $rc = 1 ] && printf '%s\n' "$out" | grep -qE "^$(printf '%s' "$f" | sed 's/[.[\*^$/]/\\&/g')$pat"; then
		ok "check $name: exit 1 in $((SECONDS - t0)) s, $(echo "$out" | one_line 160)"
	else
		bad "check $name" "exit $rc, expected $f$pat, got '$(echo "$out" | one_line)'"
	fi
}
chk_gen "empty file" "$TMP/empty.yaml" ':1:1: empty policy'
chk_gen "NUL byte in the file" "$TMP/nul-byte.yaml" ':1:[0-9]+: .*control character'
chk_gen "binary garbage" "$TMP/garbage.yaml" ':[0-9]+:[0-9]+: '
chk_gen "file > 16 MiB is refused unread" "$TMP/huge.yaml" ': .*larger than the limit' 5
chk_gen "16 MiB of comments (at the limit)" "$TMP/limit.yaml" ':[0-9]+:[0-9]+: empty policy' 10
chk_gen "missing file" "$TMP/no-such.yaml" ': .*No such file'
chk_gen "a directory" "$TMP" ': .*directory'
chk_gen "/dev/zero (endless) is refused unread" /dev/zero ': is a character device, not a regular file' 10

# Deeply nested flow collections: libyaml's scanner re-walks its stack of
# possible simple keys at every token, O(depth^2). 100000 '[' (200 KB, far
# under the 16 MiB limit) took minutes in `check`, in `reload` and in the
# daemon's SIGHUP handler (which then answers nothing, not even SIGTERM).
# The compiler must refuse absurd nesting quickly.
"$FG_PY" -c "print('rules: ' + '[' * 100000 + ']' * 100000)" > "$TMP/deep-flow.yaml"
chk_gen "100000 nested [ (200 KB) is refused quickly" "$TMP/deep-flow.yaml" ':[0-9]+:[0-9]+: ' 10
"$FG_PY" -c "print('rules:\n  - name: a\n    match: ' + '{a: ' * 50000 + '1' + '}' * 50000)" \
	> "$TMP/deep-map.yaml"
chk_gen "50000 nested { (250 KB) is refused quickly" "$TMP/deep-map.yaml" ':[0-9]+:[0-9]+: ' 10

# --- 2. a running daemon gets the same files ----------------------------------------------
# one namespace, two veth pairs in it: v0 <-> v1 and w0 <-> w1
if ! { fg_ns_create b && fg_veth_create b v0 b v1 && fg_veth_create b w0 b w1; }; then
	bad setup "namespace and veth pairs"; fg_finish
fi
NS=$(fg_ns_name b)

CFG=$TMP/policy.yaml
policy v1 > "$TMP/good.yaml"
cp "$TMP/good.yaml" "$CFG"
if ! start_daemon "$PIN" v1 "$CFG" "$TMP/daemon.log"; then
	bad "floodgated starts" "$(tail -n 5 "$TMP/daemon.log" | one_line)"
	fg_finish
fi
LIVE=$DPID
ok "floodgated starts on v1 (pid $LIVE, pin dir $PIN)"
v0=$(version "$PIN")
s0=$(state "$PIN")

nhup=0
bad_reload() {	# bad_reload NAME SRC-FILE PLACE-ERE
	local name=$1 src=$2 place=$3 out rc n want
	cp "$src" "$CFG"
	out=$("$FG" --pin-dir "$PIN" reload 2>&1); rc=$?
	if [ $rc = 1 ] && printf '%s\n' "$out" | grep -qE "$(printf '%s' "$CFG" | sed 's/[.[\*^$/]/\\&/g')$place" &&
	   printf '%s\n' "$out" | grep -q "running policy stays"; then
		ok "reload $name: exit 1, names $(basename "$CFG")$place"
	else
		bad "reload $name" "exit $rc, expected $CFG$place: $(echo "$out" | one_line)"
	fi
	# the daemon itself, on SIGHUP, must refuse it too
	nhup=$((nhup + 1))
	kill -HUP "$LIVE"
	n=0
	for _ in $(seq 100); do
		n=$(grep -c "is invalid; the running policy is unchanged" "$TMP/daemon.log")
		[ "$n" -ge "$nhup" ] && break
		kill -0 "$LIVE" 2>/dev/null || break
		sleep 0.05
	done
	want="SIGHUP $name: daemon refused it, still running, version $v0, fg_ctl and rules unchanged"
	if ! kill -0 "$LIVE" 2>/dev/null; then
		bad "SIGHUP $name" "floodgated (pid $LIVE) died: $(tail -n 5 "$TMP/daemon.log" | one_line)"
		return
	fi
	if [ "$n" -lt "$nhup" ]; then
		bad "SIGHUP $name" "no 'running policy is unchanged' in the daemon log within 5 s"
		nhup=$n
		return
	fi
	if [ "$(version "$PIN")" = "$v0" ] && [ "$(state "$PIN")" = "$s0" ]; then ok "$want"
	else bad "SIGHUP $name" "state changed: version $(version "$PIN") (was $v0)"; fi
}
for f in "$BAD"/*.yaml; do
	exp=$(expect_of "$f")
	[ -n "$exp" ] || continue
	bad_reload "$(basename "$f")" "$f" ":${exp%%: *}: "
done
bad_reload "empty file" "$TMP/empty.yaml" ':1:1: '
bad_reload "binary garbage" "$TMP/garbage.yaml" ':[0-9]+:[0-9]+: '
bad_reload "file > 16 MiB" "$TMP/huge.yaml" ': .*larger than the limit'
if grep -qE "$(basename "$CFG"):[0-9]+:[0-9]+: " "$TMP/daemon.log"; then
	ok "the daemon's log names policy.yaml:line:col for what it refused"
else
	bad "daemon log names file:line:col" "$(grep -m3 policy.yaml "$TMP/daemon.log" | one_line)"
fi

# A config file that disappears or turns into a directory under a running daemon.
rm -f "$CFG"; mkdir "$CFG"
out=$("$FG" --pin-dir "$PIN" reload 2>&1); rc=$?
check "reload with the config replaced by a directory: exit 1 ($(echo "$out" | one_line 100))" [ $rc = 1 ]
rmdir "$CFG"
kill -HUP "$LIVE"; sleep 0.5
check "SIGHUP with the config file gone: daemon alive, version $v0" \
	bash -c "kill -0 $LIVE && [ \"\$('$FG' --pin-dir '$PIN' status | sed -nE 's/^policy: +version ([0-9]+).*/\1/p')\" = '$v0' ]"

# and it still takes a good file afterwards
policy v1 7 > "$CFG"
out=$("$FG" --pin-dir "$PIN" reload 2>&1); rc=$?
v1=$(version "$PIN")
if [ $rc = 0 ] && [ "${v1:-0}" -gt "$v0" ]; then ok "a good file after all that reloads (version $v0 -> $v1)"
else bad "good reload after bad ones" "exit $rc, version $v0 -> $v1: $(echo "$out" | one_line)"; fi

# --- 3. the CLI with bad arguments -----------------------------------------------------------
s1=$(state "$PIN")
export FLOODGATE_PIN_DIR=$PIN
usage() {	# usage WANT-RC DESCRIPTION ARGS...
	local want=$1 what=$2 out rc; shift 2
	out=$("$FG" "$@" 2>&1 > "$TMP/stdout"); rc=$?
	if [ "$rc" = "$want" ] && [ -n "$out" ]; then
		ok "floodgate $* ($what): exit $rc, says: $(echo "$out" | head -n 1 | cut -c1-100)"
	else
		bad "floodgate $* ($what)" "exit $rc (expected $want), stderr '$(echo "$out" | one_line 200)'"
	fi
}
usage 2 "no command"
usage 2 "unknown command" frobnicate
usage 2 "unknown global option" --frob status
usage 2 "--pin-dir without its value" status --pin-dir
usage 2 "unknown option" status --frob
usage 2 "bundled short options" top -nj
usage 2 "extra argument" status extra
usage 2 "a bad word" mode frobnicate
usage 2 "a bad word" bypass maybe
usage 2 "--rule without a mode" mode --rule x
usage 2 "missing argument" check
usage 2 "two files" check "$TMP/good.yaml" "$TMP/good.yaml"
usage 2 "bad mode" mode sideways
usage 2 "--rule without a name" mode shadow --rule
usage 2 "bad switch" bypass sideways
usage 2 "bad duration" bypass on --for xyz
usage 2 "zero duration" bypass on --for 0s
usage 2 "negative duration" bypass on --for -5s
usage 2 "duration with spaces" bypass on --for " 5s"
usage 2 "unknown unit" bypass on --for 5y
usage 2 "overflowing duration" bypass on --for 99999999999999999999s
usage 2 "duration overflowing in ns" bypass on --for 999999999999d
usage 2 "--for on off" bypass off --for 5s
usage 2 "--for without a value" bypass on --for
usage 2 "negative count" top -n -3
usage 2 "zero count" top -n 0
usage 2 "count not a number" top -n abc
usage 2 "count with a suffix" top -n 10x
usage 2 "overflowing count" top -n 99999999999999999999
usage 2 "count too large" top -n 100001
usage 2 "-n without a value" top -n
usage 2 "watch 0" stats --watch 0
usage 2 "watch not a number" stats --watch=abc
usage 2 "watch too long" stats --watch 3601
usage 2 "--json takes no value" stats --json=yes
usage 1 "unknown rule" mode shadow --rule no-such-rule
s2=$(state "$PIN")
if [ "$s2" = "$s1" ]; then ok "after all bad arguments: fg_ctl, mode, bypass and rules unchanged"
else bad "bad arguments changed state" "$(diff <(echo "$s1") <(echo "$s2") | one_line 400)"; fi
check "the daemon survived it all (pid $LIVE)" kill -0 "$LIVE"
unset FLOODGATE_PIN_DIR

# --- 4. --pin-dir pointing at the wrong thing -------------------------------------------------
cmds_ro=("status" "stats" "stats --json" "top" "top --json")
cmds_rw=("mode shadow" "mode enforce --rule icmp-echo" "bypass on" "bypass on --for 5s" "bypass off" "reload")

# 4a. a missing dir: every command exits 1, names the dir, creates nothing
for c in "${cmds_ro[@]}" "${cmds_rw[@]}" detach; do
	# shellcheck disable=SC2086
	out=$("$FG" --pin-dir "$PIN_MISSING" $c 2>&1); rc=$?
	if [ $rc = 1 ] && printf '%s' "$out" | grep -qF "$PIN_MISSING" && [ ! -e "$PIN_MISSING" ]; then
		ok "missing pin dir: $c exits 1, names it, creates nothing"
	else
		bad "missing pin dir: $c" "exit $rc, exists=$([ -e "$PIN_MISSING" ] && echo yes || echo no): $(echo "$out" | one_line 200)"
	fi
done

# 4b. a directory that is not on bpffs, holding files with floodgate's names:
# read-only commands fail clearly; detach must not delete anything there.
NB=$TMP/not-bpffs
mkdir -p "$NB"
echo "operator notes" > "$NB/link_notes.txt"
echo "not a map" > "$NB/fg_ctl"
echo "keep" > "$NB/README"
for c in "${cmds_ro[@]}" "${cmds_rw[@]}"; do
	# shellcheck disable=SC2086
	out=$("$FG" --pin-dir "$NB" $c 2>&1); rc=$?
	check "non-bpffs dir: $c exits 1 ($(echo "$out" | head -n 1 | cut -c1-90))" [ $rc = 1 ]
done
out=$("$FG" --pin-dir "$NB" detach 2>&1); rc=$?
left=$(cd "$NB" 2>/dev/null && ls | sort | tr '\n' ' ')
if [ $rc != 0 ] && [ -f "$NB/link_notes.txt" ] && [ -f "$NB/fg_ctl" ] && [ -f "$NB/README" ]; then
	ok "non-bpffs dir: detach refuses (exit $rc) and deletes nothing"
else
	bad "non-bpffs dir: detach" "exit $rc; sent 'floodgate --pin-dir $NB detach' to a tmpfs dir holding link_notes.txt, fg_ctl, README; expected a refusal and all three kept; left: '$left'; said: $(echo "$out" | one_line 200)"
fi
EMPTY=$TMP/empty-dir
mkdir -p "$EMPTY"
out=$("$FG" --pin-dir "$EMPTY" detach 2>&1); rc=$?
if [ $rc != 0 ] && [ -d "$EMPTY" ]; then ok "empty non-bpffs dir: detach refuses (exit $rc) and keeps it"
else bad "empty non-bpffs dir: detach" "exit $rc, dir $([ -d "$EMPTY" ] && echo kept || echo REMOVED): $(echo "$out" | one_line 200)"; fi
mkdir -p "$EMPTY"

# 4c. a stale pin dir: a daemon on w1, SIGKILLed. Reading and the runtime
# switches work without it; reload fails clearly; detach cleans up.
policy w1 > "$TMP/stale.yaml"
if start_daemon "$PIN_STALE" w1 "$TMP/stale.yaml" "$TMP/stale.log"; then
	fg_daemon_stop KILL
	for c in "${cmds_ro[@]}"; do
		# shellcheck disable=SC2086
		"$FG" --pin-dir "$PIN_STALE" $c > "$TMP/out" 2>&1
		check "stale pin dir: $c works without the daemon" [ $? = 0 ]
	done
	check "stale pin dir: status says the daemon is not running" \
		grep -q "daemon: *not running" <("$FG" --pin-dir "$PIN_STALE" status 2>&1)
	for c in "mode shadow" "mode enforce" "bypass on --for 5s" "bypass off"; do
		# shellcheck disable=SC2086
		"$FG" --pin-dir "$PIN_STALE" $c > "$TMP/out" 2>&1
		check "stale pin dir: $c works without the daemon" [ $? = 0 ]
	done
	vs=$(version "$PIN_STALE")
	out=$("$FG" --pin-dir "$PIN_STALE" reload 2>&1); rc=$?
	if [ $rc = 1 ] && printf '%s' "$out" | grep -q "not running"; then
		ok "stale pin dir: reload exits 1: $(echo "$out" | one_line 120)"
	else bad "stale pin dir: reload" "exit $rc: $(echo "$out" | one_line)"; fi
	check "stale pin dir: version unchanged by the failed reload ($vs)" [ "$(version "$PIN_STALE")" = "$vs" ]
	out=$("$FG" --pin-dir "$PIN_STALE" detach 2>&1); rc=$?
	check "stale pin dir: detach exits 0 and removes it" bash -c "[ $rc = 0 ] && [ ! -e '$PIN_STALE' ]"
	check "stale pin dir: w1 has no XDP program after detach" bash -c "! ip -n $NS link show w1 | grep -q xdp"
	# the SIGKILLed daemon left its state files in the run dir; detach removes them
	left=
	for kind in start escalate shed policy; do
		[ -e "$(fg_state_file "$kind" "$PIN_STALE")" ] && left="$left $kind"
	done
	check_cmp "stale pin dir: detach removes its state files in the run dir" "${left:-none}" = none
else
	bad "daemon for the stale pin dir" "$(tail -n 5 "$TMP/stale.log" | one_line)"
fi

# 4d. an incompatible ABI: fg_ctl pinned with another value size
abi_checks() {	# abi_checks DIR LABEL ERE-OF-MESSAGE
	local dir=$1 label=$2 msg=$3 before c out rc
	before=$(ctl_dump "$dir"; ls "$dir")
	xdp0=$(xdp_of w1)
	for c in "${cmds_ro[@]}" "${cmds_rw[@]}"; do
		# shellcheck disable=SC2086
		out=$("$FG" --pin-dir "$dir" $c 2>&1); rc=$?
		if [ $rc = 1 ] && printf '%s' "$out" | grep -qE "$msg"; then
			ok "$label: $c exits 1: $(echo "$out" | head -n 1 | cut -c1-110)"
		else
			bad "$label: $c" "exit $rc, expected 1 and /$msg/: $(echo "$out" | one_line 200)"
		fi
	done
	policy w1 > "$TMP/abi.yaml"
	: > "$TMP/abi.log"
	fg_bg b "$FGD" --config "$TMP/abi.yaml" --pin-dir "$dir" --foreground >> "$TMP/abi.log" 2>&1
	local p=$FG_BG_PID
	for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$p" 2>/dev/null; then
		bad "$label: floodgated refuses the pin dir" "still running after 5 s"
		fg_bg_stop "$p"
	else
		fg_bg_stop "$p"; rc=$?
		if [ $rc != 0 ] && grep -qE "$msg" "$TMP/abi.log"; then
			ok "$label: floodgated refuses it (exit $rc): $(grep -m1 -E "$msg" "$TMP/abi.log" | cut -c1-110)"
		else
			bad "$label: floodgated refuses the pin dir" "exit $rc: $(tail -n 3 "$TMP/abi.log" | one_line)"
		fi
	fi
	check "$label: w1's XDP program unchanged (${xdp0:-none})" [ "$(xdp_of w1)" = "$xdp0" ]
	check "$label: fg_ctl and the dir's contents unchanged" [ "$(ctl_dump "$dir"; ls "$dir")" = "$before" ]
}
if [ $HAVE_BPFTOOL = 1 ]; then
	mkdir -p "$PIN_ABI"
	if bpftool map create "$PIN_ABI/fg_ctl" type array key 4 value 8 entries 1 name fg_ctl 2> "$TMP/bt.err"; then
		abi_checks "$PIN_ABI" "ABI dir (fg_ctl value 8)" "incompatible layout|another floodgate version"
	else
		skip "ABI dir (fg_ctl value 8)" "bpftool map create failed: $(one_line < "$TMP/bt.err")"
	fi

	# a real pin dir whose fg_ctl says another ABI (this one + 1): left
	# behind by a daemon run with --keep, then stamped
	policy w1 > "$TMP/abi2.yaml"
	if start_daemon "$PIN_ABI2" w1 "$TMP/abi2.yaml" "$TMP/abi2.log" --keep; then
		fg_daemon_stop TERM
		# the binary's ABI, from its own pin dir, + 1, written where the
		# map's BTF says fg_ctl.abi lies
		abi=$("$FG" --pin-dir "$PIN_ABI2" status | sed -nE 's/^pin dir: .*\(ABI ([0-9]+)\).*/\1/p')
		other=$(( ${abi:-1} + 1 ))
		read -r off len <<< "$(fg_btf_member "$PIN_ABI2/fg_ctl" abi)"
		hex=$(bpftool -j map lookup pinned "$PIN_ABI2/fg_ctl" key 0 0 0 0 |
			"$FG_PY" -c 'import json,sys
v = [int(x, 16) for x in json.load(sys.stdin)["value"]]
off, n = int(sys.argv[2]), int(sys.argv[3])
v[off:off + n] = list(int(sys.argv[1]).to_bytes(n, sys.byteorder))
print(" ".join("%d" % x for x in v))' "$other" "${off:-x}" "${len:-x}")
		# shellcheck disable=SC2086
		if [ -n "$hex" ] && bpftool map update pinned "$PIN_ABI2/fg_ctl" key 0 0 0 0 value $hex; then
			abi_checks "$PIN_ABI2" "pin dir stamped ABI $other (this is $abi)" "ABI version $other"
		else
			bad "stamping $PIN_ABI2/fg_ctl with ABI $other" "bpftool map update failed"
		fi
		# the documented way out: detach removes a pin dir it cannot use
		"$FG" --pin-dir "$PIN_ABI2" detach > /dev/null 2>&1
		check "ABI $other pin dir: detach removes it and w1's XDP program" \
			bash -c "[ ! -e '$PIN_ABI2' ] && ! ip -n $NS link show w1 | grep -q xdp"
	else
		bad "daemon for the next-ABI pin dir" "$(tail -n 5 "$TMP/abi2.log" | one_line)"
	fi
else
	skip "incompatible ABI pin dirs" "no bpftool"
fi

# --- the live daemon is still fine, and everything goes away ----------------------------------
check "the live daemon is still running (pid $LIVE)" kill -0 "$LIVE"
check "the live daemon's version is still $v1" [ "$(version "$PIN")" = "$v1" ]
fg_bg_stop "$LIVE"
check "SIGTERM: the live daemon detached and unpinned" \
	bash -c "[ ! -e '$PIN' ] && ! ip -n $NS link show v1 | grep -q xdp"
for p in "$PIN_STALE" "$PIN_ABI2" "$PIN_MISSING"; do
	[ -e "$p" ] && bad "left behind" "$p"
done
fg_finish
