// Types of scripts/check-layers.mjs for the unit test that imports it.
export const LAYERS: Array<[string, string[]]>
export function check(srcDir?: string): { breaches: string[]; graph: Map<string, Map<string, string>> }
