/** `npm run ingest -- --chain … --rpc … --from … --to … --out …`: see src/ingest/cli.ts for the options. */
import { ingestCommand } from '../src/ingest/cli.ts'
import { openStore } from '../src/store/open.ts'

process.exitCode = await ingestCommand(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, openStore })
