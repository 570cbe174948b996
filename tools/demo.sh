#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# The demo: two network namespaces joined by a veth pair; floodgated with the
# built-in default policy (examples/policy.yaml) on the receiving end; floods
# from many spoofed sources next to a well-behaved client; a live view of what
# was passed and dropped per rule; then everything is removed.
#
#   sudo make demo              (builds first)
#   sudo tools/demo.sh [SECONDS]    (default 12 s of flood)
#
# Addresses: 10.200.0.1 (client side) and 10.200.0.2 (server side) live only
# on the demo's own veth pair; the spoofed sources (198.18.0.0/15, the
# benchmarking range) exist only inside the frames sent over that pair.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUTPUT:-.output}
SECS=${1:-12}
POLICY=${POLICY:-examples/policy.yaml}

[ "$(id -u)" = 0 ] || { echo "demo: run as root (sudo make demo)" >&2; exit 1; }
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

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "1. Namespaces: flooders ($(fg_ns_name cli)) and a client ($(fg_ns_name good)), each on a veth pair to the server ($(fg_ns_name srv))"
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
"$OUT/floodgate" check "$POLICY" | sed -n '1,40p'
nsenter --net="$(fg_ns_path srv)" "$OUT/floodgated" --config "$POLICY" \
	--interface veth0 --interface veth1 --pin-dir "$PIN" --foreground >"$LOG" 2>&1 &
DPID=$!
for _ in $(seq 50); do
	"$OUT/floodgate" --pin-dir "$PIN" status >/dev/null 2>&1 && break
	sleep 0.1
done
"$OUT/floodgate" --pin-dir "$PIN" status || { cat "$LOG"; exit 1; }

FG() { "$OUT/floodgate" --pin-dir "$PIN" "$@"; }
MAC=$(ip -n "$(fg_ns_name srv)" -br link show veth0 | awk '{print $3}')

say "3. Floods for ${SECS}s, and a well-behaved client pinging 5 times a second (same icmp-echo rule)"
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

say "7. Kill switch: bypass for 3 s, then back to enforcing by itself (it never waits for a lock)"
FG bypass on --for 3s
FG status | grep -i bypass
sleep 3.5
FG status | grep -i bypass

say "8. Shadow from the CLI: an operator override on top of the file, until cleared"
FG mode shadow
FG status | grep -E '^mode'
FG mode file
FG status | grep -E '^mode'

say "9. Escalation: the ICMP flooder, throttled for more than 5 s, was put on the deny list by floodgated"
grep -m1 "escalating" "$LOG" || true
FG deny list | grep -E '^PREFIX|escalated' || true
FG deny del 10.200.0.77/32 >/dev/null

say "10. Incident-time deny for 3 s, no policy edit; it ends by itself (in the XDP program)"
FG deny add 10.200.0.66/32 --for 3s --comment "demo: the SYN flooder"
FG deny list
fg_bg cli "$OUT/fgen" -i veth0 --dst-mac "$MAC" -d 10.200.0.2 -s 10.200.0.66 --syn --dport 22 \
	-r 2000 --batch 32 -t 2 >/dev/null 2>&1
wait "$FG_BG_PID" 2>/dev/null
FG stats --json | python3 -c 'import json,sys; r=[x for x in json.load(sys.stdin)["rules"] if x["rule"]=="_global"][0]; print("   dropped by the runtime deny list so far (the escalated ICMP flooder too):", r["packets"]["rt_deny"], "packets")'
sleep 1.5
FG deny list

say "11. Cleaning up (floodgated detaches on SIGTERM; namespaces removed)"
kill -TERM "$DPID"; wait "$DPID" 2>/dev/null; DPID=
tail -n 5 "$LOG"
