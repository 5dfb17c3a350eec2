// The checkout (or image) directory: the nearest ancestor holding package.json. The same from src/ run by tsx and
// from dist/src/ run compiled, so files beside the package (package.json, .data/) are found from either.
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'

function findRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir
    if (dirname(dir) === dir) return join(from, '..')
  }
}

export const ROOT: string = findRoot(__dirname)
