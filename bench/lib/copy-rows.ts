// Seeding for benchmarks: `n` rows streamed into one COPY … FROM STDIN (text format: tab-separated, \N for NULL),
// 5,000 lines per chunk, so a million-device seed neither builds one giant string nor waits on a statement per batch.
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type pg from 'pg'
import { from as copyFrom } from 'pg-copy-streams'

export async function copyRows(c: pg.Client, copySql: string, n: number, line: (i: number) => string): Promise<void> {
  let i = 0
  const rows = new Readable({
    read() {
      let chunk = ''
      for (let k = 0; k < 5_000 && i < n; k++, i++) chunk += line(i)
      this.push(chunk === '' ? null : chunk)
    },
  })
  await pipeline(rows, c.query(copyFrom(copySql)))
}
