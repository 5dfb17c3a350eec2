// What a page tells its service worker: the service's address and the app its pushes belong to. `Pombo.init` in a
// page writes it into the storage the two share (IndexedDbStorage), and the service worker part (worker.ts) reads
// it when a push arrives, since the worker is started by the browser with no settings of its own. One app per
// origin: the last page's `init` wins.
import type { DeviceType } from './registration.js'
import type { StorageAdapter } from './storage.js'

/** Outside any app's prefix: the worker does not know the app before it reads this. */
export const WORKER_SETTINGS_KEY = 'pombo:worker'

export interface WorkerSettings {
  v: 1
  baseUrl: string
  appId: string
  appVersion: string
  deviceType: DeviceType
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** The stored settings when they are whole and well formed, else null (never written, or written by something else). */
export function parseWorkerSettings(raw: unknown): WorkerSettings | null {
  if (typeof raw !== 'string') return null
  let v: unknown
  try {
    v = JSON.parse(raw)
  } catch {
    return null
  }
  if (!v || typeof v !== 'object') return null
  const s = v as Record<string, unknown>
  if (s.v !== 1) return null
  if (typeof s.baseUrl !== 'string' || !/^https?:\/\/[^/]/i.test(s.baseUrl)) return null
  if (typeof s.appId !== 'string' || !UUID.test(s.appId)) return null
  if (typeof s.appVersion !== 'string' || s.appVersion === '') return null
  if (![0, 1, 5, 7, 8].includes(s.deviceType as number)) return null
  return { v: 1, baseUrl: s.baseUrl, appId: s.appId, appVersion: s.appVersion, deviceType: s.deviceType as DeviceType }
}

export async function readWorkerSettings(storage: StorageAdapter): Promise<WorkerSettings | null> {
  return parseWorkerSettings(await storage.getItem(WORKER_SETTINGS_KEY))
}

export async function writeWorkerSettings(storage: StorageAdapter, s: Omit<WorkerSettings, 'v'>): Promise<void> {
  const value: WorkerSettings = { v: 1, baseUrl: s.baseUrl, appId: s.appId, appVersion: s.appVersion, deviceType: s.deviceType }
  await storage.setItem(WORKER_SETTINGS_KEY, JSON.stringify(value))
}

/** The storage is the one a page shares with its service worker (an IndexedDbStorage, from this bundle or another). */
export function sharedWithServiceWorker(storage: StorageAdapter | undefined): boolean {
  return (storage as { sharedWithServiceWorker?: unknown } | undefined)?.sharedWithServiceWorker === true
}

type Exclusive = <T>(fn: () => Promise<T>) => Promise<T>

/**
 * A lock held across every context of the origin (a page, its other tabs, its service worker) through the Web Locks
 * API, where the runtime has it: the outbox's read-modify-write of the storage they share then never loses a job
 * another context wrote in between. Undefined where there is none (the lock stays per instance).
 */
export function crossContextLock(name: string): Exclusive | undefined {
  const locks = (globalThis as { navigator?: { locks?: { request?: unknown } } }).navigator?.locks
  if (!locks || typeof locks.request !== 'function') return undefined
  const request = locks.request as (name: string, fn: () => Promise<unknown>) => Promise<unknown>
  return <T>(fn: () => Promise<T>) => request.call(locks, name, fn) as Promise<T>
}
