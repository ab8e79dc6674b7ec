/**
 * Prints a PBKDF2 hash for API_USERS: `npm run hash-password` prompts for the
 * password (not echoed) or reads it from standard input, so it never appears in
 * the shell history or the process list. With `--user <name>` the whole
 * `name:hash` entry is printed.
 *
 *   npm run hash-password -- --user alice        # prompts
 *   printf %s "$PASSWORD" | npm run hash-password
 */
import { cliArgs } from './args.ts'
import { hashPassword, PBKDF2_ITERATIONS } from '../src/api/auth.ts'

async function readPassword(): Promise<string> {
  const stdin = process.stdin
  if (!stdin.isTTY) {
    const chunks: Buffer[] = []
    for await (const chunk of stdin) chunks.push(chunk as Buffer)
    return Buffer.concat(chunks)
      .toString('utf8')
      .replace(/\r?\n$/, '')
  }
  process.stderr.write('password: ')
  stdin.setRawMode(true)
  stdin.resume()
  let text = ''
  return new Promise((resolve, reject) => {
    stdin.on('data', (data: Buffer) => {
      for (const ch of data.toString('utf8')) {
        if (ch === '\r' || ch === '\n') {
          stdin.setRawMode(false)
          stdin.pause()
          process.stderr.write('\n')
          resolve(text)
          return
        }
        if (ch === '\u0003') {
          stdin.setRawMode(false)
          reject(new Error('cancelled'))
          return
        }
        if (ch === '\u007f') text = text.slice(0, -1)
        else text += ch
      }
    })
  })
}

const values = cliArgs(
  { user: { type: 'string' }, iterations: { type: 'string' } },
  'usage: npm run hash-password [-- --user <name>] [--iterations <n>]   (the password is prompted for, or read from standard input)',
)
const password = await readPassword()
if (password === '') {
  console.error('empty password refused')
  process.exit(1)
}
if (values.user !== undefined && /[:,]/.test(values.user)) {
  console.error('a user name cannot contain ":" or ","')
  process.exit(1)
}
const hash = await hashPassword(password, values.iterations ? Number(values.iterations) : PBKDF2_ITERATIONS)
console.log(values.user === undefined ? hash : `${values.user}:${hash}`)
