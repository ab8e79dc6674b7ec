/**
 * A live anvil devnet with a small mixed workload for the ingester tests: legacy
 * (EIP-155), EIP-2930, EIP-1559 and EIP-7702 transactions, a contract creation, and
 * calls to that contract that emit three-topic logs, several transactions per block.
 * Once the second account delegates to the contract (7702), the later plain 21,000-gas
 * transfers to it run out of gas: failed transactions (status 0) come for free.
 */
import { createWalletClient, http, type Hex } from 'viem'
import { mnemonicToAccount } from 'viem/accounts'
import { foundry } from 'viem/chains'
import { DEVNET_MNEMONIC, startAnvil, type Anvil } from '../../scripts/dev/devnet/anvil.ts'
import type { Json } from './fixtures.ts'

/** Runtime code: copies the calldata to memory and emits it as LOG3(topic0 = 0x77…77, block number, caller). */
const RUNTIME = `36600060003733437f${'77'.repeat(32)}366000a300`
/** Init code: returns RUNTIME as the contract's code. */
const INIT = `0x602e80600b6000396000f3${RUNTIME}` as Hex

export interface Workload {
  anvil: Anvil
  head: number
  /** Transactions sent, and the logs they emit. */
  transactions: number
  logs: number
  contract: Hex
  stop(): Promise<void>
}

async function rpc<T>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  const body = (await res.json()) as { result: T; error?: { message: string } }
  if (body.error) throw new Error(body.error.message)
  return body.result
}

/** Starts anvil and mines `rounds` blocks of four transactions each, after a deployment block. */
export async function startWorkload(rounds = 5): Promise<Workload> {
  if (RUNTIME.length / 2 !== 0x2e) throw new Error('runtime length changed: fix the init code')
  const anvil = await startAnvil()
  try {
    const [a, b] = [0, 1].map(i => mnemonicToAccount(DEVNET_MNEMONIC, { addressIndex: i }))
    const wallet = createWalletClient({ account: a, chain: foundry, transport: http(anvil.url) })
    let nonce = 0
    let transactions = 0
    let logs = 0
    const deploy = await wallet.sendTransaction({ data: INIT, nonce: nonce++, gas: 200_000n })
    transactions++
    let receipt: { contractAddress: Hex } | null = null
    for (let tries = 0; !receipt && tries < 200; tries++) {
      receipt = await rpc<{ contractAddress: Hex } | null>(anvil.url, 'eth_getTransactionReceipt', [deploy])
      if (!receipt) await new Promise(r => setTimeout(r, 25))
    }
    if (!receipt) throw new Error('the deployment was not mined')
    const contract = receipt.contractAddress
    await rpc(anvil.url, 'evm_setAutomine', [false])
    for (let round = 0; round < rounds; round++) {
      await wallet.sendTransaction({
        to: b.address,
        value: 10n ** 15n + BigInt(round),
        type: 'legacy',
        nonce: nonce++,
        gas: 21_000n,
        gasPrice: 3_000_000_000n,
      })
      await wallet.sendTransaction({
        to: contract,
        data: `0x${'ab'.repeat(round + 1)}`,
        type: 'eip2930',
        nonce: nonce++,
        gas: 100_000n,
        gasPrice: 3_000_000_000n,
        accessList: [{ address: contract, storageKeys: [`0x${String(round).padStart(64, '0')}` as Hex] }],
      })
      await wallet.sendTransaction({
        to: contract,
        data: '0x',
        type: 'eip1559',
        nonce: nonce++,
        gas: 100_000n,
        maxFeePerGas: 4_000_000_000n,
        maxPriorityFeePerGas: 1_000_000n,
      })
      const authorization = await wallet.signAuthorization({ account: b, contractAddress: contract })
      await wallet.sendTransaction({
        to: b.address,
        data: '0x01',
        type: 'eip7702',
        authorizationList: [authorization],
        nonce: nonce++,
        gas: 200_000n,
        maxFeePerGas: 4_000_000_000n,
        maxPriorityFeePerGas: 1_000_000n,
      })
      transactions += 4
      logs += 3 // the 2930 and 1559 calls, and the 7702 call into the delegated code
      await rpc(anvil.url, 'evm_mine')
    }
    await rpc(anvil.url, 'evm_mine') // an empty block
    const head = Number(BigInt(await rpc<string>(anvil.url, 'eth_blockNumber')))
    return { anvil, head, transactions, logs, contract, stop: () => anvil.stop() }
  } catch (e) {
    await anvil.stop()
    throw e
  }
}

/** Block `n` with its receipts, straight from the node, for independent expectations. */
export async function nodeBlock(url: string, n: number): Promise<{ block: Json; receipts: Json[] }> {
  const hex = '0x' + n.toString(16)
  return { block: await rpc(url, 'eth_getBlockByNumber', [hex, true]), receipts: await rpc(url, 'eth_getBlockReceipts', [hex]) }
}
