// The worker side of the process group (supervisor.ts): answers its parent's metric requests, and stops when the
// parent is gone (its IPC channel closes: the parent exited, even by SIGKILL), so no worker outlives its group.
import type { Metrics } from '../ops/metrics'
import type { FromMember, ToMember } from './messages'

export function serveParent(metrics: Metrics, stop: (why: string) => void): void {
  const send = process.send?.bind(process)
  if (!send) return
  process.on('message', (msg: ToMember) => {
    if (msg?.t !== 'metrics') return
    metrics.json().then(
      (json) => send({ t: 'metrics', id: msg.id, json } satisfies FromMember),
      () => send({ t: 'metrics', id: msg.id, json: null } satisfies FromMember),
    )
  })
  // The parent may have gone while this process was starting (the event came before anyone listened).
  if (!process.connected) stop('the group parent is gone')
  else process.once('disconnect', () => stop('the group parent is gone'))
}
