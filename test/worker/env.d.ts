/** Bindings the Worker tests reach through `env` from `cloudflare:workers` (see wrangler.toml). */
declare namespace Cloudflare {
  interface Env {
    LAKE: R2Bucket
    USER_REQUESTS: RateLimit
  }
}
