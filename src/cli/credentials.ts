// `pombo credentials …` (docs/spec/contract.md): validate every input first, then store in one transaction and publish the
// change; prints only the non-secret meta as JSON. Bad input: one line (CredentialError), exit 2, nothing written.
import { byOperator } from '../audit/record'
import { readFileSync, statSync } from 'node:fs'
import { parseArgs } from 'node:util'
import type { Config } from '../core/config'
import { CredentialService } from '../credentials/service'
import { CredentialError, parseApns, parseApnsEnv, parseFcmUpload, parsePlatform } from '../credentials/validate'
import { isoWithOffset, systemClock } from '../core/time'
import { withOperatorTools } from './operator'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
/** Far above any real key or config file; a wrong path to something huge fails fast instead of being read. */
const MAX_FILE_BYTES = 1024 * 1024

function appId(v: string | undefined): string {
  if (!v || !UUID.test(v)) throw new CredentialError(`APP_ID: expected a UUID, got "${v ?? ''}"`)
  return v.toLowerCase()
}

/** Reads an input file; `what` names it in the one-line failure. */
function readInput(path: string | undefined, what: string): string {
  if (!path) throw new CredentialError(`${what}: required`)
  try {
    if (statSync(path).size > MAX_FILE_BYTES) throw new CredentialError(`${what}: ${path} is larger than 1 MB`)
    return readFileSync(path, 'utf8')
  } catch (err) {
    if (err instanceof CredentialError) throw err
    throw new CredentialError(`${what}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`)
  }
}

function extraPositionals(p: string[], n: number): void {
  if (p.length > n) throw new CredentialError(`unexpected argument "${p[n]}"`)
}

function withService<T>(cfg: Config, fn: (s: CredentialService) => Promise<T>): Promise<T> {
  return withOperatorTools(cfg, (t) =>
    fn(new CredentialService({ db: t.db, vault: t.vault, dir: t.dir, redis: t.redis, keys: t.keys, now: systemClock, cfg })),
  )
}

const print = (v: unknown): void => console.log(JSON.stringify(v, null, 2))

export async function credentialsCommand(cfg: Config, argv: string[]): Promise<void> {
  const [sub, ...rest] = argv
  switch (sub) {
    case 'fcm': {
      const { values, positionals } = parseArgs({
        args: rest,
        allowPositionals: true,
        options: { config: { type: 'string' }, package: { type: 'string' } },
      })
      const id = appId(positionals[0])
      extraPositionals(positionals, 2)
      if (values.config === undefined && values.package !== undefined) {
        throw new CredentialError('--package: only meaningful with --config google-services.json')
      }
      const { credential, meta, params } = parseFcmUpload(
        { text: readInput(positionals[1], 'SERVICE_ACCOUNT.json'), fcmBaseUrl: cfg.fcmBaseUrl },
        values.config === undefined
          ? undefined
          : { text: readInput(values.config, '--config'), what: '--config', packageName: values.package },
      )
      const saved = await withService(cfg, (s) =>
        s.save(id, 'fcm', credential, meta, params, byOperator('pombo credentials fcm')),
      )
      print({
        id,
        plataforma: 'fcm',
        ...saved.meta,
        ...(params ? { firebase_params: params } : {}),
        atualizada_em: isoWithOffset(saved.updatedAt),
      })
      return
    }
    case 'apns': {
      const { values, positionals } = parseArgs({
        args: rest,
        allowPositionals: true,
        options: {
          p8: { type: 'string' },
          'key-id': { type: 'string' },
          'team-id': { type: 'string' },
          'bundle-id': { type: 'string' },
          env: { type: 'string' },
        },
      })
      const id = appId(positionals[0])
      extraPositionals(positionals, 1)
      const { credential, meta } = parseApns({
        p8: readInput(values.p8, '--p8'),
        keyId: values['key-id'],
        teamId: values['team-id'],
        bundleId: values['bundle-id'],
        env: values.env,
      })
      const saved = await withService(cfg, (s) =>
        s.save(id, 'apns', credential, meta, undefined, byOperator('pombo credentials apns')),
      )
      print({ id, plataforma: 'apns', ...saved.meta, atualizada_em: isoWithOffset(saved.updatedAt) })
      return
    }
    case 'apns-env': {
      const { positionals } = parseArgs({ args: rest, allowPositionals: true, options: {} })
      const id = appId(positionals[0])
      const env = parseApnsEnv(positionals[1], 'environment')
      extraPositionals(positionals, 2)
      const saved = await withService(cfg, (s) => s.setApnsEnv(id, env, byOperator('pombo credentials apns-env')))
      print({ id, plataforma: 'apns', ...saved.meta, atualizada_em: isoWithOffset(saved.updatedAt) })
      return
    }
    case 'delete': {
      const { positionals } = parseArgs({ args: rest, allowPositionals: true, options: {} })
      const id = appId(positionals[0])
      const platform = parsePlatform(positionals[1])
      extraPositionals(positionals, 2)
      const removed = await withService(cfg, (s) => s.delete(id, platform, byOperator('pombo credentials delete')))
      print({ id, plataforma: platform, removida: removed })
      return
    }
    default:
      throw new CredentialError(
        `unknown credentials command "${sub ?? ''}" (fcm, apns, apns-env, delete; pombo help lists the commands)`,
      )
  }
}
