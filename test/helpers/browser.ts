// Debian's Chromium driven by playwright-core, for every browser test. A missing browser fails the test loudly
// (`npm test` installs the package: scripts/test-tools.mjs): a browser test that skips proves nothing.
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type BrowserContext, chromium } from 'playwright-core'

/** The Debian package's binary (the /usr/bin/chromium wrapper is slower to start); PM_CHROMIUM overrides. */
export function chromiumPath(): string {
  const candidates = [process.env.PM_CHROMIUM, '/usr/lib/chromium/chromium', '/usr/bin/chromium'].filter(Boolean) as string[]
  const found = candidates.find((p) => existsSync(p))
  if (!found)
    throw new Error(`Chromium not found (${candidates.join(', ')}): install Debian's chromium package (apt-get install chromium)`)
  return found
}

/** Without the background-networking flags Chromium keeps dialling Google's hosts, which this machine refuses. */
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

/** A fresh profile in a temporary folder; close() also removes the folder. */
export async function launchChromium(): Promise<{ ctx: BrowserContext; close: () => Promise<void> }> {
  const userData = mkdtempSync(join(tmpdir(), 'pombo-chromium-'))
  const ctx = await chromium.launchPersistentContext(userData, {
    executablePath: chromiumPath(),
    headless: true,
    args: CHROMIUM_FLAGS,
  })
  return {
    ctx,
    close: async () => {
      await ctx.close()
      rmSync(userData, { recursive: true, force: true })
    },
  }
}
