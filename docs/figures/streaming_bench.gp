# gradcache-bench streaming figure; run: gnuplot docs/figures/streaming_bench.gp
set terminal pngcairo size 1400,560 font 'sans,10'
set output 'docs/figures/streaming_bench.png'
set grid
set key top left
set logscale xy 2
set format y '%g'
set xlabel 'N = M (d = 256)'
set multiplot layout 1,2
set title 'Peak tensor memory of loss forward + backward'
set ylabel 'MiB beyond the representations'
plot 'docs/figures/streaming_bench.dat' index 0 using 1:2 with linespoints lw 2 pt 7 title 'dense', 'docs/figures/streaming_bench.dat' index 1 using 1:2 with linespoints lw 2 pt 5 title 'streaming'
set title 'Time of loss forward + backward'
set ylabel 'seconds'
plot 'docs/figures/streaming_bench.dat' index 0 using 1:3 with linespoints lw 2 pt 7 title 'dense', 'docs/figures/streaming_bench.dat' index 1 using 1:3 with linespoints lw 2 pt 5 title 'streaming'
unset multiplot
