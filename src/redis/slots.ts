// Pipelines that stay inside one Redis Cluster slot. A cluster refuses a multi-key command whose keys hash to
// different slots (CROSSSLOT) and ioredis refuses a pipeline that spans masters, and even one spanning slots of one
// master breaks the moment a slot moves. So the items of a batch are grouped by the slot of their key, one pipeline
// per slot, all sent at once (one round trip on the wire whatever the number of groups). On a single Redis every
// item goes into one pipeline, as before.
import type { ChainableCommander } from 'ioredis'
import { isCluster, type RedisClient } from './client'

/** One command's answer: ioredis's [error, reply] pair. */
export type Reply = [Error | null, unknown]

// CRC16/XMODEM, the hash Redis Cluster uses for key slots. Ours rather than cluster-key-slot (the package ioredis
// pins, 1.1.1): that one hashes `{bar` for `foo{}{bar}` where Redis hashes the whole key (an empty first tag means no
// tag), so it would name another slot than CLUSTER KEYSLOT does (test/unit/redis-cluster.test.ts).
const TABLE = new Uint16Array(256)
for (let i = 0; i < 256; i++) {
  let c = i << 8
  for (let j = 0; j < 8; j++) c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff
  TABLE[i] = c
}

/** The cluster slot of a key (0–16383): the CRC16 of its hash tag (`{…}`, when not empty) or of the whole key. */
export function keySlot(key: string): number {
  const bytes = Buffer.from(key)
  let start = 0
  let end = bytes.length
  const open = bytes.indexOf(0x7b) // {
  if (open !== -1) {
    const close = bytes.indexOf(0x7d, open + 1) // }
    if (close > open + 1) {
      start = open + 1
      end = close
    }
  }
  let crc = 0
  for (let i = start; i < end; i++) crc = ((crc << 8) & 0xffff) ^ (TABLE[((crc >> 8) ^ (bytes[i] as number)) & 0xff] as number)
  return crc & 0x3fff
}

/** Groups items by the slot of their key on a cluster; one group holding all of them on a single Redis. */
export function groupBySlot<T>(redis: RedisClient, items: readonly T[], keyOf: (item: T) => string): T[][] {
  if (!isCluster(redis)) return items.length > 0 ? [[...items]] : []
  const groups = new Map<number, T[]>()
  for (const item of items) {
    const slot = keySlot(keyOf(item))
    const g = groups.get(slot)
    if (g) g.push(item)
    else groups.set(slot, [item])
  }
  return [...groups.values()]
}

/**
 * Runs `add` for each item into the pipeline of its key's slot and executes them all. Answers, for each item in
 * the order given, the replies of the commands `add` queued for it. A pipeline that fails as a whole (connection
 * lost) answers its error for each of its items' commands; the other groups keep their own replies.
 */
export async function pipelineBySlot<T>(
  redis: RedisClient,
  items: readonly T[],
  keyOf: (item: T) => string,
  add: (pipe: ChainableCommander, item: T) => void,
): Promise<Reply[][]> {
  const out: Reply[][] = items.map(() => [])
  await Promise.all(
    groupBySlot(
      redis,
      items.map((_, i) => i),
      (i) => keyOf(items[i] as T),
    ).map(async (group) => {
      const pipe = redis.pipeline()
      const counts: number[] = []
      for (const i of group) {
        const before = pipe.length
        add(pipe, items[i] as T)
        counts.push(pipe.length - before)
      }
      let res: Reply[]
      try {
        res = ((await pipe.exec()) ?? []) as Reply[]
      } catch (err) {
        const e = err instanceof Error ? err : new Error(String(err))
        res = Array.from({ length: pipe.length }, (): Reply => [e, null])
      }
      let k = 0
      group.forEach((i, j) => {
        const n = counts[j] as number
        out[i] = res.slice(k, k + n)
        k += n
      })
    }),
  )
  return out
}

/** The first error among replies, if any. */
export function firstError(replies: readonly Reply[][]): Error | null {
  for (const list of replies) for (const [err] of list) if (err) return err
  return null
}
