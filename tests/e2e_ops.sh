#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# End to end, the operator's view of a running filter (issue 23): with a
# daemon, a flood and a deny entry, every command's text fits 80 columns
# (status, stats, stats --watch, top, deny list, mode, bypass, kernel) and
# its --json is strict; stats shows only the outcomes that happened, -o
# chooses them, and piped numbers are exact; mode and bypass alone say the
# state; a bad reload is refused and the running policy stays; the metrics
# page (mode label, build info, process metrics) passes promtool and / links
# /metrics. Needs root; cleans up its namespaces, pin dir and daemon.
# Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
fg_init --root --pin ops "$FGD" "$FG" "$FGEN"
unset COLUMNS	# the default width is what is checked here

fg_pair -q a v0 10.79.0.1/24 b v1 10.79.0.2/24
MPORT=$((20000 + $$ % 20000))
cat > "$FG_TMP/policy.yaml" <<YAML
interfaces: [v1]
max_sources: 4096
metrics: "127.0.0.1:$MPORT"
rules:
  - name: udp9-a-rather-long-rule-name
    match: {proto: udp, dport: 9}
    per_source: {rate: 100/s, burst: 100}
YAML
fg_daemon_up b "$FG_TMP/policy.yaml" "floodgated starts"
ok "floodgated starts"

# widest NAME FILE: every line of FILE within 80 columns
widest() {
	local w
	w=$(awk '{ if (length($0) > m) m = length($0) } END { printf "%d", m }' "$2")
	if [ "${w:-0}" -le 80 ]; then ok "$1: fits 80 columns (widest line $w, $(wc -l < "$2") lines)"
	else bad "$1: fits 80 columns" "widest $w: $(awk 'length($0) > 80' "$2" | head -3 | one_line 300)"; fi
}

fg_ns_exec a "$FGEN" -i v0 --dst-mac "$MAC" -d 10.79.0.2 -s 10.79.0.1 --dport 9 -r 20000 -t 1 \
	> /dev/null 2>&1
"$FG" deny add 203.0.113.0/24 --for 30m --comment "incident 42: a long comment to see where it goes" \
	> /dev/null 2>&1
"$FG" bypass on --for 10m > /dev/null 2>&1 && "$FG" bypass off > /dev/null 2>&1

for c in status stats top "deny list" mode bypass kernel; do
	# shellcheck disable=SC2086
	"$FG" $c > "$FG_TMP/out" 2>&1
	widest "floodgate $c" "$FG_TMP/out"
	cp "$FG_TMP/out" "$FG_TMP/out.${c// /_}"
done
timeout 2.5 "$FG" stats --watch 1 > "$FG_TMP/watch" 2>&1
widest "floodgate stats --watch" "$FG_TMP/watch"
"$FG" status --json > "$FG_TMP/status.json"
fg_json_check "status --json" status "$FG_TMP/status.json"
check_cmp "status --json: this build's version" "$(fg_json_get "$FG_TMP/status.json" version.floodgate)" = \
	"$("$FG" --version | awk '{ print $3 }')"
"$FG" stats --json > "$FG_TMP/stats.json"
fg_json_check "stats --json" stats "$FG_TMP/stats.json"
"$FG" top --json > "$FG_TMP/top.json"
fg_json_check "top --json" top "$FG_TMP/top.json"
"$FG" deny list --json > "$FG_TMP/deny.json"
fg_json_check "deny list --json" rtlist "$FG_TMP/deny.json"

# stats: the outcomes that happened, exact when piped
hdr=$(sed -n 1p "$FG_TMP/out.stats")
if echo "$hdr" | grep -qw pass && echo "$hdr" | grep -qw drop && ! echo "$hdr" | grep -qw shed_shadow; then
	ok "stats shows the outcomes that happened: '$hdr'"
else
	bad "stats shows the outcomes that happened" "$hdr"
fi
drop=$(fg_stat "$PIN" udp9-a-rather-long-rule-name drop)
row=$(grep '^udp9' "$FG_TMP/out.stats")
check "stats piped: exact numbers (drop $drop in '$row')" bash -c "echo '$row' | grep -qw '$drop'"
"$FG" stats -o drop,pass > "$FG_TMP/o"
check_cmp "stats -o drop,pass: those columns, in that order" "$(sed -n 1p "$FG_TMP/o" | awk '{ print $2, $3 }')" = "drop pass"
"$FG" stats -o nosuch > /dev/null 2>&1
check_cmp "stats -o nosuch: a usage error" "$?" = 2

check "mode alone: the mode in force" grep -qx 'mode: enforce (the file'"'"'s)' "$FG_TMP/out.mode"
check "bypass alone: off" grep -qx 'bypass: off' "$FG_TMP/out.bypass"
"$FG" bypass on --for 1m > /dev/null 2>&1
check "bypass alone, on: for how long" bash -c "'$FG' bypass | grep -qE '^bypass: ON for another (59|60) s'"
"$FG" bypass off > /dev/null 2>&1
"$FG" mode shadow > /dev/null 2>&1
check "mode alone, overridden" bash -c "'$FG' mode | grep -q '^mode: shadow, a CLI override'"
"$FG" mode file > /dev/null 2>&1
check "deny list: the comment on the entry's second line" grep -q "^    by .*: incident 42" "$FG_TMP/out.deny_list"

# a bad reload is refused; the policy in force stays
v0=$(fg_json_get "$FG_TMP/status.json" policy.version)
cp "$FG_TMP/policy.yaml" "$FG_TMP/good.yaml"
printf '  - name: x\n    per_sorce: {rate: 1/s, burst: 1}\n' >> "$FG_TMP/policy.yaml"
out=$("$FG" reload 2>&1); rc=$?
if [ $rc = 1 ] && echo "$out" | grep -q "did you mean per_source" && echo "$out" | grep -q '\^~~'; then
	ok "reload of a bad file: exit 1, with the caret"
else
	bad "reload of a bad file" "exit $rc: $(echo "$out" | one_line 300)"
fi
check_cmp "the policy in force stays" "$("$FG" status --json | fg_json_get - policy.version)" = "$v0"
cp "$FG_TMP/good.yaml" "$FG_TMP/policy.yaml"

# metrics
# the page is the last tick's snapshot: the 'mode file' above shows on the
# tick after it (a tick is 1 s), so a page is read until it does, 3 s at most
page=$FG_TMP/metrics
n=30
until fg_ns_exec b curl -sf "http://127.0.0.1:$MPORT/metrics" > "$page" 2>/dev/null &&
	grep -qx 'floodgate_mode{mode="enforce"} 1' "$page" || [ $n = 0 ]; do
	sleep 0.1; n=$((n - 1))
done
check "metrics: floodgate_mode by label" grep -qx 'floodgate_mode{mode="enforce"} 1' "$page"
check "metrics: floodgate_build_info" grep -q '^floodgate_build_info{version=' "$page"
check "metrics: process_start_time_seconds" grep -qE '^process_start_time_seconds [0-9]' "$page"
check "metrics: process_open_fds" grep -qE '^process_open_fds [0-9]+$' "$page"
if command -v promtool > /dev/null; then
	out=$(promtool check metrics < "$page" 2>&1); rc=$?
	check_cmp "promtool check metrics on the live page: clean [$(echo "$out" | one_line 200)]" "$rc:${#out}" = "0:0"
else
	skip "promtool check metrics" "promtool is not installed (Debian package prometheus)"
fi
check "metrics: / links /metrics" bash -c "fg_ns_exec() { ip netns exec \"\$(printf '%s%s' '$FG_NS_PREFIX' \"\$1\")\" \"\${@:2}\"; };
	fg_ns_exec b curl -sf http://127.0.0.1:$MPORT/ | grep -q 'href=\"/metrics\"'"

[ -n "${FG_KEEP_OUT:-}" ] && cp "$FG_TMP"/out.* "$FG_KEEP_OUT"/
fg_daemon_stop
fg_finish
