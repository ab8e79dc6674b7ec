/**
 * The JSON-RPC shapes the EVM ingester reads, as nodes send them: every quantity is
 * 0x-hex text. Fields that only some forks or some nodes send are optional.
 */
export type Hex = `0x${string}`

export interface RpcWithdrawal {
  index: Hex
  validatorIndex: Hex
  address: Hex
  amount: Hex
}

export interface RpcAccessListItem {
  address: Hex
  storageKeys: Hex[]
}

export interface RpcAuthorization {
  chainId: Hex
  address: Hex
  nonce: Hex
  yParity: Hex
  r: Hex
  s: Hex
}

export interface RpcTransaction {
  hash: Hex
  blockHash?: Hex | null
  blockNumber?: Hex | null
  transactionIndex?: Hex | null
  type?: Hex
  nonce: Hex
  from: Hex
  to?: Hex | null
  value: Hex
  gas: Hex
  gasPrice?: Hex
  maxFeePerGas?: Hex
  maxPriorityFeePerGas?: Hex
  maxFeePerBlobGas?: Hex
  input: Hex
  chainId?: Hex
  v?: Hex
  r: Hex
  s: Hex
  yParity?: Hex
  accessList?: RpcAccessListItem[]
  blobVersionedHashes?: Hex[]
  authorizationList?: RpcAuthorization[]
}

export interface RpcBlock {
  number: Hex
  hash: Hex
  parentHash: Hex
  sha3Uncles: Hex
  miner: Hex
  stateRoot: Hex
  transactionsRoot: Hex
  receiptsRoot: Hex
  logsBloom: Hex
  difficulty: Hex
  totalDifficulty?: Hex | null
  gasLimit: Hex
  gasUsed: Hex
  timestamp: Hex
  extraData: Hex
  mixHash: Hex
  nonce: Hex
  size?: Hex
  baseFeePerGas?: Hex | null
  withdrawalsRoot?: Hex | null
  withdrawals?: RpcWithdrawal[] | null
  blobGasUsed?: Hex | null
  excessBlobGas?: Hex | null
  parentBeaconBlockRoot?: Hex | null
  requestsHash?: Hex | null
  transactions: RpcTransaction[]
}

export interface RpcLog {
  address: Hex
  topics: Hex[]
  data: Hex
  blockHash: Hex
  blockNumber: Hex
  blockTimestamp?: Hex
  transactionHash: Hex
  transactionIndex: Hex
  logIndex: Hex
  removed?: boolean
}

export interface RpcReceipt {
  transactionHash: Hex
  transactionIndex: Hex
  blockHash?: Hex
  blockNumber?: Hex
  type?: Hex
  /** Byzantium and later. */
  status?: Hex | null
  /** Before Byzantium: the post-transaction state root. */
  root?: Hex | null
  cumulativeGasUsed: Hex
  gasUsed: Hex
  effectiveGasPrice?: Hex | null
  contractAddress?: Hex | null
  logsBloom: Hex
  logs: RpcLog[]
}

/** One block as extracted: the full block and one receipt per transaction, in order. */
export interface RawBlock {
  block: RpcBlock
  receipts: RpcReceipt[]
}
