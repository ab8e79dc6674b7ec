/**
 * The Aptos SDK, initialized, for bundles that need it. esbuild (wrangler's bundler) wraps the
 * SDK's modules in lazy initializers, because the SDK imports some of its own modules
 * dynamically, and the package's `sideEffects` list lets it drop the calls that would run them
 * for our static imports: in the Worker bundle `Ed25519PublicKey` and its kin stay undefined
 * ("is not a constructor") until something imports the SDK dynamically. Awaiting `sdkReady()`
 * once before the first use runs every initializer; in Node the module is simply loaded already.
 */
let ready: Promise<void> | undefined

export const sdkReady = (): Promise<void> => (ready ??= import('@aptos-labs/ts-sdk').then(() => {}))
