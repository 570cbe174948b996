# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# shellcheck shell=bash
#
# Game-day helpers for tests/gameday_*.sh, on top of tests/lib.sh (sourced
# here: results, namespaces, pin dirs, daemons, counters, cleanup). Source it
# after `cd` to the repo:
#
#   . tests/gameday_lib.sh
#   gd_init                      # root/binaries check, $GD_TMP, trap
#   gd_pair                      # namespaces tx, rx and veth gdt0 <-> gdr0
#   gd_policy NAME <<'YAML' ...  # write $GD_TMP/NAME.yaml (interfaces: [gdr0] added)
#   gd_start NAME                # floodgated in rx on a pin dir of its own
#   fg_snap "$GD_PIN"; fg_stat "$FG_SNAP" RULE pass   # one snapshot, many reads
#   gd_fgen ARGS                 # fgen from tx to rx; prints the frames sent
#   fg_finish                    # stop, clean, check nothing is left, summary
#
# Every check prints one line: "ok - what: sent X, expected Y, measured Z" or
# "FAIL - ..." (expect, tests/lib.sh); a skipped drill says why.

. tests/lib.sh
GD_LONG=${FG_GAMEDAY:-0}
[ "$GD_LONG" = 1 ] || GD_LONG=0
GD_PY=$FG_PY
GD_TMP=
GD_PIN=			# the current pin dir
GD_LOG=			# the current daemon's log
GD_TX_IP=10.213.0.1; GD_RX_IP=10.213.0.2
GD_TX_IP6=fd00:213::1; GD_RX_IP6=fd00:213::2
GD_MAC=

# gd_init: checks, tmp dir, trap, the raw frame tool.
gd_init() {
	fg_init --root "$FGD" "$FG" "$FGEN" "$FGDUMP"
	GD_TMP=$FG_TMP
	gd_write_raw
}

# gd_pair: namespaces "tx" (sender) and "rx" (floodgate), veth gdt0 <-> gdr0.
gd_pair() {
	fg_ns_create tx && fg_ns_create rx || return 1
	fg_veth_create tx gdt0 rx gdr0 "$@" || return 1
	fg_ns_addr tx gdt0 "$GD_TX_IP/24" "$GD_TX_IP6/64" || return 1
	fg_ns_addr rx gdr0 "$GD_RX_IP/24" "$GD_RX_IP6/64" || return 1
	GD_MAC=$(fg_ns_mac rx gdr0)
	GD_NSRX=$(fg_ns_path rx)
}

intx() { fg_ns_exec tx "$@"; }
inrx() { fg_ns_exec rx "$@"; }

# gd_policy NAME: policy from stdin to $GD_TMP/NAME.yaml, attached to gdr0
gd_policy() {
	{ echo "interfaces: [gdr0]"; cat; } > "$GD_TMP/$1.yaml"
}

# gd_policy_one NAME MAX_SOURCES RULE DPORT RATE BURST [LINE...]: a policy of one
# rule RULE, RATE per source (burst BURST) on udp DPORT; each LINE (a top-level
# key) goes between max_sources: and rules:.
gd_policy_one() {
	local name=$1 max=$2 rule=$3 dport=$4 rate=$5 burst=$6
	shift 6
	{
		echo "max_sources: $max"
		[ $# -eq 0 ] || printf '%s\n' "$@"
		printf 'rules:\n  - name: %s\n    match: {proto: udp, dport: %s}\n' "$rule" "$dport"
		printf '    per_source: {rate: %s, burst: %s}\n' "$rate" "$burst"
	} | gd_policy "$name"
}

# gd_policy_flood NAME: the drills' common policy, one rule "flood" of
# 100/s per source (burst 100) on udp dport 9.
gd_policy_flood() { gd_policy_one "$1" 4096 flood 9 100/s 100; }

# gd_start_nobpffs FILE PIN LOG: floodgated in a private mount namespace
# without bpffs (and in rx for the network), foreground, log in LOG; its
# PID in PRIV_DPID. Does not wait.
gd_start_nobpffs() {
	unshare -m --propagation private sh -c '
	while mountpoint -q /sys/fs/bpf; do umount /sys/fs/bpf || exit 3; done
	exec nsenter --net="$1" "$2" --config "$3" --pin-dir "$4" --foreground' \
	sh "$GD_NSRX" "$FGD" "$1" "$2" > "$3" 2>&1 &
	fg_bg_adopt "$!"
	PRIV_DPID=$FG_BG_PID
}

# gd_start POLICY [PIN] [floodgated args]: floodgated in rx, foreground,
# log in $GD_TMP/POLICY.log, PID in FG_DPID; waits until it is up.
gd_start() {
	local pol=$1
	GD_PIN=${2:-$(fg_pin "$1")}
	shift; [ $# -gt 0 ] && shift
	GD_LOG=$GD_TMP/$pol.log
	fg_daemon_start rx "$GD_PIN" "$GD_TMP/$pol.yaml" "$GD_LOG" "$@"
}

# gd_stop: stop the daemon and remove its pin dir (detach).
gd_stop() {
	fg_daemon_stop TERM
	if [ -n "$GD_PIN" ] && [ -e "$GD_PIN" ]; then
		"$FG" --pin-dir "$GD_PIN" detach > /dev/null 2>&1
	fi
}

# gd_fgen ARGS...: fgen in tx out of gdt0 to the rx address and MAC, JSON
# result in $GD_TMP/fgen.json; prints the frames it handed to the veth.
gd_fgen() {
	intx "$FGEN" -i gdt0 --dst-mac "$GD_MAC" "$@" --json > "$GD_TMP/fgen.json" 2> "$GD_TMP/fgen.err"
	local rc=$?
	fg_json_get "$GD_TMP/fgen.json" packets
	return $rc
}

# gd_raw ARGS: raw frames and a receive counter, in Python (AF_PACKET):
#   send DEV KIND COUNT [SRC DST DPORT LEN]   KIND: eth-only ip4-trunc
#        ip4-badlen udp-trunc ip6-trunc tcp-badoff udp-jumbo
#   count DEV STOPFILE SRC...   count IPv4 frames from SRC... that reach the
#        stack of DEV (after XDP) until STOPFILE exists; prints "SRC N" lines
gd_raw() { "$GD_PY" "$GD_TMP/gd_raw.py" "$@"; }

gd_write_raw() {
	cat > "$GD_TMP/gd_raw.py" <<'PY'
import os, socket, struct, sys, time

def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff

def mac(dev):
    # SIOCGIFHWADDR: /sys shows the namespace that mounted it, not ours
    import fcntl
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    r = fcntl.ioctl(s.fileno(), 0x8927, struct.pack("256s", dev.encode()))
    return r[18:24]

def ip4(src, dst, proto, payload, tot=None, ihl=5):
    tot = 20 + len(payload) if tot is None else tot
    h = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, tot, 1, 0, 64, proto, 0,
                    socket.inet_aton(src), socket.inet_aton(dst))
    return h[:10] + struct.pack("!H", csum(h)) + h[12:] + payload

def udp(sport, dport, data):
    return struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data

cmd = sys.argv[1]
if cmd == "send":
    dev, kind, count = sys.argv[2], sys.argv[3], int(sys.argv[4])
    src = sys.argv[5] if len(sys.argv) > 5 else "10.213.0.1"
    dst = sys.argv[6] if len(sys.argv) > 6 else "10.213.0.2"
    dport = int(sys.argv[7]) if len(sys.argv) > 7 else 9
    flen = int(sys.argv[8]) if len(sys.argv) > 8 else 64
    dmac = bytes.fromhex(sys.argv[9].replace(":", "")) if len(sys.argv) > 9 else b"\xff" * 6
    eth4 = dmac + mac(dev) + b"\x08\x00"
    eth6 = dmac + mac(dev) + b"\x86\xdd"
    if kind == "eth-only":          # an Ethernet header saying IPv4, nothing after it
        f = eth4
    elif kind == "ip4-trunc":       # 10 bytes of a 20-byte IPv4 header
        f = eth4 + ip4(src, dst, 17, udp(40000, dport, b""))[:10]
    elif kind == "ip4-badlen":      # total length 1000 in a 60-byte frame
        f = eth4 + ip4(src, dst, 17, udp(40000, dport, b"x" * 18), tot=1000)
    elif kind == "udp-trunc":       # IP says 24 bytes: 4 of the 8-byte UDP header
        f = eth4 + ip4(src, dst, 17, udp(40000, dport, b"")[:4])
    elif kind == "tcp-badoff":      # TCP data offset 15 words in a 20-byte segment
        t = struct.pack("!HHIIBBHHH", 40000, dport, 1, 0, 0xf0, 0x02, 1024, 0, 0)
        f = eth4 + ip4(src, dst, 6, t)
    elif kind == "ip6-trunc":       # 30 bytes of a 40-byte IPv6 header
        f = eth6 + (b"\x60" + b"\0" * 39)[:30]
    elif kind == "udp-jumbo":       # one flen-byte frame, UDP to dport
        f = eth4 + ip4(src, dst, 17, udp(40000, dport, b"j" * (flen - 14 - 28)))
    elif kind.startswith("udp-vlan") or kind.startswith("syn-vlan"):
        # udp-vlan:100[:200[:300]] -- tags outermost first; 802.1ad outside
        tags = [int(x) for x in kind.split(":")[1:]]
        l2 = dmac + mac(dev)
        for i, v in enumerate(tags):
            l2 += struct.pack("!HH", 0x88a8 if i + 1 < len(tags) else 0x8100, v)
        l2 += b"\x08\x00"
        if kind.startswith("udp"):
            pl = udp(40000, dport, b"v" * max(0, flen - len(l2) - 28))
            f = l2 + ip4(src, dst, 17, pl)
        else:
            f = l2 + ip4(src, dst, 6, struct.pack("!HHIIBBHHH", 40000, dport, 1, 0, 0x50, 0x02, 1024, 0, 0))
    else:
        sys.exit("unknown kind " + kind)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((dev, 0))
    n = 0
    for _ in range(count):
        try:
            s.send(f)
            n += 1
        except OSError as e:
            print("send: %s" % e, file=sys.stderr)
            break
    print(n, len(f))
elif cmd == "count":
    dev, stop, srcs = sys.argv[2], sys.argv[3], sys.argv[4:]
    # classic BPF: IPv4 (no tag) and a source in srcs, else nothing
    ins = [(0x28, 0, 0, 12), (0x15, 0, 1 + 2 * len(srcs), 0x0800), (0x20, 0, 0, 26)]
    for i, a in enumerate(srcs):
        v = struct.unpack("!I", socket.inet_aton(a))[0]
        ins.append((0x15, 0, 1, v))
        ins.append((0x6, 0, 0, 0x40000))
    ins.append((0x6, 0, 0, 0))
    import ctypes
    prog = b"".join(struct.pack("HBBI", *x) for x in ins)
    buf = ctypes.create_string_buffer(prog)
    fprog = struct.pack("HL", len(ins), ctypes.addressof(buf))
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.setsockopt(socket.SOL_SOCKET, 26, fprog)      # SO_ATTACH_FILTER
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind((dev, 0))
    s.settimeout(0.05)
    # frames queued before the filter was attached may slip through: drain
    counts = {a: 0 for a in srcs}
    open(stop + ".ready", "w").close()
    while True:
        try:
            f, addr = s.recvfrom(65535)
        except socket.timeout:
            if os.path.exists(stop):
                break
            continue
        if addr[2] == socket.PACKET_OUTGOING or len(f) < 34 or f[12:14] != b"\x08\x00":
            continue
        a = socket.inet_ntoa(f[26:30])
        if a in counts:
            counts[a] += 1
    for a in srcs:
        print(a, counts[a])
PY
}
