#!/bin/bash
# Every SQL mode of every protocol at every synchronous level, every crash
# point: sqlcrash on partsupp (Atomic-Write, one transaction at a time, on
# TPC-C: partsupp's side database needs two open at once).
B=${B:-target/release/txftl}
D=${D:-sqlcrash-matrix}
mkdir -p $D
out=$D/results.tsv
: > $out
modes=$($B protocols --json | python3 -c "
import json,sys
for p in json.load(sys.stdin): print(' '.join(p['sql_modes']))")
for m in $modes; do
  w=""; case $m in atomic-write*) w="--workload tpcc";; esac
  for s in off normal full; do
    start=$(date +%s.%N)
    $B sqlcrash --modes $m $w --synchronous $s --json > $D/$m-$s.json 2> $D/$m-$s.err
    rc=$?
    end=$(date +%s.%N)
    echo -e "$m\t$s\t$rc\t$(echo "$end - $start" | bc)" >> $out
  done
done
echo done >> $out
