#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The systemd drill (issue 23): a real systemd, PID 1 of its own pid,
# mount, network, UTS, IPC and cgroup namespaces, booted on a throw-away
# overlay of this machine's root (writes go to a tmpfs), with its own
# journald and bpffs; then the newcomer's walk: make install, start
# without an interface (fails, and journalctl -p err says where to set
# it), set FLOODGATE_INTERFACES in /etc/default/floodgated, start, a
# quiet journal, systemctl reload of a good file (applied) and of a bad
# one (refused: reload fails, the policy in force stays, the error is in
# journalctl -p err), stop (nothing left pinned). The host's PID 1 need
# not be systemd. Units that would touch the host's kernel settings
# (sysctl, modules, binfmt, clock, udev) are masked in the overlay.
# Slow for a default run and boots a service manager: it runs with
# FG_GAMEDAY=1 (make gameday) or FG_SYSTEMD_DRILL=1, else it is skipped.
# Needs root. Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/lib.sh
if [ "${FG_GAMEDAY:-0}" != 1 ] && [ "${FG_SYSTEMD_DRILL:-0}" != 1 ]; then
	skip "$FG_NAME" "boots systemd in namespaces (about 30 s): make gameday, or FG_SYSTEMD_DRILL=1"
	summary; exit 0
fi
fg_init --root "$FGD" "$FG"
for t in unshare nsenter chroot /lib/systemd/systemd; do
	command -v "$t" > /dev/null || { skip "$FG_NAME" "$t is not installed"; summary; exit 0; }
done

ROOT=$FG_TMP/root	# the overlay, only inside the drill's mount namespace
RW=$FG_TMP/rw
SDLOG=$FG_TMP/systemd.log
FG_LOGS+=("$SDLOG")
SPID=

# --- boot --------------------------------------------------------------------------
cat > "$FG_TMP/boot.sh" <<EOF
#!/bin/bash
# PID 1 of the new namespaces: the overlay root, its API file systems, systemd
set -eu
R=$ROOT
mount --make-rprivate /
mkdir -p $RW \$R
mount -t tmpfs -o mode=755 tmpfs $RW
mkdir -p $RW/upper $RW/work
mount -t overlay -o lowerdir=/,upperdir=$RW/upper,workdir=$RW/work overlay \$R
mount -t proc proc \$R/proc
mount -t sysfs -o ro sysfs \$R/sys
mount -t tmpfs -o mode=755 tmpfs \$R/sys/fs/cgroup
mount -t cgroup2 cgroup2 \$R/sys/fs/cgroup
mount -t bpf bpf \$R/sys/fs/bpf
mount --rbind /dev \$R/dev
mount -t tmpfs -o mode=755 tmpfs \$R/run
mount -t tmpfs tmpfs \$R/tmp
# what would reach past the namespaces into the host's kernel settings
for u in systemd-sysctl.service systemd-modules-load.service systemd-udevd.service \\
	systemd-udev-trigger.service systemd-binfmt.service proc-sys-fs-binfmt_misc.automount \\
	systemd-timesyncd.service systemd-remount-fs.service systemd-hwdb-update.service \\
	systemd-logind.service cron.service redis-server.service ssh.service getty.target \\
	console-getty.service prometheus.service prometheus-node-exporter.service; do
	ln -sf /dev/null \$R/etc/systemd/system/\$u
done
printf '[Unit]\nDescription=floodgate systemd drill\nRequires=sysinit.target\nAfter=sysinit.target\n' \\
	> \$R/etc/systemd/system/fgdrill.target
ip link set lo up
ip link add fgd0 type veth peer name fgd1 && ip link set fgd0 up && ip link set fgd1 up
hostname fgdrill
exec chroot \$R /usr/bin/env -i container=fgdrill PATH=/usr/sbin:/usr/bin:/sbin:/bin \\
	/lib/systemd/systemd --unit=fgdrill.target
EOF
chmod 755 "$FG_TMP/boot.sh"
unshare --mount --pid --fork --net --uts --ipc --cgroup "$FG_TMP/boot.sh" > "$SDLOG" 2>&1 &
UPID=$!
FG_BG_ALL+=("$UPID")
# in NS: a command inside the drill (its namespaces and root), from the tree
in_ns() { nsenter -t "$SPID" -a -r -w sh -c "cd '$PWD' && $1"; }
for _ in $(seq 100); do
	SPID=$(pgrep -P "$UPID" -f 'systemd --unit=fgdrill' | head -1)
	[ -n "$SPID" ] && break
	sleep 0.1
done
state=
for _ in $(seq 300); do
	[ -n "$SPID" ] && state=$(in_ns 'systemctl is-system-running' 2>/dev/null)
	case $state in running|degraded) break ;; esac
	sleep 0.1
done
case $state in
running|degraded) ok "systemd boots as PID 1 of the drill's namespaces: $state" ;;
*) bad "systemd boots" "state '${state:-none}' after 30 s; $(tail -5 "$SDLOG" | one_line)"; fg_finish ;;
esac

stop_drill() {
	[ -n "$SPID" ] && in_ns 'systemctl poweroff' > /dev/null 2>&1
	for _ in $(seq 100); do kill -0 "$UPID" 2>/dev/null || break; sleep 0.1; done
	kill -9 "$UPID" 2>/dev/null
	wait "$UPID" 2>/dev/null
	SPID=
}
status_get() { in_ns "floodgate status --json" 2>/dev/null | fg_json_get - "$@"; }
journal() { in_ns "journalctl --no-pager -o cat -u floodgated $*"; }

# --- the newcomer's walk ------------------------------------------------------------
if in_ns 'make -s install > /tmp/install.log 2>&1'; then
	ok "make install in the drill's root"
else
	bad "make install" "$(in_ns 'tail -5 /tmp/install.log' | one_line)"; stop_drill; fg_finish
fi
in_ns 'systemctl daemon-reload'
check_cmp "the unit is known: systemctl cat floodgated" "$(in_ns 'systemctl cat floodgated > /dev/null 2>&1; echo $?')" = 0

in_ns 'systemctl start floodgated' > /dev/null 2>&1
check_cmp "start with no interface set: fails" "$(in_ns 'systemctl is-active floodgated')" = failed
errs=$(journal -p err)
if echo "$errs" | grep -q "no interfaces to filter: set FLOODGATE_INTERFACES in /etc/default/floodgated"; then
	ok "journalctl -p err: where to set the interface ($(echo "$errs" | grep -m1 'no interfaces' | cut -c1-60)...)"
else
	bad "journalctl -p err says where to set the interface" "$(echo "$errs" | one_line 300)"
fi

in_ns "sed -i 's/^FLOODGATE_INTERFACES=.*/FLOODGATE_INTERFACES=\"fgd0\"/' /etc/default/floodgated"
in_ns 'systemctl reset-failed floodgated'
t0=$(in_ns 'date +%s')
if in_ns 'systemctl start floodgated'; then
	ok "FLOODGATE_INTERFACES=\"fgd0\" in /etc/default/floodgated: systemctl start floodgated"
else
	bad "systemctl start floodgated" "$(journal -n 20 | one_line 400)"; stop_drill; fg_finish
fi
check_cmp "floodgated is active" "$(in_ns 'systemctl is-active floodgated')" = active
check_cmp "status: the daemon runs, policy version 1, on fgd0" \
	"$(status_get daemon.running policy.version interfaces.0.name)" = "true 1 fgd0"
n=$(journal "--since=@$t0" | wc -l)
check_cmp "a quiet start: $n journal lines (ExecStartPre's check printed nothing)" "$n" -le 20
check_cmp "nothing from the check in the journal" "$(in_ns 'journalctl --no-pager -o cat _COMM=floodgate -u floodgated' | grep -c 'policy ')" = 0

in_ns "sed -i 's|rate: 10/s, burst: 20}|rate: 20/s, burst: 40}|' /etc/floodgate/policy.yaml"
if in_ns 'systemctl reload floodgated'; then ok "systemctl reload of a good file: exit 0"
else bad "systemctl reload of a good file" "$(journal -n 10 | one_line 300)"; fi
check_cmp "the reload applied it: policy version 2" "$(status_get policy.version)" = 2

in_ns "printf '  - name: typo\n    per_sorce: {rate: 1/s, burst: 1}\n' >> /etc/floodgate/policy.yaml"
in_ns 'systemctl reload floodgated' > /dev/null 2>&1
check_cmp "systemctl reload of a bad file: fails" "$?" -ne 0
check_cmp "the policy in force stays: version 2" "$(status_get policy.version)" = 2
check_cmp "floodgated stays active" "$(in_ns 'systemctl is-active floodgated')" = active
if journal -p err | grep -q 'did you mean per_source'; then
	ok "journalctl -p err: the refused reload, with the suggestion"
else
	bad "journalctl -p err: the refused reload" "$(journal -p err | one_line 300)"
fi

in_ns 'systemctl stop floodgated'
check_cmp "systemctl stop: inactive" "$(in_ns 'systemctl is-active floodgated')" = inactive
check "stop: nothing left pinned (detach_on_exit)" in_ns '! test -e /sys/fs/bpf/floodgate'
check "stop: no XDP program left on fgd0" in_ns '! ip link show fgd0 | grep -q xdp'

stop_drill
check "the drill's namespaces are gone" bash -c "! kill -0 $UPID 2>/dev/null"
fg_finish
