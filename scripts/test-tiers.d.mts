export const REPO_ROOT: string
export const UNIT_DIR: string
export const UNIT_SHARDS: number
export const INTEGRATION_SHARDS: number
export const ALONE: string[]
export const CLUSTER_SUITES: string[]
export function testFiles(dir: string, skip?: string): string[]
export function integrationFiles(): string[]
export function shardFiles(tier: 'unit' | 'integration', index: number, count: number): string[]
export function shardEntries(tier: 'unit' | 'integration' | 'cluster'): string[]
