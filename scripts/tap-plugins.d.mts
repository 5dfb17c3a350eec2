// Types of scripts/tap-plugins.mjs for the unit test that imports it.
export function tapPlugins(): Promise<{ wanted: string; built: string }>
export function ensureTapPlugins(log: (msg: string) => void): Promise<void>
