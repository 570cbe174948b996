# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# shellcheck shell=bash
#
# What the two shedding end-to-end tests (e2e_shed.sh, e2e_shed_off.sh)
# share, on top of tests/lib.sh (sourced here).
#
#   shed_init NAME NET   fg_init --root --pin NAME (floodgated, floodgate,
#                        fgen); SIG, the file signal, and the shedder's
#                        state dir under FG_TMP; namespaces g and r, veth
#                        g0 10.NET.0.1 <-> r0 10.NET.0.2, without IPv6;
#                        APORT (a listener's) and MPORT (metrics), from the PID
#   setsig VALUE         write the file signal whole, never half a number
#   sj KEY...            shedding.KEY of status --json, space-separated
#   send PORT COUNT      UDP from g to r0's PORT at 20,000/s

. tests/lib.sh

shed_init() {
	fg_init --root --pin "$1" "$FGD" "$FG" "$FGEN"
	SHED_NET=$2
	SIG=$FG_TMP/signal
	export FLOODGATE_RUN_DIR=$FG_TMP	# the shedder's state file, removed with FG_TMP
	fg_pair -q g g0 "10.$2.0.1/24" r r0 "10.$2.0.2/24"
	APORT=$((30000 + $$ % 20000))
	MPORT=$((APORT + 1))
}

setsig() { echo "$1" > "$SIG.tmp" && mv "$SIG.tmp" "$SIG"; }

sj() {
	local k a=()
	for k in "$@"; do a+=("shedding.$k"); done
	"$FG" status --json 2> /dev/null | fg_json_get - "${a[@]}"
}

send() {
	fg_ns_exec g "$FGEN" -i g0 -d "10.$SHED_NET.0.2" -s "10.$SHED_NET.0.1" --udp --dport "$1" \
		--dst-mac "$MAC" -n "$2" -r 20000 > /dev/null 2>&1
}

# shed_start POLICY skip|bad WHAT: POLICY must pass `floodgate check` (if
# not: a skip, where this build may refuse it, or a failure) and floodgated
# start with it in r (if not: a failure); then ok WHAT. A refusal ends the
# test.
shed_start() {
	if ! "$FG" check "$1" > "$FG_TMP/check.out" 2>&1; then
		if [ "$2" = skip ]; then
			skip "$FG_NAME" "this build's policy compiler refuses the shedding policy: $(one_line 200 < "$FG_TMP/check.out")"
		else
			bad "the policy compiles" "$(one_line 300 < "$FG_TMP/check.out")"
		fi
		fg_finish
	fi
	fg_daemon_up r "$1" "$3"
	ok "$3"
}
