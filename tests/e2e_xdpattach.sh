#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# End to end: how floodgated attaches (xdp_attach: auto | libxdp |
# exclusive) and floodgate beside another XDP program, Debian's xdp-filter,
# through the documented daemon and CLI only. A sender namespace a (v0)
# and a receiver b (v1); what arrives is counted at the receiver (UDP
# datagrams in b's /proc/net/snmp). floodgate limits UDP port $P_FG,
# xdp-filter drops UDP port $P_XF.
#   - each xdp_attach value: attach, limit, SIGKILL (still enforcing),
#     restart (adopts, counters intact), `floodgate detach` (nothing left);
#     SIGTERM detaches too;
#   - both orders of start-up with xdp-filter: where the kernel can build
#     libxdp's dispatcher both run on v1 and either one detaches without
#     disturbing the other; where it cannot (this project's VM), the
#     second one is refused with a reason and the first keeps doing its job;
#   - status lists the neighbour; a deleted and recreated v1 gets floodgate
#     back; bad xdp_attach settings are refused and change nothing.
# xdp-filter keeps host-wide state (/run/xdp-filter.lck, /sys/fs/bpf/xdp-filter)
# and libxdp pins under /sys/fs/bpf/xdp: the script runs itself in a private
# mount namespace with its own bpffs and /run, so none of that is shared with
# the host or another test, and it all goes away with the script.
# Parts (FG_XA_PARTS, default all, in this order): modes, change, twoif,
# generic, beside, recreate, badinput; FG_XA_MODES (default "auto libxdp
# exclusive") limits the xdp_attach values of modes and beside.
# tests/guest_drills.sh runs "modes beside" with FG_XA_MODES=libxdp on
# Debian's stock kernel, where libxdp can build its dispatcher.
# Needs root, xdp-filter and fgen. Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
fg_private_mounts "$0" "$@"
fg_init --root --pin xa "$FGD" "$FG" "$FGEN"
if ! command -v xdp-filter > /dev/null; then
	skip "$FG_NAME" "xdp-filter is not installed (Debian: xdp-tools)"
	fg_finish
fi
[ -n "${FG_PRIVATE:-}" ] || skip "private mount namespace" "unshare missing: sharing the host's bpffs and /run"
XA_PARTS="modes change twoif generic beside recreate badinput"
XA_MODES="auto libxdp exclusive"
for p in ${FG_XA_PARTS:-$XA_PARTS}; do
	case " $XA_PARTS " in *" $p "*) ;; *) bad "FG_XA_PARTS" "no part '$p' (parts: $XA_PARTS)"; fg_finish ;; esac
done
for p in ${FG_XA_MODES:-$XA_MODES}; do
	case " $XA_MODES " in *" $p "*) ;; *) bad "FG_XA_MODES" "no xdp_attach value '$p' ($XA_MODES)"; fg_finish ;; esac
done

fg_pair -q a v0 10.78.0.1/24 b v1 10.78.0.2/24
# fgen's XDP_TX frames reach v1 only when it has NAPI: an XDP program, or GRO
gro_on() { fg_ns_exec b ethtool -K v1 gro on > /dev/null 2>&1; }
gro_on
NS_B=$(fg_ns_name b)
P_FG=5002	# floodgate limits it: 10/s, burst 10, per source
P_XF=5001	# xdp-filter drops it
N=200		# frames per burst, at 2000/s: floodgate passes its burst and about 1 more

policy() {	# policy FILE XDP_ATTACH [extra lines]
	local f=$1 how=$2; shift 2
	{
		echo "interfaces: [v1]"
		echo "max_sources: 4096"
		echo "xdp_attach: $how"
		for l in "$@"; do echo "$l"; done
		cat <<YAML
rules:
  - name: udp-limited
    match: {proto: udp, dport: $P_FG}
    per_source: {rate: 10/s, burst: 10}
YAML
	} > "$f"
}

# UDP datagrams b's stack received (delivered + to no socket + in error)
udp_rx() {
	fg_ns_exec b awk '/^Udp:/ { if (h) { print $2 + $3 + $4; exit } h = 1 }' /proc/net/snmp
}
# arrived PORT: send N frames to PORT, print how many reached b's stack
arrived() {
	local r0 r1 mac
	mac=$(fg_ns_mac b v1)
	r0=$(udp_rx)
	fg_ns_exec a "$FGEN" -i v0 -s 10.78.0.1 -d 10.78.0.2 --udp --dport "$1" \
		--dst-mac "$mac" -n "$N" -r 2000 > /dev/null 2>&1
	sleep 0.2
	r1=$(udp_rx)
	echo $((r1 - r0))
}
# floodgate's burst 10 and 1 or 2 refilled; fewer when the bucket is still
# low from the burst before (it is the same bucket across a restart)
limited() { [ "$1" -ge 1 ] && [ "$1" -le 40 ]; }
xdp_ids() { ip -n "$NS_B" -d link show v1 | sed -nE 's/.*prog\/xdp id ([0-9]+).*/\1/p' | tr '\n' ' '; }
xdp_free() { ! ip -n "$NS_B" link show v1 | grep -q xdp; }
# the CLI runs where the interfaces are: a netlink attach (libxdp's) is seen
# only from its own network namespace
FGB() { fg_ns_exec b "$FG" --pin-dir "$PIN" "$@"; }
status_json() { FGB status --json > "$FG_TMP/st.json" 2> "$FG_TMP/st.err"; }
start() { fg_daemon_start b "$PIN" "$FG_TMP/p.yaml" "$DLOG" "$@"; }
xf_load() { fg_ns_exec b xdp-filter load -m native "${1:-v1}" > "$FG_TMP/xf.out" 2>&1 &&
	    fg_ns_exec b xdp-filter port -p udp "$P_XF" >> "$FG_TMP/xf.out" 2>&1; }
xf_unload() { fg_ns_exec b xdp-filter unload v1 >> "$FG_TMP/xf.out" 2>&1; }

# --- the baseline and the kernel -----------------------------------------------------
NO_DISPATCHER="the daemon did not say why"
check_cmp "baseline: UDP to $P_FG with nothing on v1 arrives whole" "$(arrived $P_FG)" = "$N"
policy "$FG_TMP/p.yaml" auto
: > "$DLOG"
if ! start; then bad "auto: floodgated starts" "$(tail -5 "$DLOG" | one_line 400)"; fg_finish; fi
if grep -q "libxdp's dispatcher (this kernel can build one)" "$DLOG"; then
	DISPATCHER=1; AUTO_KIND=dispatcher; LIBXDP_KIND=dispatcher
	ok "auto: the log says once that this kernel can build libxdp's dispatcher"
elif grep -qE "xdp_attach: auto: exclusive bpf_link, because .*dispatcher" "$DLOG"; then
	DISPATCHER=0; AUTO_KIND=exclusive; LIBXDP_KIND=alone
	NO_DISPATCHER=$(grep -oE "because .*" "$DLOG" | head -1 | one_line 200)
	ok "auto: the log says once why it attaches exclusively: $NO_DISPATCHER"
else
	bad "auto: the log says how it attaches" "$(grep xdp_attach "$DLOG" | one_line 300)"
	DISPATCHER=0; AUTO_KIND=exclusive; LIBXDP_KIND=alone
fi
check_cmp "auto: the choice is logged once" "$(grep -c "xdp_attach: auto" "$DLOG")" = 1
fg_daemon_stop
check "auto: SIGTERM detaches (v1 has no XDP program)" xdp_free

# --- each xdp_attach value: attach, limit, SIGKILL, adopt, detach --------------------
part_modes() {
	for how in ${FG_XA_MODES:-$XA_MODES}; do
		case $how in auto) kind=$AUTO_KIND ;; libxdp) kind=$LIBXDP_KIND ;; *) kind=exclusive ;; esac
		policy "$FG_TMP/p.yaml" "$how"
		: > "$DLOG"
		if ! start; then bad "$how: floodgated starts" "$(tail -5 "$DLOG" | one_line 400)"; continue; fi
		if status_json; then
			fg_json_check "$how: status --json" status "$FG_TMP/st.json"
			check_cmp "$how: status: attached, how, floodgate's place, its program" \
				"$(fg_json_get "$FG_TMP/st.json" interfaces.0.attached interfaces.0.attach \
				   interfaces.0.position interfaces.0.programs.0.name interfaces.0.programs.0.ours)" \
				= "true $kind 1 floodgate true"
		else
			bad "$how: status --json" "$(one_line < "$FG_TMP/st.err")"
		fi
		if [ "$kind" = exclusive ] && "$FG" --pin-dir "$PIN" status --json > "$FG_TMP/sth.json" 2>&1; then
			fg_json_check "$how: status --json from another network namespace" status "$FG_TMP/sth.json"
			check_cmp "$how: status from another namespace: attached (its link), programs not listed" \
				"$(fg_json_get "$FG_TMP/sth.json" interfaces.0.attached interfaces.0.attach)" = "true unknown"
		fi
		FGB status > "$FG_TMP/st.txt" 2>&1
		check "$how: status text lists the programs on v1 and floodgate's place" \
			grep -qE "1\. floodgate \(id [0-9]+.*<- floodgate" "$FG_TMP/st.txt"
		got=$(arrived $P_FG)
		expect "$how: floodgate limits UDP $P_FG" 'limited "$got"' "$N" "1..40" "$got"
		d0=$(fg_stat "$PIN" udp-limited drop)
		ids0=$(xdp_ids)
		fg_daemon_stop KILL
		got=$(arrived $P_FG)
		expect "$how: after SIGKILL the filter still enforces" 'limited "$got"' "$N" "1..40" "$got"
		check_cmp "$how: after SIGKILL the same program runs on v1" "$(xdp_ids)" = "$ids0"
		d1=$(fg_stat "$PIN" udp-limited drop)
		if ! start; then bad "$how: restart adopts" "$(tail -5 "$DLOG" | one_line 400)"; continue; fi
		check "$how: restart adopted (log)" grep -qE "adopted (pinned link|floodgate's program)" "$DLOG"
		d2=$(fg_stat "$PIN" udp-limited drop)
		check_cmp "$how: restart kept the counters (drops before $d0, after the kill $d1)" "$d2" -ge "$d1"
		check_cmp "$how: drops counted while no daemon ran" "$d1" -gt "$d0"
		got=$(arrived $P_FG)
		expect "$how: the adopted filter limits" 'limited "$got"' "$N" "1..40" "$got"
		status_json && check_cmp "$how: status after adoption" \
			"$(fg_json_get "$FG_TMP/st.json" interfaces.0.attached interfaces.0.attach)" = "true $kind"
		fg_daemon_stop KILL
		out=$(FGB detach 2>&1); rc=$?
		check_cmp "$how: floodgate detach (no daemon) exits 0 [$(echo "$out" | one_line 120)]" "$rc" = 0
		check "$how: after detach v1 has no XDP program" xdp_free
		check "$how: after detach the pin dir is gone" test ! -e "$PIN"
		check_cmp "$how: after detach UDP $P_FG arrives whole" "$(arrived $P_FG)" = "$N"
	done
}

# --- xdp_attach changed across a restart: the running filter is adopted as it is ---------
part_change() {
	policy "$FG_TMP/p.yaml" libxdp
	: > "$DLOG"
	if start; then
		ids0=$(xdp_ids)
		fg_daemon_stop KILL
		policy "$FG_TMP/p.yaml" exclusive
		out=$(fg_ns_exec b "$FGD" --config "$FG_TMP/p.yaml" --pin-dir "$PIN" --foreground 2>&1); rc=$?
		check_cmp "libxdp, then exclusive: the restart is refused" "$rc" -ne 0
		if echo "$out" | grep -q "floodgate runs here through libxdp"; then
			ok "libxdp, then exclusive: says what to do: $(echo "$out" | grep -m1 "through libxdp" | one_line 200)"
		else
			bad "libxdp, then exclusive: the reason" "$(echo "$out" | one_line 400)"
		fi
		check_cmp "libxdp, then exclusive: the running filter untouched" "$(xdp_ids)" = "$ids0"
		got=$(arrived $P_FG)
		expect "libxdp, then exclusive: still limited" 'limited "$got"' "$N" "1..40" "$got"
		policy "$FG_TMP/p.yaml" auto
		if start; then
			if [ "$DISPATCHER" = 1 ]; then
				ok "libxdp, then auto: adopted (auto is libxdp here)"
			else
				check "libxdp, then auto: adopted through libxdp, and the log says it is kept that way" \
					grep -q "was attached as libxdp .* by an earlier daemon: kept that way" "$DLOG"
			fi
			check_cmp "libxdp, then auto: the same program on v1" "$(xdp_ids)" = "$ids0"
			fg_daemon_stop
			check "libxdp, then auto: SIGTERM detaches" xdp_free
		else
			bad "libxdp, then auto: restart" "$(tail -5 "$DLOG" | one_line 400)"
		fi
	else
		bad "libxdp: floodgated starts (changed xdp_attach)" "$(tail -5 "$DLOG" | one_line 400)"
	fi
	policy "$FG_TMP/p.yaml" exclusive
	: > "$DLOG"
	if start; then
		ids0=$(xdp_ids)
		fg_daemon_stop KILL
		policy "$FG_TMP/p.yaml" libxdp
		if start; then
			check "exclusive, then libxdp: the pinned link is adopted, and the log says it is kept" \
				grep -q "was attached as exclusive bpf_link by an earlier daemon: kept that way" "$DLOG"
			# a pinned link is adopted by swapping the new program into it
			status_json && check_cmp "exclusive, then libxdp: status says attached, exclusive" \
				"$(fg_json_get "$FG_TMP/st.json" interfaces.0.attached interfaces.0.attach)" = "true exclusive"
			got=$(arrived $P_FG)
			expect "exclusive, then libxdp: limited (program $ids0 swapped for $(xdp_ids))" \
				'limited "$got"' "$N" "1..40" "$got"
			fg_daemon_stop
			check "exclusive, then libxdp: SIGTERM detaches" xdp_free
		else
			bad "exclusive, then libxdp: restart" "$(tail -5 "$DLOG" | one_line 400)"
		fi
	else
		bad "exclusive: floodgated starts (changed xdp_attach)" "$(tail -5 "$DLOG" | one_line 400)"
	fi
}

# --- two interfaces through libxdp: each attached, each detached ---------------------------
part_twoif() {
	if fg_veth_create a v2 b v3 && fg_ns_addr a v2 10.79.0.1/24 && fg_ns_addr b v3 10.79.0.2/24; then
		policy "$FG_TMP/p.yaml" libxdp
		sed -i 's/^interfaces: \[v1\]/interfaces: [v1, v3]/' "$FG_TMP/p.yaml"
		: > "$DLOG"
		if start; then
			status_json && check_cmp "two interfaces, libxdp: both attached, the same way" \
				"$(fg_json_get "$FG_TMP/st.json" interfaces.0.name interfaces.0.attached \
				   interfaces.0.attach interfaces.1.name interfaces.1.attached interfaces.1.attach)" \
				= "v1 true $LIBXDP_KIND v3 true $LIBXDP_KIND"
			got=$(arrived $P_FG)
			expect "two interfaces, libxdp: v1 limited" 'limited "$got"' "$N" "1..40" "$got"
			fg_daemon_stop KILL
			if start; then
				check_cmp "two interfaces, libxdp: restart adopts both" \
					"$(grep -c "adopted floodgate's program" "$DLOG")" = 2
			else
				bad "two interfaces, libxdp: restart" "$(tail -5 "$DLOG" | one_line 400)"
			fi
			fg_daemon_stop
			check "two interfaces, libxdp: SIGTERM detaches both" \
				bash -c "! ip -n $NS_B link show | grep -q xdp && test ! -e $PIN"
		else
			bad "two interfaces, libxdp: floodgated starts" "$(tail -5 "$DLOG" | one_line 400)"
		fi
		ip -n "$NS_B" link del v3
	else
		bad setup "second veth pair"
	fi
}

# --- generic XDP through libxdp and exclusively -----------------------------------------
part_generic() {
	for how in libxdp exclusive; do
		policy "$FG_TMP/p.yaml" "$how" "xdp_mode: skb"
		: > "$DLOG"
		if ! start; then bad "$how, xdp_mode skb: starts" "$(tail -5 "$DLOG" | one_line 400)"; continue; fi
		status_json && check_cmp "$how, xdp_mode skb: status says generic" \
			"$(fg_json_get "$FG_TMP/st.json" interfaces.0.xdp_mode interfaces.0.programs.0.mode)" \
			= "generic generic"
		check "$how, xdp_mode skb: the device runs it in generic mode" \
			bash -c "ip -n $NS_B link show v1 | grep -q xdpgeneric"
		got=$(arrived $P_FG)
		expect "$how, xdp_mode skb: limits" 'limited "$got"' "$N" "1..40" "$got"
		fg_daemon_stop
		check "$how, xdp_mode skb: SIGTERM detaches" xdp_free
	done
}

# --- xdp-filter first, then floodgate ----------------------------------------------------
# beside_modes MODE...: those of FG_XA_MODES (all when it is not set)
beside_modes() {
	local m
	for m in "$@"; do
		case " ${FG_XA_MODES:-$XA_MODES} " in *" $m "*) echo "$m" ;; esac
	done
}
part_beside() {
	[ "$DISPATCHER" = 1 ] || skip "beside xdp-filter on one v1 through libxdp's dispatcher, both orders, either one leaving" \
		"this kernel cannot build the dispatcher ($NO_DISPATCHER); tests/guest_drills.sh runs it on Debian's stock kernel"
	xf_on=0
	if ! xf_load; then
		bad "xdp-filter loads on v1" "$(one_line < "$FG_TMP/xf.out")"
	else
		xf_on=1
		check_cmp "xdp-filter alone drops UDP $P_XF" "$(arrived $P_XF)" = 0
		# the modes of FG_XA_MODES; floodgate leaves first, except in the
		# last of two that join xdp-filter through the dispatcher: there
		# xdp-filter leaves first (floodgate first, below, has both)
		hows=$(beside_modes libxdp exclusive auto)
		last_join=$(for how in $hows; do [ "$how" = exclusive ] || echo "$how"; done)
		[ "$(echo "$last_join" | wc -l)" -ge 2 ] && last_join=$(echo "$last_join" | tail -n 1) || last_join=
		for how in $hows; do
			# the device's program now: a dispatcher is rebuilt when a
			# component leaves it, so its id is read again each time
			xf_ids=$(xdp_ids)
			policy "$FG_TMP/p.yaml" "$how"
			: > "$DLOG"
			if [ "$DISPATCHER" = 1 ] && [ "$how" != exclusive ]; then
				if ! start; then bad "xdp-filter first, $how: floodgate joins" "$(tail -5 "$DLOG" | one_line 400)"; continue; fi
				got=$(arrived $P_FG)
				expect "xdp-filter first, $how: floodgate limits UDP $P_FG beside it" 'limited "$got"' "$N" "1..40" "$got"
				check_cmp "xdp-filter first, $how: xdp-filter still drops UDP $P_XF" "$(arrived $P_XF)" = 0
				status_json && check_cmp "xdp-filter first, $how: status: two programs, floodgate first" \
					"$(fg_json_get "$FG_TMP/st.json" interfaces.0.attach interfaces.0.position \
					   interfaces.0.programs.1.ours)" = "dispatcher 1 false"
				if [ "$how" = "$last_join" ]; then
					# the other way round: xdp-filter leaves, floodgate stays
					xf_unload
					xf_on=0
					got=$(arrived $P_FG)
					expect "xdp-filter first, $how: xdp-filter unloaded, floodgate still limits" \
						'limited "$got"' "$N" "1..40" "$got"
					check_cmp "xdp-filter first, $how: xdp-filter unloaded, UDP $P_XF arrives" "$(arrived $P_XF)" = "$N"
					fg_daemon_stop
					check "xdp-filter first, $how: SIGTERM detaches floodgate, v1 has no XDP program" xdp_free
					continue
				fi
				fg_daemon_stop
				check_cmp "xdp-filter first, $how: floodgate stopped, xdp-filter still drops" "$(arrived $P_XF)" = 0
				check_cmp "xdp-filter first, $how: floodgate stopped, UDP $P_FG arrives whole" "$(arrived $P_FG)" = "$N"
				continue
			fi
			out=$(fg_ns_exec b "$FGD" --config "$FG_TMP/p.yaml" --pin-dir "$PIN" --foreground 2>&1); rc=$?
			echo "$out" >> "$DLOG"
			check_cmp "xdp-filter first, $how: floodgated refuses to start" "$rc" -ne 0
			if echo "$out" | grep -q "xdpfilt_" && { [ "$how" = exclusive ] ||
			   echo "$out" | grep -qE "dispatcher|freplace"; }; then
				ok "xdp-filter first, $how: the reason names the program and why: $(echo "$out" | grep -m1 xdpfilt_ | one_line 300)"
			else
				bad "xdp-filter first, $how: the reason" "$(echo "$out" | one_line 400)"
			fi
			check_cmp "xdp-filter first, $how: xdp-filter's program untouched" "$(xdp_ids)" = "$xf_ids"
			check_cmp "xdp-filter first, $how: xdp-filter still drops UDP $P_XF" "$(arrived $P_XF)" = 0
			check_cmp "xdp-filter first, $how: UDP $P_FG passes (floodgate is not there)" "$(arrived $P_FG)" = "$N"
			check "xdp-filter first, $how: the refused start left no pin dir" test ! -e "$PIN"
		done
		if [ "$xf_on" = 1 ]; then
			xf_unload
			check "xdp-filter unloads" xdp_free
		fi
	fi

# --- floodgate first, then xdp-filter ----------------------------------------------------
	for how in $(beside_modes libxdp exclusive); do
		policy "$FG_TMP/p.yaml" "$how"
		: > "$DLOG"
		if ! start; then bad "floodgate first, $how: starts" "$(tail -5 "$DLOG" | one_line 400)"; continue; fi
		fg_ids=$(xdp_ids)
		if [ "$DISPATCHER" = 1 ] && [ "$how" = libxdp ]; then
			check "floodgate first, $how: xdp-filter joins" xf_load
			check_cmp "floodgate first, $how: xdp-filter drops UDP $P_XF" "$(arrived $P_XF)" = 0
			got=$(arrived $P_FG)
			expect "floodgate first, $how: floodgate still limits UDP $P_FG" 'limited "$got"' "$N" "1..40" "$got"
			status_json && check_cmp "floodgate first, $how: status lists xdp-filter after floodgate" \
				"$(fg_json_get "$FG_TMP/st.json" interfaces.0.position interfaces.0.programs.1.ours)" = "1 false"
			xf_unload
			got=$(arrived $P_FG)
			expect "floodgate first, $how: xdp-filter unloaded, floodgate still limits" 'limited "$got"' "$N" "1..40" "$got"
			check_cmp "floodgate first, $how: xdp-filter unloaded, UDP $P_XF arrives" "$(arrived $P_XF)" = "$N"
			# the other way round: xdp-filter back beside it, then floodgate leaves
			if xf_load; then
				fg_daemon_stop
				check_cmp "floodgate first, $how: floodgate stopped, xdp-filter still drops UDP $P_XF" "$(arrived $P_XF)" = 0
				check_cmp "floodgate first, $how: floodgate stopped, UDP $P_FG arrives whole" "$(arrived $P_FG)" = "$N"
				xf_unload
			else
				bad "floodgate first, $how: xdp-filter joins again" "$(one_line < "$FG_TMP/xf.out")"
			fi
		else
			if xf_load; then
				bad "floodgate first, $how: xdp-filter is refused" "it loaded: $(one_line < "$FG_TMP/xf.out")"
				xf_unload
			else
				ok "floodgate first, $how: xdp-filter is refused: $(grep -m1 -iE "dispatcher|busy|replace" "$FG_TMP/xf.out" | one_line 200)"
			fi
			check_cmp "floodgate first, $how: floodgate's program untouched" "$(xdp_ids)" = "$fg_ids"
			got=$(arrived $P_FG)
			expect "floodgate first, $how: floodgate still limits UDP $P_FG" 'limited "$got"' "$N" "1..40" "$got"
			check_cmp "floodgate first, $how: UDP $P_XF passes (xdp-filter is not there)" "$(arrived $P_XF)" = "$N"
			check "floodgate first, $how: daemon still running" kill -0 "$FG_DPID"
		fi
		fg_daemon_stop
		check "floodgate first, $how: SIGTERM detaches floodgate" xdp_free
	done
}

# --- v1 deleted and recreated: protection back; with a neighbour on it: status lists it --
part_recreate() {
	policy "$FG_TMP/p.yaml" libxdp
	: > "$DLOG"
	if start; then
		ip -n "$NS_B" link del v1
		fg_veth_create a v0 b v1 && fg_ns_addr a v0 10.78.0.1/24 && fg_ns_addr b v1 10.78.0.2/24 && gro_on
		if fg_wait_for "$DLOG" "v1: interface is back .*attached again" 50; then
			ok "libxdp: a recreated v1 is attached again (log)"
		else
			bad "libxdp: a recreated v1 is attached again" "$(tail -5 "$DLOG" | one_line 400)"
		fi
		got=$(arrived $P_FG)
		expect "libxdp: the recreated v1 is limited" 'limited "$got"' "$N" "1..40" "$got"
		# v1 again, made under another name with xdp-filter on it first, then renamed:
		# the daemon meets a neighbour where its interface comes back
		ip -n "$NS_B" link del v1
		if fg_veth_create a v0 b v9 && xf_load v9 &&
		   ip -n "$NS_B" link set v9 down && ip -n "$NS_B" link set v9 name v1 && ip -n "$NS_B" link set v1 up &&
		   fg_ns_addr a v0 10.78.0.1/24 && fg_ns_addr b v1 10.78.0.2/24 && gro_on; then
			if [ "$DISPATCHER" = 1 ]; then
				fg_wait_for "$DLOG" "v1: interface is back .*attached again" 50
				status_json && check_cmp "neighbour on the recreated v1: status lists it beside floodgate" \
					"$(fg_json_get "$FG_TMP/st.json" interfaces.0.attached interfaces.0.attach interfaces.0.programs.1.ours)" \
					= "true dispatcher false"
			else
				if fg_wait_for "$DLOG" "v1: .*xdpfilt_.*(dispatcher|freplace)" 50; then
					ok "neighbour on the recreated v1: the daemon says why it cannot attach: $(grep -m1 -oE "v1: .*xdpfilt_.*" "$DLOG" | one_line 200)"
				else
					bad "neighbour on the recreated v1: the daemon says why" "$(tail -5 "$DLOG" | one_line 400)"
				fi
				sleep 1.2	# the daemon rewrites fg_meta on the tick after
				if status_json; then
					fg_json_check "neighbour: status --json" status "$FG_TMP/st.json"
					nm=$(fg_json_get "$FG_TMP/st.json" interfaces.0.programs.0.name)
					check_cmp "neighbour on the recreated v1: status lists it (not attached, none of ours)" \
						"$(fg_json_get "$FG_TMP/st.json" interfaces.0.attached interfaces.0.attach \
						   interfaces.0.position interfaces.0.programs.0.ours) ${nm%%_*}" \
						= "false none null false xdpfilt"
				else
					bad "neighbour: status --json" "$(one_line < "$FG_TMP/st.err")"
				fi
				FGB status > "$FG_TMP/st.txt" 2>&1
				check "neighbour: status text lists xdp-filter's program" grep -qE "1\. xdpfilt_[a-z_]+ \(id" "$FG_TMP/st.txt"
			fi
			check_cmp "neighbour on the recreated v1: xdp-filter drops UDP $P_XF" "$(arrived $P_XF)" = 0
		else
			bad "recreating v1 with xdp-filter on it" "$(one_line < "$FG_TMP/xf.out")"
		fi
		fg_daemon_stop
		check_cmp "neighbour: floodgated stopped, xdp-filter still drops UDP $P_XF" "$(arrived $P_XF)" = 0
		# xdp-filter knows its device by the name it was loaded on
		ip -n "$NS_B" link set v1 down && ip -n "$NS_B" link set v1 name v9
		fg_ns_exec b xdp-filter unload v9 >> "$FG_TMP/xf.out" 2>&1
		ip -n "$NS_B" link set v9 name v1 && ip -n "$NS_B" link set v1 up
		if xdp_free; then ok "neighbour: xdp-filter unloads, v1 is free"
		else bad "neighbour: xdp-filter unloads" "$(one_line < "$FG_TMP/xf.out")"; fi
	else
		bad "libxdp: floodgated starts (recreate drill)" "$(tail -5 "$DLOG" | one_line 400)"
	fi
}

# --- bad input: refused, nothing changes ------------------------------------------------
part_badinput() {
	for bad_line in "xdp_attach: shared" "xdp_priority: 1001" "xdp_chain: [pass, jump]" "xdp_chain: []"; do
		case $bad_line in
		xdp_attach*) printf 'interfaces: [v1]\n%s\nrules: []\n' "$bad_line" > "$FG_TMP/bad.yaml" ;;
		*) printf 'interfaces: [v1]\nxdp_attach: libxdp\n%s\nrules: []\n' "$bad_line" > "$FG_TMP/bad.yaml" ;;
		esac
		out=$("$FG" check "$FG_TMP/bad.yaml" 2>&1); rc=$?
		if [ $rc = 1 ] && echo "$out" | grep -qE "bad.yaml:[0-9]+:[0-9]+.*xdp_"; then
			ok "check refuses '$bad_line': $(echo "$out" | one_line 160)"
		else
			bad "check refuses '$bad_line'" "rc=$rc $(echo "$out" | one_line 300)"
		fi
		out=$(fg_ns_exec b "$FGD" --config "$FG_TMP/bad.yaml" --pin-dir "$PIN" --foreground 2>&1); rc=$?
		check_cmp "floodgated refuses '$bad_line'" "$rc" -ne 0
		check "'$bad_line': nothing attached, no pin dir" bash -c "! ip -n $NS_B link show v1 | grep -q xdp && test ! -e $PIN"
	done
	printf 'interfaces: [v1]\nxdp_attach: exclusive\nxdp_priority: 5\nrules: []\n' > "$FG_TMP/bad.yaml"
	out=$("$FG" check "$FG_TMP/bad.yaml" 2>&1); rc=$?
	check_cmp "check refuses xdp_priority with xdp_attach: exclusive [$(echo "$out" | one_line 120)]" "$rc" = 1
	# a bad reload leaves the running filter as it is
	policy "$FG_TMP/p.yaml" libxdp
	: > "$DLOG"
	if start; then
		ids0=$(xdp_ids)
		cp "$FG_TMP/p.yaml" "$FG_TMP/good.yaml"
		sed -i 's/^xdp_attach: libxdp/xdp_attach: sideways/' "$FG_TMP/p.yaml"
		out=$(FGB reload 2>&1); rc=$?
		check_cmp "reload with xdp_attach: sideways fails [$(echo "$out" | one_line 150)]" "$rc" -ne 0
		check_cmp "bad reload: the same program on v1" "$(xdp_ids)" = "$ids0"
		got=$(arrived $P_FG)
		expect "bad reload: floodgate still limits" 'limited "$got"' "$N" "1..40" "$got"
		cp "$FG_TMP/good.yaml" "$FG_TMP/p.yaml"
		fg_daemon_stop
		check "bad reload: SIGTERM detaches" xdp_free
	else
		bad "libxdp: floodgated starts (bad reload)" "$(tail -5 "$DLOG" | one_line 400)"
	fi
}

# --- the parts ---------------------------------------------------------------------------
for p in ${FG_XA_PARTS:-$XA_PARTS}; do
	t0=$SECONDS
	"part_$p"
	echo "# part $p: $((SECONDS - t0)) s"
done
not_run=
for p in $XA_PARTS; do
	case " ${FG_XA_PARTS:-$XA_PARTS} " in *" $p "*) ;; *) not_run+=" $p" ;; esac
done
for p in $XA_MODES; do
	case " ${FG_XA_MODES:-$XA_MODES} " in *" $p "*) ;; *) not_run+=" $p(modes,beside)" ;; esac
done
[ -z "$not_run" ] || skip "parts not run:$not_run" "not in FG_XA_PARTS='${FG_XA_PARTS:-}' FG_XA_MODES='${FG_XA_MODES:-}'"
fg_finish
