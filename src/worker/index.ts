/** Worker entry; the HTTP app is mounted here (see src/http). */
export default {
  async fetch(): Promise<Response> {
    return new Response('not yet', { status: 503 })
  },
} satisfies ExportedHandler
