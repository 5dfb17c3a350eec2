// One Postgres connection budget per process (PM_PG_POOL), split between what opens connections: the main pool
// (routes, group-commit writers, the delivery engine, jobs), the webhook dispatcher's pool (its turns' claims,
// lease renewals and records, kept apart so they never wait behind the main pool), and the confirmation stream's
// LISTEN connection. A deployment of N processes then opens at most N × PM_PG_POOL connections (docs/operations.md).

export interface PoolBudget {
  main: number
  /** 0 when the dispatcher does not run in this process. */
  webhooks: number
  /** The LISTEN connection of the confirmation stream (1 when it runs). */
  listener: number
}

/**
 * The dispatcher takes a quarter of the budget (at least 2: a turn's statement and the look-up), never more than
 * its concurrency could use; the listener takes one; the main pool takes the rest.
 */
export function splitBudget(
  total: number,
  o: { dispatcher: boolean; webhookConcurrency: number; listener: boolean },
): PoolBudget {
  const listener = o.listener ? 1 : 0
  const webhooks = o.dispatcher ? Math.min(o.webhookConcurrency + 1, Math.max(2, Math.floor(total / 4))) : 0
  return { main: Math.max(1, total - listener - webhooks), webhooks, listener }
}
