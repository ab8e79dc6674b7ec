/** Where the API lives: the path prefix of every endpoint and the methods it answers. */

/** Path prefix of every endpoint. */
export const API_PREFIX = '/v1/api/'

/** Methods the API answers (HEAD as GET without the body; OPTIONS only as a CORS preflight). */
export const ALLOWED_METHODS = 'GET, HEAD, OPTIONS'
