// usage: node .tmp/incprof.ts <dir-or-file> <div> <n> [filter]: inclusive time per function (ms / div), summed over profiles
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
const [p, divS = '1', nS = '40', filter] = process.argv.slice(2)
const files = statSync(p).isDirectory() ? readdirSync(p).filter(f => f.endsWith('.cpuprofile')).map(f => join(p, f)) : [p]
const by = new Map<string, number>()
for (const f of files) {
  const prof = JSON.parse(readFileSync(f, 'utf8'))
  const parent = new Map<number, number>()
  const node = new Map<number, any>()
  for (const n of prof.nodes) { node.set(n.id, n); for (const c of n.children ?? []) parent.set(c, n.id) }
  const key = (n: any) => `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.split('/').slice(-2).join('/')}:${n.callFrame.lineNumber + 1}`
  const dt = prof.timeDeltas as number[]
  prof.samples.forEach((id: number, i: number) => {
    const seen = new Set<string>()
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) seen.add(key(node.get(at)))
    for (const k of seen) by.set(k, (by.get(k) ?? 0) + (dt[i] ?? 0) / 1000)
  })
}
const div = Number(divS)
for (const [k, v] of [...by].filter(([k]) => !filter || k.includes(filter)).sort((a, b) => b[1] - a[1]).slice(0, Number(nS))) console.log(`${(v / div).toFixed(2).padStart(9)}  ${k}`)
