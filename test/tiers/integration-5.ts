// Shard 5 of 6 of the integration tier (see shard.ts).
import { runShard } from './shard'

void runShard('integration', 4, 6)
