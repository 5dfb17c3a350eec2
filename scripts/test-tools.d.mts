// Types of scripts/test-tools.mjs for the unit test that imports it.
export interface Tool {
  name: string
  why?: string
  present: () => boolean
  needed?: (text: string) => boolean
}
export const TOOLS: Tool[]
export function toolsFor(files: string[] | null): Tool[]
export function ensureTestTools(tools: Tool[], opts?: { log?: (msg: string) => void }): string[]
