/** API_USERS, parsed once per isolate for the Worker and its Durable Objects. */
import { parseUsers, type Users } from '../api/auth.ts'

let cached: { text: string | undefined; users: Promise<Users | null> } | undefined

/** The users of API_USERS; null when unset or unusable (every request is then refused with 503). */
export function usersOf(text: string | undefined): Promise<Users | null> {
  if (!cached || cached.text !== text) {
    const users =
      text === undefined || text.trim() === ''
        ? Promise.resolve(null)
        : parseUsers(text).catch(err => {
            console.error(`API_USERS is unusable: ${(err as Error).message}`)
            return null
          })
    cached = { text, users }
  }
  return cached.users
}
