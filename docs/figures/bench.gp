# gradcache-bench figure; run: gnuplot docs/figures/bench.gp
set terminal pngcairo size 1400,560 font 'sans,10'
set output 'docs/figures/bench.png'
set termoption noenhanced
set grid
set key top left
set multiplot layout 1,2
set title 'Peak tensor memory of one step (chunk 64)'
set logscale xy 2
set format y '%g'
set xlabel 'contrastive batch (pairs)'
set ylabel 'MiB above the step start'
plot 'docs/figures/bench.memory.dat' index 0 using 1:2 with linespoints lw 2 pt 7 title 'full', 'docs/figures/bench.memory.dat' index 1 using 1:2 with linespoints lw 2 pt 7 title 'accumulate', 'docs/figures/bench.memory.dat' index 2 using 1:2 with linespoints lw 2 pt 7 title 'cache', 'docs/figures/bench.memory.dat' index 3 using 1:2 with linespoints lw 2 pt 7 title 'cache-streaming', 'docs/figures/bench.memory.dat' index 4 using 1:2 with linespoints lw 2 pt 7 title 'cache-r1', 'docs/figures/bench.memory.dat' index 5 using 1:2 with lines dt 2 lc rgb 'gray40' title 'cache itself: 2(N+M)d floats', 'docs/figures/bench.memory.dat' index 5 using 1:3 with lines dt 3 lw 2 lc rgb 'gray20' title 'loss step alone (N x M)'
unset logscale
unset title
set title "Time vs memory (256 pairs, chunks of 64)"
set xlabel 'peak tensor memory of the step (MiB)'
set ylabel 'step time / accumulate'
set offsets graph 0.08, graph 0.15, graph 0.1, graph 0.1
set key top right
plot 'docs/figures/bench.tradeoff.dat' index 0 using 1:2 with linespoints lw 2 pt 7 title 'cache, retain_chunks r (medians)', 'docs/figures/bench.tradeoff.dat' index 0 using 1:4 with linespoints lw 1 dt 2 pt 6 lc rgb 'gray50' title 'the same, best of the repetitions', 'docs/figures/bench.tradeoff.dat' index 0 using 1:2:3 with labels offset char 1.2,-0.8 notitle, 'docs/figures/bench.tradeoff.dat' index 1 using 1:2 with points pt 5 ps 1.5 title 'other steps', 'docs/figures/bench.tradeoff.dat' index 1 using 1:2:3 with labels offset char 0,1.2 notitle
unset multiplot
