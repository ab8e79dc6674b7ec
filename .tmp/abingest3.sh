#!/bin/bash
# usage: abingest3.sh <reps> "<flags>"...: the pool's 1,000-block row per flag set, interleaved
cd /work/main; R=$1; shift
for i in $(seq $R); do for f in "$@"; do
  NODEFLAGS="$f" PROF= .tmp/profingest.sh /tmp/abi > /dev/null 2>&1
  node_modules/.bin/node -e 'const r=JSON.parse(require("fs").readFileSync("/tmp/abi/rows.json","utf8"));for(const [n,runs] of r.rows)for(const x of runs)console.log(process.argv[1].padEnd(28),n.slice(0,40).padEnd(40),x.blocksPerSecond.toFixed(1),x.cpuMsPerBlock.toFixed(1),Math.round(x.peakRssMiB))' "[$f]"
done; done
