// The confirmation stream's contract, loaded from the repository's copy of the proto (docs/spec/contract.md "Confirmation
// stream"): the service definition the server implements, and the client constructor tests and benchmarks use.
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import * as grpc from '@grpc/grpc-js'
import * as protoLoader from '@grpc/proto-loader'

const PROTO = join('proto', 'pombo', 'confirmacoes', 'v1', 'confirmacoes.proto')

/** The proto beside the package: found upward from here (src/confirmations/ and dist/src/confirmations/ alike). */
export function protoPath(): string {
  let dir = __dirname
  for (let i = 0; i < 6; i++) {
    const p = join(dir, PROTO)
    if (existsSync(p)) return p
    dir = dirname(dir)
  }
  throw new Error(`${PROTO} not found above ${__dirname}`)
}

/** The proto's `Evento` as the server writes it (uint64 as a decimal string, as the loader is told to map it). */
export interface StreamEvent {
  seq: string
  evento: string
  app_id: string
  notification_id: string
  player_id: string
  quando: string
  canal: string
  corpo_json: string
}

/** The proto's `AssinarPedido`. */
export interface SubscribeRequest {
  app_id: string
  desde_seq: string
}

let loaded: grpc.ServiceClientConstructor | null = null

/** The generated `Confirmacoes` client constructor; its `.service` is the server's definition. */
export function confirmationStream(): grpc.ServiceClientConstructor {
  if (loaded) return loaded
  const def = protoLoader.loadSync(protoPath(), { keepCase: true, longs: String, defaults: true, enums: String })
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    pombo: { confirmacoes: { v1: { Confirmacoes: grpc.ServiceClientConstructor } } }
  }
  loaded = pkg.pombo.confirmacoes.v1.Confirmacoes
  return loaded
}
