// One Postgres connection budget per process (PM_PG_POOL), split between what opens connections: the main pool
// (routes, group-commit writers, the delivery engine, jobs), the webhook dispatcher's pool (each destination at
// work holds one connection for its batch, so it must not starve the main pool), and the confirmation stream's
// LISTEN connection. A deployment of N processes then opens at most N × PM_PG_POOL connections (docs/operations.md).

export interface PoolBudget {
  main: number
  /** 0 when the dispatcher does not run in this process. */
  webhooks: number
  /** The LISTEN connection of the confirmation stream (1 when it runs). */
  listener: number
}

/**
 * The dispatcher takes a quarter of the budget (at least 2: one destination at work and its look-up), never more
 * than its concurrency needs; the listener takes one; the main pool takes the rest.
 */
export function splitBudget(
  total: number,
  o: { dispatcher: boolean; webhookConcurrency: number; listener: boolean },
): PoolBudget {
  const listener = o.listener ? 1 : 0
  const webhooks = o.dispatcher ? Math.min(o.webhookConcurrency + 1, Math.max(2, Math.floor(total / 4))) : 0
  return { main: Math.max(1, total - listener - webhooks), webhooks, listener }
}
