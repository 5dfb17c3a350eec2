// Shard 2 of 5 of the integration tier's slow files (see shard.ts).
import { runShard } from './shard'

void runShard('slow', 1, 5)
