/**
 * Command-line arguments for every script: node's parseArgs plus `--help` (the usage,
 * exit 0) and a clear line instead of a stack trace for an unknown or malformed option
 * (the usage, exit 2).
 */
import { parseArgs, type ParseArgsConfig } from 'node:util'

type Options = NonNullable<ParseArgsConfig['options']>

/** Parsed `--name value` options of `argv` (default: this process's), or the usage and an exit. */
export function cliArgs<O extends Options>(options: O, usage: string, argv: string[] = process.argv.slice(2), allowNegative = false) {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(usage)
    process.exit(0)
  }
  try {
    return parseArgs({ args: argv, options, strict: true, allowPositionals: false, allowNegative }).values
  } catch (err) {
    console.error(`error: ${(err as Error).message}\n${usage}`)
    process.exit(2)
  }
}
