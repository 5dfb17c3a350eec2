// Reading a Prometheus text scrape in tests: one sample's value by name and labels, and every metric name.

/** The value of one sample line (`name{labels} value`, or `name value` without labels), or undefined. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith(`${name} `) && Object.keys(labels).length === 0) return Number(line.slice(name.length + 1))
    if (!line.startsWith(`${name}{`)) continue
    const body = line.slice(name.length + 1, line.indexOf('}'))
    const got = Object.fromEntries(
      body.split(/,(?=\w+=)/).map((kv) => [kv.split('=')[0], JSON.parse(kv.slice(kv.indexOf('=') + 1))]),
    )
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return undefined
}

/** Every sample name of a scrape (a histogram's `_bucket`, `_sum`, `_count` included). */
export function sampleNames(text: string): Set<string> {
  const names = new Set<string>()
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]/.exec(line)
    if (m) names.add(m[1] as string)
  }
  return names
}
