const N = 1_000_000
const lens = Array.from({ length: N }, (_, i) => [0, 32, 32, 64, 64, 96, 128, 160, 256, 0][i % 10])
let total = 0; for (const l of lens) total += l
const src = new Uint8Array(total + 1024).map((_, i) => i)
const starts = new Int32Array(N); { let p = 0; for (let i = 0; i < N; i++) { starts[i] = p; p += lens[i] } }
const dst = new Uint8Array(total + 1024)
function a(limit) { let used = 0; for (let i = 0; i < N; i++) { const s = starts[i], n = lens[i]; if (n > limit) dst.set(src.subarray(s, s + n), used); else for (let j = 0; j < n; j++) dst[used + j] = src[s + j]; used += n } return used }
function c() { let used = 0; for (let i = 0; i < N; i++) { const s = starts[i], n = lens[i]; dst.copyWithin; if (n > 32) { let j = 0; for (; j + 8 <= n; j += 8) { dst[used+j]=src[s+j];dst[used+j+1]=src[s+j+1];dst[used+j+2]=src[s+j+2];dst[used+j+3]=src[s+j+3];dst[used+j+4]=src[s+j+4];dst[used+j+5]=src[s+j+5];dst[used+j+6]=src[s+j+6];dst[used+j+7]=src[s+j+7] } for (; j < n; j++) dst[used + j] = src[s + j] } else for (let j = 0; j < n; j++) dst[used + j] = src[s + j]; used += n } return used }
const dv = new DataView(src.buffer), dd = new DataView(dst.buffer)
function d() { let used = 0; for (let i = 0; i < N; i++) { const s = starts[i], n = lens[i]; let j = 0; for (; j + 4 <= n; j += 4) dd.setUint32(used + j, dv.getUint32(s + j, true), true); for (; j < n; j++) dst[used + j] = src[s + j]; used += n } return used }
const fns = { set32: () => a(32), loopAll: () => a(1e9), set256: () => a(256), unroll8: c, dataview: d }
for (let r = 0; r < 3; r++) for (const [k, f] of Object.entries(fns)) { const t = performance.now(); f(); f(); f(); console.log(r, k, ((performance.now() - t) / 3).toFixed(1), 'ms') }
