// Array parameters for values that need no quoting (UUIDs validated at the door or read from Postgres, integers):
// one join into a Postgres array literal instead of the driver's per-element escaping, which showed in profiles of
// 2,000-id sends and 1,000-outcome batches.
export function arrayLiteral(values: ReadonlyArray<string | number>): string {
  return `{${values.join(',')}}`
}
