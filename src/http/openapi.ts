/**
 * The OpenAPI 3.1 description of one host's API, derived from the dataset declarations,
 * the kind vocabulary and the chain registry, so it changes when they change and has no
 * second copy to keep in step: every endpoint of the host's family, every parameter and
 * filter operator of every field with its value syntax, the formats and their media
 * types, the response headers, the error envelope, Basic auth, and the WebSocket
 * protocol where OpenAPI has room for it (the operation's description and `x-websocket`).
 */
import { FINALIZED_PARAM } from './fresh.ts'
import type { Chain } from '../chains/registry.ts'
import { MAX_IN_VALUES, MAX_LIMIT } from '../api/params.ts'
import { API_PREFIX } from '../api/paths.ts'
import { contentTypeOf, FORMATS } from '../format/encode.ts'
import type { DatasetDecl, Family, FieldDecl } from '../schema/dataset.ts'
import { KINDS, type Kind, type Operator } from '../schema/kinds.ts'
import { EXPOSED_HEADERS } from './headers.ts'
import { CHAIN_STATUSES, STATUS_FIELDS } from './status.ts'

type Schema = Record<string, unknown>

const NUMBER_TEXT = '^(0x[0-9a-fA-F]+|[0-9]+)$'
const hexOf = (bytes: number): Schema => ({ type: 'string', pattern: `^0x[0-9a-f]{${2 * bytes}}$` })

/** Every kind's value as it appears in a JSON record: a new kind does not compile until it has one. */
const VALUE_SCHEMAS: Record<Kind, Schema> = {
  u64hex: { type: 'string', pattern: '^0x[0-9a-f]+$', description: 'unsigned 64-bit quantity, 0x-hex' },
  u64int: { type: 'integer', minimum: 0 },
  u256hex: { type: 'string', pattern: '^0x[0-9a-f]+$', description: 'unsigned 256-bit quantity, 0x-hex' },
  u256pad: { ...hexOf(32), description: 'unsigned 256-bit quantity, 0x and 64 hex digits' },
  int: { type: 'string', pattern: '^-?[0-9]+$', description: 'signed integer (up to 256 bits and sign), decimal text' },
  hash: hexOf(32),
  address: hexOf(20),
  address32: hexOf(32),
  bytes: { type: 'string', pattern: '^0x([0-9a-f]{2})*$' },
  bool: { type: 'boolean' },
  string: { type: 'string' },
  json: { description: 'JSON value' },
}

/** Every kind's filter value syntax in a query string: a new kind does not compile until it has one. */
const FILTER_SCHEMAS: Record<Kind, Schema> = {
  u64hex: { type: 'string', pattern: NUMBER_TEXT, description: 'decimal or 0x-hex' },
  u64int: { type: 'string', pattern: NUMBER_TEXT, description: 'decimal or 0x-hex' },
  u256hex: { type: 'string', pattern: NUMBER_TEXT, description: 'decimal or 0x-hex' },
  u256pad: { type: 'string', pattern: NUMBER_TEXT, description: 'decimal or 0x-hex' },
  int: { type: 'string', pattern: '^-?(0x[0-9a-fA-F]+|[0-9]+)$', description: 'decimal (optionally negative) or 0x-hex' },
  hash: { type: 'string', pattern: '^0x[0-9a-fA-F]{64}$' },
  address: { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$' },
  address32: { type: 'string', pattern: '^0x[0-9a-fA-F]{1,64}$', description: 'account address, short (0x1) or long' },
  bytes: { type: 'string', pattern: '^0x([0-9a-fA-F]{2})*$' },
  bool: { type: 'string', enum: ['true', 'false'] },
  string: { type: 'string' },
  json: { type: 'string' },
}

const SUFFIX: Record<Operator, string> = { eq: '', in: '__in', gte: '__gte', lte: '__lte' }
const MEANING: Record<Operator, string> = {
  eq: 'equals',
  in: `equals one of (comma-separated, at most ${MAX_IN_VALUES})`,
  gte: 'at least',
  lte: 'at most',
}

/** The filter parameters of one field: one per operator its kind takes. */
function filterParameters(field: FieldDecl): Schema[] {
  return KINDS[field.kind].operators.map(op => {
    const value = field.values ? { ...FILTER_SCHEMAS[field.kind], enum: field.values } : FILTER_SCHEMAS[field.kind]
    const nullable = field.nullable && (op === 'eq' || op === 'in') ? '; %00 for null' : ''
    return {
      name: field.name + SUFFIX[op],
      in: 'query',
      required: false,
      description: `${field.name} ${MEANING[op]}${nullable}`,
      schema: op === 'in' ? { type: 'string', description: `comma-separated values, each: ${JSON.stringify(value)}` } : value,
    }
  })
}

const common = (chains: readonly Chain[], family: Family): Schema[] => [
  {
    name: 'chains',
    in: 'query',
    required: true,
    description: 'one chain: code, id or name, case-insensitive',
    schema: { type: 'string', enum: chains.flatMap(c => [c.code, String(c.id), c.name]) },
  },
  ...(['from_block', 'to_block'] as const).map(name => ({
    name,
    in: 'query',
    required: false,
    description: `${family === 'move' ? 'version (alias ' + name.replace('block', 'version') + ')' : 'block number'}, decimal, 0x-hex or latest (default latest)`,
    schema: { type: 'string', pattern: `${NUMBER_TEXT.slice(0, -2)}|latest)$` },
  })),
  { name: 'fields', in: 'query', required: false, description: 'output fields, comma-separated, in order', schema: { type: 'string' } },
  {
    name: 'limit',
    in: 'query',
    required: false,
    description: 'at most this many rows, cut at a block boundary; X-Next-From-Block says where to continue',
    schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT },
  },
  {
    name: FINALIZED_PARAM,
    in: 'query',
    required: false,
    description: 'true: final blocks only; otherwise a chain followed live also serves its unfinalized blocks (X-Finalized-Block)',
    schema: { type: 'string', enum: ['true', 'false'] },
  },
  {
    name: 'format',
    in: 'query',
    required: false,
    description: 'wins over Accept (default json_stream)',
    schema: { type: 'string', enum: FORMATS },
  },
]

const record = (dataset: DatasetDecl): Schema => ({
  type: 'object',
  properties: Object.fromEntries(
    dataset.fields.map(f => [
      f.name,
      {
        ...(f.nullable ? { anyOf: [VALUE_SCHEMAS[f.kind], { type: 'null' }] } : VALUE_SCHEMAS[f.kind]),
        ...(f.extra ? { description: 'only with fields=' } : {}),
      },
    ]),
  ),
  required: dataset.fields.filter(f => !f.extra && !f.nullable).map(f => f.name),
})

const ERRORS: Record<string, string> = {
  '400': 'invalid parameter (the envelope names it)',
  '401': 'missing or invalid credentials',
  '404': 'no such endpoint, or nothing stored in the range (coverage says what is)',
  '406': 'no acceptable format',
  '413': 'format=json over more than 10,000 blocks without limit',
  '414': 'URL over 16,384 bytes',
  '429': 'too many failed logins from this address',
  '503': 'object storage unavailable (Retry-After) or damaged',
}

/** The OpenAPI document of the host serving `chains` (one family) and `datasets`. */
export function openApiDocument(chains: readonly Chain[], datasets: readonly DatasetDecl[], family: Family): Schema {
  const served = datasets.filter(d => d.family === family)
  const headers = Object.fromEntries(EXPOSED_HEADERS.map(h => [h, { schema: { type: 'string' } }]))
  const errors = Object.fromEntries(
    Object.entries(ERRORS).map(([status, description]) => [
      status,
      { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
    ]),
  )
  const paths = Object.fromEntries(
    served.map(d => [
      API_PREFIX + d.path,
      {
        get: {
          operationId: d.path.replace(/\W+/g, '_'),
          summary: `${d.name} of one chain over a block range`,
          description:
            'Rows in (block, index) order, streamed. The same URL opened as a WebSocket (subprotocol edge-chain-data.v1) replays the range, then follows new blocks: docs/websocket.md.',
          'x-websocket': { subprotocol: 'edge-chain-data.v1', protocol: 'docs/websocket.md' },
          parameters: [...common(chains, family), ...d.fields.flatMap(filterParameters)],
          responses: {
            '200': {
              description: 'the rows',
              headers,
              content: Object.fromEntries(
                FORMATS.map(f => [
                  contentTypeOf(f),
                  {
                    schema:
                      f === 'json'
                        ? { type: 'array', items: { $ref: `#/components/schemas/${schemaName(d)}` } }
                        : f === 'json_stream'
                          ? { $ref: `#/components/schemas/${schemaName(d)}`, description: 'one record per line' }
                          : { type: 'string', format: 'binary' },
                  },
                ]),
              ),
            },
            ...errors,
          },
        },
      },
    ]),
  )
  return {
    openapi: '3.1.0',
    info: { title: `edge-chain-data (${family === 'evm' ? 'EVM' : 'Move-VM'} chains)`, version: '1' },
    security: [{ basic: [] }],
    paths: {
      [`${API_PREFIX}status`]: {
        get: {
          operationId: 'status',
          summary: 'availability, syncing and block height of each chain of this host',
          parameters: [{ name: 'chains', in: 'query', required: false, schema: { type: 'string' } }, common(chains, family).at(-1)],
          responses: {
            '200': {
              description: 'one record per chain',
              content: { 'application/json': { schema: { type: 'array', items: { $ref: '#/components/schemas/Status' } } } },
            },
            ...errors,
          },
        },
      },
      ...paths,
    },
    components: {
      securitySchemes: { basic: { type: 'http', scheme: 'basic' } },
      schemas: {
        Error: {
          type: 'object',
          required: ['error'],
          properties: {
            error: {
              type: 'object',
              required: ['status', 'code', 'message'],
              properties: {
                status: { type: 'integer' },
                code: { type: 'string' },
                message: { type: 'string' },
                parameter: { type: 'string' },
                coverage: { type: 'array', items: { type: 'array', items: { type: 'integer' } } },
              },
            },
          },
        },
        Status: statusSchema(),
        ...Object.fromEntries(served.map(d => [schemaName(d), record(d)])),
      },
    },
  }
}

/** A status record: its fields as declared, `status` closed to its values, `lag` and `error` spelled out. */
function statusSchema(): Schema {
  const special: Record<string, Schema> = {
    status: {
      type: 'string',
      enum: CHAIN_STATUSES,
      description: 'Syncing: followed live and more than the threshold behind the node (lag says how far)',
    },
    lag: {
      anyOf: [
        {
          type: 'object',
          required: ['blocks', 'seconds'],
          properties: { blocks: { type: 'integer', minimum: 0 }, seconds: { type: 'integer', minimum: 0 } },
        },
        { type: 'null' },
      ],
      description: 'for a chain followed live: blocks behind the node head, and seconds behind',
    },
    error: {
      anyOf: [
        { type: 'object', required: ['code', 'message'], properties: { code: { type: 'string' }, message: { type: 'string' } } },
        { type: 'null' },
      ],
    },
  }
  return {
    type: 'object',
    properties: Object.fromEntries(
      STATUS_FIELDS.map(f => [
        f.name,
        special[f.name] ?? (f.nullable ? { anyOf: [VALUE_SCHEMAS[f.kind], { type: 'null' }] } : VALUE_SCHEMAS[f.kind]),
      ]),
    ),
    required: STATUS_FIELDS.map(f => f.name),
  }
}

const schemaName = (d: DatasetDecl): string => `${d.family}_${d.path.replace(/\W+/g, '_')}`
