// What the serving process and its worker processes say to each other over the IPC channel (src/group/).
import type { MetricsJson } from '../ops/metrics'

/** Set in a worker process's environment by its parent: the worker's slot in the group (1..PM_SERVE_WORKERS). */
export const GROUP_MEMBER_ENV = 'PM_GROUP_MEMBER'

/** Parent → worker: send your metrics' series, answering with this id. */
export type ToMember = { t: 'metrics'; id: number }

/** Worker → parent: its series (null when it could not gather them). */
export type FromMember = { t: 'metrics'; id: number; json: MetricsJson | null }
