#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The demo: two network namespaces joined by a veth pair; floodgated with the
# built-in default policy (examples/policy.yaml) on the receiving end; floods
# from many spoofed sources next to a well-behaved client; a live view of what
# was passed and dropped per rule; then everything is removed.
#
#   make demo                   (as root; builds first: about 90 s on 2 cores)
#   tools/demo.sh [SECONDS]     (as root; default 12 s of flood)
#
# Addresses: 10.200.0.1 (client side) and 10.200.0.2 (server side) live only
# on the demo's own veth pair; the spoofed sources (198.18.0.0/15, the
# benchmarking range) exist only inside the frames sent over that pair.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUTPUT:-.output}
SECS=${1:-12}
POLICY=${POLICY:-examples/policy.yaml}

[ "$(id -u)" = 0 ] || { echo "demo: run as root (su -c 'make demo', or sudo make demo)" >&2; exit 1; }
for b in floodgated floodgate fgen; do
	[ -x "$OUT/$b" ] || { echo "demo: $OUT/$b missing; run 'make' first" >&2; exit 1; }
done
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf

. tools/netns.sh
FG_NS_PREFIX="fgdemo$$-"
PIN=/sys/fs/bpf/fgdemo$$
DPID=
LOG=$(mktemp /tmp/fgdemo.XXXXXX.log)

cleanup() {
	[ -n "$DPID" ] && kill -TERM "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	[ -d "$PIN" ] && "$OUT/floodgate" --pin-dir "$PIN" detach --force >/dev/null 2>&1
	fg_ns_cleanup
	rm -f "$LOG"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# bold headings on a terminal only: a log or a pipe gets no escape codes
if [ -t 1 ]; then
	say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
else
	say() { printf '\n== %s\n' "$*"; }
fi

say "0. This kernel ($(uname -r)): what it refuses, and what the demo needs"
# what it refuses, each with the lines it wraps onto
"$OUT/floodgate" kernel | awk '/^  [a-z_0-9]+ +no / || /concurrency caps/ { p = 1; print; next }
	/^      / { if (p) print; next } { p = 0 }'
"$OUT/floodgate" check "$POLICY" > "$LOG.check" 2>&1
ck=$?
sed -n '/^on this kernel/,$p' "$LOG.check"
if [ $ck != 0 ]; then
	echo "demo: floodgated would refuse $POLICY on this kernel (above); nothing was started" >&2
	rm -f "$LOG.check"
	exit 1
fi
rm -f "$LOG.check"
echo "   everything the demo shows runs here ('degraded' above: another way, same result)"

say "1. Namespaces: flooders ($(fg_ns_name cli)), a client ($(fg_ns_name good)), a server"
echo "   ($(fg_ns_name srv)), with a veth pair from each of the two to the server"
fg_ns_create cli && fg_ns_create good && fg_ns_create srv || exit 1
fg_veth_create cli veth0 srv veth0 || exit 1
fg_veth_create good veth0 srv veth1 || exit 1
# the flooders' own addresses exist on the flooders' side, so the server's
# replies to what floodgate admits are delivered rather than piling up
# behind unanswered ARP (which would starve the server's shared ICMP
# socket and cost the client its echo replies -- not floodgate's doing)
fg_ns_addr cli veth0 10.200.0.1/24 fd00:200::1/64 10.200.0.66/32 10.200.0.77/32
fg_ns_addr srv veth0 10.200.0.2/24 fd00:200::2/64
fg_ns_addr good veth0 10.201.0.1/24
fg_ns_addr srv veth1 10.201.0.2/24
ip -n "$(fg_ns_name srv)" -br addr show
# the server kernel's own global ICMP reply limit (1000/s, burst 50) would
# otherwise mix its drops into what the client sees
ip netns exec "$(fg_ns_name srv)" sysctl -qw net.ipv4.icmp_msgs_per_sec=100000 net.ipv4.icmp_msgs_burst=10000

say "2. floodgated on the server's veth0 and veth1 with $POLICY"
"$OUT/floodgate" check "$POLICY" | sed -n '/^  rules/,/^tables/p' | sed '$d' | head -n 24
nsenter --net="$(fg_ns_path srv)" "$OUT/floodgated" --config "$POLICY" \
	--interface veth0 --interface veth1 --pin-dir "$PIN" --foreground >"$LOG" 2>&1 &
DPID=$!
FG() { "$OUT/floodgate" --pin-dir "$PIN" "$@"; }
# status from the server's namespace, where the interfaces are
FGS() { nsenter --net="$(fg_ns_path srv)" "$OUT/floodgate" --pin-dir "$PIN" "$@"; }
# wait for it to start, and say at once why when it does not
started=0
for _ in $(seq 100); do
	if ! kill -0 "$DPID" 2>/dev/null; then
		wait "$DPID"; rc=$?; DPID=
		echo "demo: floodgated exited ($rc) before it started; its own words:" >&2
		grep -E 'floodgated: ' "$LOG" | tail -n 5 >&2
		exit 1
	fi
	grep -q 'started; ' "$LOG" && { started=1; break; }
	sleep 0.1
done
[ $started = 1 ] || { echo "demo: floodgated has not started after 10 s; its log:" >&2; tail -n 20 "$LOG" >&2; exit 1; }
FGS status

MAC=$(ip -n "$(fg_ns_name srv)" -br link show veth0 | awk '{print $3}')

say "3. Floods for ${SECS}s, and a client pinging 5 times a second (rule icmp-echo too)"
echo "   - SYN flood to port 22 from one source (ssh-syn: 10/s, burst 20 per source)"
echo "   - DNS reflection: UDP from port 53, 4,096 spoofed sources in 198.18.0.0/20 (16 /24s)"
echo "     (dns-reflection: 1000/s per /24, 50000/s for all of them together)"
echo "   - ICMP echo flood from one source (icmp-echo: 100/s, burst 200)"
fg_bg cli "$OUT/fgen" -i veth0 --dst-mac "$MAC" -d 10.200.0.2 -s 10.200.0.66 --syn --dport 22 \
	-r 10000 --batch 32 -t "$SECS" --cpu 0 >/dev/null 2>&1
fg_bg cli "$OUT/fgen" -i veth0 --dst-mac "$MAC" -d 10.200.0.2 -s 198.18.0.0/20 --random \
	--sources 4096 --sport 53 --dport 33333 -r 80000 --batch 32 -t "$SECS" --cpu 1 >/dev/null 2>&1
fg_bg cli "$OUT/fgen" -i veth0 --dst-mac "$MAC" -d 10.200.0.2 -s 10.200.0.77 --icmp \
	-r 2000 --batch 32 -t "$SECS" >/dev/null 2>&1
fg_bg good ping -q -i 0.2 -w "$SECS" 10.201.0.2 >"$LOG.ping" 2>&1
PING=$FG_BG_PID

say "4. Live counters (floodgate stats --watch), then the most throttled sources"
timeout --foreground "$((SECS - 2))" "$OUT/floodgate" --pin-dir "$PIN" stats --watch 2 || true
FG top -n 5
wait "$PING" 2>/dev/null
say "5. The well-behaved client"
tail -n 2 "$LOG.ping"
rm -f "$LOG.ping"
say "6. Totals"
FG stats

say "7. Kill switch: bypass for 3 s, then enforcing again by itself (no lock, no wait)"
FG bypass on --for 3s
FGS status | grep -i bypass
sleep 3.5
FGS status | grep -i bypass

say "8. Shadow from the CLI: an override on top of the file, until cleared"
FG mode shadow
FGS status | grep -E '^mode'
FG mode file
FGS status | grep -E '^mode'

say "9. Escalation: floodgated put the ICMP flooder (throttled > 5 s) on the deny list"
grep -m1 "escalating" "$LOG" || true
FG deny list
FG deny del 10.200.0.77/32 >/dev/null

say "10. An incident-time deny for 3 s, no policy edit; it ends by itself in XDP"
FG deny add 10.200.0.66/32 --for 3s --comment "demo: the SYN flooder"
FG deny list
fg_bg cli "$OUT/fgen" -i veth0 --dst-mac "$MAC" -d 10.200.0.2 -s 10.200.0.66 --syn --dport 22 \
	-r 2000 --batch 32 -t 2 >/dev/null 2>&1
wait "$FG_BG_PID" 2>/dev/null
FG stats --json | python3 -c 'import json,sys; r=[x for x in json.load(sys.stdin)["rules"] if x["rule"]=="_global"][0]; print("   dropped by the runtime deny list so far (the escalated ICMP flooder too):", r["packets"]["rt_deny"], "packets")'
sleep 1.5
FG deny list

say "11. SYN authentication: floodgated restarted on a copy of the policy with a web rule that has syn_auth: cookie (docs/syn-auth.md)"
SYNPOL=$(mktemp /tmp/fgdemo.XXXXXX.yaml)
sed '/^rules:/a\
  - name: web\
    match: {proto: tcp, dport: 8080, tcp_flags: syn}\
    syn_auth: cookie\
    per_source: {rate: 20/s, burst: 20}' "$POLICY" > "$SYNPOL"
"$OUT/floodgate" check "$SYNPOL" | grep -E '^  syn_auth|^  +syn_auth +(ok|degraded|unavailable)'
# the daemon keeps its file: stop it (it detaches) and start it on the copy
kill -TERM "$DPID"; wait "$DPID" 2>/dev/null
nsenter --net="$(fg_ns_path srv)" "$OUT/floodgated" --config "$SYNPOL" \
	--interface veth0 --interface veth1 --pin-dir "$PIN" --foreground >>"$LOG" 2>&1 &
DPID=$!
for _ in $(seq 100); do grep -q "started; .*$SYNPOL" "$LOG" && break; sleep 0.1; done
# XDP_TX frames reach a veth peer only with NAPI: an XDP program on the client's end
ip -n "$(fg_ns_name good)" link set dev veth0 xdpdrv obj "$OUT/fgtest_xdp.bpf.o" sec xdp 2>/dev/null
fg_bg srv timeout 8 python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.201.0.2", 8080)); s.listen(128)
while True:
    c, _ = s.accept(); c.send(b"hi"); c.close()'
sleep 0.3
echo "   a SYN flood from 65,536 random spoofed sources for 2 s, and 20 real connects meanwhile"
fg_bg cli "$OUT/fgen" -i veth0 --dst-mac "$MAC" -d 10.200.0.2 -s 10.99.0.0/16 --random --syn \
	--dport 8080 -t 2 >/dev/null 2>&1
FLOODER=$FG_BG_PID
nsenter --net="$(fg_ns_path good)" python3 -c '
import socket, time
ok, t = 0, []
for i in range(20):
    t0 = time.monotonic()
    try:
        s = socket.create_connection(("10.201.0.2", 8080), timeout=3); ok += s.recv(2) == b"hi"; s.close()
        t.append((time.monotonic() - t0) * 1e3)
    except OSError:
        pass
    time.sleep(0.05)
t.sort()
print("   real connects: %d of 20, median %.2f ms" % (ok, t[len(t) // 2] if t else -1))'
wait "$FLOODER" 2>/dev/null
FGS status | sed -n '/^syn_auth:/,/first connect/p'
FG verified list
rm -f "$SYNPOL"

say "12. Cleaning up (floodgated detaches on SIGTERM; the namespaces are removed)"
kill -TERM "$DPID"; wait "$DPID" 2>/dev/null; DPID=
tail -n 5 "$LOG"
