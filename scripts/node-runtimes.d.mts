// Types of scripts/node-runtimes.mjs for the TypeScript tests that import it.
export const CACHE: string
export const RUNTIMES: Record<string, string>
export function nodeBinary(version: string, log?: (message: string) => void): string
