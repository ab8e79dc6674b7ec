#!/bin/bash
# usage: gcbench.sh <port> <outdir> [node flags]: the bench's query sequence (3 runs each), then 15 last hundreds with --trace-gc
cd /work/main; export PATH=/work/main/node_modules/.bin:$PATH
P=$1; OUT=$2; shift 2
L=.data/bench/lake-1000000-4db265e056
mkdir -p $OUT
API_USERS=bench:bench node --max-semi-space-size=32 --trace-gc "$@" scripts/serve.ts --data $L --port $P > $OUT/server.log 2>&1 &
SP=$!
B="http://127.0.0.1:$P/v1/api/logs?chains="
for i in $(seq 50); do curl -s -o /dev/null -u bench:bench "${B}ETH&from_block=19000000&to_block=19000000" && break; sleep 0.3; done
hund() { for i in $(seq $1); do curl -s -o /dev/null -u bench:bench -w '%{time_total}\n' "${B}ETH&from_block=19002400&to_block=19002499&format=json_stream"; done; }
hund 15 > $OUT/before.txt
grep -v "hash=\|&from=" /tmp/queries.txt | head -28 | while read q; do for r in 1 2 3; do curl -s -o /dev/null -u bench:bench -w "%{http_code} %{time_total}\n" "$B$q" >> $OUT/prelude.txt; done; done
a=$(wc -l < $OUT/server.log); hund 15 > $OUT/after.txt; b=$(wc -l < $OUT/server.log)
sed -n "$((a+1)),${b}p" $OUT/server.log | grep -v '^{' > $OUT/gc-after.log
kill $SP
med() { sort -n $1 | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]*1000 " ms median of " NR}'; }
echo "before: $(med $OUT/before.txt)"
echo "after:  $(med $OUT/after.txt); gc lines $(wc -l < $OUT/gc-after.log), MC $(grep -c Mark $OUT/gc-after.log)"
echo "prelude statuses: $(cut -d' ' -f1 $OUT/prelude.txt | sort | uniq -c | tr '\n' ' ')"
