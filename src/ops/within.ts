// The operations port never waits longer than its bound for anything (a dependency's ping, a collector, a worker of
// the group): what has not answered in time counts as the fallback.

/** `p`'s value, or `fallback` once `ms` pass first (`p` must not reject: callers turn a failure into a value). */
export function within<T>(p: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([p, new Promise<T>((resolve) => (timer = setTimeout(() => resolve(fallback), ms)))]).finally(() =>
    clearTimeout(timer),
  )
}

/** True when `f` settles well within `ms`; false when it throws, rejects or takes longer. */
export function succeedsWithin(f: () => unknown, ms: number): Promise<boolean> {
  return within(
    Promise.resolve()
      .then(f)
      .then(
        () => true,
        () => false,
      ),
    ms,
    false,
  )
}
