#!/bin/bash
# usage: abingest.sh <reps> "<flags A>" "<flags B>": the pool rows interleaved, A then B, reps times
cd /work/main
for i in $(seq $1); do
  for f in "$2" "$3"; do
    NODEFLAGS="$f" PROF= .tmp/profingest.sh /tmp/abi 2>&1 | awk -v f="[$f]" '{print f, $0}' | sed 's/"peakRss.*//' | cut -c1-170
  done
done
