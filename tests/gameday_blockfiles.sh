#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Files that could block (issue 22, item 1), under a running floodgated:
# every path it or the CLI reads, swapped for each kind of file that can
# sit there: a FIFO, a socket, a device node, a directory, a symlink loop.
#   A. the shedding signal file (shedding: {signal: file:PATH}): the
#      daemon's loop goes on (reload answers in seconds, not after 60 s),
#      status says the signal is unreadable and why, the log says it once,
#      and the value comes back when the file does;
#   B. a psi:PATH signal that is a FIFO, given by a reload: refused at once,
#      the shedder keeps its settings;
#   C. the state files `floodgate status` reads (shedder, escalation,
#      fleet) replaced by FIFOs while the daemon is stopped: status answers
#      at once; FIFOs planted at their temporary names: the daemon writes
#      its state files all the same and keeps answering;
#   D. the Redis unix socket's path replaced by a FIFO, a file, a
#      directory (and the connection dropped): the round fails at once and
#      the reason says what the path is, not "Connection refused";
#   E. SIGTERM with a FIFO at the signal's path: acted on at once;
#   F. --pin-dir (CLI and daemon) and check's file as a FIFO: refused at once.
# A redis-server on a Unix socket is started here. Needs root; cleans up its
# namespaces, daemon, pin dir, Redis and files.
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
. tests/fleet_lib.sh
fl_init --pin blockfiles "$FGD" "$FG"
export FLOODGATE_RUN_DIR=$FG_TMP # the shedder's and escalation's state files
fg_pair -q g g0 10.93.0.1/24 r r0 10.93.0.2/24
SIG=$FG_TMP/signal
SOCK=$FG_TMP/redis.sock
PFIFO=$FG_TMP/pressure
echo 0.1 > "$SIG"
fl_redis_up "$SOCK"

policy() {	# policy SIGNAL
	cat <<YAML
interfaces: [r0]
max_sources: 4096
fleet: {redis: "unix:$SOCK", node: n1, lease_interval: 200ms}
shedding: {signal: "$1", interval: 200ms}
rules:
  - {name: be, match: {proto: udp, dport: 1003}, tier: best-effort}
  - {name: esc, match: {proto: udp, dport: 1004}, per_source: {rate: 10/s, burst: 10}, escalate: {after: 2s, for: 10s}}
  - {name: fl, match: {proto: udp, dport: 1005}, fleet: {rate: 100/s, burst: 100}}
YAML
}
policy "file:$SIG" > "$FG_TMP/p.yaml"
fg_daemon_up r "$FG_TMP/p.yaml" "floodgated starts with a file signal, escalation and a fleet rule"
ok "floodgated (pid $FG_DPID) with signal file:$SIG, an escalate rule and a fleet rule"

# st FILE: status --json into FILE within 5 s; 124 when it hung
st() { timeout 5 "$FG" status --json > "$1" 2> "$1.err"; }
sj() { st "$FG_TMP/sj.json" && fg_json_get "$FG_TMP/sj.json" "$@"; }
ms_since() { awk -v a="$1" -v b="$(fl_now)" 'BEGIN { printf "%d", (b - a) * 1000 }'; }
# wait_sj TENTHS KEY ERE: until shedding.KEY matches ERE; the last value in GOT
wait_sj() {
	local n=$1
	while [ "$n" -gt 0 ]; do
		GOT=$(sj "shedding.$2")
		printf '%s' "$GOT" | grep -qE "$3" && return 0
		sleep 0.1; n=$((n - 1))
	done
	return 1
}
# reload_fast WHAT: `floodgate reload` answers within 5 s (a wedged loop: 60 s)
reload_fast() {
	local t0 rc ms
	t0=$(fl_now)
	timeout 10 "$FG" reload > "$FG_TMP/reload.out" 2>&1; rc=$?
	ms=$(ms_since "$t0")
	expect "$1: floodgate reload answers at once" "[ $rc = 0 ] && [ $ms -lt 5000 ]" \
		"floodgate reload" "exit 0 within 5 s" "exit $rc after $ms ms: $(one_line 120 < "$FG_TMP/reload.out")"
}
wait_sj 30 value '^0\.1' || bad "the signal reads 0.1 before the drills" "value $GOT"

# --- A. the signal file swapped for each kind -----------------------------------------
# make_kind KIND PATH: PATH becomes a KIND; its word in the reason on stdout
make_kind() {
	rm -rf "$2"
	case "$1" in
	fifo)	 mkfifo "$2"; echo "is a FIFO" ;;
	socket)	 "$FG_PY" -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$2"
		 echo "is a socket" ;;
	device)	 mknod "$2" c 1 5; echo "is a character device" ;;	# /dev/zero's numbers
	dir)	 mkdir "$2"; echo "is a directory" ;;
	loop)	 ln -s "$2.2" "$2"; ln -s "$2" "$2.2"; echo "too many levels of symbolic links" ;;
	file)	 echo 0.5 > "$2"; echo "is a regular file" ;;
	esac
}
for kind in fifo socket device dir loop; do
	word=$(make_kind "$kind" "$SIG")
	if wait_sj 30 signal_error "$word"; then
		read -r val <<< "$(sj shedding.value)"
		check_cmp "signal as a $kind: status says it is unreadable and why ($GOT)" "$val" = null
	else
		bad "signal as a $kind: status names it within 3 s" "signal_error '$GOT', value $(sj shedding.value)"
	fi
	reload_fast "signal as a $kind"
	n=$(grep -c "signal file:$SIG cannot be read: .*$word" "$DLOG")
	check_cmp "signal as a $kind: logged once" "$n" = 1
	rm -rf "$SIG" "$SIG.2"; echo 0.2 > "$SIG"
	wait_sj 30 value '^0\.2' || bad "signal as a $kind: the value comes back with the file" "value $GOT"
	echo 0.1 > "$SIG"
done

# --- B. a psi: signal that is a FIFO, by reload ----------------------------------------
mkfifo "$PFIFO"
policy "psi:$PFIFO" > "$FG_TMP/p.yaml"
reload_fast "psi: signal that is a FIFO"
if fg_wait_for "$DLOG" "reload: shedding: is a FIFO \(named pipe\), not a regular file.*keeps its previous settings" 30; then
	ok "psi: FIFO: the reload's shedding change is refused with the reason, the old signal stays"
else
	bad "psi: FIFO refused with a reason" "$(grep 'reload: shedding' "$DLOG" | tail -1)"
fi
check_cmp "psi: FIFO: the shedder still samples the file signal" "$(sj shedding.signal)" = "file:$SIG"
policy "file:$SIG" > "$FG_TMP/p.yaml"
rm -f "$PFIFO"
reload_fast "the file signal again"

# --- C. state files ----------------------------------------------------------------------
STATES=("$FG_TMP"/shed-*.state "$FG_TMP"/escalate-*.state /run/floodgate/"${PIN##*/}"-*.fleet)
for f in "${STATES[@]}"; do
	[ -f "$f" ] || bad "state file $f exists before the drill"
done
kill -STOP "$FG_DPID"
for f in "${STATES[@]}"; do rm -f "$f"; mkfifo "$f"; done
t0=$(fl_now); st "$FG_TMP/c.json"; rc=$?; ms=$(ms_since "$t0")
expect "state files as FIFOs (daemon stopped): status answers at once" "[ $rc = 0 ] && [ $ms -lt 2000 ]" \
	"floodgate status --json" "exit 0 within 2 s" "exit $rc after $ms ms"
t0=$(fl_now); timeout 5 "$FG" status > "$FG_TMP/c.txt" 2>&1; rc=$?; ms=$(ms_since "$t0")
expect "state files as FIFOs: status (text) answers at once" "[ $rc = 0 ] && [ $ms -lt 2000 ]" \
	"floodgate status" "exit 0 within 2 s" "exit $rc after $ms ms"
for f in "${STATES[@]}"; do rm -f "$f"; mkfifo "$f.tmp"; done
kill -CONT "$FG_DPID"
sleep 2
for f in "${STATES[@]}"; do
	check "FIFO at $(basename "$f").tmp: the daemon wrote its state file all the same" \
		bash -c "[ -f '$f' ] && [ ! -p '$f' ] && [ ! -e '$f.tmp' ]"
done
reload_fast "FIFOs at the state files' temporary names"

# --- D. the Redis socket's path ----------------------------------------------------------
mv "$SOCK" "$SOCK.real"
for kind in fifo file dir; do
	word=$(make_kind "$kind" "$SOCK")
	# the engine's connection lives on: drop it, so that it connects again
	timeout 5 redis-cli -s "$SOCK.real" CLIENT KILL TYPE normal > /dev/null
	n=30; reason=
	while [ $n -gt 0 ]; do
		st "$FG_TMP/d.json"
		reason=$(fl_rule_get "$FG_TMP/d.json" fl reason)
		case "$reason" in *"$word"*) break ;; esac
		sleep 0.1; n=$((n - 1))
	done
	rmax=$(fg_json_get "$FG_TMP/d.json" fleet.round_ms)
	expect "redis socket path as a $kind: the round fails at once and says what the path is" \
		"[ $n -gt 0 ] && awk -v m='$rmax' 'BEGIN { exit !(m < 20) }'" "unix:$SOCK as a $kind" \
		"reason names '$word', round < 20 ms" "reason '$reason', round $rmax ms"
done
# the path is free between these two: a round in that gap fails with "No such
# file", the outage's last error as much as the directory's "not a socket"
rm -rf "$SOCK"; mv "$SOCK.real" "$SOCK"
n=50
while [ $n -gt 0 ]; do
	st "$FG_TMP/d.json"
	[ "$(fl_rule_get "$FG_TMP/d.json" fl state)" = ok ] && break
	sleep 0.1; n=$((n - 1))
done
check_cmp "redis socket back: the fleet rule leases again" "$(fl_rule_get "$FG_TMP/d.json" fl state)" = ok
# status tells what is, and labels what was (issue 22, item 3)
read -r reason < <(fl_rule_get "$FG_TMP/d.json" fl reason)
last=$(fl_rule_get "$FG_TMP/d.json" fl last_error)
ago=$(fl_rule_get "$FG_TMP/d.json" fl last_error_s_ago)
expect "redis socket back: no error now; the outage's is history, with its age" \
	"[ '$reason' = null ] && echo '$last' | grep -qE 'not a socket|No such file' && awk -v a='$ago' 'BEGIN { exit !(a > 0 && a < 30) }'" \
	"state ok" "reason null, last_error names it, an age" "reason $reason, last_error '$last', $ago s ago"

# --- E. SIGTERM with a FIFO at the signal's path -------------------------------------------
make_kind fifo "$SIG" > /dev/null
sleep 0.5
t0=$(fl_now); fg_daemon_stop TERM; rc=$?; ms=$(ms_since "$t0")
expect "SIGTERM with a FIFO as the signal: acted on at once" "[ $rc = 0 ] && [ $ms -lt 3000 ]" \
	"SIGTERM" "exit 0 within 3 s" "exit $rc after $ms ms"
rm -f "$SIG"

# --- F. --pin-dir and --config pointing at a FIFO ----------------------------------------
mkfifo "$FG_TMP/pinfifo"
t0=$(fl_now); timeout 5 "$FG" --pin-dir "$FG_TMP/pinfifo" status > "$FG_TMP/f.out" 2>&1; rc=$?; ms=$(ms_since "$t0")
expect "floodgate --pin-dir FIFO: refused at once" "[ $rc = 1 ] && [ $ms -lt 2000 ]" \
	"status" "exit 1 within 2 s" "exit $rc after $ms ms: $(one_line 120 < "$FG_TMP/f.out")"
t0=$(fl_now)
fg_ns_exec r timeout 5 "$FGD" --pin-dir "$FG_TMP/pinfifo" --config "$FG_TMP/p.yaml" --foreground \
	> "$FG_TMP/f.out" 2>&1; rc=$?
ms=$(ms_since "$t0")
expect "floodgated --pin-dir FIFO: refused at once, for what it is" \
	"[ $rc != 0 ] && [ $rc != 124 ] && [ $ms -lt 3000 ] && grep -q 'pinfifo' '$FG_TMP/f.out'" \
	"floodgated" "an error within 3 s" "exit $rc after $ms ms: $(tail -1 "$FG_TMP/f.out" | one_line 120)"
t0=$(fl_now); timeout 5 "$FG" check "$FG_TMP/pinfifo" > "$FG_TMP/f.out" 2>&1; rc=$?; ms=$(ms_since "$t0")
expect "floodgate check FIFO: refused at once, says what it is" \
	"[ $rc = 1 ] && [ $ms -lt 2000 ] && grep -q 'is a FIFO' '$FG_TMP/f.out'" \
	"check" "exit 1 within 2 s" "exit $rc after $ms ms: $(one_line 120 < "$FG_TMP/f.out")"
rm -f "$FG_TMP/pinfifo"
fl_redis_stop
fg_finish
