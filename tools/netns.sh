# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# shellcheck shell=bash
#
# Network namespace and veth helpers for floodgate's tests, demo and bench.
# Source it from bash:
#
#   . tools/netns.sh
#   fg_ns_trap                          # clean up on EXIT/INT/TERM
#   fg_ns_create gen; fg_ns_create rcv  # names get a per-process prefix
#   fg_ns_quiet rcv                     # optional: no IPv6 chatter in counts
#   fg_veth_create gen veth0 rcv veth0  # one veth pair, both ends up
#   fg_ns_addr rcv veth0 10.200.0.2/24 fd00:200::2/64
#   fg_ns_exec gen .output/fgen -i veth0 -d 10.200.0.2 -n 1000
#   fg_ns_rx rcv veth0                  # rx_packets
#   fg_bg rcv .output/fgen --sink -i veth0 > log   # background, PID in FG_BG_PID
#   fg_bg_stop "$FG_BG_PID"             # TERM, KILL after 5 s; its exit status
#   fg_ns_cleanup                       # also run by the trap
#
# Namespace names: fg_ns_create NAME makes "${FG_NS_PREFIX}NAME" where the
# prefix defaults to "fg$$-", so parallel runs never collide, and
# fg_ns_path / fg_ns_name give back the full name. Everything made here is
# recorded and removed by fg_ns_cleanup: background processes (killed by
# PID: SIGTERM, SIGKILL after FG_STOP_TENTHS tenths of a second, default 50),
# then namespaces (which destroys the veth ends inside them). Nothing is
# created in the caller's own namespace: both veth ends are created
# directly inside namespaces, so no test frame can reach a real network;
# fg_veth_leftovers names any that turns up there all the same.
#
# fg_ns_exec uses `nsenter --net`, which keeps /sys/fs/bpf visible (`ip
# netns exec` remounts /sys and hides it). For /sys/class/net reads use
# fg_ns_rx/fg_ns_stat, which go through `ip netns exec` on purpose: sysfs
# shows the namespace of whoever mounted it.

FG_NS_PREFIX=${FG_NS_PREFIX:-fg$$-}
FG_NS_LIST=()
FG_BG_PIDS=()		# running, stopped at cleanup
FG_BG_ALL=()		# every process started here, for fg_bg_leftovers
FG_VETHS=()		# veth names the caller's namespace did not have
FG_BG_PID=
FG_STOP_TENTHS=${FG_STOP_TENTHS:-50}

fg_ns_name() { printf '%s%s\n' "$FG_NS_PREFIX" "$1"; }
fg_ns_path() { printf '/run/netns/%s%s\n' "$FG_NS_PREFIX" "$1"; }

# fg_ns_create NAME: a fresh namespace with lo up.
fg_ns_create() {
	local ns
	ns=$(fg_ns_name "$1")
	ip netns add "$ns" || return 1
	FG_NS_LIST+=("$ns")
	ip -n "$ns" link set lo up
}

# fg_ns_quiet NAME: no IPv6 on the namespace's devices (call before
# fg_veth_create), so no MLD reports, router solicitations or DAD probes
# show up in a test's packet counts.
fg_ns_quiet() {
	local ns
	ns=$(fg_ns_name "$1")
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1 \
		net.ipv6.conf.all.disable_ipv6=1 >/dev/null
}

# fg_ns_destroy NAME: kill nothing, just delete the namespace (and its veths).
fg_ns_destroy() {
	local ns i
	ns=$(fg_ns_name "$1")
	ip netns del "$ns" 2>/dev/null
	for i in "${!FG_NS_LIST[@]}"; do
		[ "${FG_NS_LIST[$i]}" = "$ns" ] && unset 'FG_NS_LIST[i]'
	done
	return 0
}

# fg_veth_create NS1 DEV1 NS2 DEV2: a veth pair with DEV1 in NS1 and DEV2
# in NS2, both up. Extra arguments go to `ip link add` (e.g. numrxqueues 2).
fg_veth_create() {
	local ns1 ns2
	ns1=$(fg_ns_name "$1"); ns2=$(fg_ns_name "$3")
	ip link show dev "$2" > /dev/null 2>&1 || FG_VETHS+=("$2")
	ip link show dev "$4" > /dev/null 2>&1 || FG_VETHS+=("$4")
	ip link add "$2" netns "$ns1" "${@:5}" type veth peer name "$4" netns "$ns2" || return 1
	ip -n "$ns1" link set "$2" up && ip -n "$ns2" link set "$4" up
}

# fg_ns_addr NS DEV CIDR...: add addresses (IPv6 without DAD, usable at once).
fg_ns_addr() {
	local ns dev a
	ns=$(fg_ns_name "$1"); dev=$2; shift 2
	for a in "$@"; do
		case "$a" in
		*:*) ip -n "$ns" addr add "$a" dev "$dev" nodad || return 1 ;;
		*) ip -n "$ns" addr add "$a" dev "$dev" || return 1 ;;
		esac
	done
}

# fg_ns_exec NS CMD...: run CMD in NS (network namespace only).
fg_ns_exec() {
	local path
	path=$(fg_ns_path "$1"); shift
	nsenter --net="$path" "$@"
}

# fg_ns_mac NS DEV: the MAC address of DEV.
fg_ns_mac() {
	ip -n "$(fg_ns_name "$1")" -o link show dev "$2" | sed -nE 's/.*link\/ether ([0-9a-f:]+).*/\1/p'
}

# fg_ns_stat NS DEV COUNTER: e.g. rx_packets, tx_dropped.
fg_ns_stat() {
	ip netns exec "$(fg_ns_name "$1")" cat "/sys/class/net/$2/statistics/$3"
}
fg_ns_rx() { fg_ns_stat "$1" "$2" rx_packets; }

# fg_bg NS CMD...: start CMD in NS in the background; its PID lands in
# FG_BG_PID and is killed (by PID) at cleanup. Redirect output yourself.
fg_bg() {
	local path
	path=$(fg_ns_path "$1"); shift
	nsenter --net="$path" "$@" &
	fg_bg_adopt "$!"
}

# fg_bg_adopt PID: a background child started some other way (unshare, a
# wrapper), stopped at cleanup like those of fg_bg. Sets FG_BG_PID.
fg_bg_adopt() {
	# shellcheck disable=SC2034 # for the caller
	FG_BG_PID=$1
	FG_BG_PIDS+=("$1")
	FG_BG_ALL+=("$1")
}

# fg_is_child PID: PID is (still) a child of this shell, so a signal to it
# cannot reach a process that merely reused the number
fg_is_child() {
	[ "$(ps -o ppid= -p "$1" 2>/dev/null | tr -d ' ')" = "$$" ]
}

# fg_reap PID: wait for a signalled child, SIGKILL it after FG_STOP_TENTHS;
# returns its exit status.
fg_reap() {
	local pid=$1 n=$FG_STOP_TENTHS
	while [ "$n" -gt 0 ] && kill -0 "$pid" 2>/dev/null; do
		sleep 0.1
		n=$((n - 1))
	done
	fg_is_child "$pid" && kill -s KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}

# fg_bg_stop PID [SIGNAL]: stop one background process (default SIGTERM,
# SIGKILL if it is still there after FG_STOP_TENTHS) and wait for it;
# returns its exit status.
fg_bg_stop() {
	local pid=$1 sig=${2:-TERM} i rc
	fg_is_child "$pid" && kill -s "$sig" "$pid" 2>/dev/null
	# after SIGKILL wait at once: bash reports a job killed meanwhile
	if [ "$sig" = KILL ] || [ "$sig" = 9 ]; then wait "$pid" 2>/dev/null; else fg_reap "$pid"; fi
	rc=$?
	for i in "${!FG_BG_PIDS[@]}"; do
		[ "${FG_BG_PIDS[$i]}" = "$pid" ] && unset 'FG_BG_PIDS[i]'
	done
	return $rc
}

# fg_wait_for FILE PATTERN [TENTHS]: wait until FILE has a line matching
# PATTERN (default timeout 10 s).
fg_wait_for() {
	local file=$1 pat=$2 n=${3:-100}
	while [ "$n" -gt 0 ]; do
		grep -qE "$pat" "$file" 2>/dev/null && return 0
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}

# fg_ns_cleanup: stop background processes, delete every namespace made here.
fg_ns_cleanup() {
	local pid ns
	for pid in "${FG_BG_PIDS[@]}"; do
		fg_is_child "$pid" && kill -s TERM "$pid" 2>/dev/null
	done
	for pid in "${FG_BG_PIDS[@]}"; do
		fg_reap "$pid"
	done
	FG_BG_PIDS=()
	for ns in "${FG_NS_LIST[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
	FG_NS_LIST=()
	return 0
}

# fg_ns_leftovers: print namespaces with this run's prefix that still exist.
fg_ns_leftovers() {
	ip netns list 2>/dev/null | awk '{print $1}' | grep -F -- "$FG_NS_PREFIX" || true
}

# fg_veth_leftovers: print veth names made here that are in the caller's
# own namespace (an end that escaped its namespace).
fg_veth_leftovers() {
	local dev
	for dev in "${FG_VETHS[@]}"; do
		ip link show dev "$dev" > /dev/null 2>&1 && echo "$dev"
	done
	return 0
}

# fg_bg_leftovers: print the PIDs started here that still run as our children.
fg_bg_leftovers() {
	local pid
	for pid in "${FG_BG_ALL[@]}"; do
		fg_is_child "$pid" && echo "$pid"
	done
	return 0
}

# fg_ns_trap [FUNC]: run FUNC (default fg_ns_cleanup) on exit and on
# INT/TERM (then exit 130/143).
fg_ns_trap() {
	local f=${1:-fg_ns_cleanup}
	# shellcheck disable=SC2064 # the function's name, expanded now
	trap "$f" EXIT
	# shellcheck disable=SC2064
	trap "$f; trap - EXIT; exit 130" INT
	# shellcheck disable=SC2064
	trap "$f; trap - EXIT; exit 143" TERM
}
