/**
 * Starts a real S3-compatible server for tests: s3rver in a child process on
 * 127.0.0.1, storing in a fresh temp folder, with one bucket. See `s3-server.main.ts`
 * for why it is a child process and for the three S3 behaviours added to s3rver.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

/** A running test server and what a client needs to reach it. */
export interface TestS3Server {
  endpoint: string
  bucket: string
  /** s3rver's fixed account. */
  credentials: { accessKeyId: string; secretAccessKey: string }
  /** Stops the server and deletes its files. */
  close(): Promise<void>
}

/** Starts the server and waits until it listens. */
export async function startS3Server(bucket = 'test-bucket'): Promise<TestS3Server> {
  const directory = await mkdtemp(join(tmpdir(), 's3rver-'))
  const main = fileURLToPath(new URL('./s3-server.main.ts', import.meta.url))
  const child = spawn(process.execPath, ['--openssl-legacy-provider', main, directory, bucket], { stdio: ['pipe', 'pipe', 'inherit'] })
  const exited = once(child, 'exit')
  const [line] = await Promise.race([
    once(createInterface({ input: child.stdout }), 'line') as Promise<string[]>,
    exited.then(([code]) => Promise.reject(new Error(`test S3 server exited with ${code}`))),
  ])
  const { port } = JSON.parse(line) as { port: number }
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    async close() {
      child.stdin.end()
      await exited
      await rm(directory, { recursive: true, force: true })
    },
  }
}
