export type Tier = 'unit' | 'integration' | 'slow' | 'cluster'
export const REPO_ROOT: string
export const UNIT_DIR: string
export const SERVICE_ENV: string[]
export const UNIT_SHARDS: number
export const UNIT_SLOW: string[]
export const INTEGRATION_SHARDS: number
export const SLOW_SHARDS: number
export const ALONE: string[]
export const SLOW: string[]
export const CLUSTER_SUITES: string[]
export function testFiles(dir: string, skip?: string): string[]
export function integrationFiles(): string[]
export function shardFiles(tier: Exclude<Tier, 'cluster'>, index: number, count: number): string[]
export function shardCount(tier: Tier): number
export function shardEntries(tier: Tier): string[]
