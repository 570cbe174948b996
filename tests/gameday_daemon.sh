#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Game day, the daemon and the CLI's word (issue 8, items 6-8): floodgated
# on one end of a veth pair made here, and each promise tested where it
# broke:
#   1. the metrics port under a slow-loris: 200 connections from one
#      address and 200 from 25 others, each trickling a byte every 0.5 s;
#      a scrape from 127.0.0.2 still answers within 1 s, the attackers'
#      sockets are cut after the timeout, then the attacking address
#      scrapes too
#   2. a FIFO as the policy file: floodgated refuses it at once, `floodgate
#      check` returns within 1 s, and a running daemon whose file became a
#      FIFO refuses the reload, keeps ticking and answers SIGTERM
#   3. a reload that takes longer than 5 s (the daemon SIGSTOPped for 6 s)
#      is reported as the success it is; status says STOPPED meanwhile
#   4. a refused reload (max_sources changed) prints the daemon's reason
#   5. `detach --force` of a stopped daemon detaches, and nothing happens
#      later: a new daemon on the same pin dir stays attached
#   6. `floodgated -c relative.yaml` in the background starts and reloads
# Needs root. Removes its namespaces, pin dirs, temp dir and daemons (by
# PID) on exit. Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/gameday_lib.sh
gd_init
FG=$(realpath -m "$FG")
FGD=$(realpath -m "$FGD")
PORT=$((20000 + $$ % 20000))
BG_DAEMON=		# drill 6's daemon, not our child: stopped by PID at the end

gd_pair || { bad "setup: namespaces and veth pair"; fg_finish; }

gd_policy_one base 4096 flood 9 100/s 100 "metrics: \"127.0.0.1:$PORT\"     # the plain form: the default limits"

# ms since the epoch, for durations
ms() { date +%s%3N; }
# fgd_alive PID: a floodgated, not a zombie (drill 6's is not our child)
fgd_alive() {
	[ "$(cat "/proc/$1/comm" 2>/dev/null)" = floodgated ] &&
	! sed -E 's/.*\) //' "/proc/$1/stat" 2>/dev/null | grep -q '^[ZX]'
}
status_of() { "$FG" --pin-dir "$GD_PIN" status "$@" 2>&1; }
version() { status_of | sed -nE 's/^policy: +version ([0-9]+).*/\1/p'; }

# The slow-loris and the scraper, in Python (in rx, on its loopback).
cat > "$GD_TMP/loris.py" <<'PY'
import errno, json, os, socket, sys, time

def get(port, timeout, src=None):
    # one GET /metrics (from source address src if given): the whole answer
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                 source_address=(src, 0) if src else None)
    try:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                return data
            data += b
    finally:
        s.close()

def scrape(src, port, timeout):
    # one GET /metrics from source address src: "ok MS BYTES" or "fail MS WHY"
    t0 = time.monotonic()
    try:
        data = get(port, timeout, src)
    except OSError as e:
        print("fail %d %s" % ((time.monotonic() - t0) * 1000, e))
        return 1
    ms = (time.monotonic() - t0) * 1000
    if not data.startswith(b"HTTP/1.1 200") or b"floodgate_packets_total" not in data:
        print("fail %d %r" % (ms, data[:60]))
        return 1
    print("ok %d %d" % (ms, len(data)))
    return 0

def loris(port, out, secs, groups):
    # groups: "ADDR:N,ADDR:N": N connections from each source ADDR, each
    # sending a request line, then one header byte every 0.5 s
    socks = []
    for g in groups.split(","):
        a, n = g.split(":")
        for _ in range(int(n)):
            s = socket.socket()
            s.bind((a, 0))
            s.setblocking(False)
            try:
                s.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
            socks.append([s, None])
    t0 = time.monotonic()
    sent = False
    report = {}
    while time.monotonic() - t0 < secs:
        now = time.monotonic() - t0
        for c in socks:
            if c[1] is not None:
                continue
            try:
                c[0].send(b"GET /metrics HTTP/1.1\r\nX-a: " if not sent else b"b")
                if c[0].recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                    c[1] = now
            except BlockingIOError:
                pass
            except OSError:
                c[1] = now
        sent = True
        live = sum(1 for c in socks if c[1] is None)
        for mark in (0.5, 1.0):
            if now >= mark and str(mark) not in report:
                report[str(mark)] = live
        with open(out + ".tmp", "w") as f:
            json.dump({"conns": len(socks), "live": live, "t": round(now, 2),
                       "live_at": report,
                       "last_cut": round(max((c[1] or 0) for c in socks), 2)}, f)
        os.rename(out + ".tmp", out)
        if live == 0 and now > 1.0:
            break
        time.sleep(0.5)

def page(port, pattern):
    # the value of the first metrics line starting with pattern, or "none"
    try:
        data = get(port, 2)
    except OSError:
        data = b""
    for line in data.decode(errors="replace").splitlines():
        if line.startswith(pattern + " "):
            print(line.split()[-1])
            return 0
    print("none")
    return 1

if sys.argv[1] == "scrape":
    sys.exit(scrape(sys.argv[2], int(sys.argv[3]), float(sys.argv[4])))
if sys.argv[1] == "page":
    sys.exit(page(int(sys.argv[2]), sys.argv[3]))
loris(int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), sys.argv[5])
PY
scrape() { inrx "$GD_PY" "$GD_TMP/loris.py" scrape "$1" "$PORT" "${2:-1}"; }
page() { inrx "$GD_PY" "$GD_TMP/loris.py" page "$PORT" "$1"; }

# =========================================================================
# 1. the metrics endpoint under a slow-loris
# =========================================================================
if ! gd_start base; then
	bad "metrics: floodgated starts: $(tail -3 "$GD_LOG")"
else
	r=$(scrape 127.0.0.2 1)
	expect "metrics: a scrape before the attack" "[ '${r%% *}' = ok ]" "GET /metrics" "ok" "$r"
	groups="127.0.0.1:200"
	for i in $(seq 10 34); do groups+=",127.0.0.$i:8"; done
	inrx "$GD_PY" "$GD_TMP/loris.py" loris "$PORT" "$GD_TMP/loris.json" 8 "$groups" \
		> "$GD_TMP/loris.out" 2>&1 &
	LPID=$!
	sleep 1.2
	live=$(fg_json_get "$GD_TMP/loris.json" live)
	r2=$(scrape 127.0.0.2 1)
	expect "metrics under a slow-loris (400 trickling connections from 26 addresses): a scrape from 127.0.0.2 answers within 1 s" \
		"[ '${r2%% *}' = ok ]" "GET /metrics from 127.0.0.2" "ok in < 1000 ms" \
		"$r2 (ms bytes); attacker connections still open: $live of 400"
	expect "metrics under a slow-loris: served up to per_client (8) connections an address" \
		"[ '$live' = 208 ]" "200 from 127.0.0.1, 8 from each of 25 more" \
		"8 + 25 x 8 = 208 held" "$live held at +1.2 s"
	wait "$LPID"
	read -r left cut <<< "$(fg_json_get "$GD_TMP/loris.json" live last_cut)"
	expect "metrics: trickling connections are cut at the timeout (3 s), however slowly they send" \
		"[ '$left' = 0 ] && awk 'BEGIN { exit !($cut <= 4) }'" "a byte every 0.5 s" \
		"all cut within 3 s + 1 s" "$left still open, the last cut at +$cut s"
	r3=$(scrape 127.0.0.1 1)
	expect "metrics: the attacking address scrapes once its sockets are cut" "[ '${r3%% *}' = ok ]" \
		"GET /metrics from 127.0.0.1" "ok" "$r3"
	check "metrics: the daemon logged its limits" \
		grep -q "at most 1024 connections, 8 per client, 3 s per request" "$GD_LOG"
	gd_stop
fi

# =========================================================================
# 2. a FIFO as the policy file
# =========================================================================
mkfifo "$GD_TMP/fifo.yaml"
t0=$(ms)
out=$(inrx timeout -k 1 10 "$FGD" --config "$GD_TMP/fifo.yaml" --pin-dir "$(fg_pin fifo)" --foreground 2>&1)
rc=$?; dt=$(( $(ms) - t0 ))
expect "FIFO: floodgated refuses a FIFO as its policy at once" \
	"[ $rc = 1 ] && [ $dt -lt 1000 ] && echo '$out' | grep -q 'FIFO (named pipe), not a regular file'" \
	"--config FIFO" "exit 1 within 1 s, says why" "exit $rc after $dt ms: $(echo "$out" | one_line 160)"
check "FIFO: the refused start left no pin dir" [ ! -e "$(fg_pin fifo)" ]
t0=$(ms)
out=$(timeout -k 1 10 "$FG" check "$GD_TMP/fifo.yaml" 2>&1); rc=$?; dt=$(( $(ms) - t0 ))
expect "FIFO: floodgate check returns at once with an error" \
	"[ $rc = 1 ] && [ $dt -lt 1000 ] && echo '$out' | grep -q 'not a regular file'" \
	"check FIFO" "exit 1 within 1 s" "exit $rc after $dt ms: $(echo "$out" | one_line 160)"

cp "$GD_TMP/base.yaml" "$GD_TMP/live.yaml"
if ! gd_start live; then
	bad "FIFO: floodgated starts: $(tail -3 "$GD_LOG")"
else
	v0=$(version)
	rm "$GD_TMP/live.yaml"; mkfifo "$GD_TMP/live.yaml"
	t0=$(ms)
	out=$(timeout -k 1 10 "$FG" --pin-dir "$GD_PIN" reload 2>&1); rc=$?; dt=$(( $(ms) - t0 ))
	expect "FIFO: floodgate reload reports the refusal, at once" \
		"[ $rc = 1 ] && [ $dt -lt 1000 ] && echo '$out' | grep -q 'not a regular file'" \
		"reload, the config now a FIFO" "exit 1 within 1 s" \
		"exit $rc after $dt ms: $(echo "$out" | one_line 160)"
	kill -HUP "$FG_DPID"
	fg_wait_for "$GD_LOG" "running policy is unchanged" 20
	check "FIFO: SIGHUP: the daemon refuses the FIFO and logs why" \
		grep -q "live.yaml: is a FIFO (named pipe), not a regular file" "$GD_LOG"
	# still ticking: the metrics page, rendered once a tick, follows the counters
	p0=$(page 'floodgate_packets_total{rule="flood",outcome="pass"}')
	sent=$(gd_fgen -d "$GD_RX_IP" -s 10.213.0.9 -n 50 -r 1000)
	sleep 1.5
	p1=$(page 'floodgate_packets_total{rule="flood",outcome="pass"}')
	expect "FIFO: the daemon keeps ticking (the metrics page follows the counters)" \
		"[ '$p0' != none ] && [ '$p1' != none ] && [ $p1 -ge $((p0 + 50)) ]" "$sent frames" \
		"flood pass +50 on the page" "$p0 -> $p1"
	check_cmp "FIFO: the running policy is unchanged" "$(version)" = "$v0"
	t0=$(ms)
	fg_daemon_stop TERM; rc=$?; dt=$(( $(ms) - t0 ))
	expect "FIFO: the daemon answers SIGTERM (detaches, exits 0)" \
		"[ $rc = 0 ] && [ $dt -lt 3000 ] && [ ! -e '$GD_PIN' ]" "SIGTERM" \
		"exit 0 within 3 s, pin dir gone" "exit $rc after $dt ms, pin dir $([ -e "$GD_PIN" ] && echo left || echo gone)"
	gd_stop
fi

# =========================================================================
# 3. a reload slower than 5 s; 4. a refused reload
# =========================================================================
cp "$GD_TMP/base.yaml" "$GD_TMP/slow.yaml"
if ! gd_start slow; then
	bad "slow reload: floodgated starts: $(tail -3 "$GD_LOG")"
else
	v0=$(version)
	sed -i 's|rate: 100/s|rate: 200/s|' "$GD_TMP/slow.yaml"
	kill -STOP "$FG_DPID"
	# a signal is delivered asynchronously: wait until the kernel shows it stopped
	for _ in $(seq 100); do
		[ "$(awk '{print $3}' "/proc/$FG_DPID/stat" 2>/dev/null)" = T ] && break
		sleep 0.02
	done
	st=$(status_of); stj=$(status_of --json)
	printf '%s\n' "$st" > "$GD_TMP/status.txt"	# status text may hold quotes: grep a file
	expect "SIGSTOP: status says the daemon is stopped" \
		"grep -q 'floodgated pid $FG_DPID is STOPPED (SIGSTOP): the filter keeps enforcing; kill -CONT $FG_DPID' '$GD_TMP/status.txt'" \
		"kill -STOP" "daemon: ... STOPPED" "$(echo "$st" | grep '^daemon:')"
	echo "$stj" > "$GD_TMP/status.json"
	fg_json_check "SIGSTOP: status --json" status "$GD_TMP/status.json"
	check_cmp "SIGSTOP: status --json daemon.state, .running, .pid" \
		"$(fg_json_get "$GD_TMP/status.json" daemon.state daemon.running daemon.pid)" = "stopped false $FG_DPID"
	t0=$(ms)
	"$FG" --pin-dir "$GD_PIN" reload > "$GD_TMP/reload.out" 2> "$GD_TMP/reload.err" &
	RPID=$!
	sleep 6
	kill -CONT "$FG_DPID"
	wait "$RPID"; rc=$?; dt=$(( $(ms) - t0 ))
	v1=$(version)
	expect "reload slower than 5 s (daemon stopped 6 s): reported as the success it is" \
		"[ $rc = 0 ] && [ $dt -ge 6000 ] && grep -q 'policy version $v1 active' '$GD_TMP/reload.out' && [ $v1 -gt $v0 ]" \
		"reload, SIGSTOP 6 s, SIGCONT" "exit 0 after > 6 s, the new version" \
		"exit $rc after $dt ms: $(one_line < "$GD_TMP/reload.out"); version $v0 -> $v1"
	check "reload slower than 5 s: a note says what it waits for" \
		grep -q "is STOPPED (SIGSTOP): the reload waits until it continues" "$GD_TMP/reload.err"
	check_cmp "SIGCONT: status --json daemon.state" \
		"$(status_of --json | fg_json_get - daemon.state daemon.running)" = "running true"

	# 4. refused: max_sources changed (the file is valid: the CLI's own check passes)
	sed -i 's|max_sources: 4096|max_sources: 8192|' "$GD_TMP/slow.yaml"
	t0=$(ms)
	out=$("$FG" --pin-dir "$GD_PIN" reload 2>&1); rc=$?; dt=$(( $(ms) - t0 ))
	expect "refused reload (max_sources changed): the CLI prints the daemon's reason" \
		"[ $rc = 1 ] && [ $dt -lt 5000 ] && echo '$out' | grep -q 'refused the reload: max_sources changed from 4096 to 8192'" \
		"reload" "exit 1, the reason" "exit $rc after $dt ms: $(echo "$out" | one_line 200)"
	check_cmp "refused reload: the version stays" "$(version)" = "$v1"
	gd_stop
fi

# =========================================================================
# 5. detach --force of a stopped daemon
# =========================================================================
cp "$GD_TMP/base.yaml" "$GD_TMP/stopped.yaml"
if ! gd_start stopped; then
	bad "detach --force: floodgated starts: $(tail -3 "$GD_LOG")"
else
	old=$FG_DPID
	kill -STOP "$old"
	# the CLI kills our child: bash would say "Killed" on the script's stderr
	exec 3>&2 2>/dev/null
	t0=$(ms)
	out=$(timeout -k 1 30 "$FG" --pin-dir "$GD_PIN" detach --force 2>&1); rc=$?; dt=$(( $(ms) - t0 ))
	# gone (a zombie of ours until reaped), or still there with a signal pending?
	pst=$(sed -E 's/.*\) ([A-Za-z]).*/\1/' "/proc/$old/stat" 2>/dev/null)
	wrc=none
	if [ "${pst:-Z}" = Z ]; then
		wait "$old"; wrc=$?
	fi
	exec 2>&3 3>&-
	expect "detach --force of a stopped daemon: killed, detached" \
		"[ $rc = 0 ] && [ $wrc = 137 ] && [ ! -e '$GD_PIN' ] && ! ip -n $(fg_ns_name rx) link show gdr0 | grep -q xdp" \
		"SIGSTOP, detach --force" "exit 0, daemon SIGKILLed (137), no pin dir, no XDP" \
		"exit $rc after $dt ms, daemon exit $wrc (state ${pst:-gone}): $(echo "$out" | one_line 160)"
	expect "detach --force: no daemon is left to act later (no SIGTERM pending in a stopped one)" \
		"[ '${pst:-Z}' = Z ]" "-" "the stopped daemon gone" "process state ${pst:-gone}"
	if [ "${pst:-Z}" != Z ]; then
		kill -CONT "$old"	# what an operator does next: its pending SIGTERM acts now
		fg_wait_for "$GD_LOG" "signal 15" 30
	fi
	fg_bg_stop "$old" > /dev/null 2>&1	# reaped, or stopped by PID now
	FG_DPID=
	# and later: a new daemon on the same pin dir stays up and attached
	if gd_start stopped "$GD_PIN"; then
		sleep 1.5
		expect "detach --force: a new daemon on the pin dir stays attached" \
			"kill -0 $FG_DPID && [ -e '$GD_PIN/link_gdr0' ]" \
			"a new floodgated, 1.5 s" "running, link pinned" \
			"$(kill -0 "$FG_DPID" 2>/dev/null && echo running || echo gone), link $([ -e "$GD_PIN/link_gdr0" ] && echo pinned || echo missing)"
	else
		bad "detach --force: a new daemon starts on the pin dir" "$(tail -3 "$GD_LOG")"
	fi
	gd_stop
fi

# =========================================================================
# 6. floodgated -c relative.yaml in the background
# =========================================================================
GD_PIN=$(fg_pin relative)
cp "$GD_TMP/base.yaml" "$GD_TMP/relative.yaml"
out=$(cd "$GD_TMP" && fg_ns_exec rx timeout -k 1 30 "$FGD" -c relative.yaml --pin-dir "$GD_PIN" 2>&1); rc=$?
BG_DAEMON=$(status_of --json | fg_json_get - daemon.pid)
cfg=$(status_of --json | fg_json_get - config)
expect "floodgated -c relative.yaml without --foreground: starts" \
	"[ $rc = 0 ] && [ '${BG_DAEMON:-0}' != 0 ] && [ '$cfg' = '$GD_TMP/relative.yaml' ]" \
	"-c relative.yaml, in the background" "exit 0, a daemon, the absolute path recorded" \
	"exit $rc, pid ${BG_DAEMON:-none}, config $cfg: $(echo "$out" | one_line 160)"
if [ "${BG_DAEMON:-0}" != 0 ]; then
	v0=$(version)
	sed -i 's|rate: 100/s|rate: 300/s|' "$GD_TMP/relative.yaml"
	out=$(cd / && "$FG" --pin-dir "$GD_PIN" reload 2>&1); rc=$?
	expect "floodgated -c relative.yaml: reloads the same file" \
		"[ $rc = 0 ] && [ $(version) -gt $v0 ]" "reload" "exit 0, a new version" \
		"exit $rc, version $v0 -> $(version): $(echo "$out" | one_line 160)"
	out=$("$FG" --pin-dir "$GD_PIN" detach --force 2>&1); rc=$?
	expect "floodgated in the background: detach --force stops it (SIGTERM) and detaches" \
		"[ $rc = 0 ] && [ ! -e '$GD_PIN' ] && ! fgd_alive $BG_DAEMON" "detach --force" \
		"exit 0, pin dir gone, daemon gone" "exit $rc: $(echo "$out" | one_line 160)"
fi
# not our child: stopped here by PID, if it is still that daemon
if [ -n "$BG_DAEMON" ] && [ "$BG_DAEMON" != 0 ] && fgd_alive "$BG_DAEMON"; then
	kill -TERM "$BG_DAEMON"
	sleep 1
fi

fg_finish
