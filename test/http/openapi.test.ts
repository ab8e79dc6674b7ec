/**
 * The OpenAPI document: valid OpenAPI 3.1 (a maintained validator), served without
 * credentials per host, and derived from the declarations: every dataset of the host's
 * family has its path, every field its filter parameters, every record field its schema.
 */
import { Validator } from '@seriousme/openapi-schema-validator'
import { describe, expect, it } from 'vitest'
import { CHAINS } from '../../src/chains/registry.ts'
import { DATASETS } from '../../src/api/datasets.ts'
import { routeHost } from '../../src/api/hosts.ts'
import { createApp } from '../../src/http/app.ts'
import { ManifestReader } from '../../src/manifest/read.ts'
import { parseUsers } from '../../src/api/auth.ts'
import { KINDS } from '../../src/schema/kinds.ts'
import { tempStore } from '../support/stores.ts'

type Json = any

const { store } = await tempStore()
const app = createApp({ store, manifest: new ManifestReader(store), users: await parseUsers('alice:wonderland') })
const documentOf = async (host: string): Promise<Json> => {
  const res = await app.fetch(new Request(`http://${host}/v1/api/openapi.json`))
  expect(res.status).toBe(200)
  expect(res.headers.get('access-control-allow-origin')).toBe('*')
  return res.json()
}

describe('GET /v1/api/openapi.json', () => {
  for (const [host, family] of [
    ['api.example.com', 'evm'],
    ['aptos.localhost', 'move'],
  ] as const) {
    it(`is valid OpenAPI 3.1 for ${host}, with every ${family} dataset, field and operator, and no credentials needed`, async () => {
      const doc = await documentOf(host)
      const validator = new Validator()
      const result = await validator.validate(doc)
      expect(result.errors ?? [], JSON.stringify(result.errors)).toEqual([])
      expect(result.valid).toBe(true)
      const served = DATASETS.filter(d => d.family === family)
      expect(Object.keys(doc.paths).sort()).toEqual(['/v1/api/status', ...served.map(d => `/v1/api/${d.path}`)].sort())
      for (const d of served) {
        const op = doc.paths[`/v1/api/${d.path}`].get
        const names = op.parameters.map((p: Json) => p.name)
        for (const f of d.fields)
          for (const o of KINDS[f.kind].operators) expect(names).toContain(f.name + { eq: '', in: '__in', gte: '__gte', lte: '__lte' }[o])
        const record = doc.components.schemas[`${d.family}_${d.path.replace(/\W+/g, '_')}`]
        expect(Object.keys(record.properties)).toEqual(d.fields.map(f => f.name))
        expect(Object.keys(op.responses['200'].content)).toEqual([
          'application/json',
          'application/jsonstream',
          'text/csv',
          'application/vnd.apache.arrow.stream',
        ])
      }
      const chains = doc.paths[`/v1/api/${served[0].path}`].get.parameters.find((p: Json) => p.name === 'chains')
      expect(chains.schema.enum).toEqual(routeHost(host, CHAINS).chains.flatMap(c => [c.code, String(c.id), c.name]))
      expect(doc.components.securitySchemes.basic).toEqual({ type: 'http', scheme: 'basic' })
    })
  }

  it('lists the closed sets of values of a field as an enum', async () => {
    const doc = await documentOf('api.example.com')
    const type = doc.paths['/v1/api/transactions'].get.parameters.find((p: Json) => p.name === 'type')
    expect(type.schema.enum).toEqual(['0', '1', '2', '3', '4'])
  })
})
