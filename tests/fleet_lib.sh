# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# shellcheck shell=bash
#
# Helpers for the fleet tests (tests/e2e_fleet*.sh, tests/gameday_fleet*.sh,
# tests/gameday_blockfiles.sh), sourced after tests/lib.sh: a real
# redis-server started and stopped by PID, its command counters, fleet
# policies, three hosts with a floodgated each, and the fleet part of
# `floodgate status --json`.
#
#   fl_require_redis                 skip the whole script without redis-server
#   fl_init [--pin NAME] BIN...      fg_init --root [--pin NAME] BIN..., fl_require_redis
#   fl_redis_unix SOCK               redis-server on a Unix socket (PID in FL_REDIS_PID)
#   fl_redis_up SOCK                 fl_redis_unix, or one failed check and fg_finish
#   fl_redis_tcp NS ADDR PORT        redis-server inside namespace NS on ADDR:PORT
#   fl_redis_restart                 start it again as it was (empty: no persistence)
#   fl_redis_stop [SIGNAL]           stop it by PID (default TERM)
#   fl_cli ARGS...                   redis-cli against it
#   fl_evalsha_calls                 INFO commandstats: EVALSHA calls so far
#   fl_policy FILE NODE URL IF [INTERVAL] <<RULES   a policy with a fleet: section
#   fl_hosts NET                     namespaces g1..g3 and h1..h3 on 10.NET.N.0/24
#   fl_hosts_start URL [ARGS] <<RULES   a fleet policy and floodgated on each host
#   fl_status PIN FILE               `floodgate status --json` into FILE
#   fl_rule_get FILE RULE KEY...     fields of a fleet rule in a status file
#   fl_noports NS                    UDP datagrams to closed ports (delivered) in NS
#   fl_now                           CLOCK_MONOTONIC seconds, 3 decimals

FL_REDIS_PID=
FL_REDIS_ARGS=()	# how it was started, for fl_redis_restart
FL_REDIS_NS=		# "" = the test's own namespace
FL_CLI=()
FL_REDIS_LOG=
FL_PIN=()		# fl_hosts_start: host N's pin dir and floodgated's PID
FL_DPID=()

# fl_init [--pin NAME] BIN...: fg_init --root [--pin NAME] BIN..., then
# fl_require_redis
fl_init() {
	fg_init --root "$@"
	fl_require_redis
}

fl_require_redis() {
	local b
	for b in redis-server redis-cli; do
		command -v "$b" >/dev/null && continue
		skip "$FG_NAME" "$b not installed (apt-get install redis-server)"; summary; exit 0
	done
}

fl_now() { awk '{ printf "%.3f\n", $1 }' /proc/uptime; }

# _fl_redis_run: start redis-server with FL_REDIS_ARGS, wait for PING
_fl_redis_run() {
	local n=50
	if [ -n "$FL_REDIS_NS" ]; then
		fg_bg "$FL_REDIS_NS" redis-server "${FL_REDIS_ARGS[@]}" >> "$FL_REDIS_LOG" 2>&1
	else
		redis-server "${FL_REDIS_ARGS[@]}" >> "$FL_REDIS_LOG" 2>&1 &
		fg_bg_adopt "$!"
	fi
	FL_REDIS_PID=$FG_BG_PID
	while [ "$n" -gt 0 ]; do
		[ "$(fl_cli PING 2>/dev/null)" = PONG ] && return 0
		kill -0 "$FL_REDIS_PID" 2>/dev/null || break
		sleep 0.1; n=$((n - 1))
	done
	return 1
}

# fl_redis_unix SOCK: no TCP, no persistence, its own dir
fl_redis_unix() {
	FL_REDIS_LOG=$FG_TMP/redis.log
	FG_LOGS+=("$FL_REDIS_LOG")
	FL_REDIS_NS=
	FL_REDIS_ARGS=(--port 0 --unixsocket "$1" --unixsocketperm 700 --save "" --appendonly no
		       --daemonize no --dir "$FG_TMP" --logfile "")
	FL_CLI=(redis-cli -s "$1")
	_fl_redis_run
}

# fl_redis_tcp NS ADDR PORT: inside namespace NS (whose links a drill can cut)
fl_redis_tcp() {
	FL_REDIS_LOG=$FG_TMP/redis.log
	FG_LOGS+=("$FL_REDIS_LOG")
	FL_REDIS_NS=$1
	FL_REDIS_ARGS=(--bind "$2" --port "$3" --protected-mode no --save "" --appendonly no
		       --daemonize no --dir "$FG_TMP" --logfile "")
	FL_CLI=(nsenter --net="$(fg_ns_path "$1")" redis-cli -h "$2" -p "$3")
	_fl_redis_run
}

# fl_redis_up SOCK: fl_redis_unix SOCK; when it does not answer, one failed
# check "redis-server on SOCK" with the log's last lines, then fg_finish
fl_redis_up() {
	fl_redis_unix "$1" && return 0
	bad "redis-server on $1" "did not answer PING: $(tail -3 "$FL_REDIS_LOG" | one_line)"
	fg_finish
}

fl_redis_restart() { _fl_redis_run; }

fl_redis_stop() {
	[ -n "$FL_REDIS_PID" ] || return 0
	fg_bg_stop "$FL_REDIS_PID" "${1:-TERM}"
	FL_REDIS_PID=
}

fl_cli() { timeout 5 "${FL_CLI[@]}" "$@"; }

fl_evalsha_calls() {
	fl_cli INFO commandstats | tr -d '\r' |
		sed -nE 's/^cmdstat_evalsha:calls=([0-9]+),.*/\1/p' | grep . || echo 0
}

# fl_policy FILE NODE URL IF [INTERVAL]: the rules come from stdin
fl_policy() {
	{
		echo "interfaces: [$4]"
		echo "max_sources: 4096"
		echo "fleet:"
		echo "  redis: $3"
		echo "  node: $2"
		echo "  lease_interval: ${5:-200ms}"
		echo "rules:"
		cat
	} > "$1"
}

# fl_hosts NET: three hosts, each a namespace hN whose h0 (10.NET.N.2/24) is
# fed by a generator gN's v0 (10.NET.N.1/24), both without IPv6; hN's h0 MAC
# in MAC[N]. On failure: one failed check "setup", then fg_finish.
fl_hosts() {
	local n
	for n in 1 2 3; do
		if ! { fg_ns_create "h$n" && fg_ns_create "g$n" && fg_ns_quiet "h$n" && fg_ns_quiet "g$n" &&
		       fg_veth_create "g$n" v0 "h$n" h0 &&
		       fg_ns_addr "g$n" v0 "10.$1.$n.1/24" && fg_ns_addr "h$n" h0 "10.$1.$n.2/24"; }; then
			bad setup "namespaces and veth pairs"; fg_finish
		fi
	done
	# shellcheck disable=SC2034 # for the caller's frames to hN
	MAC=(x "$(fg_ns_mac h1 h0)" "$(fg_ns_mac h2 h0)" "$(fg_ns_mac h3 h0)")
}

# fl_hosts_start URL [floodgated args]: on each of fl_hosts' hN, the policy
# $FG_TMP/hN.yaml (fl_policy: node hN, Redis URL, interface h0, lease
# interval 200ms, the rules from stdin) and floodgated on its own pin dir
# FL_PIN[N] (PID in FL_DPID[N], log $FG_TMP/hN.log). On failure: one failed
# check, then fg_finish.
fl_hosts_start() {
	local n url=$1 rules
	shift
	rules=$(cat)
	FL_DPID=(x); FL_PIN=(x)
	for n in 1 2 3; do
		FL_PIN[n]=$(fg_pin "h$n")
		fl_policy "$FG_TMP/h$n.yaml" "h$n" "$url" h0 200ms <<< "$rules"
		if ! fg_daemon_start "h$n" "${FL_PIN[n]}" "$FG_TMP/h$n.yaml" "$FG_TMP/h$n.log" "$@"; then
			bad "floodgated on h$n starts" "$(tail -5 "$FG_TMP/h$n.log" | one_line)"; fg_finish
		fi
		# shellcheck disable=SC2034 # the callers stop or signal them
		FL_DPID[n]=$FG_DPID
	done
}

fl_status() { "$FG" --pin-dir "$1" status --json > "$2" 2> "$2.err"; }

# fl_rule_get FILE RULE KEY...: fleet.rules[name=RULE].KEY, "null" when absent
fl_rule_get() {
	"$FG_PY" - "$@" <<'PY'
import json, sys
path, rule, keys = sys.argv[1], sys.argv[2], sys.argv[3:]
try:
    d = json.load(open(path))
    r = next(x for x in (d.get("fleet") or {}).get("rules", []) if x["name"] == rule)
except (OSError, ValueError, StopIteration):
    r = {}
print(" ".join(json.dumps(r.get(k)) if not isinstance(r.get(k), str) else r[k] for k in keys))
PY
}

fl_noports() {
	ip netns exec "$(fg_ns_name "$1")" awk '/^Udp: [0-9]/ { print $3 }' /proc/net/snmp
}
