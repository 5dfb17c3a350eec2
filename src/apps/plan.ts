// What a plan may see. The spec, App: "the free plan has a monthly-active-user allowance and `recebidos` is withheld";
// `recebidos` is "the number of devices that returned the cryptographic proof of arrival". Every surface that would
// reveal that proof follows this one rule: the read shape's `recebidos`, the window statistics' `entregues`, the
// `delivery.received` events (webhook and stream: one per proven device, so counting them is `recebidos`), and the
// dashboard's counters, totals and charts (docs/decisions.md, "The free plan withholds proof of arrival").
import type { Plan } from './store'

/** Plans whose apps see proof of arrival. */
const PROOF_OF_ARRIVAL_PLANS: readonly Plan[] = ['pro']

/** Whether an app on this plan sees proof of arrival (`recebidos`, `entregues`, `delivery.received`). */
export function planShowsArrivals(plan: Plan): boolean {
  return PROOF_OF_ARRIVAL_PLANS.includes(plan)
}

/** The same rule in SQL, over a plan column (e.g. `o.plan` of `orgs o`). */
export function planShowsArrivalsSql(column: string): string {
  return `${column} IN (${PROOF_OF_ARRIVAL_PLANS.map((p) => `'${p}'`).join(', ')})`
}
