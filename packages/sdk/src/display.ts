// What a notification looks like, decided in one place: a push in (any shape `parsePush` reads), a description out.
// Pure (no storage, no network, no platform API), so the service worker, a page that draws itself and a native
// shell (Android, iOS, React Native) all draw the same thing from the same push.
//
// The texts are the ones the service resolved (`pmx_title` / `pmx_body`, or `aps.alert`: the spec, "The SDK shows
// the server-resolved text"); `language` names the language of that text when the language maps travelled with it.
// The tap destination is `pm_url` (the send's `url`, `app_url` or `web_url`, whichever won on the service).
import { type ParsedPush, parsePush, pushMap } from './push.js'

export interface NotificationDescription {
  /** The send id (`pm_msg_id`). */
  notificationId: string
  /** The resolved title; absent when the send had no `headings`. */
  title?: string
  subtitle?: string
  /** The resolved text ('' when the push carried none). */
  body: string
  /** Language code of the resolved text, when the language maps travelled (e.g. `en`). */
  language?: string
  /** Large icon URL (`large_icon`): the web notification's icon. */
  icon?: string
  /** Android small-icon resource name (`small_icon`). */
  smallIcon?: string
  /** Big picture URL (`big_picture`). */
  image?: string
  /** Tray tag: the send's `collapse_id`, else the send id (the same push arriving twice replaces itself). */
  tag: string
  /** Where a tap goes (`pm_url`), as the sender wrote it. */
  url?: string
  sound?: string
  channelId?: string
  accentColor?: string
  /** iOS media for a notification service extension (`pm_att`). */
  attachments?: Record<string, string>
  /** The sender's own `data`, without the service's keys. */
  data: Record<string, unknown>
  /** The push's flat key/value map: hand it back to `handleTap` (the web part keeps it in `notification.data`). */
  push: Record<string, unknown>
}

/** What `Notification` / `registration.showNotification` take, with the members lib.dom no longer lists. */
export interface WebNotificationOptions {
  body?: string
  icon?: string
  image?: string
  badge?: string
  tag?: string
  lang?: string
  dir?: 'auto' | 'ltr' | 'rtl'
  data?: unknown
  requireInteraction?: boolean
  silent?: boolean
}

export interface WebNotification {
  title: string
  options: WebNotificationOptions
}

export interface WebDisplayOptions {
  /** The title when the push has none (a send without `headings`); default ''. */
  defaultTitle?: string
  /** Monochrome badge image URL (Android Chrome's status bar). */
  badge?: string
  /** Keep the notification on screen until the person acts on it. */
  requireInteraction?: boolean
}

/** The description of a push, or null when the push is not one of the service's. */
export function describeNotification(input: unknown): NotificationDescription | null {
  const parsed = parsePush(input)
  const map = pushMap(input)
  if (!parsed || !map) return null
  return describeParsed(parsed, map)
}

export function describeParsed(parsed: ParsedPush, map: Record<string, unknown>): NotificationDescription {
  const p = parsed.display
  const d: NotificationDescription = {
    notificationId: parsed.notificationId,
    title: p.title,
    subtitle: p.subtitle,
    body: p.body ?? '',
    language: resolvedLanguage(p.body, p.contents) ?? resolvedLanguage(p.title, p.headings),
    icon: p.largeIcon,
    smallIcon: p.smallIcon,
    image: p.image,
    tag: p.tag ?? parsed.notificationId,
    url: p.url,
    sound: p.sound,
    channelId: p.channelId,
    accentColor: p.accentColor,
    attachments: p.attachments,
    data: p.data,
    push: { ...map },
  }
  for (const k of Object.keys(d) as Array<keyof NotificationDescription>) if (d[k] === undefined) delete d[k]
  return d
}

/**
 * The language whose text the service chose: its rule (`en`, else the first key in alphabetical order) when that
 * key holds `text`, else the first key (alphabetically) that does. Undefined without the map or a match.
 */
export function resolvedLanguage(text: string | undefined, map: Record<string, string> | undefined): string | undefined {
  if (text === undefined || !map) return undefined
  const keys = Object.keys(map).sort()
  const ordered = keys.includes('en') ? ['en', ...keys.filter((k) => k !== 'en')] : keys
  return ordered.find((k) => map[k] === text)
}

/** A URL the browser may load or open: absolute http(s), resolved against `base`; anything else null. */
export function webUrl(url: string | undefined | null, base?: string): string | null {
  if (typeof url !== 'string' || url === '') return null
  try {
    const u = base === undefined ? new URL(url) : new URL(url, base)
    return u.protocol === 'https:' || u.protocol === 'http:' ? u.href : null
  } catch {
    return null
  }
}

/**
 * The description as a web notification: the arguments of `registration.showNotification(title, options)`.
 * `options.data` is the push itself, so a click on it (whoever drew it) can send the click receipt.
 */
export function webNotification(d: NotificationDescription, o: WebDisplayOptions = {}): WebNotification {
  const options: WebNotificationOptions = {
    body: d.body,
    icon: webUrl(d.icon) ?? undefined,
    image: webUrl(d.image) ?? undefined,
    badge: webUrl(o.badge) ?? undefined,
    tag: d.tag,
    lang: d.language,
    dir: 'auto',
    data: d.push,
    requireInteraction: o.requireInteraction,
  }
  for (const k of Object.keys(options) as Array<keyof WebNotificationOptions>) if (options[k] === undefined) delete options[k]
  return { title: d.title ?? o.defaultTitle ?? '', options }
}
