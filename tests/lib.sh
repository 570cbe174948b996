# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# shellcheck shell=bash
#
# The one test library: every tests/*.sh sources it after `cd` to the
# repository.
#
#   . tests/lib.sh
#   fg_init --root "$FGD" "$FG"     # not root, or a binary not built: one
#                                   # skip, the summary, exit 0; then $FG_TMP,
#                                   # bpffs mounted, the cleanup trap
#   fg_init --root --pin NAME ...   # also PIN=$(fg_pin NAME), exported as
#                                   # FLOODGATE_PIN_DIR, and DLOG (daemon log)
#   ok MSG | bad MSG [DETAIL] | skip WHAT [WHY]     # counted
#   check NAME CMD...               # ok when CMD succeeds
#   check_cmp NAME MEASURED OP EXPECTED     # OP: -eq -ge -gt -le -lt -ne = !=
#   check_near NAME MEASURED EXPECTED PCT   # within PCT % of EXPECTED
#   expect NAME COND SENT EXPECTED MEASURED # COND is evaluated (a drill line)
#   fg_finish                       # clean up, fail on leftovers, summary, exit
#
# Every check prints one line, "ok - ...", "FAIL - ..." or "skip - ...: why",
# and the last line is "N passed, N failed, N skipped" (summary; its exit
# status is non-zero after a failure).
#
# What a test makes, fg_cleanup removes (also on EXIT, INT and TERM), and
# fg_finish then fails the script if any of it is still there:
#   - namespaces and veth pairs: tools/netns.sh (fg_ns_create, fg_veth_create,
#     fg_ns_exec, fg_bg, ...), sourced here; names are "fg<pid>-NAME";
#   - pin dirs: fg_pin NAME gives /sys/fs/bpf/fg<pid>-NAME; every pin dir
#     with that prefix is detached and removed;
#   - processes: fg_bg (and fg_daemon_start) record them; any background job
#     of the script still running is stopped by PID too.
#
# Daemons: fg_daemon_start NS PIN CONFIG LOG [ARGS] runs floodgated in NS
# (FG_DAEMON_WRAP=(valgrind ...) in front, if set) and waits until it says
# it started; its PID is FG_DPID. fg_daemon_stop [SIGNAL] stops it.
# fg_daemon_up NS CONFIG NAME [ARGS] starts it on $PIN, logging to $DLOG,
# or fails NAME and ends the test.
#
# Counters, one way: `floodgate --pin-dir PIN stats --json`, parsed strictly.
#   fg_snap PIN [FILE]          snapshot into FILE (default $FG_SNAP)
#   fg_stat SRC RULE FIELD      SRC: a pin dir, or a snapshot file (*.json);
#                               FIELD: pass drop shadow allow deny bypass
#                               malformed nonip rt_allow rt_deny cap shed shed_shadow
#                               deny_shadow rt_deny_shadow malformed_shadow cap_shadow, total,
#                               bytes:OUTCOME, ev:EVENT
#                               0 if RULE has no row, -1 if it cannot be read
#   fg_event SRC RULE EVENT     = fg_stat SRC RULE ev:EVENT
#   fg_stat_sum SRC FIELD       FIELD summed over every row
#   fg_rule_id SRC RULE         RULE's stats row
# Maps beyond the counters: $FGDUMP (tools/fgdump.c, through the project's
# own library), or bpftool's BTF: fg_btf_member MAP-PIN MEMBER.
# JSON: fg_json_get FILE KEY... (values by key path, 0 if absent) and
# fg_json_check NAME SCHEMA FILE (duplicate keys refused, required keys and
# types checked; SCHEMA: stats, top, status, rtlist).

set -u
FG_OUT=${OUTPUT:-.output}
FG=$FG_OUT/floodgate
FGD=$FG_OUT/floodgated
FGEN=$FG_OUT/fgen
FGDUMP=$FG_OUT/fgdump
FG_NAME=$(basename "$0" .sh)
# the CLI's text is wrapped at 80 columns, or $COLUMNS: the tests grep whole
# lines, so a line per item (test_cli_ops and e2e_ops unset it to check the 80)
export COLUMNS=1000
FG_PIN_PREFIX=/sys/fs/bpf/fg$$-
FG_NS_PREFIX=fg$$-		# namespaces, as the pin dirs: fg<pid>-NAME
FG_TMP=
FG_SNAP=
FG_DPID=
FG_LOGS=()		# printed (tail) when the script failed
FG_DAEMON_WRAP=()
FG_T0=$SECONDS
FG_NPASS=0; FG_NFAIL=0; FG_NSKIP=0
# python3 from Debian if there, not a slow shim
FG_PY=python3
[ -x /usr/bin/python3 ] && FG_PY=/usr/bin/python3

# shellcheck source=../tools/netns.sh
. tools/netns.sh

# --- results ---------------------------------------------------------------------

ok() { echo "ok - $*"; FG_NPASS=$((FG_NPASS + 1)); }
# bad WHAT [DETAIL...]
bad() {
	local what=$1; shift
	echo "FAIL - $what${*:+: $*}"
	FG_NFAIL=$((FG_NFAIL + 1))
}
# skip WHAT [WHY...]
skip() {
	local what=$1; shift
	echo "skip - $what${*:+: $*}"
	FG_NSKIP=$((FG_NSKIP + 1))
}
summary() {
	echo "$FG_NPASS passed, $FG_NFAIL failed, $FG_NSKIP skipped"
	[ "$FG_NFAIL" = 0 ]
}
fg_failed() { [ "$FG_NFAIL" != 0 ]; }
# one_line [WIDTH]: stdin on one line, cut to WIDTH (300) characters
one_line() { tr '\n' ' ' | sed 's/ *$//' | cut -c1-"${1:-300}"; }
# fg_state_file KIND PIN: the path of a daemon's state file KIND (start,
# escalate, shed, policy) for pin dir PIN in the run dir, as fg_state_path
# (user/lib/sysutil.c) makes it
fg_state_file() {
	local esc=${2#/}
	esc=${esc//\//_}
	printf '%s/%s-%s.state' "${FLOODGATE_RUN_DIR:-/run/floodgate}" "$1" "$esc"
}

# check NAME CMD...: ok when CMD exits 0
check() {
	local name=$1 rc; shift
	"$@"; rc=$?
	if [ $rc = 0 ]; then ok "$name"
	else bad "$name" "expected exit 0, measured exit $rc of: $(echo "$*" | one_line 200)"; fi
}

# check_cmp NAME MEASURED OP EXPECTED: [ MEASURED OP EXPECTED ]
check_cmp() {
	local name=$1 got=$2 op=$3 want=$4 sym
	case "$op" in
	-eq|=) sym="=" ;; -ne|!=) sym="!=" ;; -gt) sym=">" ;; -ge) sym=">=" ;;
	-lt) sym="<" ;; -le) sym="<=" ;; *) bad "$name" "check_cmp: unknown operator $op"; return ;;
	esac
	if test "$got" "$op" "$want" 2>/dev/null; then ok "$name: expected $sym $want, measured $got"
	else bad "$name" "expected $sym $want, measured '$got'"; fi
}

# within A B PCT: |A - B| <= B * PCT / 100
within() { awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= b * p / 100) }'; }

# check_near NAME MEASURED EXPECTED PCT: MEASURED within PCT % of EXPECTED
check_near() {
	if within "$2" "$3" "$4"; then ok "$1: expected $3 +- $4 %, measured $2"
	else bad "$1" "expected $3 +- $4 %, measured '$2'"; fi
}

# expect NAME COND SENT EXPECTED MEASURED: COND is evaluated by the shell
expect() {
	local name=$1 cond=$2
	if eval "$cond"; then ok "$name: sent $3, expected $4, measured $5"
	else bad "$name: sent $3, expected $4, measured $5"; fi
}

# --- set-up and tear-down ----------------------------------------------------------

fg_require_root() {
	[ "$(id -u)" = 0 ] && return 0
	skip "$FG_NAME" "needs root"; summary; exit 0
}

# fg_require_bins BIN...: each must be built
fg_require_bins() {
	local b
	for b in "$@"; do
		[ -x "$b" ] && continue
		skip "$FG_NAME" "$b not built (make)"; summary; exit 0
	done
}

# fg_private_mounts "$0" "$@": run the script again in a mount namespace of
# its own, with a bpffs and a /run of its own, so that host-wide state some
# tools keep (libxdp pins under /sys/fs/bpf/xdp, xdp-filter its lock in
# /run) is neither shared with another test nor left behind: it goes away
# with the script. Returns at once when done already, or when it cannot be
# done (not root, no unshare): FG_PRIVATE=1 says it was.
fg_private_mounts() {
	[ -z "${FG_PRIVATE:-}" ] || return 0
	[ "$(id -u)" = 0 ] && command -v unshare > /dev/null || return 0
	export FG_PRIVATE=1
	exec unshare -m --propagation private bash -c \
		'mount -t bpf bpf /sys/fs/bpf && mount -t tmpfs tmpfs /run && exec bash "$0" "$@"' \
		"$@"
}

# fg_init [--root] [BIN...]: the checks above (needs root; each BIN built),
# then $FG_TMP, bpffs mounted, the cleanup trap
fg_init() {
	local pin=
	if [ "${1:-}" = --root ]; then
		fg_require_root
		shift
	fi
	if [ "${1:-}" = --pin ]; then
		pin=$2
		shift 2
	fi
	fg_require_bins "$@"
	FG_TMP=$(mktemp -d "/tmp/fg-$FG_NAME.XXXXXX") || { bad "$FG_NAME: mktemp"; summary; exit 1; }
	FG_SNAP=$FG_TMP/stats.json
	if [ "$(id -u)" = 0 ] && ! mountpoint -q /sys/fs/bpf; then
		mount -t bpf bpf /sys/fs/bpf || { bad "$FG_NAME: mount bpffs"; summary; exit 1; }
	fi
	fg_ns_trap fg_cleanup
	FG_T0=$SECONDS
	if [ -n "$pin" ]; then
		PIN=$(fg_pin "$pin")
		DLOG=$FG_TMP/daemon.log
		export FLOODGATE_PIN_DIR=$PIN
	fi
}

# fg_pair [-q] NS1 DEV1 "ADDR..." NS2 DEV2 "ADDR...": two fresh namespaces
# (-q: without IPv6, fg_ns_quiet), a veth pair DEV1 <-> DEV2 between them
# and the addresses on each end; MAC is DEV2's, for frames sent to it. On
# failure: one failed check "setup", then fg_finish.
fg_pair() {
	local q= a1 a2
	[ "${1:-}" = -q ] && { q=1; shift; }
	read -ra a1 <<< "$3"
	read -ra a2 <<< "$6"
	if fg_ns_create "$1" && fg_ns_create "$4" &&
	   { [ -z "$q" ] || { fg_ns_quiet "$1" && fg_ns_quiet "$4"; }; } &&
	   fg_veth_create "$1" "$2" "$4" "$5" &&
	   fg_ns_addr "$1" "$2" "${a1[@]}" && fg_ns_addr "$4" "$5" "${a2[@]}"; then
		MAC=$(fg_ns_mac "$4" "$5")
		return 0
	fi
	bad setup "namespaces and veth pair"
	fg_finish
}

# fg_synauth_net S1 C1 S2 A1: syn_auth's topology. Namespace srv (the
# server, floodgate's side) with veth s1 to cli (the real client, C1) and
# s2 to atk (the flood's source, A1), all /24; MAC is c1's, MAC2 s2's. c1
# runs fgt_pass: the SYN-ACKs floodgate sends with XDP_TX reach a peer only
# when it has NAPI. A failure ends the script.
fg_synauth_net() {
	fg_pair -q srv s1 "$1/24" cli c1 "$2/24"
	fg_ns_create atk && fg_ns_quiet atk && fg_veth_create srv s2 atk a1 &&
		fg_ns_addr srv s2 "$3/24" && fg_ns_addr atk a1 "$4/24" ||
		{ bad setup "the flood's namespace (atk) and its veth to srv"; fg_finish; }
	MAC2=$(fg_ns_mac srv s2)
	ip -n "$(fg_ns_name cli)" link set dev c1 xdpdrv obj "$FG_OUT/fgtest_xdp.bpf.o" sec xdp ||
		{ bad setup "fgt_pass on c1 (XDP_TX frames need NAPI on the peer)"; fg_finish; }
}

# fg_pin NAME: this run's pin dir NAME (removed at cleanup)
fg_pin() { printf '%s%s\n' "$FG_PIN_PREFIX" "$1"; }

# fg_pin_remove DIR: detach and remove one of this run's pin dirs
fg_pin_remove() {
	local d=$1
	case "$d" in "$FG_PIN_PREFIX"*) ;; *) return 1 ;; esac
	[ -e "$d" ] || return 0
	"$FG" --pin-dir "$d" detach > /dev/null 2>&1
	if [ -d "$d" ]; then
		rm -f "$d"/link_* "$d"/fg_* "$d"/fgc_* 2>/dev/null
		rmdir "$d" 2>/dev/null
	fi
	[ ! -e "$d" ]
}

# fg_cleanup: everything this run made, by PID and by name. Idempotent.
fg_cleanup() {
	local pid p
	FG_DPID=
	fg_ns_cleanup
	for pid in $(jobs -pr); do
		kill -s TERM "$pid" 2>/dev/null
		fg_reap "$pid"
	done
	for p in "$FG_PIN_PREFIX"*; do
		[ -e "$p" ] && fg_pin_remove "$p"
	done
	[ -n "$FG_TMP" ] && rm -rf "$FG_TMP"
	return 0
}

# fg_leftovers: what of this run is still there (empty when clean)
fg_leftovers() {
	local p pid seen=" "
	# not in a pipeline: a pipeline's subshell has no job table
	for pid in $(fg_bg_leftovers) $(jobs -pr); do
		case "$seen" in *" $pid "*) continue ;; esac
		seen+="$pid "
		echo "process $pid"
	done
	for p in "$FG_PIN_PREFIX"*; do
		[ -e "$p" ] && echo "pin dir $p"
	done
	fg_ns_leftovers | sed 's/^/namespace /'
	fg_veth_leftovers | sed 's/^/link /'
	[ -n "$FG_TMP" ] && [ -e "$FG_TMP" ] && echo "temp dir $FG_TMP"
	return 0
}

# fg_finish: clean up, check that nothing is left, summary, exit status
fg_finish() {
	local f left
	if fg_failed; then
		for f in "${FG_LOGS[@]}"; do
			[ -s "$f" ] || continue
			echo "--- last lines of $f"
			tail -n 40 "$f"
		done
	fi
	fg_cleanup
	left=$(fg_leftovers)
	if [ -z "$left" ]; then
		ok "cleanup: namespaces, veths, pin dirs ${FG_PIN_PREFIX}*, processes (${#FG_BG_ALL[@]} started) and temp dir removed: expected none left, found none"
	else
		bad "cleanup" "left behind: $(echo "$left" | one_line 600)"
	fi
	echo "# $FG_NAME took $((SECONDS - FG_T0)) s"
	trap - EXIT INT TERM
	summary
	exit $?
}

# --- the daemon ----------------------------------------------------------------------

# fg_daemon_start NS PIN CONFIG LOG [floodgated args]: floodgated in
# namespace NS, foreground, output appended to LOG; waits (FG_START_TENTHS,
# default 100) until it logs that it started or adopted the pin dir (after
# attaching and stamping fg_meta). PID in FG_DPID; 1 if it did not start.
fg_daemon_start() {
	local ns=$1 pin=$2 cfg=$3 log=$4 n=${FG_START_TENTHS:-100} f known=0
	shift 4
	for f in "${FG_LOGS[@]}"; do [ "$f" = "$log" ] && known=1; done
	[ $known = 1 ] || FG_LOGS+=("$log")
	# nsenter execs floodgated (or the wrapper): FG_BG_PID is the daemon
	fg_bg "$ns" "${FG_DAEMON_WRAP[@]}" "$FGD" --config "$cfg" --pin-dir "$pin" \
		--foreground "$@" >> "$log" 2>&1
	FG_DPID=$FG_BG_PID
	while [ "$n" -gt 0 ]; do
		grep -qE "(started|adopted pinned state); .*\(pid $FG_DPID\)" "$log" && return 0
		if ! kill -0 "$FG_DPID" 2>/dev/null; then
			fg_bg_stop "$FG_DPID"
			FG_DPID=
			return 1
		fi
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}

# fg_daemon_up NS CONFIG NAME [floodgated args]: fg_daemon_start NS "$PIN"
# CONFIG "$DLOG" (the pin dir and log of fg_init --pin); when it does not
# start, one failed check NAME with the log's last lines, then fg_finish
fg_daemon_up() {
	local ns=$1 cfg=$2 name=$3
	shift 3
	fg_daemon_start "$ns" "$PIN" "$cfg" "$DLOG" "$@" && return 0
	bad "$name" "$(tail -5 "$DLOG" | one_line)"
	fg_finish
}

# fg_daemon_stop [SIGNAL]: signal FG_DPID (default TERM; SIGKILL after 5 s)
# and reap it; returns its exit status.
fg_daemon_stop() {
	local rc=0
	[ -n "$FG_DPID" ] || return 0
	fg_bg_stop "$FG_DPID" "${1:-TERM}"; rc=$?
	FG_DPID=
	return $rc
}

# --- counters and JSON -----------------------------------------------------------------

# The strict JSON reader behind every helper below.
FG_JSON_PY=$(cat <<'PY'
import ipaddress, json, sys

OUTCOMES = ("pass", "drop", "shadow", "allow", "deny", "bypass", "malformed", "nonip",
            "rt_allow", "rt_deny", "cap", "shed", "shed_shadow", "deny_shadow",
            "rt_deny_shadow", "malformed_shadow", "cap_shadow", "syn_answered", "reply_capped",
            "cookie_invalid", "cookie_invalid_shadow", "rst_proof")
EVENTS = ("insert", "overflow", "insert_limited", "insert_fail", "full_open",
          "full_closed", "contended", "agg_drop", "frag", "bypass_expired", "rt_expired",
          "fleet_drop", "fleet_loss", "cap_shadow", "cap_noslot", "cap_contended", "cap_nomem",
          "shed_tier", "shed_cap", "shed_pool", "tev_capped", "tev_lost", "syn_auth_shadow",
          "cookie_valid", "verified", "syn_auth_nokey", "ack_socket", "cookie_dup", "syn_auth_fail")

def refuse_duplicates(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError("duplicate key %s" % json.dumps(k))
        d[k] = v
    return d

def load(path):
    with (sys.stdin if path == "-" else open(path)) as f:
        return json.load(f, object_pairs_hook=refuse_duplicates)

def prefix(v):
    try:
        ipaddress.ip_interface(v)
    except ValueError:
        return "not an address/prefix length"
    return None if isinstance(v, str) and "/" in v else "not an address/prefix length"

# A schema: int (an integer >= 0), float (any number), str, bool, None
# (null), a tuple (any of), a frozenset (one of these strings), [S] (a
# list of S), {key: S} (an object with at least these keys), or a function
# that returns an error or None.
COUNTS = lambda names: {n: int for n in names}
SCHEMAS = {
    "stats": {"rules": [{"rule": str, "id": int, "packets": COUNTS(OUTCOMES),
                         "bytes": COUNTS(OUTCOMES), "events": COUNTS(EVENTS)}]},
    "top": {"sources": [{"source": prefix, "rule": str, "drops_sampled": int,
                         "limited": bool}],
            "throttled_sources": int, "tracked_sources": int},
    "status": {"pin_dir": str, "abi": int,
               "version": {"floodgate": str, "libbpf": str, "libxdp": str},
               "daemon": {"running": bool, "pid": int, "started": int,
                          "state": frozenset(("running", "stopped", "starting", "adopting", "none"))},
               "config": str,
               "interfaces": [{"name": str, "ifindex": int,
                               "xdp_mode": frozenset(("native", "generic", "none")),
                               "attached": bool,
                               "attach": frozenset(("none", "dispatcher", "exclusive", "alone", "unknown")),
                               "position": (int, None), "dispatcher_id": int,
                               "programs": [{"id": int, "name": str, "priority": (int, None),
                                             "chain": [frozenset(("aborted", "drop", "pass",
                                                                  "tx", "redirect"))],
                                             "mode": frozenset(("native", "generic")),
                                             "ours": bool}]}],
               "mode": frozenset(("enforce", "shadow")),
               "bypass": {"on": bool, "expires_in_s": (float, None)},
               "policy": {"version": int, "slot": int,
                          "default": frozenset(("pass", "drop")),
                          "rules": [{"name": str, "action": str, "mode": str}]},
               "sources": {"ipv4": int, "ipv6": int, "max": int},
               "shedding": {"controller": bool, "signal": (str, None), "value": (float, None),
                            "signal_error": (str, None), "phase": (str, None),
                            "hold": (frozenset(("running", "bypass", "off")), None),
                            "amount": (float, None), "tiers": int, "pressure_s": (float, None),
                            "shed": {t: float for t in ("critical", "normal", "bulk", "best-effort")},
                            "shadow": bool, "off": bool, "decays_in_s": float,
                            "pools": [{"name": str, "id": int, "exempt": bool}], "shed_pkts": {}},
               "escalation": {"live": int, "rules": (int, None), "max": (int, None),
                              "escalated": (int, None), "refused": (int, None),
                              "would_escalate": (int, None)}},
    "check": {"file": str, "ok": bool, "error": None,
              "warnings": [{"line": int, "col": int, "message": str}],
              "interfaces": [str], "mode": frozenset(("enforce", "shadow")), "max_sources": int,
              "rules": [{"name": str, "action": frozenset(("limit", "pass", "drop")),
                         "mode": frozenset(("enforce", "shadow")), "implicit": bool,
                         "prefix_v4": int, "prefix_v6": int,
                         "per_source": ({"rate": float, "burst": float,
                                         "unit": frozenset(("packets", "bytes")),
                                         "refill_s": float}, None),
                         "aggregate": ({"rate": float, "burst": float,
                                        "unit": frozenset(("packets", "bytes")),
                                        "refill_s": float}, None),
                         "concurrency": int, "fleet": bool, "escalate": bool}],
              "memory": {"src4_bytes": int, "src6_bytes": int, "lists4_bytes": int},
              "kernel": [{"feature": str, "state": str, "how": str, "why": str}]},
    "check_error": {"file": str, "ok": bool,
                    "error": {"line": int, "col": int, "message": str, "source": (str, None)}},
    "kernel": {"release": str, "features": {}, "conn_way": str},
    "rtlist": {"list": frozenset(("allow", "deny")),
               "entries": [{"prefix": prefix, "list": frozenset(("allow", "deny")),
                            "expired": bool, "expires_in_s": (float, None),
                            "created": int, "who": str, "comment": str, "escalated": bool,
                            "scope": frozenset(("address", "rule")), "rule": (str, None),
                            "rule_id": (int, None)}],
               "ipv4": int, "ipv6": int, "max_per_family": int, "escalated": int},
}

def kind(v):
    return "null" if v is None else type(v).__name__

def check(v, s, at):
    if s is None:
        return None if v is None else "%s: expected null, got %s" % (at, kind(v))
    if s is bool:
        return None if isinstance(v, bool) else "%s: expected a boolean, got %s" % (at, kind(v))
    if s is int:
        ok = isinstance(v, int) and not isinstance(v, bool) and v >= 0
        return None if ok else "%s: expected an integer >= 0, got %s" % (at, json.dumps(v))
    if s is float:
        ok = isinstance(v, (int, float)) and not isinstance(v, bool)
        return None if ok else "%s: expected a number, got %s" % (at, kind(v))
    if s is str:
        return None if isinstance(v, str) else "%s: expected a string, got %s" % (at, kind(v))
    if isinstance(s, tuple):
        errs = [check(v, a, at) for a in s]
        return None if None in errs else " or ".join(errs)
    if isinstance(s, frozenset):
        ok = isinstance(v, str) and v in s
        return None if ok else "%s: expected one of %s, got %s" % (at, "|".join(sorted(s)), json.dumps(v))
    if isinstance(s, list):
        if not isinstance(v, list):
            return "%s: expected a list, got %s" % (at, kind(v))
        for i, x in enumerate(v):
            e = check(x, s[0], "%s[%d]" % (at, i))
            if e:
                return e
        return None
    if isinstance(s, dict):
        if not isinstance(v, dict):
            return "%s: expected an object, got %s" % (at, kind(v))
        for k, sub in s.items():
            if k not in v:
                return "%s: no key %s" % (at, json.dumps(k))
            e = check(v[k], sub, "%s.%s" % (at, k))
            if e:
                return e
        return None
    e = s(v)
    return "%s: %s: %s" % (at, e, json.dumps(v)) if e else None

def field_of(r, field):
    if field == "total":
        return sum(r["packets"].values())
    group, key = "packets", field
    if field.startswith("ev:"):
        group, key = "events", field[3:]
    elif field.startswith("bytes:"):
        group, key = "bytes", field[6:]
    if key not in r[group]:
        raise KeyError("no %s counter %s" % (group, json.dumps(key)))
    return r[group][key]

def dig(d, path):
    # "a.b.0.c": keys of objects and indexes of lists; 0 when absent
    for k in path.split("."):
        if isinstance(d, dict) and k in d:
            d = d[k]
        elif isinstance(d, list) and k.isdigit() and int(k) < len(d):
            d = d[int(k)]
        else:
            return 0
    return d

def main(cmd, path, *args):
    try:
        d = load(path)
    except (OSError, ValueError) as e:
        if cmd == "check":
            print("%s: %s" % (path, e))
            return 1
        print("fg_json %s: %s: %s" % (cmd, path, e), file=sys.stderr)
        print(" ".join(["0"] * len(args)) if cmd == "get" else -1)
        return 1
    try:
        if cmd == "check":
            e = check(d, SCHEMAS[args[0]], args[0])
            if e:
                print(e)
                return 1
            print(", ".join("%d %s" % (len(v), k) for k, v in d.items() if isinstance(v, list))
                  or "%d keys" % len(d))
        elif cmd == "get":
            vals = [dig(d, k) for k in args]
            print(" ".join(v if isinstance(v, str) else json.dumps(v) for v in vals))
        elif cmd == "stat":
            rule, field = args
            print(next((field_of(r, field) for r in d["rules"] if r["rule"] == rule), 0))
        elif cmd == "sum":
            print(sum(field_of(r, args[0]) for r in d["rules"]))
        elif cmd == "id":
            ids = [r["id"] for r in d["rules"] if r["rule"] == args[0]]
            if not ids:
                print("fg_rule_id: no rule %s in %s" % (args[0], path), file=sys.stderr)
                return 1
            print(ids[0])
    except (KeyError, TypeError, AttributeError) as e:
        print("fg_json %s: %s: %s" % (cmd, path, e), file=sys.stderr)
        print(-1)
        return 1
    return 0

sys.exit(main(*sys.argv[1:]))
PY
)
fg_json() { "$FG_PY" -c "$FG_JSON_PY" "$@"; }

# fg_snap PIN [FILE]: `floodgate stats --json` into FILE (default $FG_SNAP)
fg_snap() {
	local f=${2:-$FG_SNAP}
	"$FG" --pin-dir "$1" stats --json > "$f" 2> "$f.err"
}

# _fg_stats SRC CMD ARGS...: a query on a snapshot file or a pin dir's stats
_fg_stats() {
	local src=$1; shift
	case "$src" in
	*.json) fg_json "$1" "$src" "${@:2}" ;;
	*) "$FG" --pin-dir "$src" stats --json 2>/dev/null | fg_json "$1" - "${@:2}" ;;
	esac
}
fg_stat() { _fg_stats "$1" stat "$2" "$3"; }
fg_event() { _fg_stats "$1" stat "$2" "ev:$3"; }
fg_stat_sum() { _fg_stats "$1" sum "$2"; }
fg_rule_id() { _fg_stats "$1" id "$2"; }

# fg_json_get FILE|- KEY...: values, space-separated (0 if absent); a KEY
# may be a path, "daemon.pid" or "interfaces.0.name"
fg_json_get() { fg_json get "$@"; }

# fg_json_check NAME SCHEMA FILE: one check line; FILE parsed refusing
# duplicate keys, then every required key of SCHEMA with its type
fg_json_check() {
	local name=$1 schema=$2 file=$3 out
	if out=$(fg_json check "$file" "$schema"); then
		ok "$name: expected strict JSON with the $schema schema, measured $out"
	else
		bad "$name" "expected strict JSON with the $schema schema, measured: $(echo "$out" | one_line 300)"
	fi
}

# fg_btf_member MAP-PIN MEMBER: "OFFSET SIZE" in bytes of MEMBER in the
# map's value struct, from the map's BTF (bpftool), not from a copy of it
fg_btf_member() {
	local btf
	btf=$(bpftool -j map show pinned "$1" 2>/dev/null | fg_json get - btf_id) || return 1
	bpftool -j btf dump map pinned "$1" value > "$FG_TMP/btf-value.json" 2>/dev/null &&
	bpftool -j btf dump id "$btf" > "$FG_TMP/btf-all.json" 2>/dev/null || return 1
	"$FG_PY" -c '
import json, sys
root = json.load(open(sys.argv[1]))["types"][0]
types = {t["id"]: t for t in json.load(open(sys.argv[2]))["types"]}
def size(tid):
    t = types[tid]
    while "size" not in t:          # typedef, const, volatile
        t = types[t["type_id"]]
    return t["size"]
for m in root.get("members", []):
    if m["name"] == sys.argv[3] and m["bits_offset"] % 8 == 0:
        print(m["bits_offset"] // 8, size(m["type_id"]))
        sys.exit(0)
print("fg_btf_member: no member %s in %s" % (sys.argv[3], root.get("name")), file=sys.stderr)
sys.exit(1)' "$FG_TMP/btf-value.json" "$FG_TMP/btf-all.json" "$2"
}

# --- policies ----------------------------------------------------------------------

# fg_policy_rule NAME MATCH PER_SOURCE [LINE...]: one entry of a policy's
# rules: list; MATCH and PER_SOURCE are what goes between the braces
# ("proto: udp, dport: 9"), each LINE ("on_full: open") a key of the rule.
fg_policy_rule() {
	printf '  - name: %s\n    match: {%s}\n    per_source: {%s}\n' "$1" "$2" "$3"
	shift 3
	[ $# -eq 0 ] || printf '    %s\n' "$@"
}
