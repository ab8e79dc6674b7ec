/** Where the API lives: the path prefix of every endpoint and the methods it answers. */

/** Path prefix of every endpoint. */
export const API_PREFIX = '/v1/api/'

/**
 * The longest URL served: Cloudflare refuses longer ones before the Worker runs, so the
 * Node server keeps the same limit and both answer 414 naming it.
 */
export const MAX_URL_BYTES = 16 * 1024

/** Methods the API answers (HEAD as GET without the body; OPTIONS only as a CORS preflight). */
export const ALLOWED_METHODS = 'GET, HEAD, OPTIONS'
