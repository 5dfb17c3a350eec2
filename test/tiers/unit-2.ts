// Shard 2 of 2 of the unit tier (see shard.ts).
import { runShard } from './shard'

void runShard('unit', 1, 2)
