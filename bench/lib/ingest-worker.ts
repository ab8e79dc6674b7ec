/** The ingest pool's worker for `npm run bench -- ingest`: the real worker, its source repeating each unit's blocks (repeatSource). */
import { workerData } from 'node:worker_threads'
import { serveUnits } from '../../src/ingest/unit-worker.ts'
import { repeatSource } from './ingest.ts'

await serveUnits(source => repeatSource(source, (workerData as { extra: { repeat: number } }).extra.repeat))
