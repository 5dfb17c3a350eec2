// Delivery credentials once opened from the vault (the spec's "Delivery credentials" table). Only src/delivery reads
// them; src/credentials validates and stores them.

/** The two push providers a credential is for, and a device is delivered through: FCM (Android, web push, iOS apps
 *  that use FCM) and APNs. The one definition, used by credentials, delivery and the CLI alike. */
export type Platform = 'fcm' | 'apns'

/**
 * Where a simulator credential's deliveries go (written only by `pombo simulate`, never by an upload): the provider
 * simulator's https address on this machine and the certificate it is trusted by. Honoured only by an instance that
 * allows simulators (PM_ALLOW_SIMULATORS); anywhere else the credential is refused at use (src/providers/index.ts).
 */
export interface SimulatorTarget {
  url: string
  /** PEM of the simulators' CA: the simulator's TLS is checked against it alone. */
  ca: string
}

/** A Google service-account JSON (the fields the FCM HTTP v1 flow uses; others are kept as they came). */
export interface FcmCredential {
  project_id: string
  client_email: string
  private_key: string
  /** OAuth token endpoint; Google's clients use the one inside the file (docs/spec/contract.md). Only Google's, or
   *  one on the test provider's host, is ever called (src/providers/endpoints.ts). */
  token_uri: string
  /** Present only on the credentials `pombo simulate` stores. */
  simulator?: SimulatorTarget
  [k: string]: unknown
}

export interface ApnsCredential {
  /** The .p8 file contents (PKCS#8 PEM of a P-256 key). */
  p8: string
  keyId: string
  teamId: string
  bundleId: string
  env: 'sandbox' | 'production'
  /** Present only on the credentials `pombo simulate` stores. */
  simulator?: SimulatorTarget
}
