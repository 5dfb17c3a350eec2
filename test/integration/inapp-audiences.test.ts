// In-app audiences by device state (the spec, In-app campaign `alvo_tipo`; docs/design/inapp.md, Audiences), through the
// real pending route and the reach route: `todos` is the whole base, dead tokens included (the provider declares
// them dead on a real send); `bloqueados` follows the permission report, `desinscritos` a dead token or
// `notification_types` -2; a record retired by a newer token of its install is in no audience.
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { startDelivery } from '../helpers/delivery'
import { InappWorld } from '../helpers/inapp'

t.test('each device state lands in the audiences the spec words give it, in the package and in the reach count', async (t) => {
  const d = await startDelivery(t, { service: { limits: { ipPerMin: 0 } } })
  const app = await d.s.createApp()
  await d.fcmFor(app)
  const w = new InappWorld(d.s, app)
  t.equal((await w.config({ inapp_ativo: true })).status, 200)

  const dev = (name: string, extra: Record<string, unknown> = {}) =>
    w.device({ identifier: `${name}-${randomUUID()}`, external_user_id: `u-${name}`, ...extra })
  const normal = await dev('normal', { notif_permissoes: 3 })
  const unreported = await dev('unreported')
  const unsubscribed = await dev('unsub', { notif_permissoes: 3 })
  // No route writes -2 (the spec, Device); a device carrying it came from elsewhere (an import, an older system).
  await d.s.sql('UPDATE devices SET notification_types = -2 WHERE id = $1', [unsubscribed])
  const denied = await dev('denied', { notif_permissoes: 2 })
  const neverAsked = await dev('never', { notif_permissoes: 0 })
  // A web user who revoked permission: the SDK reported it, then the provider declared the token dead.
  d.fcm.script(/^dead-/, 'unregistered')
  const deadWeb = await dev('dead-web', { device_type: 5, notif_permissoes: 2 })
  const deadAllowed = await dev('dead-allowed', { notif_permissoes: 3 })
  const install = randomUUID()
  const retired = await dev('retired', { instalacao_id: install, notif_permissoes: 3 })
  const successor = await dev('successor', { instalacao_id: install, notif_permissoes: 3 })
  const all = [normal, unreported, unsubscribed, denied, neverAsked, deadWeb, deadAllowed, retired, successor]

  const row = await d.closed(await d.send(app, { include_player_ids: [deadWeb, deadAllowed] }))
  t.equal(row.failed, 2, 'the provider declared both tokens dead')
  const states = await d.s.sql<{ id: string; invalid_identifier: boolean; invalid_reason: string; notification_types: number }>(
    'SELECT id, invalid_identifier, invalid_reason, notification_types FROM devices WHERE id = ANY($1)',
    [[deadWeb, deadAllowed, retired]],
  )
  for (const s of states) t.equal(s.invalid_identifier, true, `${s.id}: ${s.invalid_reason}`)
  t.same(
    states.filter((s) => s.id !== retired).map((s) => s.notification_types),
    [1, 1],
    'a dead token keeps its last known value',
  )
  t.equal(states.find((s) => s.id === retired)?.invalid_reason, 'substituido')

  const c = {
    todos: await w.campaign({ nome: 'todos', alvo_tipo: 'todos' }),
    bloqueados: await w.campaign({ nome: 'bloqueados', alvo_tipo: 'bloqueados' }),
    nunca_pediu: await w.campaign({ nome: 'nunca_pediu', alvo_tipo: 'nunca_pediu' }),
    desinscritos: await w.campaign({ nome: 'desinscritos', alvo_tipo: 'desinscritos' }),
    player_ids: await w.campaign({ nome: 'player_ids', alvo_tipo: 'player_ids', alvo: all }),
    external_ids: await w.campaign({
      nome: 'external_ids',
      alvo_tipo: 'external_ids',
      alvo: ['normal', 'unreported', 'unsub', 'denied', 'never', 'dead-web', 'dead-allowed', 'retired', 'successor'].map(
        (n) => `u-${n}`,
      ),
    }),
  }
  type Name = keyof typeof c
  const lists: Name[] = ['player_ids', 'external_ids']
  const want: Array<[string, string, Name[]]> = [
    ['registered, permission allowed', normal, ['todos', ...lists]],
    ['registered, permission never reported', unreported, ['todos', ...lists]],
    ['notification_types -2', unsubscribed, ['todos', 'desinscritos', ...lists]],
    ['permission denied', denied, ['todos', 'bloqueados', ...lists]],
    ['never asked', neverAsked, ['todos', 'nunca_pediu', ...lists]],
    ['web, permission revoked, token dead', deadWeb, ['todos', 'bloqueados', 'desinscritos', ...lists]],
    ['permission allowed, token dead', deadAllowed, ['todos', 'desinscritos', ...lists]],
    ['retired by a newer token of its install', retired, []],
    ["the install's current record", successor, ['todos', ...lists]],
  ]
  const names = new Map(Object.entries(c).map(([k, v]) => [v, k]))
  for (const [label, id, audiences] of want) {
    const r = await w.pending(id)
    t.equal(r.status, 200, label)
    const got = (r.json.messages as Array<{ campanha_id: string }>).map((m) => names.get(m.campanha_id)).sort()
    t.same(got, [...audiences].sort(), `${label}: served`)
  }

  for (const [name, id] of Object.entries(c) as Array<[Name, string]>) {
    const members = want.filter(([, , a]) => a.includes(name)).length
    const reach = await w.get(`/${id}/alcance`)
    t.equal(reach.json.alcance_estimado, members, `${name}: the reach counts exactly the devices served`)
  }
})
