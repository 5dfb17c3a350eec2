// The mark a device route puts on its success when the player_id it was given names no device of the app: the
// device was deleted in the dashboard (the spec, Device validity: "device re-registers itself on next app use").
// The answer itself stays the contract's (a receipt with a valid proof still counts, an in-app poll still gets an
// empty package, never 404); this header is how the SDK learns to register again at once. It discloses nothing new:
// PUT /api/v1/players/{id} already answers 404 for an id the app does not have.
export const UNKNOWN_DEVICE_HEADER = 'X-Pm-Dispositivo'

export const UNKNOWN_DEVICE_HEADERS: Readonly<Record<string, string>> = Object.freeze({ [UNKNOWN_DEVICE_HEADER]: 'desconhecido' })
