import { describe, expect, it } from 'vitest'
import { InvalidMessageError, parseClientMessage } from '../../src/live/protocol.ts'
import { PacedWindow } from '../../src/live/pacing.ts'
import { parseLiveChains, LiveConfigError } from '../../src/live/config.ts'
import { basicFromProtocols, credentialProtocol, offeredProtocols } from '../../src/api/websocket.ts'

describe('client messages', () => {
  it('accepts auth, ping and ack', () => {
    expect(parseClientMessage('{"type":"auth","user":"u","password":"p"}')).toEqual({ type: 'auth', user: 'u', password: 'p' })
    expect(parseClientMessage('{"type":"ping","id":"x"}')).toEqual({ type: 'ping', id: 'x' })
    expect(parseClientMessage('{"type":"ping"}')).toEqual({ type: 'ping' })
    expect(parseClientMessage('{"type":"ack","cursor":17}')).toEqual({ type: 'ack', cursor: 17 })
  })

  it.each([
    ['not json', 'not JSON'],
    ['[]', 'JSON object'],
    ['null', 'JSON object'],
    ['{"type":"subscribe"}', 'unknown message type'],
    ['{"type":"auth","user":1,"password":"p"}', 'auth needs'],
    ['{"type":"ack","cursor":1.5}', 'ack needs'],
    ['{"type":"ack","cursor":"5"}', 'ack needs'],
    ['{"type":"ping","id":{}}', 'ping "id"'],
  ])('refuses %s', (text, why) => {
    expect(() => parseClientMessage(text)).toThrow(InvalidMessageError)
    expect(() => parseClientMessage(text)).toThrow(why)
  })

  it('refuses binary frames and oversized text', () => {
    expect(() => parseClientMessage(new Uint8Array([123, 125]))).toThrow('binary')
    expect(() => parseClientMessage(JSON.stringify({ type: 'ping', id: 'x'.repeat(100) }), 50)).toThrow('longer than 50')
  })
})

describe('credentials in a subprotocol', () => {
  it('round-trips user and password (any UTF-8) into a Basic header value', () => {
    for (const [user, password] of [
      ['bob', 'hunter2'],
      ['ünï', 'p:a:ss/+=?'],
      ['a', ''],
    ]) {
      const header = basicFromProtocols(offeredProtocols(`edge-chain-data.v1, ${credentialProtocol(user, password)}`))!
      expect(header.startsWith('Basic ')).toBe(true)
      expect(Buffer.from(header.slice(6), 'base64').toString('utf8')).toBe(`${user}:${password}`)
    }
  })

  it('is a valid HTTP token (no "=", "+" or "/"), and malformed carriers are null', () => {
    expect(credentialProtocol('user', 'pw?>>>')).toMatch(/^basic\.[A-Za-z0-9_-]+$/)
    expect(basicFromProtocols(['basic.%%'])).toBeNull()
    expect(basicFromProtocols(['edge-chain-data.v1'])).toBeUndefined()
  })
})

describe('PacedWindow', () => {
  it('drains a client that never acks by time, never past what was sent', () => {
    let now = 0
    const w = new PacedWindow(1000, () => now)
    w.sending('x'.repeat(3000))
    expect(w.unsent).toBe(3000)
    now = 1000
    expect(w.unsent).toBe(2000)
    now = 10_000
    expect(w.unsent).toBe(0)
    w.sending('x'.repeat(500))
    expect(w.unsent).toBe(500)
  })

  it('from the first ack on, counts bytes sent after the last acknowledged cursor and nothing drains by time', () => {
    let now = 0
    const w = new PacedWindow(1000, () => now)
    w.sending('x'.repeat(100))
    w.mark(1)
    w.sending('x'.repeat(50))
    w.mark(2)
    w.sending('x'.repeat(25))
    w.ack(0)
    now = 60_000
    expect(w.unsent).toBe(175)
    w.ack(1)
    expect(w.unsent).toBe(75)
    w.ack(5)
    expect(w.unsent).toBe(25)
    w.ack(1)
    expect(w.unsent).toBe(25)
  })

  it('after a reorg moves the cursor back, acks of the dropped cursors count only what precedes the fork', () => {
    const w = new PacedWindow(1000, () => 0)
    w.sending('x'.repeat(10))
    w.mark(10)
    w.sending('x'.repeat(10))
    w.mark(11)
    w.sending('x'.repeat(10))
    w.mark(9)
    w.sending('x'.repeat(10))
    w.ack(11)
    expect(w.unsent).toBe(10)
  })
})

describe('LIVE_CHAINS', () => {
  it('parses followed chains by code, id or name', () => {
    const chains = parseLiveChains(
      '{"DEVNET":{"rpc":"http://127.0.0.1:8545","finality":4,"compact_blocks":8},"1":{"rpc":"https://node.example/key","poll_ms":2000}}',
    )
    expect(chains.map(c => [c.chain.code, c.rpc, c.finality, c.compactBlocks, c.pollMs]).sort()).toEqual([
      ['DEVNET', 'http://127.0.0.1:8545', 4, 8, undefined],
      ['ETH', 'https://node.example/key', undefined, undefined, 2000],
    ])
    expect(parseLiveChains(undefined)).toEqual([])
    expect(parseLiveChains('  ')).toEqual([])
  })

  it.each([
    ['{', 'not JSON'],
    ['[]', 'JSON object'],
    ['{"NOPE":{"rpc":"http://x"}}', 'unknown chain'],
    ['{"APTOS":{"rpc":"http://x"}}', 'only EVM'],
    ['{"ETH":{"rpc":"ftp://x"}}', 'http(s) URL'],
    ['{"ETH":{"rpc":"http://x","finality":0}}', 'positive integer'],
  ])('refuses %s without printing URLs', (text, why) => {
    expect(() => parseLiveChains(text)).toThrow(LiveConfigError)
    expect(() => parseLiveChains(text)).toThrow(why)
  })
})
