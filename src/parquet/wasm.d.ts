/** `.wasm` imports: wrangler compiles them at deploy time into modules (CompiledWasm). */
declare module '*.wasm' {
  const module: WebAssembly.Module
  export default module
}
