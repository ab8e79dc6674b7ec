/** An `Authorization: Basic` header value for a user and password (UTF-8, as RFC 7617 allows). */
export const basic = (user: string, password: string): string =>
  'Basic ' + btoa(String.fromCharCode(...new TextEncoder().encode(`${user}:${password}`)))
