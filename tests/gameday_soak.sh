#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# The game-day soak (issue 25): one source table under a steady flood for a
# long while, reloads on a clock, the daemon watched.
#   - arrivals at 3x the per-source limit from many sources (fgen --sources
#     in turn), for SECS;
#   - a reload every RELOAD_S (the file alternates between two versions that
#     keep the flood rule: its buckets and counters carry on), each must
#     succeed;
#   - floodgated's CPU (utime + stime) and RSS sampled every SAMPLE_S, with
#     their least-squares slope over the run: flat, no growth;
#   - accuracy: each of 8 sampled sources (counted behind the filter by an
#     AF_PACKET socket with a kernel filter) and the rule's aggregate pass
#     within 1% of burst + rate x T;
#   - no counter lost: the sum of every outcome of every rule equals the
#     frames that left the generator's veth (fgen's packets - tx_dropped).
# Modes: FG_GAMEDAY=1 (make gameday): 600 s, 100,000 sources at 30/m
# (burst 10; 150,000 frames/s), reload every 30 s, samples every 10 s
# (here: 19 reloads, per-source 309 of 309.7, aggregate -0.23 %, CPU
# 0.44 % of a core and RSS 168,804 kB, both flat).
# Otherwise the short mode (under 60 s): 30 s, 10,000 sources at 5/s
# (burst 20), reload every 10 s, samples every 5 s. SOAK_MODE=smoke
# (tests/e2e_soak.sh): 20 s, 2,000 sources at 10/s, reload and sample
# every 4 s. A sample is taken just before the reload of the same second,
# so every window holds exactly one reload: with fewer windows than a
# reload period's worth (the smoke once sampled every 3 s against reloads
# every 5 s, two samples after the warm-up), a window with a reload next to
# one without read as a slope.
# Needs root. Last line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.." || exit 2
. tests/gameday_lib.sh
gd_init

MODE=${SOAK_MODE:-}
[ -z "$MODE" ] && { [ "$GD_LONG" = 1 ] && MODE=long || MODE=short; }
case $MODE in
long)  SECS=600; N=100000; RATE_SPEC=30/m; RATE=0.5; BURST=10; RELOAD_S=30; SAMPLE_S=10
       RSS_MIN_KB=512; RSS_PCT=2 ;;
smoke) SECS=20; N=2000; RATE_SPEC=10/s; RATE=10; BURST=20; RELOAD_S=4; SAMPLE_S=4
       RSS_MIN_KB=1024; RSS_PCT=5 ;;
*)     SECS=30; N=10000; RATE_SPEC=5/s; RATE=5; BURST=20; RELOAD_S=10; SAMPLE_S=5
       RSS_MIN_KB=1024; RSS_PCT=5 ;;
esac
# the slopes start after the first two reloads: each of them raises the
# RSS high-water mark once (two configs alive for a moment; measured flat
# after that over 30 reloads), and the table has filled by then
WARM=$((2 * RELOAD_S + 1))
ARR=$(awk -v r="$RATE" -v n="$N" 'BEGIN { printf "%d", 3 * r * n }')
echo "# soak ($MODE): $N sources at 3x $RATE_SPEC (burst $BURST): $ARR frames/s for $SECS s;" \
	"reload every $RELOAD_S s, samples every $SAMPLE_S s"

fg_pair -q tx gdt0 "$GD_TX_IP/24" rx gdr0 "$GD_RX_IP/24"
GD_MAC=$MAC

# two versions of the file; both keep rule "flood" (same name, same limit)
write_policy() {	# write_policy VERSION
	{
		echo "interfaces: [gdr0]"
		# room to spare: no set of the table fills (insert_fail is checked)
		echo "max_sources: $((N * 16))"
		# every source gets its bucket on its first frame: the accuracy is
		# the buckets', not the new-source limiter's (its own drills test it)
		echo "admission: {rate: 100000000/s, burst: 10000000}"
		echo "rules:"
		[ "$1" = b ] && echo "  - {name: other, match: {proto: tcp, dport: 2222}, per_source: {rate: 10/s, burst: 10}}"
		echo "  - {name: flood, match: {proto: udp, dport: 9}, per_source: {rate: $RATE_SPEC, burst: $BURST}}"
	} > "$GD_TMP/soak.yaml.tmp" && mv "$GD_TMP/soak.yaml.tmp" "$GD_TMP/soak.yaml"
}
write_policy a
if ! gd_start soak; then
	bad "floodgated starts" "$(tail -3 "$GD_LOG")"; fg_finish
fi
ok "floodgated starts ($N sources of table room)"

# the sampled sources: 10.214.0.0 + i, for 8 i spread over the N
BASE=$((10 << 24 | 214 << 16))
ip_of() { local a=$((BASE + $1)); echo "$((a >> 24 & 255)).$((a >> 16 & 255)).$((a >> 8 & 255)).$((a & 255))"; }
SAMPLED=()
for k in 0 1 2 3 4 5 6 7; do SAMPLED+=("$(ip_of $((k * (N - 1) / 7)))"); done
STOP=$GD_TMP/count.stop
fg_bg rx "$GD_PY" "$GD_TMP/gd_raw.py" count gdr0 "$STOP" "${SAMPLED[@]}" > "$GD_TMP/counts.txt"
CNTPID=$FG_BG_PID
for _ in $(seq 50); do [ -e "$STOP.ready" ] && break; sleep 0.1; done
[ -e "$STOP.ready" ] || { bad "sampled-source counter" "not ready"; fg_finish; }

ticks() { awk '{ print $14 + $15 }' "/proc/$FG_DPID/stat" 2>/dev/null || echo 0; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$FG_DPID/status" 2>/dev/null || echo 0; }
HZ=$(getconf CLK_TCK)

fg_snap "$GD_PIN"
g0=$(fg_stat_sum "$FG_SNAP" total)
p0=$(fg_stat "$FG_SNAP" flood pass)
fg_bg tx "$FGEN" -i gdt0 --dst-mac "$GD_MAC" -s "$(ip_of 0)" --sources "$N" -d "$GD_RX_IP" \
	--dport 9 -r "$ARR" -t "$SECS" --json > "$GD_TMP/fgen.json" 2> "$GD_TMP/fgen.err"
GENPID=$FG_BG_PID
T0=$(date +%s.%N)
: > "$GD_TMP/samples"
reloads=0; reload_fail=0; ver=a; next_reload=$RELOAD_S; next_sample=$SAMPLE_S
lt=$(ticks); lw=$(date +%s%N)
while kill -0 "$GENPID" 2>/dev/null; do
	sleep 0.5
	el=$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%d", b - a }')
	if [ "$el" -ge "$next_sample" ]; then
		t=$(ticks); w=$(date +%s%N)
		# CPU % of one core over the interval, RSS now
		echo "$el $(awk -v dt=$((t - lt)) -v dw=$((w - lw)) -v hz="$HZ" 'BEGIN { printf "%.3f", 100 * dt / hz / (dw / 1e9) }') $(rss_kb)" >> "$GD_TMP/samples"
		lt=$t; lw=$w; next_sample=$((next_sample + SAMPLE_S))
	fi
	if [ "$el" -ge "$next_reload" ] && [ "$el" -lt "$SECS" ]; then
		[ $ver = a ] && ver=b || ver=a
		write_policy $ver
		if "$FG" --pin-dir "$GD_PIN" reload > "$GD_TMP/reload.out" 2>&1; then
			reloads=$((reloads + 1))
		else
			reload_fail=$((reload_fail + 1))
			echo "reload at ${el}s: $(one_line < "$GD_TMP/reload.out")" >> "$GD_TMP/reload.err"
		fi
		next_reload=$((next_reload + RELOAD_S))
	fi
done
wait "$GENPID" 2>/dev/null
sleep 0.5
touch "$STOP"
wait "$CNTPID" 2>/dev/null
fg_snap "$GD_PIN"
g1=$(fg_stat_sum "$FG_SNAP" total)
p1=$(fg_stat "$FG_SNAP" flood pass)

read -r sent elapsed txd <<< "$(fg_json_get "$GD_TMP/fgen.json" packets elapsed_s tx_dropped)"
if [ -z "$sent" ] || [ "$sent" = 0 ]; then
	bad "generator" "$(one_line < "$GD_TMP/fgen.err")"; fg_finish
fi
echo "# sent $sent frames in $elapsed s ($(awk -v s="$sent" -v t="$elapsed" 'BEGIN { printf "%.0f", s / t }') frames/s, asked $ARR), veth dropped $txd"

# --- reloads --------------------------------------------------------------------------
want_reloads=$(( (SECS - 1) / RELOAD_S ))
expect "reloads during the soak all succeed" "[ $reload_fail = 0 ] && [ $reloads -ge $((want_reloads - 1)) ]" \
	"$((reloads + reload_fail)) reloads" "$want_reloads, none failed" \
	"$reloads ok, $reload_fail failed$([ -s "$GD_TMP/reload.err" ] && echo ": $(head -1 "$GD_TMP/reload.err")")"

# --- no counter lost --------------------------------------------------------------------
out=$((sent - txd))
expect "no counter lost: the sum of outcomes = frames that left the veth" "[ $((g1 - g0)) -eq $out ]" \
	"$sent (veth dropped $txd)" "$out" "$((g1 - g0))"

# --- accuracy: burst + rate x T ----------------------------------------------------------
# T: the generator's run; each source's first frame comes within N / ARR
# (1 / (3 rate)) s of its start, its last as late before the end
evs=""
for e in insert insert_limited insert_fail overflow full_closed contended; do
	evs+=" $e $(fg_event "$FG_SNAP" flood "$e")"
done
echo "# rule flood's events:$evs"
check_cmp "every source got its own bucket (insert_fail)" "$(fg_event "$FG_SNAP" flood insert_fail)" = 0
exp_src=$(awk -v b="$BURST" -v r="$RATE" -v t="$elapsed" 'BEGIN { printf "%.1f", b + r * (t - 1 / (3 * r)) }')
worst=0; src_bad=0
while read -r a n; do
	[ -n "$a" ] || continue
	e=$(awk -v n="$n" -v x="$exp_src" 'BEGIN { d = (n - x) / x * 100; printf "%.2f", d < 0 ? -d : d }')
	if within "$n" "$exp_src" 1 || awk -v n="$n" -v x="$exp_src" 'BEGIN { exit !(n - x <= 1 && x - n <= 1) }'; then
		:
	else
		bad "per-source accuracy: $a" "expected $exp_src +- 1 %, measured $n ($e %)"
		src_bad=$((src_bad + 1))
	fi
	worst=$(awk -v a="$worst" -v b="$e" 'BEGIN { print (b > a) ? b : a }')
done < "$GD_TMP/counts.txt"
nsamp=$(grep -c . "$GD_TMP/counts.txt")
check_cmp "per-source accuracy: sampled sources counted" "$nsamp" = 8
[ "$src_bad" = 0 ] && [ "$nsamp" = 8 ] &&
	ok "per-source accuracy: 8 sampled sources behind the filter within 1% (or one frame) of burst + rate x T = $exp_src: worst $worst % ($(awk '{ printf "%s%s", s, $2; s = " " }' "$GD_TMP/counts.txt"))"
exp_agg=$(awk -v n="$N" -v x="$exp_src" 'BEGIN { printf "%.0f", n * x }')
check_near "aggregate accuracy: rule flood's passes over $N sources vs N x (burst + rate x T)" \
	"$((p1 - p0))" "$exp_agg" 1

# --- the daemon: CPU and RSS flat -------------------------------------------------------
# least squares over the samples after WARM s (start-up, the table filling,
# the first walks): slope per minute, and how much it adds over the run
read -r ns cpu_mean cpu_slope _ rss_mean rss_slope <<< "$(awk -v warm="$WARM" '$1 > warm {
	n++; x[n] = $1; c[n] = $2; r[n] = $3; sx += $1; sc += $2; sr += $3
	if (n == 1) f = $3 }
	END {
	if (n < 2) { print n, 0, 0, 0, 0, 0; exit }
	mx = sx / n; mc = sc / n; mr = sr / n
	for (i = 1; i <= n; i++) { vx += (x[i] - mx) ^ 2; kc += (x[i] - mx) * (c[i] - mc); kr += (x[i] - mx) * (r[i] - mr) }
	printf "%d %.3f %.4f %d %.0f %.2f\n", n, mc, 60 * kc / vx, f, mr, 60 * kr / vx }' "$GD_TMP/samples")"
echo "# samples (s, cpu %, rss kB): $(one_line 600 < "$GD_TMP/samples")"
echo "# daemon: CPU mean $cpu_mean % of a core, slope $cpu_slope points/min; RSS mean $rss_mean kB, slope $rss_slope kB/min ($ns samples)"
span_min=$(awk -v s="$SECS" 'BEGIN { printf "%.2f", s / 60 }')
rss_grow=$(awk -v s="$rss_slope" -v m="$span_min" 'BEGIN { printf "%.0f", s * m }')
rss_lim=$(awk -v m="$rss_mean" -v p="$RSS_PCT" -v lo="$RSS_MIN_KB" 'BEGIN { l = m * p / 100; printf "%.0f", l < lo ? lo : l }')
expect "daemon RSS flat after ${WARM}s: slope x run <= max($RSS_MIN_KB kB, $RSS_PCT% of its mean)" \
	"[ $ns -ge 2 ] && [ $rss_grow -le $rss_lim ]" \
	"$ns samples every $SAMPLE_S s" "<= $rss_lim kB over ${SECS}s" \
	"$rss_slope kB/min, $rss_grow kB over the run (mean $rss_mean kB)"
cpu_grow=$(awk -v s="$cpu_slope" -v m="$span_min" 'BEGIN { printf "%.2f", s * m }')
expect "daemon CPU flat after ${WARM}s: slope x run <= max(2 points, half its mean)" \
	"[ $ns -ge 2 ] && awk -v g=$cpu_grow -v m=$cpu_mean 'BEGIN { l = m / 2; if (l < 2) l = 2; exit !(g <= l) }'" \
	"$ns samples every $SAMPLE_S s" "growth <= max(2, $cpu_mean / 2) points" \
	"$cpu_slope points/min, $cpu_grow over the run (mean $cpu_mean %)"

gd_stop
fg_finish
