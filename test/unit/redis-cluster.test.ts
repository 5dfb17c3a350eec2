// The pure parts of Redis Cluster support: REDIS_CLUSTER_NODES, the slot hash (the examples of the Redis Cluster
// specification), grouping by slot, and cluster outages recognised as "Redis is unreachable" (503, not 500).
import Redis from 'ioredis'
import t from 'tap'
import { ConfigError, loadConfig } from '../../src/core/config'
import { dependencyOf } from '../../src/core/dependency-errors'
import { groupBySlot, keySlot } from '../../src/redis/slots'

t.test('REDIS_CLUSTER_NODES: unset is no cluster; host:port seeds otherwise', async (t) => {
  t.equal(loadConfig({}).redisClusterNodes, null)
  t.equal(loadConfig({ REDIS_CLUSTER_NODES: ' ' }).redisClusterNodes, null)
  t.same(loadConfig({ REDIS_CLUSTER_NODES: '10.0.0.1:7000, redis-b:7001,[::1]:7002' }).redisClusterNodes, [
    { host: '10.0.0.1', port: 7000 },
    { host: 'redis-b', port: 7001 },
    { host: '::1', port: 7002 },
  ])
  for (const bad of ['10.0.0.1', 'a:0', 'a:65536', 'a:7000,,b:7001', 'a:x', 'redis://a:7000', '::1:7000', 'a :7000']) {
    t.throws(() => loadConfig({ REDIS_CLUSTER_NODES: bad }), ConfigError, bad)
    t.throws(() => loadConfig({ REDIS_CLUSTER_NODES: bad }), /^REDIS_CLUSTER_NODES: /, bad)
  }
  t.equal(loadConfig({ REDIS_CLUSTER_NODES: 'a:7000', REDIS_URL: 'redis://b:6379' }).redisClusterNodes?.length, 1)
})

t.test('keySlot follows the Redis Cluster specification', async (t) => {
  t.equal(keySlot('123456789'), 0x31c3 % 16384, 'CRC16/XMODEM of the check string')
  t.equal(keySlot('{user1000}.following'), keySlot('{user1000}.followers'), 'a hash tag decides')
  // Slots as `CLUSTER KEYSLOT` of Redis 7.0 answers them.
  t.equal(keySlot('foo{}{bar}'), 8363, 'an empty tag hashes the whole key')
  t.equal(keySlot('foo{{bar}}zap'), 4015, 'the tag is between the first { and the next }')
  t.equal(keySlot('foo{{bar}}zap'), keySlot('{bar'))
  t.equal(keySlot('foo{bar}{zap}'), 5061, 'only the first tag counts')
  t.equal(keySlot('foo{bar}{zap}'), keySlot('bar'))
  t.equal(keySlot('{ção}'), 3314, 'bytes (UTF-8), not UTF-16 units')
  t.equal(keySlot('pm:{p0}:work'), 15882)
  t.equal(keySlot('a{}b}'), 14284, 'an empty tag: the whole key, not the text up to the next }')
  t.equal(keySlot('{}{x}{y}'), 8108, 'an empty first tag: the whole key, not a later tag')
  for (const k of ['', 'a', 'pm:{p0}:work', 'x'.repeat(1000)]) t.ok(keySlot(k) >= 0 && keySlot(k) < 16384)
})

t.test('groupBySlot: one group on a single Redis, one per slot on a cluster', async (t) => {
  const single = new Redis({ lazyConnect: true })
  t.same(
    groupBySlot(single, ['{a}1', '{b}2', '{a}3'], (k) => k),
    [['{a}1', '{b}2', '{a}3']],
  )
  t.same(
    groupBySlot(single, [], (k: string) => k),
    [],
  )
  single.disconnect()
})

t.test('a cluster that lost a master is "Redis unreachable" (a named 503), not a 500', async (t) => {
  for (const msg of [
    'Too many Cluster redirections. Last error: ReplyError: MOVED 6090 127.0.0.1:20140',
    'CLUSTERDOWN The cluster is down',
    "Cluster isn't ready and enableOfflineQueue options is false",
    'None of startup nodes is available',
    'Failed to refresh slots cache.',
  ]) {
    t.equal(dependencyOf(new Error(msg)), 'redis', msg)
  }
  t.equal(
    dependencyOf(new Error('CROSSSLOT Keys in request do not hash to the same slot')),
    null,
    'a programming error stays a 500',
  )
})
