/**
 * Flow control for runtimes whose WebSocket does not report its unsent bytes:
 * workerd has no `bufferedAmount` and no way to send a protocol ping, so a Durable
 * Object cannot see what its socket delivered. It estimates the unsent bytes instead:
 *
 * - A client that never acks is paced by time: the estimate drains at a fixed rate
 *   (`drainBytesPerSecond`), so history flows at that rate after the first window,
 *   with nothing asked of the client, and the runtime's buffer grows at most at that
 *   rate while the client is slower.
 * - A client that acks (`{"type":"ack","cursor":N}`) is measured exactly: from its
 *   first ack on, the bytes sent after the last acknowledged progress marker are the
 *   estimate, so it may go faster than the paced rate, and a client that stops
 *   acking stops receiving history and is closed like one that stopped reading.
 */

/** Most cursor marks remembered; older ones are merged away (an ack then counts a little less). */
const MAX_MARKS = 4_096

export class PacedWindow {
  private sent = 0
  /** Bytes counted as delivered: acknowledged, or drained by time while the client never acked. */
  private delivered = 0
  private acking = false
  private at: number
  /** [cursor, bytes sent when the cursor moved there], cursors ascending. */
  private marks: [number, number][] = []
  private readonly drainBytesPerSecond: number
  private readonly now: () => number

  constructor(drainBytesPerSecond: number, now: () => number = Date.now) {
    this.drainBytesPerSecond = drainBytesPerSecond
    this.now = now
    this.at = now()
  }

  /** Counts an outgoing message. */
  sending(text: string): void {
    this.drain()
    this.sent += text.length
  }

  /** The cursor moved: bytes sent so far belong to blocks up to `cursor`. */
  mark(cursor: number): void {
    const last = this.marks[this.marks.length - 1]
    if (last && cursor <= last[0]) {
      // A reorg moved the cursor back: marks above it are void.
      while (this.marks.length && this.marks[this.marks.length - 1][0] >= cursor) this.marks.pop()
    }
    this.marks.push([cursor, this.sent])
    if (this.marks.length > MAX_MARKS) this.marks.splice(0, this.marks.length - MAX_MARKS)
  }

  /** The client has everything up to `cursor`; from now on only acks count as delivery. */
  ack(cursor: number): void {
    this.drain()
    this.acking = true
    let i = -1
    while (i + 1 < this.marks.length && this.marks[i + 1][0] <= cursor) i++
    if (i < 0) return
    this.delivered = Math.max(this.delivered, this.marks[i][1])
    this.marks.splice(0, i + 1)
  }

  /** Bytes sent and not (estimated) delivered. */
  get unsent(): number {
    this.drain()
    return this.sent - this.delivered
  }

  /** Time drains the estimate of a client that never acked; never past what was sent, so idle time banks nothing. */
  private drain(): void {
    const t = this.now()
    if (!this.acking) this.delivered = Math.min(this.sent, this.delivered + ((t - this.at) * this.drainBytesPerSecond) / 1000)
    this.at = t
  }
}
