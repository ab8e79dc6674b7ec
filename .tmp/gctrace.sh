#!/bin/bash
# usage: gctrace.sh <port> <outdir> [extra node flags]; traces GC of last hundreds before and after exports
set -e
cd /work/main; export PATH=/work/main/node_modules/.bin:$PATH
P=$1; OUT=$2; shift 2
L=.data/bench/lake-1000000-4db265e056
mkdir -p $OUT
node --max-semi-space-size=32 --trace-gc "$@" scripts/serve.ts --data $L --port $P > $OUT/server.log 2>&1 &
SP=$!
for i in $(seq 50); do curl -s -o /dev/null -u dev:dev "http://127.0.0.1:$P/v1/api/logs?chains=ETH&from_block=19000000&to_block=19000000" && break; sleep 0.3; done
B="http://127.0.0.1:$P/v1/api/logs?chains=ETH"
hund() { for i in $(seq $1); do curl -s -o /dev/null -u dev:dev -w '%{time_total}\n' "$B&from_block=19002400&to_block=19002499&format=json_stream"; done; }
hund 5 > /dev/null
a=$(wc -l < $OUT/server.log); hund 15 > $OUT/before.txt; b=$(wc -l < $OUT/server.log)
sed -n "$((a+1)),${b}p" $OUT/server.log > $OUT/gc-before.log
for f in json_stream arrow csv; do curl -s -o /dev/null -u dev:dev -w "$f %{time_total}\n" "$B&from_block=19000000&to_block=19002499&format=$f"; done
curl -s -o /dev/null -u dev:dev -w "transfer %{time_total}\n" "$B&from_block=19000000&to_block=19002499&topic0=0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef&format=json_stream"
a=$(wc -l < $OUT/server.log); hund 15 > $OUT/after.txt; b=$(wc -l < $OUT/server.log)
sed -n "$((a+1)),${b}p" $OUT/server.log > $OUT/gc-after.log
kill $SP
med() { sort -n $1 | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]*1000 " ms median of " NR}'; }
echo "before: $(med $OUT/before.txt); gc lines $(wc -l < $OUT/gc-before.log), MC $(grep -c Mark $OUT/gc-before.log || true)"
echo "after:  $(med $OUT/after.txt); gc lines $(wc -l < $OUT/gc-after.log), MC $(grep -c Mark $OUT/gc-after.log || true)"
