// The app's pace shared through Redis (SharedBucket): two pacers standing for two processes draw on one budget,
// a transactional ask holds marketing asks back across them, and a 429's pause reaches every process.
import { randomBytes } from 'node:crypto'
import Redis from 'ioredis'
import t, { type Test } from 'tap'
import { LANE_MARK_MS, Pacer, SharedBucket } from '../../src/delivery/pacer'
import { Keys } from '../../src/redis/keys'
import { REDIS_URL } from '../helpers/service'
import { until } from '../helpers/until'

function setup(t: Test) {
  const redis = new Redis(REDIS_URL)
  const keys = new Keys(`pmt_${randomBytes(5).toString('hex')}`)
  const app = '6f1c2b7e-2d0a-4c55-9a43-0d1e2f3a4b5c'
  t.teardown(async () => {
    await redis.del(keys.pace(app), keys.paceLane(app))
    redis.disconnect()
  })
  // One fake time for both "processes": sleeping moves it, so the waits are exact arithmetic.
  let now = 1_000_000
  const clock = () => now
  const sleep = async (ms: number) => {
    now += ms
  }
  return {
    redis,
    keys,
    app,
    clock,
    sleep,
    bucket: () => new SharedBucket(redis, keys, app),
    get now() {
      return now
    },
  }
}

t.test('two processes draw on one budget: rate_por_min 600 lets about 10 a second through in all', async (t) => {
  const s = setup(t)
  const a = new Pacer(600, s.clock, s.sleep, s.bucket())
  const b = new Pacer(600, s.clock, s.sleep, s.bucket())
  const signal = new AbortController().signal
  const start = s.now
  for (let i = 0; i < 55; i++) {
    await a.take(signal)
    await b.take(signal)
  }
  const elapsed = s.now - start
  // 10 as the burst, then 100 at 10/s: two buckets of their own would have let 110 through in about 5 s.
  t.ok(elapsed >= 9_800 && elapsed <= 10_300, `110 tokens over two pacers in ${elapsed} ms`)
})

t.test('lanes across processes: while one asks for transactional tokens, marketing asks get none', async (t) => {
  const s = setup(t)
  const tx = s.bucket()
  const mk = s.bucket()
  const now = Date.now()
  t.same((await mk.take(60_000, 1, 1, now)).granted, 1, 'marketing alone is served')
  t.same((await tx.take(60_000, 1, 0, now)).granted, 1, 'a transactional ask is served')
  const held = await mk.take(60_000, 1, 1, now)
  t.equal(held.granted, 0, 'marketing waits while transactional work asks')
  t.ok(held.waitMs > 0 && held.waitMs <= LANE_MARK_MS, `told to wait ${held.waitMs} ms`)
  t.equal((await tx.take(60_000, 1, 0, now)).granted, 1, 'transactional is still served')
  await until('the transactional mark has expired', async () => (await s.redis.exists(s.keys.paceLane(s.app))) === 0)
  t.equal((await mk.take(60_000, 1, 1, Date.now())).granted, 1, 'marketing goes on once transactional asks stop')
})

t.test("a provider's 429 pauses the app in every process", async (t) => {
  const s = setup(t)
  const a = new Pacer(60_000, s.clock, s.sleep, s.bucket())
  const b = new Pacer(60_000, s.clock, s.sleep, s.bucket())
  const signal = new AbortController().signal
  await b.take(signal)
  a.pause(5_000)
  // The pause is written to Redis without waiting: b must see it there.
  await until('the pause is in Redis', async () => Number(await s.redis.hget(s.keys.pace(s.app), 'p')) > 0)
  const before = s.now
  // b's stash holds a few tokens granted before the pause; once they are spent it must wait for the pause.
  for (let i = 0; i < 200 && s.now === before; i++) await b.take(signal)
  t.ok(s.now - before >= 4_900, `the other process waited ${s.now - before} ms`)
})
