// A Push for provider tests, made the way the engine makes it: a send body through the real validation and the one
// rendering (src/message/payload.ts), plus the ids the engine injects.
import type { Push, Target } from '../../src/providers/types'
import { renderMessage } from '../../src/message/payload'
import { parseSend } from '../../src/sends/validate'

export const APP_ID = '7b0a8f4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b'
export const SEND_ID = '0f8fad5b-d9cb-469f-a165-70867728950e'
export const PROOF = 'AbCdEfGhIjKlMnOpQrStUvWxYz012345'

/** `body` is the wire form of POST /api/v1/notifications (contents defaults to {en: 'oi'}). */
export function pushFor(body: Record<string, unknown> = {}, headers: Record<string, string> = {}): Push {
  const input = parseSend({ app_id: APP_ID, include_player_ids: ['p1'], contents: { en: 'oi' }, ...body }, headers)
  return { sendId: SEND_ID, message: renderMessage(input), proof: PROOF, ttlS: input.ttlS, lane: input.lane }
}

export const android = (token: string): Target => ({ deviceId: `dev-${token}`, token, deviceType: 1 })
export const web = (token: string, deviceType = 5): Target => ({ deviceId: `dev-${token}`, token, deviceType })
export const ios = (token: string): Target => ({ deviceId: `dev-${token}`, token, deviceType: 0 })
