// Every Redis key and channel name, spelled once. Per-app keys carry the app id as a hash tag so one app's keys
// share a Redis Cluster slot.
export class Keys {
  constructor(readonly prefix: string) {}

  /** Pub/sub channel: an app's cached state (keys, pause, plan) changed; every instance drops its cache entries. */
  invalidations(): string {
    return `${this.prefix}:ctl:invalidate`
  }

  /** Registrations counted per app per hour, across instances (spec §Limits). */
  registrations(appId: string, hour: number): string {
    return `${this.prefix}:{${appId}}:reg:${hour}`
  }

  /** Exports started per app per second (spec §Limits). */
  exports(appId: string, second: number): string {
    return `${this.prefix}:{${appId}}:exp:${second}`
  }

  /** Sends created per app per second (spec §Limits). */
  sends(appId: string, second: number): string {
    return `${this.prefix}:{${appId}}:snd:${second}`
  }
}
