// The Redis-bound suites again, every service on the run's Redis Cluster (see shard.ts).
import { runShard } from './shard'

void runShard('cluster', 0, 1)
