# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# floodgate benchmark chart; tools/bench.sh writes the data files and calls
#   gnuplot -e "dir='results'; outfile='results/bench.png'" tools/bench_plot.gp
# The curves plot test-run's own mean ns (columns 2-5 of bench-<curve>.dat;
# the slopes are columns 7-8). Top row: the live bars, the micro bars (with the shedding figures), the
# sources curve. Bottom row: the rules curve, the prefixes curve, the
# daemon's CPU against tracked sources. A missing figure is NaN: not drawn;
# a panel without data (bench-have.gp, written with the data) says so.
load dir.'/bench-have.gp'
# an empty panel: its title and "not measured"
empty(t) = sprintf("set title \"%s\"; set label 9 \"not measured in this run\" at graph 0.5, 0.5 center; unset logscale; set format x; set xrange [0:1]; set yrange [0:1]; plot 2 notitle; unset label 9; set autoscale", t)
set terminal pngcairo size 2100,1240 font ",10"
set output outfile
set multiplot layout 2,3
set grid ytics
set key top left
set datafile missing "NaN"

# --- live bars --------------------------------------------------------------
set style data histograms
set style histogram errorbars gap 1 lw 1
set style fill solid 0.8 border -1
set xtics rotate by -30 noenhanced
set title "Live: CPU ns per packet on one core (generator included)\nmedian, min-max over interleaved passes"
set ylabel "ns / packet"
set logscale y
if (have_live) {
plot dir.'/bench.dat' using 2:3:4:xtic(1) title "1 source", \
     '' using 5:6:7 title "1,000 sources", \
     '' using 8:9:10 title "100,000 sources (table 65,536)"
} else { eval empty("Live") }

# --- micro bars ---------------------------------------------------------------
set title "Micro: BPF\\_PROG\\_TEST\\_RUN, ns per packet, median, min-max\n(shed:* one admitted source: plain, pooled, bulk tier at 0% / 50% shed)"
set logscale y
set yrange [1:*]
if (have_micro) {
plot dir.'/bench-micro.dat' using 2:3:4:xtic(1) title "ns/packet" lc rgb "#4477aa"
} else { eval empty("Micro") }
set autoscale

# --- curves ---------------------------------------------------------------------
set style data linespoints
set xtics norotate enhanced
set logscale xy
set format x "10^{%L}"
set xlabel "sources"
set key top left font ",8"
set title "Cost against sources: micro (test-run's own ns, net of the harness) and\nlive (CPU per packet net of the generator's share), medians"
if (have_sources && have_lsrc) {
plot dir.'/bench-sources.dat' using 1:2:3:4 with yerrorlines lw 2 title "floodgate (micro)", \
     '' using 1:5 lw 2 dt 2 title "floor (micro)", \
     '' using 1:10 with linespoints lw 2 dt 3 pt 4 lc rgb "dark-orange" title "memfloor: floor + a read of the same table (micro)", \
     '' using 1:11 with linespoints lw 1 dt 4 pt 1 lc rgb "gray40" title "one random read (pointer chase)", \
     dir.'/bench-live-sources.dat' using 1:3 pt 7 title "floodgate (live)", \
     '' using 1:2 pt 6 dt 2 title "floor (live)", \
     '' using 1:4 pt 5 title "nftables meter (live)", \
     '' using 1:5 pt 9 title "iptables hashlimit (live)"
} else { if (have_sources) {
plot dir.'/bench-sources.dat' using 1:2:3:4 with yerrorlines lw 2 title "floodgate (micro)", \
     '' using 1:5 lw 2 dt 2 title "floor (micro)", \
     '' using 1:10 with linespoints lw 2 dt 3 pt 4 lc rgb "dark-orange" title "memfloor: floor + a read of the same table (micro)", \
     '' using 1:11 with linespoints lw 1 dt 4 pt 1 lc rgb "gray40" title "one random read (pointer chase)"
} else { eval empty("Cost against sources") } }

unset logscale x
set logscale y
set format x "%g"
set xlabel "rules (the frame's rule last)"
set title "Cost against rules: micro (test-run's own ns), medians, min-max"
if (have_rules) {
plot dir.'/bench-rules.dat' using 1:2:3:4 with yerrorlines lw 2 title "floodgate", \
     '' using 1:5 lw 2 dt 2 title "floor"
} else { eval empty("Cost against rules") }

set xlabel "allow + deny prefixes"
set xtics rotate by -30
set logscale y
set title "Cost against prefixes: micro (test-run's own ns), medians, min-max\n(the source's /16 holds longer prefixes)"
if (have_prefixes) {
plot dir.'/bench-prefixes.dat' using 0:2:3:4:xtic(1) with yerrorlines lw 2 title "floodgate", \
     '' using 0:5 lw 2 dt 2 title "floor"
} else { eval empty("Cost against prefixes") }

unset logscale y
set logscale x
set format x "10^{%L}"
set xtics norotate
set xlabel "tracked sources"
set ylabel "% of one core"
set yrange [0:*]
set title "floodgated's CPU (utime + stime) against tracked sources\ngoal: <= 1% at 1M"
if (have_daemon) {
plot dir.'/bench-daemon.dat' using 1:2 lw 2 pt 7 title "IPv4", \
     '' using 1:3 lw 2 pt 5 title "IPv6", \
     1 lc rgb "#aa3333" dt 3 title "goal"
} else { eval empty("floodgated's CPU against tracked sources") }
unset multiplot
