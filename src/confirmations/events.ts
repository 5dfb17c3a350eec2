// The one way events are written (the spec, Events): as CTEs inside the statement that writes the fact they report,
// so fact and event commit together or not at all. Used by receipts (delivery.received / delivery.clicked) and by
// the outcome recorder (notification.completed); the benchmarks seed events through it too.
//
// Which apps get events, and on which channel: an app whose mode is `webhook` or `grpc` when the statement runs gets
// its events with `canal` = that mode (inside the body too: it is part of the webhook's signed bytes, and the
// stream carries it). The webhook dispatcher reads the `webhook` ones, the stream the `grpc` ones.
//
// Ordering (see 0014_confirmation_stream.sql): each app's events are numbered from its `event_seqs` row, incremented
// once per statement by the number of the app's events in it. That row stays locked until the transaction ends,
// so the app's next writer numbers its events only after this one committed: per app, seq order is commit order,
// and a reader that has seen seq n can already see everything below it (it never has to guess whether a gap is
// final). Within a statement the events of one app are numbered in the caller's `order`.
//
// Lock order: the counters are locked last in the statement (after everything the source depends on: `after`
// names CTEs whose rows must all be written first) and in app id order, so two writers of the same apps cannot
// deadlock on them; the row lock is held only from there to the commit.
//
// Wake-up: for `grpc` events the statement also calls pg_notify (delivered at commit, in commit order, never for a
// rolled-back statement) on a channel of this schema; open streams of the app wake and read from Postgres. The
// notification only shortens the wait: the stream polls as well and never trusts it for order or content.

/** The LISTEN channel of a schema's new `grpc` events (a Postgres identifier: at most 63 bytes). */
export function eventsChannel(schema: string): string {
  return `pm_ev_${schema}`.slice(0, 63)
}

export interface EventWrite {
  /** A SELECT (or a CTE name) yielding `app_id`, `evento`, `body` (jsonb without `canal`) and the `order` columns. */
  source: string
  /** Columns of `source` that order one app's events inside the statement. */
  order: string
  /** Parameter (e.g. `$5`) holding the events' `created_at`. */
  at: string
  /** CTEs of the same statement that must be fully written before the counters are locked. */
  after?: readonly string[]
}

/**
 * CTE definitions (to follow other CTEs after a comma) named `ev_src`, `ev_n`, `ev_seq` and `ev`; `ev` returns the
 * events written (app_id, seq, canal). `source` is evaluated once.
 */
export function eventCtes(w: EventWrite): string {
  const after = (w.after ?? []).map((c) => `(SELECT count(*) FROM ${c})`).join(' + ')
  return `ev_src AS (
       SELECT s.app_id, s.evento, s.body || jsonb_build_object('canal', a.confirm_mode) AS body, a.confirm_mode AS canal,
              row_number() OVER (PARTITION BY s.app_id ORDER BY ${w.order}) AS n
         FROM (SELECT * FROM ${w.source}) s JOIN apps a ON a.id = s.app_id
        WHERE a.confirm_mode IN ('webhook', 'grpc')${after ? ` AND ${after} >= 0` : ''}
     ), ev_n AS (
       SELECT app_id, count(*) AS k, bool_or(canal = 'grpc') AS g FROM ev_src GROUP BY app_id
     ), ev_seq AS (
       INSERT INTO event_seqs AS q (app_id, last)
       SELECT app_id, k FROM ev_n
        WHERE CASE WHEN g THEN pg_notify('pm_ev_' || left(current_schema(), 57), app_id::text) IS NOT NULL ELSE true END
        ORDER BY app_id
       ON CONFLICT (app_id) DO UPDATE SET last = q.last + excluded.last
       RETURNING q.app_id, q.last
     ), ev AS (
       INSERT INTO events (app_id, seq, evento, body, canal, created_at)
       SELECT e.app_id, q.last - n.k + e.n, e.evento, e.body, e.canal, ${w.at}
         FROM ev_src e JOIN ev_n n ON n.app_id = e.app_id JOIN ev_seq q ON q.app_id = e.app_id
       RETURNING app_id, seq, canal
     )`
}
