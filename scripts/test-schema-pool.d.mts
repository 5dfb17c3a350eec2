import type { Client, ClientBase } from 'pg'

export function withClient<T>(url: string, fn: (c: Client) => Promise<T>): Promise<T>

export function vacuumCatalogs(c: ClientBase, bloated?: number): Promise<string | null>
export function openSchemaPool(url: string, log?: (msg: string) => void): Promise<string>
export function closeSchemaPool(url: string, run: string | undefined, log?: (msg: string) => void): Promise<number>
export function vacuumWhileRunning(
  url: string,
  log?: (msg: string) => void,
  o?: { everyMs?: number; bloated?: number },
): () => void
