// Which work partition an app belongs to: a stable hash of the app id, so every process agrees without asking.
import { createHash } from 'node:crypto'

export function partitionOf(appId: string, partitions: number): number {
  return createHash('sha1').update(appId).digest().readUInt32BE(0) % partitions
}
