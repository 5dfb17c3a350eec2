// Shard 1 of 2 of the unit tier (see shard.ts).
import { runShard } from './shard'

void runShard('unit', 0, 2)
