// usage: node .tmp/sumprof.ts <dir-or-file> <div> <n>: self time per function (ms / div), top n, per profile file
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
const [p, divS = '1', nS = '30'] = process.argv.slice(2)
const files = statSync(p).isDirectory() ? readdirSync(p).filter(f => f.endsWith('.cpuprofile')).map(f => join(p, f)) : [p]
for (const f of files) {
  const prof = JSON.parse(readFileSync(f, 'utf8'))
  const self = new Map<number, number>()
  const dt = prof.timeDeltas as number[]
  prof.samples.forEach((id: number, i: number) => self.set(id, (self.get(id) ?? 0) + (dt[i] ?? 0)))
  const by = new Map<string, number>()
  let total = 0
  for (const n of prof.nodes) {
    const t = (self.get(n.id) ?? 0) / 1000
    total += t
    const cf = n.callFrame
    const k = `${cf.functionName || '(anon)'} ${cf.url.split('/').slice(-2).join('/')}:${cf.lineNumber + 1}`
    by.set(k, (by.get(k) ?? 0) + t)
  }
  const div = Number(divS)
  console.log(`${f}: total ${(total / div).toFixed(1)} ms`)
  for (const [k, v] of [...by].sort((a, b) => b[1] - a[1]).slice(0, Number(nS))) console.log(`${(v / div).toFixed(2).padStart(9)}  ${k}`)
}
