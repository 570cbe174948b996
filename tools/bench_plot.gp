# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# floodgate benchmark chart; tools/bench.sh calls it with
#   gnuplot -e "datafile='results/bench.dat'; microfile='results/bench-micro.dat'; outfile='results/bench.png'"
set terminal pngcairo size 1400,620 font ",10"
set output outfile
set multiplot layout 1,2
set style data histograms
set style histogram errorbars gap 1 lw 1
set style fill solid 0.8 border -1
set grid ytics
set key top left
set xtics rotate by -30 noenhanced
set title "Live: CPU ns per packet on one core (generator included)\nmedian, min-max over interleaved passes"
set ylabel "ns / packet"
set logscale y
plot datafile using 2:3:4:xtic(1) title "1 source", \
     '' using 5:6:7 title "1,000 sources", \
     '' using 8:9:10 title "100,000 sources (table 65,536)"
set title "Micro: BPF\\_PROG\\_TEST\\_RUN, ns per packet\nmedian, min-max"
set yrange [1:*]
plot microfile using 2:3:4:xtic(1) title "ns/packet" lc rgb "#4477aa"
unset multiplot
