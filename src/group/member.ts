// The worker side of the process group (supervisor.ts): answers its parent's metric requests, and stops when the
// parent is gone (its IPC channel closes: the parent exited, even by SIGKILL), so no worker outlives its group.
import type { Metrics } from '../ops/metrics'
import type { FromMember, ToMember } from './messages'

export function serveParent(metrics: Metrics, stop: (why: string) => void): void {
  const send = process.send?.bind(process)
  if (!send) return
  // An answer racing the parent's exit finds the channel closed: dropped (the disconnect below stops this process),
  // never an 'error' event that would end it before its drain.
  const answer = (m: FromMember) => send(m, undefined, undefined, () => {})
  process.on('message', (msg: ToMember) => {
    if (msg?.t !== 'metrics') return
    metrics.json().then(
      (json) => answer({ t: 'metrics', id: msg.id, json }),
      () => answer({ t: 'metrics', id: msg.id, json: null }),
    )
  })
  // The parent may have gone while this process was starting (the event came before anyone listened).
  if (!process.connected) stop('the group parent is gone')
  else process.once('disconnect', () => stop('the group parent is gone'))
}
