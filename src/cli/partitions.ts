// `pombo partitions`: each work partition's owner, stream length, pending entries and oldest pending age, under the
// deployment's recorded count. `pombo partitions resize N`: changes the count (src/redis/partitions.ts says how
// without losing or doubling work); refused, with one line, while a worker of the deployment is live.
import type { Config } from '../core/config'
import { partitionStatus, recordedPartitions, resizePartitions } from '../redis/partitions'
import { withOperatorTools } from './operator'

export class PartitionsCliError extends Error {}

function age(ms: number | null): string {
  if (ms === null) return '-'
  if (ms < 1_000) return `${ms} ms`
  if (ms < 120_000) return `${(ms / 1_000).toFixed(1)} s`
  return `${(ms / 60_000).toFixed(1)} min`
}

export async function partitionsCommand(cfg: Config, argv: string[]): Promise<void> {
  const [sub, ...rest] = argv
  if (sub === undefined) {
    const lines = await withOperatorTools(cfg, async (t) => {
      const recorded = await recordedPartitions(t.db)
      const n = recorded ?? cfg.partitions
      const rows = await partitionStatus(t.redis, t.keys, n, Date.now())
      const head = `partitions: ${n} (${recorded === null ? 'not recorded yet: no process has started' : 'recorded'})`
      const table = rows.map((r) =>
        [
          String(r.partition).padStart(9),
          (r.owner ?? '-').padEnd(40),
          String(r.length).padStart(8),
          String(r.pending).padStart(8),
          age(r.oldestPendingAgeMs).padStart(14),
        ].join('  '),
      )
      return [
        head,
        `${'partition'.padStart(9)}  ${'owner'.padEnd(40)}  ${'length'.padStart(8)}  ${'pending'.padStart(8)}  ${'oldest pending'.padStart(14)}`,
        ...table,
      ]
    })
    console.log(lines.join('\n'))
    return
  }
  if (sub !== 'resize') throw new PartitionsCliError(`unknown partitions command "${sub}" (partitions, partitions resize N)`)
  const raw = rest[0]
  if (!raw || !/^[1-9]\d{0,3}$/.test(raw) || rest.length > 1)
    throw new PartitionsCliError(`resize: expected N, an integer from 1 to 4096, got "${rest.join(' ')}"`)
  const r = await withOperatorTools(cfg, (t) =>
    resizePartitions(t.db, t.redis, t.keys, Number(raw), {
      leaseMs: cfg.delivery.leaseMs,
      streamMaxLen: cfg.jobs.streamMaxLen,
      nowMs: Date.now(),
    }),
  )
  console.log(JSON.stringify({ de: r.from, para: r.to, reenfileirados: r.requeued }))
}
