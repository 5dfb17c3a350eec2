// Shard 1 of 6 of the integration tier (see shard.ts).
import { runShard } from './shard'

void runShard('integration', 0, 6)
