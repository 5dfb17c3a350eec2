// Types of scripts/redact-url.mjs for the unit test that imports it.
export function redactUrl(s: string): string
