#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The whole test suite: every .output/tests/test_* binary, every
# tests/test_*.sh, every tests/e2e_*.sh and tests/gameday_*.sh script and,
# where a guest can boot (tools/vm/run --check), the guest stage
# tests/guest_drills.sh. The last lines are the skipped count, the failed
# tests, then "N passed, N failed" alone on the last line, for CI.
#   tests/run.sh [-j N] [--unit | --gameday] [NAME...]
#     -j N       N tests at once (default: $FG_JOBS, else the online CPUs)
#     --unit     only tests that need neither root nor namespaces
#     --gameday  everything, the drills and fuzzers long (FG_GAMEDAY=1)
#     NAME...    only these tests (test_datapath, e2e_fleet.sh, ...)
#
# Tests run side by side, up to N at once, longest first (by the times of
# the last run, $OUTPUT/test-times, else tests/test-times), a SERIAL one
# whenever none runs (see next_start); each run's start and end offsets go
# to $OUTPUT/test-schedule, and the last line of times adds up the SERIAL
# chain and the ALONE tests, the floor of the wall time. Each test's output
# goes to a log of its own and is printed whole when it ends, in a fixed
# order: the list order of those that share the CPUs, then those that run
# alone. A test in ALONE (below) runs with nothing beside it, after the
# others; of the tests in SERIAL at most one runs at a time. Every other
# test keeps to its own namespaces, pin dirs (fg<pid>-...), temp dirs and
# ports, and its checks hold beside any other.
# Each test has FG_TEST_TIMEOUT seconds (default 1200; --gameday 3600); one
# that overruns is stopped (SIGTERM, its own trap cleans up; SIGKILL 60 s
# later) and counts as a failure.
set -u
cd "$(dirname "$0")/.." || exit 2
OUT=${OUTPUT:-.output}
export OUTPUT=$OUT
unit_only=0
# the CPUs: at -j 3 here (load 9-14 from other sessions) more rate checks
# failed than at -j 2, for no shorter a run (the guest stage is the long pole)
jobs=${FG_JOBS:-$(nproc 2>/dev/null || echo 2)}
only=()
while [ $# -gt 0 ]; do
	case "$1" in
	--unit) unit_only=1 ;;
	--gameday) export FG_GAMEDAY=1 ;;
	-j) jobs=${2:-}; shift ;;
	-j*) jobs=${1#-j} ;;
	-h|--help) sed -n '3,/^[^#]/p' "$0" | sed -n 's/^# \{0,1\}//p'; exit 0 ;;
	-*) echo "run.sh: unknown option $1 (--help)" >&2; exit 2 ;;
	*) only+=("$1") ;;
	esac
	shift
done
case "$jobs" in
'' | *[!0-9]* | 0) echo "run.sh: -j wants a count of 1 or more, not '$jobs'" >&2; exit 2 ;;
esac
timeout_s=${FG_TEST_TIMEOUT:-$([ -n "${FG_GAMEDAY:-}" ] && echo 3600 || echo 1200)}

# Tests that must not share the machine, and why; they run after the
# others, one at a time. Measured here: at -j 3 e2e_daemoncost's "bpf()
# calls a second do not grow" failed (62 against 56), test_fleet's shares
# failed on a loaded machine in two runs of three.
declare -A ALONE=(
	[e2e_daemoncost.sh]="the daemon's own reads and syscalls a second, two windows compared"
	[test_fleet]="lease rounds paced every 50 ms on the wall clock, shares by demand"
)
# FG_GUEST=alone: the guest stage after the others, with nothing beside it
# (default: in the pool, beside the host tests; measured below)
[ "${FG_GUEST:-pool}" = alone ] && ALONE[guest_drills.sh]="FG_GUEST=alone"
# Tests whose checks time real frames against rates: one at a time, each
# beside at most one other test (-j 2). With all of them beside others at
# -j 2 every check held, in two runs here; the tolerances are 5-10 %.
declare -A SERIAL=(
	[e2e_traffic.sh]="admission within 5 % of rate x time of real floods"
	[e2e_fleet.sh]="fleet admission within 5 %, Redis calls a second"
	[gameday_fleet.sh]="on_loss shares under floods, timed against lease expiry"
	[e2e_fgen.sh]="fgen's pacing within 10 %"
	[e2e_shed.sh]="the shedder's ramp and decay timed in wall-clock seconds"
	[guest_drills.sh]="a QEMU guest under TCG, ~2 CPUs: never beside a test that times rates"
	[gameday_fleet_hostile.sh]="each host's share after a hostile write, against lease expiry"
	[e2e_soak.sh]="per-source and aggregate admission within 1 % of burst + rate x T"
	[e2e_escalate_scope.sh]="escalation after 2 s of a 500/s flood, a client's connects every 0.2 s"
	[e2e_synauth.sh]="real connects and SYN-ACK caps during a SYN flood at fgen's full rate"
)

# FG_ALONE="NAME ...", FG_SERIAL="NAME ...": these instead (to measure
# what can overlap)
if [ -n "${FG_ALONE+set}" ]; then
	ALONE=()
	for n in $FG_ALONE; do ALONE[$n]="FG_ALONE"; done
fi
if [ -n "${FG_SERIAL+set}" ]; then
	SERIAL=()
	for n in $FG_SERIAL; do SERIAL[$n]="FG_SERIAL"; done
fi

# mono: seconds since the epoch, to 0.1 s, without a fork
mono() { local t=${EPOCHREALTIME/[.,]/}; echo "$((t / 1000000)).$((t / 100000 % 10))"; }

if [ "$(id -u)" = 0 ] && [ "$unit_only" = 0 ] && ! mountpoint -q /sys/fs/bpf; then
	# a fresh machine may not have bpffs (the daemon mounts it itself, but
	# some tests pin before any daemon runs)
	mount -t bpf bpf /sys/fs/bpf && echo "run.sh: mounted bpffs on /sys/fs/bpf"
fi

# --- the list ------------------------------------------------------------------------
names=(); cmds=(); pass=0; fail=0; skip=0; failed_list=""
wanted() { # wanted NAME: no NAME... given, or NAME among them (.sh optional)
	local n
	[ ${#only[@]} = 0 ] && return 0
	for n in "${only[@]}"; do
		if [ "$n" = "$1" ] || [ "$n.sh" = "$1" ]; then return 0; fi
	done
	return 1
}
add() { # add NAME CMD...
	wanted "$1" || return 0
	names+=("$1"); shift
	cmds+=("$*")
}
for t in "$OUT"/tests/test_*; do
	[ -x "$t" ] || continue
	case "$t" in *.d|*.o) continue ;; esac
	n=$(basename "$t")
	if [ "$unit_only" = 1 ] && grep -q "FG_NEEDS_ROOT" "tests/$n.c" 2>/dev/null; then
		wanted "$n" || continue
		echo "skip - $n: needs root (--unit)"; skip=$((skip + 1)); continue
	fi
	add "$n" "$t"
done
# shell tests that need no namespace (each skips what needs root itself)
for s in tests/test_*.sh; do
	[ -f "$s" ] && add "$(basename "$s")" bash "$s"
done
if [ "$unit_only" = 0 ]; then
	for s in tests/e2e_*.sh tests/gameday_*.sh; do
		[ -f "$s" ] || continue
		case "$s" in *_lib.sh) continue ;; esac # sourced by the others
		add "$(basename "$s")" bash "$s"
	done
fi
# the guest stage: the kernel-dependent drills on Debian's stock kernel in
# a QEMU guest, where one can boot here; else a skip saying why
guest_skipped=0
if [ "$unit_only" = 0 ] && [ -f tests/guest_drills.sh ] && wanted guest_drills.sh; then
	if why=$(tools/vm/run --check 2>&1); then
		add guest_drills.sh bash tests/guest_drills.sh
	else
		echo "skip - guest_drills.sh: no guest can boot here: $(echo "$why" | tail -n 1)"
		skip=$((skip + 1)); guest_skipped=1
	fi
fi
for n in "${only[@]}"; do # a name that matches nothing is a typo, not a pass
	found=0
	[ "$guest_skipped" = 1 ] && { [ "$n" = guest_drills ] || [ "$n" = guest_drills.sh ]; } && continue
	for m in "${names[@]}"; do [ "$n" = "$m" ] || [ "$n.sh" = "$m" ] && found=1; done
	[ $found = 1 ] || [ "$unit_only" = 1 ] || { echo "run.sh: no test named $n" >&2; exit 2; }
done

# the print order: the shared ones in list order, then those alone
order=(); alone_idx=()
for i in "${!names[@]}"; do
	if [ -n "${ALONE[${names[$i]}]:-}" ] && [ "$jobs" -gt 1 ]; then alone_idx+=("$i"); else order+=("$i"); fi
done
order+=("${alone_idx[@]}")

# the start order of the shared ones: longest first, by the last run's times
# (a fresh clone: tests/test-times, the times of a run here)
times_file=$OUT/test-times
declare -A last=()
for f in tests/test-times "$times_file"; do
	[ -r "$f" ] || continue
	while read -r n s; do last[$n]=${s%.*}; done < "$f"
done
start_q=()
while read -r _ i; do start_q+=("$i"); done < <(
	for i in "${order[@]}"; do
		[ -n "${ALONE[${names[$i]}]:-}" ] && [ "$jobs" -gt 1 ] && continue
		echo "${last[${names[$i]}]:-0} $i"
	done | sort -s -k1,1nr)

log_dir=$(mktemp -d /tmp/fgtest.XXXXXX)
declare -A pid_of=() rc=() t0=() t1=()
running=0
serial_on=0 # a SERIAL test is running

start() { # start INDEX: in the background, output to its log
	local i=$1
	# shellcheck disable=SC2086 # cmds[] are words: a path, or bash and a path
	timeout -k 60 "$timeout_s" ${cmds[$i]} > "$log_dir/$i.log" 2>&1 < /dev/null &
	pid_of[$!]=$i
	t0[$i]=$(mono)
	running=$((running + 1))
}

reap() { # reap: wait for one test to end
	local p i st
	wait -n -p p; st=$?
	if [ -z "${p:-}" ]; then # no child left: nothing is running
		[ $st = 127 ] && running=0
		return 0
	fi
	[ -n "${pid_of[$p]:-}" ] || return 0
	i=${pid_of[$p]}
	unset "pid_of[$p]"
	rc[$i]=$st
	t1[$i]=$(mono)
	running=$((running - 1))
	[ -n "${SERIAL[${names[$i]}]:-}" ] && serial_on=0
	return 0
}

# next_start: the index in start_q of the test to start now, or -1. The
# SERIAL tests run one after another, a chain: 556 s of a 790 s CI run at
# -j 2 (the guest stage 214 s of it). So while none runs, the longest
# SERIAL one left starts first and the others fill the other slots,
# longest first. Taken longest first among all, that run's chain had 147 s
# of gaps, and its last link (gameday_fleet_hostile) ran at the end with
# nothing beside it for 68 s.
next_start() {
	local k first=-1
	for k in "${!start_q[@]}"; do
		if [ -n "${SERIAL[${names[${start_q[$k]}]}]:-}" ]; then
			[ $serial_on = 1 ] && continue
			echo "$k"
			return
		fi
		[ "$first" = -1 ] && first=$k
	done
	echo "$first"
}

# A test ends with "N passed, N failed, N skipped"; add it up. One that
# crashed, timed out or printed no summary counts as one failure.
tally() { # tally INDEX
	local i=$1 name=${names[$1]} log=$log_dir/$1.log line p f s secs
	secs=$(awk -v a="${t0[$i]}" -v b="${t1[$i]}" 'BEGIN { printf "%.1f", b - a }')
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
	if [ "${rc[$i]}" = 124 ]; then
		echo "FAIL - $name: stopped after ${timeout_s} s (FG_TEST_TIMEOUT)"
		fail=$((fail + 1)); failed_list+=" $name"
	elif [ -z "$line" ]; then
		echo "FAIL - $name: exited ${rc[$i]} without a summary line"
		fail=$((fail + 1)); failed_list+=" $name"
	fi
	if [ -n "$line" ]; then
		p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/')
		f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
		s=$(echo "$line" | sed -nE 's/.* ([0-9]+) skipped.*/\1/p')
		pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + ${s:-0}))
		if [ "$f" != 0 ]; then
			failed_list+=" $name"
		elif [ "${rc[$i]}" != 0 ] && [ "${rc[$i]}" != 124 ]; then
			echo "FAIL - $name: exited ${rc[$i]}"
			fail=$((fail + 1)); failed_list+=" $name"
		fi
	fi
	echo "--- $name: ${line:-no summary} ($secs s)"
	echo "$name $secs" >> "$log_dir/times"
	awk -v n="$name" -v s="$t_start" -v a="${t0[$i]}" -v b="${t1[$i]}" \
		'BEGIN { printf "%s %.1f %.1f\n", n, a - s, b - s }' >> "$log_dir/schedule"
}

printed=0
flush() { # flush: print every finished test whose turn has come
	local i
	while [ $printed -lt ${#order[@]} ]; do
		i=${order[$printed]}
		[ -n "${rc[$i]:-}" ] || return 0
		echo "=== ${names[$i]}"
		cat "$log_dir/$i.log"
		tally "$i"
		printed=$((printed + 1))
	done
}

stop_all() {
	local p
	for p in "${!pid_of[@]}"; do kill -s TERM "$p" 2>/dev/null; done
	wait
	rm -rf "$log_dir"
	echo "run.sh: interrupted"
	exit 130
}
trap stop_all INT TERM

t_start=$(mono)
# 1. the shared ones, up to $jobs at once, one SERIAL one at a time
while [ ${#start_q[@]} -gt 0 ] || [ $running -gt 0 ]; do
	while [ $running -lt "$jobs" ] && [ ${#start_q[@]} -gt 0 ]; do
		k=$(next_start)
		[ "$k" = -1 ] && break
		i=${start_q[$k]}
		unset "start_q[$k]"
		start_q=("${start_q[@]}")
		[ -n "${SERIAL[${names[$i]}]:-}" ] && serial_on=1
		start "$i"
	done
	[ $running -gt 0 ] && { reap; flush; }
done
flush
# 2. those alone, one at a time, their output as it comes
for i in "${alone_idx[@]}"; do
	echo "=== ${names[$i]} (alone: ${ALONE[${names[$i]}]})"
	t0[$i]=$(mono)
	# shellcheck disable=SC2086
	timeout -k 60 "$timeout_s" ${cmds[$i]} < /dev/null 2>&1 | tee "$log_dir/$i.log"
	rc[$i]=${PIPESTATUS[0]}
	t1[$i]=$(mono)
	tally "$i"
	printed=$((printed + 1))
done

# the times, for the next run's order and for reading
if [ -s "$log_dir/times" ]; then
	# this run's times, and the last run's of tests that did not run now
	if [ -d "$OUT" ] && [ -w "$OUT" ]; then
		[ -e "$times_file" ] || : > "$times_file"
		awk 'FNR == NR { t[$1] = $2; next } !($1 in t) { t[$1] = $2 }
		     END { for (n in t) print n, t[n] }' "$log_dir/times" "$times_file" |
			sort > "$times_file.new" && mv "$times_file.new" "$times_file"
	fi
	total=$(awk '{ s += $2 } END { printf "%.0f", s }' "$log_dir/times")
	# the floor of the wall time: the SERIAL chain, those alone
	chain=$(awk -v l=" ${!SERIAL[*]} " 'index(l, " " $1 " ") { s += $2 } END { printf "%.0f", s }' "$log_dir/times")
	alone=$(awk -v l=" ${!ALONE[*]} " 'index(l, " " $1 " ") { s += $2 } END { printf "%.0f", s }' "$log_dir/times")
	echo "# run.sh: ${#names[@]} tests, -j $jobs, $(awk -v a="$t_start" -v b="$(mono)" 'BEGIN { printf "%.0f", b - a }') s wall for $total s of tests (SERIAL $chain s, ALONE $alone s); slowest: $(sort -k2,2nr "$log_dir/times" | head -n 5 | awk '{ printf "%s%s %.0f s", (NR > 1 ? ", " : ""), $1, $2 }')"
fi
[ -d "$OUT" ] && [ -w "$OUT" ] && cp "$log_dir/schedule" "$OUT/test-schedule" 2>/dev/null
rm -rf "$log_dir"
[ -n "$failed_list" ] && echo "failed:$failed_list"
echo "$skip skipped"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
