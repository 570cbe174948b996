# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# shellcheck shell=bash
#
# Shared helpers for tests/gameday_*.sh. Source it after `cd` to the repo:
#
#   . tests/gameday_lib.sh
#   gd_init traffic              # root/binaries check, tmp dir, trap
#   gd_pair                      # namespaces tx, rx and veth gdt0 <-> gdr0
#   gd_policy NAME <<'YAML' ...  # write $GD_TMP/NAME.yaml (interfaces: [gdr0] added)
#   gd_start NAME                # floodgated in rx on a pin dir of its own
#   gd_stats; gd_get RULE pass   # floodgate stats --json, one number
#   gd_finish                    # stop, clean, check nothing is left, summary
#
# Every check prints one line: "ok - what: sent X, expected Y, measured Z" or
# "FAIL - ..."; a skipped drill says why. gd_finish removes everything this
# run made (daemons by PID, pin dirs, namespaces and with them the veths),
# then fails the run if any of it is still there, and prints the one summary
# line "N passed, N failed, N skipped".

set -u
GD_OUT=${OUTPUT:-.output}
FGD=$GD_OUT/floodgated
FG=$GD_OUT/floodgate
FGEN=$GD_OUT/fgen
GD_LONG=${FG_GAMEDAY:-0}
[ "$GD_LONG" = 1 ] || GD_LONG=0

pass=0; fail=0; skip=0
ok()   { echo "ok - $*"; pass=$((pass + 1)); }
bad()  { echo "FAIL - $*"; fail=$((fail + 1)); }
skp()  { echo "skip - $1: $2"; skip=$((skip + 1)); }
summary() { echo "$pass passed, $fail failed, $skip skipped"; }
# expect NAME COND SENT EXPECTED MEASURED: one check line
expect() {
	local name=$1 cond=$2
	if eval "$cond"; then ok "$name: sent $3, expected $4, measured $5"
	else bad "$name: sent $3, expected $4, measured $5"; fi
}

GD_PINS=()		# pin dirs this run made
GD_DPIDS=()		# daemons this run started
GD_DPID=		# the current one
GD_PIN=			# the current pin dir
GD_TX_IP=10.213.0.1; GD_RX_IP=10.213.0.2
GD_TX_IP6=fd00:213::1; GD_RX_IP6=fd00:213::2
GD_MAC=

# python3 from Debian if there, not a slow shim
GD_PY=python3
[ -x /usr/bin/python3 ] && GD_PY=/usr/bin/python3

# gd_init NAME: checks, tmp dir, namespace prefix, trap.
gd_init() {
	GD_NAME=$1
	if [ "$(id -u)" != 0 ]; then
		skp "gameday_$GD_NAME" "needs root"; summary; exit 0
	fi
	local b
	for b in "$FGD" "$FG" "$FGEN"; do
		if [ ! -x "$b" ]; then skp "gameday_$GD_NAME" "$b not built (make)"; summary; exit 0; fi
	done
	FG_NS_PREFIX="gd$$-"
	# shellcheck source=../tools/netns.sh
	. tools/netns.sh
	GD_TMP=$(mktemp -d "/tmp/fg-gameday-$GD_NAME.XXXXXX")
	mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
	trap 'gd_cleanup' EXIT
	trap 'gd_cleanup; trap - EXIT; exit 130' INT
	trap 'gd_cleanup; trap - EXIT; exit 143' TERM
	gd_write_py
	gd_write_raw
	GD_T0=$SECONDS
}

# gd_pair: namespaces "tx" (sender) and "rx" (floodgate), veth gdt0 <-> gdr0.
gd_pair() {
	fg_ns_create tx && fg_ns_create rx || return 1
	fg_veth_create tx gdt0 rx gdr0 "$@" || return 1
	fg_ns_addr tx gdt0 "$GD_TX_IP/24" "$GD_TX_IP6/64" || return 1
	fg_ns_addr rx gdr0 "$GD_RX_IP/24" "$GD_RX_IP6/64" || return 1
	GD_MAC=$(fg_ns_mac rx gdr0)
	GD_NSTX=$(fg_ns_path tx); GD_NSRX=$(fg_ns_path rx)
}

intx() { nsenter --net="$GD_NSTX" "$@"; }
inrx() { nsenter --net="$GD_NSRX" "$@"; }

# gd_policy NAME: policy from stdin to $GD_TMP/NAME.yaml, attached to gdr0
gd_policy() {
	{ echo "interfaces: [gdr0]"; cat; } > "$GD_TMP/$1.yaml"
}

# gd_start POLICY [PIN] [floodgated args]: floodgated in rx, foreground,
# log in $GD_TMP/POLICY.log; waits until it pinned its link and owns the dir.
gd_start() {
	local pol=$1 pin=${2:-/sys/fs/bpf/fg-gd$$-$1}
	shift; [ $# -gt 0 ] && shift
	GD_PIN=$pin
	GD_LOG=$GD_TMP/$pol.log
	local p known=0
	for p in "${GD_PINS[@]}"; do [ "$p" = "$pin" ] && known=1; done
	[ $known = 1 ] || GD_PINS+=("$pin")
	# nsenter execs floodgated: $! is the daemon
	nsenter --net="$GD_NSRX" "$FGD" --config "$GD_TMP/$pol.yaml" --pin-dir "$pin" \
		--foreground "$@" >> "$GD_LOG" 2>&1 &
	GD_DPID=$!
	GD_DPIDS+=("$GD_DPID")
	for _ in $(seq 100); do
		if [ -e "$pin/link_gdr0" ] && "$FG" --pin-dir "$pin" status 2>/dev/null | grep -q "pid $GD_DPID"; then
			return 0
		fi
		kill -0 "$GD_DPID" 2>/dev/null || { GD_DPID=; return 1; }
		sleep 0.1
	done
	return 1
}

# gd_kill [SIGNAL]: signal the current daemon (default TERM) and reap it.
gd_kill() {
	local sig=${1:-TERM}
	[ -n "$GD_DPID" ] || return 0
	kill -s "$sig" "$GD_DPID" 2>/dev/null
	for _ in $(seq 100); do kill -0 "$GD_DPID" 2>/dev/null || break; sleep 0.05; done
	kill -KILL "$GD_DPID" 2>/dev/null
	wait "$GD_DPID" 2>/dev/null
	GD_DPID=
}

# gd_stop: stop the daemon and remove its pin dir (detach).
gd_stop() {
	gd_kill TERM
	if [ -n "$GD_PIN" ] && [ -e "$GD_PIN" ]; then
		"$FG" --pin-dir "$GD_PIN" detach > /dev/null 2>&1
	fi
}

# gd_stats [PIN]: snapshot `floodgate stats --json` into $GD_TMP/stats.json
gd_stats() {
	"$FG" --pin-dir "${1:-$GD_PIN}" stats --json > "$GD_TMP/stats.json" 2> "$GD_TMP/stats.err"
}
# gd_get RULE FIELD [FILE]: a number from the snapshot. FIELD: an outcome
# (pass drop shadow allow deny bypass malformed nonip), "total" (all
# outcomes), or ev:NAME (insert overflow insert_limited ...).
gd_get() {
	"$GD_PY" - "$1" "$2" "${3:-$GD_TMP/stats.json}" <<'PY'
import json, sys
rule, field, path = sys.argv[1:4]
try:
    d = json.load(open(path))
except Exception:
    print(-1); sys.exit(0)
for r in d["rules"]:
    if r["rule"] == rule:
        if field == "total":
            print(sum(r["packets"].values()))
        elif field.startswith("ev:"):
            print(r["events"].get(field[3:], -1))
        elif field.startswith("bytes:"):
            print(r["bytes"].get(field[6:], -1))
        else:
            print(r["packets"].get(field, -1))
        break
else:
    print(0)
PY
}
# gd_sum FIELD: FIELD summed over every row (e.g. total = every packet seen)
gd_sum() {
	"$GD_PY" - "$1" "$GD_TMP/stats.json" <<'PY'
import json, sys
field, path = sys.argv[1:3]
d = json.load(open(path))
n = 0
for r in d["rules"]:
    if field == "total":
        n += sum(r["packets"].values())
    elif field.startswith("ev:"):
        n += r["events"].get(field[3:], 0)
    else:
        n += r["packets"].get(field, 0)
print(n)
PY
}
# gd_id RULE: the stats row of RULE (from the last snapshot)
gd_id() {
	"$GD_PY" -c 'import json,sys
for r in json.load(open(sys.argv[2]))["rules"]:
    if r["rule"] == sys.argv[1]: print(r["id"])' "$1" "$GD_TMP/stats.json"
}

# gd_fgen ARGS...: fgen in tx out of gdt0 to the rx address and MAC, JSON
# result in $GD_TMP/fgen.json; prints the frames it handed to the veth.
gd_fgen() {
	intx "$FGEN" -i gdt0 --dst-mac "$GD_MAC" "$@" --json > "$GD_TMP/fgen.json" 2> "$GD_TMP/fgen.err"
	local rc=$?
	gd_jnum packets "$GD_TMP/fgen.json"
	return $rc
}
# gd_jnum KEY FILE: a top-level number from a JSON object (0 if absent)
gd_jnum() {
	"$GD_PY" -c 'import json,sys
try: print(json.load(open(sys.argv[2])).get(sys.argv[1], 0))
except Exception: print(0)' "$1" "$2"
}

# gd_bpf ARGS: the map reader below (direct bpf(2) syscalls, fast enough to
# poll counters every millisecond).
gd_bpf() { "$GD_PY" "$GD_TMP/gd_bpf.py" "$@"; }

gd_write_py() {
	cat > "$GD_TMP/gd_bpf.py" <<'PY'
# Reads floodgate's pinned maps with bpf(2) directly (no libbpf):
#   stats PIN ROW                   -> "pkts..., ev..." of one row, summed over CPUs
#   poll PIN ROW STOPFILE [QUIET_S ADDR RATE] -> watch a row until STOPFILE
#                                      exists and it is quiet (see below)
#   tat PIN ADDR RULE               -> the IPv4 bucket's tat (time units), -1 if
#                                      absent
#   count PIN                       -> entries in fg_src4
#   now                             -> CLOCK_MONOTONIC_COARSE ns, the program's clock
import ctypes, os, socket, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
NR_BPF = {"x86_64": 321, "aarch64": 280}[os.uname().machine]
libc.syscall.restype = ctypes.c_long

def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, 128)
    r = libc.syscall(NR_BPF, cmd, buf, 128)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r

def obj_get(path):
    p = ctypes.create_string_buffer(path.encode())
    return bpf(7, struct.pack("QII", ctypes.addressof(p), 0, 0))

def lookup(fd, key, vsize):
    k = ctypes.create_string_buffer(key, len(key))
    v = ctypes.create_string_buffer(vsize)
    bpf(1, struct.pack("IIQQQ", fd, 0, ctypes.addressof(k), ctypes.addressof(v), 0))
    return v.raw

def next_key(fd, key, ksize):
    k = ctypes.create_string_buffer(key, ksize) if key is not None else None
    n = ctypes.create_string_buffer(ksize)
    try:
        bpf(4, struct.pack("IIQQ", fd, 0, ctypes.addressof(k) if k else 0, ctypes.addressof(n)))
    except OSError:
        return None
    return n.raw

def map_info(fd):
    info = ctypes.create_string_buffer(96)
    bpf(15, struct.pack("IIQ", fd, 96, ctypes.addressof(info)))
    return info.raw

def map_type(fd):
    return struct.unpack_from("I", map_info(fd), 0)[0]

# fg_src4 (include/floodgate.h struct fg_set4): 1 << fg_ctl.src4_bits sets
# of 8 ways, 8 keys {addr be32, rule u8, used u8, gen u16} then 8 tats then
# 8 drops; a key's set is fmix64(key ^ fg_ctl.seed4) >> (64 - bits).
WAYS, SET_SIZE, CTL_SIZE = 8, 192, 88
M64 = (1 << 64) - 1

def fmix64(x):
    x ^= x >> 33; x = (x * 0xff51afd7ed558ccd) & M64
    x ^= x >> 33; x = (x * 0xc4ceb9fe1a85ec53) & M64
    x ^= x >> 33
    return x

def src4_slot(pin, addr, rid, gen):
    # (fd of fg_src4, set index, key word) of a source
    ctlfd = obj_get(pin + "/fg_ctl")
    ctl = lookup(ctlfd, struct.pack("I", 0), CTL_SIZE)
    os.close(ctlfd)
    seed, bits = struct.unpack_from("<QI", ctl, 32)
    key = struct.unpack("<Q", socket.inet_aton(addr) + struct.pack("<BBH", rid, 1, gen))[0]
    return obj_get(pin + "/fg_src4"), fmix64(key ^ seed) >> (64 - bits), key

def src4_read(slot):
    # (tat, drops) of a source's way, or None when it has none
    fd, idx, key = slot
    v = lookup(fd, struct.pack("I", idx), SET_SIZE)
    keys = struct.unpack_from("<8Q", v, 0)
    for w in range(WAYS):
        if keys[w] == key:
            return struct.unpack_from("<Q", v, 64 + 8 * w)[0], struct.unpack_from("<Q", v, 128 + 8 * w)[0]
    return None

def ncpus():
    s = open("/sys/devices/system/cpu/possible").read().strip()
    n = 0
    for part in s.split(","):
        a, _, b = part.partition("-")
        n += int(b or a) - int(a) + 1
    return n

NOUT, NEV = 8, 10
COARSE = 6    # CLOCK_MONOTONIC_COARSE: what bpf_ktime_get_coarse_ns reads
WORDS = 2 * NOUT + NEV
NCPU = ncpus()

def row(fd, r):
    raw = lookup(fd, struct.pack("I", r), WORDS * 8 * NCPU)
    tot = [0] * WORDS
    for c in range(NCPU):
        w = struct.unpack_from("%dQ" % WORDS, raw, c * WORDS * 8)
        for i in range(WORDS):
            tot[i] += w[i]
    return tot

cmd = sys.argv[1]
if cmd == "now":
    print(time.clock_gettime_ns(COARSE))
elif cmd == "stats":
    fd = obj_get(sys.argv[2] + "/fg_stats")
    t = row(fd, int(sys.argv[3]))
    print(" ".join(map(str, t[:NOUT] + t[2 * NOUT:])))
elif cmd == "poll":
    # Watch a row: t0 = the last read that still showed the starting total
    # and t0n the read after it (the first packet came in [t0, t0n]); t1p =
    # the last read before the final total showed and t1 the first read
    # that showed it (the last packet came in [t1p, t1]). Prints
    # "T_upper T_lower total pass drop gap_ms win_s win_pass win_read_ms
    # win_tat_pkts win_in_debt":
    # T_upper = t1 - t0, T_lower =
    # t1p - t0n bound the time between floodgate's first and last packet;
    # counts are deltas; gap_ms is the longest time the row stood still in
    # between (an idle sender loses bucket tokens beyond burst/rate).
    # CLOCK_MONOTONIC is the clock bpf_ktime_get_ns reads; the coarse
    # clock lags it by less than a tick.
    fd = obj_get(sys.argv[2] + "/fg_stats")
    r, stop = int(sys.argv[3]), sys.argv[4]
    quiet_ns = int(float(sys.argv[5]) * 1e9) if len(sys.argv) > 5 else 300000000
    # optional: ADDR RATE -- also read that source's bucket with the counters
    tfd = tslot = None
    if len(sys.argv) > 7:
        gen = struct.unpack_from("H", lookup(obj_get(sys.argv[2] + "/fg_names"), struct.pack("I", r), 56), 48)[0]
        tslot = src4_slot(sys.argv[2], sys.argv[6], r, gen)
        tfd = tslot[0]
        inc = round((10**9 << 6) / float(sys.argv[7]))
    def tat():
        if tslot is None:
            return 0
        try:
            w = src4_read(tslot)
            return w[0] if w else 0
        except OSError:
            return 0
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -20)
    except OSError:
        pass
    t = row(fd, r)
    base = t
    start = sum(t[:NOUT])
    clk = lambda: time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    t0 = clk()
    t0n = None
    last_total, prev, t1, t1p = start, t0, None, None
    last_change, gap = None, 0
    samples = []
    while True:
        before = clk()
        tt = row(fd, r)
        now = clk()
        tot = sum(tt[:NOUT])
        samples.append((before, now, tt[0], time.clock_gettime_ns(COARSE), tat()))
        if tot == start:
            t0 = now
        elif t0n is None:
            t0n = now
        if tot != last_total:
            if last_change is not None and prev - last_change > gap:
                gap = prev - last_change
            last_total, t = tot, tt
            t1, t1p, last_change = now, prev, now
        prev = now
        if os.path.exists(stop) and (last_change is None or now - last_change > quiet_ns):
            break
        time.sleep(0.0002)
    # a window inside the flood, 0.5 s in from both ends: pass delta,
    # its length and how long the reads took
    win = "0 0 0 0 0"
    if t1 is not None and t0n is not None and t1p - t0n > 1.2e9:
        a = min((s for s in samples if s[0] >= t0n + 5e8), key=lambda s: s[0])
        z = max((s for s in samples if s[1] <= t1p - 5e8), key=lambda s: s[1])
        # its length on the program's own clock, CLOCK_MONOTONIC_COARSE
        # with a bucket: packets its tat advanced by (tat moves by inc per
        # admitted packet while it stays ahead of now) and whether it was
        # ahead of now (in debt) at both reads
        tp = indebt = 0
        if tfd is not None and tfd < 0:
            indebt = 2      # the bucket could not be read
        elif tfd is not None:
            tp = round((z[4] - a[4]) / inc)
            indebt = int(a[4] > (a[3] << 6) and z[4] > (z[3] << 6))
        win = "%.6f %d %.3f %d %d" % ((z[3] - a[3]) / 1e9, z[2] - a[2],
                                      ((a[1] - a[0]) + (z[1] - z[0])) / 2e6, tp, indebt)
    if t1 is None:
        print(0, 0, 0, 0, 0, 0, win)
    else:
        print("%.6f %.6f %d %d %d %.1f %s" % ((t1 - t0) / 1e9, max(0, t1p - t0n) / 1e9, tot - start,
                                          t[0] - base[0], t[1] - base[1], gap / 1e6, win))
elif cmd == "tat":
    # the rule's current generation is in fg_names[id] (name[48], gen, in_use)
    rid = int(sys.argv[4])
    gen = struct.unpack_from("H", lookup(obj_get(sys.argv[2] + "/fg_names"), struct.pack("I", rid), 56), 48)[0]
    w = src4_read(src4_slot(sys.argv[2], sys.argv[3], rid, gen))
    print(w[0] if w else -1)
elif cmd == "count":
    fd = obj_get(sys.argv[2] + "/fg_src4")
    n = 0
    for i in range(struct.unpack_from("I", map_info(fd), 16)[0]):
        keys = struct.unpack_from("<8Q", lookup(fd, struct.pack("I", i), SET_SIZE), 0)
        n += sum(1 for k in keys if k)
    print(n)
PY
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

# gd_cleanup: everything this run made, by PID and by name. Idempotent.
gd_cleanup() {
	local pid p
	for pid in "${GD_DPIDS[@]}"; do
		if kill -0 "$pid" 2>/dev/null; then
			kill -TERM "$pid" 2>/dev/null
			for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
			kill -KILL "$pid" 2>/dev/null
		fi
		wait "$pid" 2>/dev/null
	done
	GD_DPID=
	type fg_ns_cleanup > /dev/null 2>&1 && fg_ns_cleanup
	for p in "${GD_PINS[@]}"; do
		[ -e "$p" ] || continue
		"$FG" --pin-dir "$p" detach > /dev/null 2>&1
		if [ -d "$p" ]; then
			rm -f "$p"/link_* "$p"/fg_* 2>/dev/null
			rmdir "$p" 2>/dev/null
		fi
	done
	[ -n "${GD_TMP:-}" ] && [ "${GD_KEEP_TMP:-0}" != 1 ] && rm -rf "$GD_TMP"
	return 0
}

# gd_leftovers: what of ours is still there (empty when clean)
gd_leftovers() {
	local pid p
	for pid in "${GD_DPIDS[@]}" "${FG_BG_PIDS[@]}"; do
		kill -0 "$pid" 2>/dev/null && echo "process $pid"
	done
	for p in "${GD_PINS[@]}"; do [ -e "$p" ] && echo "pin dir $p"; done
	fg_ns_leftovers | sed 's/^/namespace /'
	# the veth ends live only in our namespaces; an end that escaped would
	# be in ours
	ip -o link show 2>/dev/null | grep -oE 'gd[tr][0-9]+' | sed 's/^/link /'
}

# gd_finish: clean up, check that nothing is left, summary, exit status
gd_finish() {
	if [ "$fail" != 0 ] && [ -n "${GD_LOG:-}" ] && [ -f "$GD_LOG" ]; then
		echo "--- last daemon log ($GD_LOG)"; tail -n 20 "$GD_LOG"
	fi
	GD_KEEP_TMP=0
	gd_cleanup
	local left
	left=$(gd_leftovers)
	if [ -z "$left" ]; then
		ok "cleanup: namespaces, veths, pin dirs (${#GD_PINS[@]}) and daemons (${#GD_DPIDS[@]}) removed: expected none left, found none"
	else
		bad "cleanup: left behind: $(echo "$left" | tr '\n' ' ')"
	fi
	echo "# gameday_$GD_NAME took $((SECONDS - GD_T0)) s"
	trap - EXIT INT TERM
	summary
	[ "$fail" = 0 ]
	exit $?
}
