#!/bin/bash
# usage: profingest.sh <outdir> [rounds]: CPU profiles of the ingest pool rows (every thread)
cd /work/main; export PATH=/work/main/node_modules/.bin:$PATH
OUT=$1; R=${2:-4}; rm -rf $OUT; mkdir -p $OUT
node ../shared/tools/replay-evm.mjs --port 9410 > $OUT/replay.log 2>&1 &
RP=$!; sleep 2
J="{\"url\":\"http://127.0.0.1:9410\",\"nodePid\":$RP,\"chain\":{\"family\":\"evm\",\"id\":1,\"code\":\"ETH\"},\"blocks\":[17000000,18000000,18500000],\"rounds\":$R,\"blocksPerUnit\":25,\"repetitions\":1,\"partitionBlocks\":1000}"
node --single-threaded-gc $NODEFLAGS ${PROF:+--cpu-prof --cpu-prof-dir=$OUT} bench/lib/ingest-pool.ts "$J" > $OUT/rows.json 2> $OUT/err.log
kill $RP
node -e 'const r=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8"));for(const [n,runs] of r.rows){for(const x of runs)console.log(n.slice(0,60),JSON.stringify(x).slice(0,300))}' $OUT/rows.json
