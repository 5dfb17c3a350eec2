// Delivery credentials once opened from the vault (the spec's "Delivery credentials" table). Only src/delivery reads
// them; src/credentials validates and stores them.

/** The two push providers a credential is for, and a device is delivered through: FCM (Android, web push, iOS apps
 *  that use FCM) and APNs. The one definition, used by credentials, delivery and the CLI alike. */
export type Platform = 'fcm' | 'apns'

/** A Google service-account JSON (the fields the FCM HTTP v1 flow uses; others are kept as they came). */
export interface FcmCredential {
  project_id: string
  client_email: string
  private_key: string
  /** OAuth token endpoint; Google's clients use the one inside the file (docs/spec/contract.md). */
  token_uri: string
  [k: string]: unknown
}

export interface ApnsCredential {
  /** The .p8 file contents (PKCS#8 PEM of a P-256 key). */
  p8: string
  keyId: string
  teamId: string
  bundleId: string
  env: 'sandbox' | 'production'
}
