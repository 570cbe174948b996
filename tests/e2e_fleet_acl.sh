#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# Redis ACL users for the fleet (issue 22, item 4), through the CLI and the
# daemon against a real redis-server on a Unix socket started here:
#   - `fleet: {redis: "unix:SOCK?user=NAME", password: ...}` and the same
#     with `user:` in the policy pass `floodgate check`, which shows the
#     user and never the password;
#   - floodgated leases as that user, with the rights docs/fleet.md lists
#     (the connection is the user's: CLIENT LIST), status names the user;
#   - the user's password changed in Redis and its connection killed: the
#     rule's reason names the AUTH refusal, and so does the log line of the
#     release at SIGTERM ("handing the leases back failed (AUTH as user ...").
# Needs root. Cleans up its namespaces, daemon, pin dir and Redis.
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
. tests/fleet_lib.sh
fl_init --pin fleetacl "$FGD" "$FG"
fg_pair -q g g0 10.94.0.1/24 r r0 10.94.0.2/24
SOCK=$FG_TMP/redis.sock
fl_redis_up "$SOCK"
# the rights docs/fleet.md gives a floodgate user ("Redis users"), word for word
RIGHTS=$(sed -n '/^    ACL SETUSER floodgate on >PASSWORD/,/^$/p' docs/fleet.md | tr -d '\\\n' |
	sed -E 's/^ *ACL SETUSER floodgate on >PASSWORD *//')
if [ -z "$RIGHTS" ]; then
	bad "docs/fleet.md gives the ACL line" "no 'ACL SETUSER floodgate on >PASSWORD' block"; fg_finish
fi
set -f	# ~floodgate:* is a key pattern, not a glob
# shellcheck disable=SC2086
check_cmp "ACL SETUSER fgnode with the documented rights ($RIGHTS)" \
	"$(fl_cli ACL SETUSER fgnode reset on '>s3cret' $RIGHTS)" = OK
set +f

policy() {	# policy URL [extra fleet: lines]
	cat <<YAML
interfaces: [r0]
max_sources: 4096
fleet:
  redis: "$1"
  password: s3cret
  node: n1
  lease_interval: 200ms
${2:-}
rules:
  - {name: fl, match: {proto: udp, dport: 1005}, fleet: {rate: 100/s, burst: 100}}
YAML
}
policy "unix:$SOCK?user=fgnode" > "$FG_TMP/p.yaml"
policy "unix:$SOCK" "  user: fgnode" > "$FG_TMP/p2.yaml"
for f in p p2; do
	"$FG" check "$FG_TMP/$f.yaml" > "$FG_TMP/$f.check" 2>&1; rc=$?
	expect "check $f.yaml: accepted, shows the user, hides the password" \
		"[ $rc = 0 ] && grep -q 'unix:$SOCK?user=fgnode' '$FG_TMP/$f.check' && ! grep -q s3cret '$FG_TMP/$f.check'" \
		"$(grep -m1 -E 'redis:|user' "$FG_TMP/$f.yaml" | one_line)" "exit 0, unix:...?user=fgnode, no password" \
		"exit $rc: $(grep -m1 'fleet:' "$FG_TMP/$f.check" | one_line 160)"
done
policy "unix:$SOCK" "  user: \"a b\"" > "$FG_TMP/bad.yaml"
"$FG" check "$FG_TMP/bad.yaml" > "$FG_TMP/bad.check" 2>&1; rc=$?
check "check: a user name with a blank is refused with its place ($(one_line 120 < "$FG_TMP/bad.check"))" \
	bash -c "[ $rc = 1 ] && grep -q ':8:9: fleet: user' '$FG_TMP/bad.check'"

fg_daemon_up r "$FG_TMP/p2.yaml" "floodgated starts as ACL user fgnode"
ok "floodgated (pid $FG_DPID) with fleet user fgnode (the policy's user:)"
n=50
while [ $n -gt 0 ]; do
	fl_status "$PIN" "$FG_TMP/s.json"
	[ "$(fl_rule_get "$FG_TMP/s.json" fl state)" = ok ] && break
	sleep 0.1; n=$((n - 1))
done
read -r state reason <<< "$(fl_rule_get "$FG_TMP/s.json" fl state reason)"
check_cmp "the fleet rule leases as fgnode (state; reason '${reason:-}')" "$state" = ok
check_cmp "status names the Redis user" "$(fg_json_get "$FG_TMP/s.json" fleet.redis)" = "unix:$SOCK?user=fgnode"
check "Redis sees the daemon's connection as user fgnode (CLIENT LIST)" \
	bash -c "'${FL_CLI[0]}' -s '$SOCK' CLIENT LIST | grep -q 'user=fgnode'"

# the password changes in Redis; the connection goes
fl_cli ACL SETUSER fgnode resetpass '>changed' > /dev/null
fl_cli CLIENT KILL USER fgnode > /dev/null
n=50; reason=
while [ $n -gt 0 ]; do
	fl_status "$PIN" "$FG_TMP/s.json"
	reason=$(fl_rule_get "$FG_TMP/s.json" fl reason)
	case "$reason" in *"AUTH as user fgnode refused: WRONGPASS"*) break ;; esac
	sleep 0.1; n=$((n - 1))
done
check "password changed: the rule's reason names the AUTH refusal ($reason)" [ "$n" -gt 0 ]
fg_daemon_stop TERM
check_cmp "SIGTERM: exit 0" "$?" = 0
line=$(grep 'handing the leases back failed' "$DLOG" | tail -1)
check "the release's log line names the AUTH refusal ($line)" \
	bash -c "grep -q 'handing the leases back failed (AUTH as user fgnode refused: WRONGPASS' '$DLOG'"
fl_redis_stop
fg_finish
