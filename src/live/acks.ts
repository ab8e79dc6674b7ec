/**
 * Flow control by acknowledgement, for runtimes whose WebSocket does not report
 * its unsent bytes (workerd has no `bufferedAmount`): the bytes sent since the
 * last progress marker the client acknowledged stand in for the socket's buffer.
 * A client that never sends `ack` counts everything it was sent, so it is paced
 * and finally closed like a client that stopped reading.
 */

/** Most cursor marks remembered; older ones are merged away (an ack then counts a little less). */
const MAX_MARKS = 4_096

export class AckWindow {
  private sent = 0
  private acked = 0
  /** [cursor, bytes sent when the cursor moved there], cursors ascending. */
  private marks: [number, number][] = []

  /** Counts an outgoing message. */
  sending(text: string): void {
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

  /** The client has everything up to `cursor`. */
  ack(cursor: number): void {
    let i = -1
    while (i + 1 < this.marks.length && this.marks[i + 1][0] <= cursor) i++
    if (i < 0) return
    this.acked = Math.max(this.acked, this.marks[i][1])
    this.marks.splice(0, i + 1)
  }

  /** Bytes sent and not acknowledged. */
  get unacked(): number {
    return this.sent - this.acked
  }
}
