// @pombo/sdk: the device side of Pombo (README.md beside this package; docs/sdk.md in the repository). The
// service-worker part is the `@pombo/sdk/sw` entry; `dist/pombo.js` is everything in one script.
export { DEFAULT_RETRY, backoffMs, retryAfterMs, type RetryPolicy } from './backoff.js'
export {
  describeNotification,
  type NotificationDescription,
  resolvedLanguage,
  type WebDisplayOptions,
  type WebNotification,
  type WebNotificationOptions,
  webNotification,
  webUrl,
} from './display.js'
export type { PomboError, PomboErrorKind } from './errors.js'
export { IndexedDbStorage } from './idb-storage.js'
export type { InappDisplay, ShowCallback, InappFeed } from './inapp/feed.js'
export { choose, eligible, matches, pickContent, record } from './inapp/rules.js'
export type { Comparator, Gatilho, History, InappMessage, Regras, TriggerValue, Verdict } from './inapp/rules.js'
export type { InappEventJob, InappEventName, Job, JobResult, ReceiptEvent, ReceiptJob } from './outbox.js'
export { Pombo, type FlushReport, type PomboOptions, type PushResult, type TapResult } from './pombo.js'
export { parsePush, pushMap, type ParsedPush, type PushDisplay } from './push.js'
export type { DeviceProfile, DeviceType } from './registration.js'
export { MemoryStorage, type StorageAdapter } from './storage.js'
export type { FetchLike } from './transport.js'
export { SDK_VERSION } from './version.js'
export type { ClickOutcome, DisplayFunction, PushOutcome, WorkerOptions } from './worker.js'
