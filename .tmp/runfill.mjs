function copyWords(dst, to, src, from, n) { if (n === 8) { dst[to]=src[from];dst[to+1]=src[from+1];dst[to+2]=src[from+2];dst[to+3]=src[from+3];dst[to+4]=src[from+4];dst[to+5]=src[from+5];dst[to+6]=src[from+6];dst[to+7]=src[from+7] } else if (n === 2) { dst[to]=src[from];dst[to+1]=src[from+1] } else for (let j=0;j<n;j++) dst[to+j]=src[from+j] }
const ROWS = 1_000_000
for (const [n, run] of [[8, 400], [2, 400], [8, 3], [5, 1]]) {
  const dict = new Uint32Array(4096 * n).map((_, i) => i * 2654435761)
  const idx = new Int32Array(ROWS); for (let i = 0; i < ROWS; i++) idx[i] = Math.floor(i / run) % 4096
  const out = new Uint32Array(ROWS * n)
  const bytes = new Uint8Array(out.buffer)
  const cur = () => { for (let r = 0; r < ROWS; r++) copyWords(out, r * n, dict, idx[r] * n, n) }
  const runs = () => {
    const w = 4 * n
    for (let r = 0; r < ROWS;) {
      const x = idx[r]
      let e = r + 1
      while (e < ROWS && idx[e] === x) e++
      copyWords(out, r * n, dict, x * n, n)
      const L = e - r
      if (L >= 16) { const base = r * w; let have = w; const want = L * w; while (have < want) { const c = Math.min(have, want - have); bytes.copyWithin(base + have, base, base + c); have += c } }
      else for (let q = r + 1; q < e; q++) copyWords(out, q * n, dict, x * n, n)
      r = e
    }
  }
  const check = () => { const a = out.slice(); out.fill(0); runs(); for (let i = 0; i < a.length; i++) if (a[i] !== out[i]) throw new Error('diff ' + i) }
  cur(); check()
  for (let rep = 0; rep < 2; rep++) for (const [k, f] of [['cur', cur], ['runs', runs]]) { const t = performance.now(); for (let i = 0; i < 5; i++) f(); if (rep) console.log(`n=${n} run=${run}`, k, ((performance.now() - t) / 5).toFixed(2), 'ms') }
}
