// Credential files as Google and Apple issue them: a service-account JSON (RSA 2048, PKCS#8),
// a google-services.json with one or more Android clients, and an APNs .p8 (EC P-256, PKCS#8).
import { generateKeyPairSync } from 'node:crypto'
import { accountKeyPairs } from '../fakes/account-keys'

/** One RSA key is enough: validation reads it, nothing signs with it here. The fixture's first (test/fakes/account-keys.ts). */
export function rsaPem(): string {
  return (accountKeyPairs()[0] as { privateKey: string }).privateKey
}

export function p8Pem(): string {
  return generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
}

export function serviceAccount(projectId = 'pombo-demo', over: Record<string, unknown> = {}): Record<string, unknown> {
  const email = `firebase-adminsdk-x1y2z@${projectId}.iam.gserviceaccount.com`
  return {
    type: 'service_account',
    project_id: projectId,
    private_key_id: '0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c',
    private_key: rsaPem(),
    client_email: email,
    client_id: '104729384756102938475',
    auth_uri: 'https://accounts.google.com/o/oauth2/auth',
    token_uri: 'https://oauth2.googleapis.com/token',
    auth_provider_x509_cert_url: 'https://www.googleapis.com/oauth2/v1/certs',
    client_x509_cert_url: `https://www.googleapis.com/robot/v1/metadata/x509/${encodeURIComponent(email)}`,
    universe_domain: 'googleapis.com',
    ...over,
  }
}

/** A google-services.json for `packages` (Android apps of one Firebase project), plus one iOS-only client. */
export function googleServices(projectId = 'pombo-demo', packages = ['com.example.loja']): Record<string, unknown> {
  return {
    project_info: {
      project_number: '123456789012',
      project_id: projectId,
      storage_bucket: `${projectId}.appspot.com`,
    },
    client: [
      ...packages.map((pkg, i) => ({
        client_info: {
          mobilesdk_app_id: `1:123456789012:android:${(i + 1).toString(16).padStart(22, 'a')}`,
          android_client_info: { package_name: pkg },
        },
        oauth_client: [],
        api_key: [{ current_key: `AIzaSyD-public-key-${i}` }],
        services: { appinvite_service: { other_platform_oauth_client: [] } },
      })),
      // Some files carry clients without an Android package (e.g. a web client); they are not candidates.
      {
        client_info: { mobilesdk_app_id: '1:123456789012:web:ffff' },
        api_key: [{ current_key: 'AIzaSyD-web' }],
      },
    ],
    configuration_version: '1',
  }
}
