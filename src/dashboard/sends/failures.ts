// Why deliveries failed, in the groups a person acts on: dead tokens (nothing to do, they leave every audience), the
// credential (fix it in Credenciais), an environment mismatch (sandbox × production APNs key), the provider's own
// errors (attempts exhausted), a message the provider refused, and deliveries past their TTL. Read from
// deliveries.reason (`<category>:<provider's words>`, written by src/delivery/actor.ts); a row from before that
// column has only its status.

export const FAILURE_CATEGORIES = [
  'dead_token',
  'credential',
  'environment',
  'provider_error',
  'rejected',
  'expired',
  'unknown_failed',
  'unknown_errored',
] as const
export type FailureCategory = (typeof FAILURE_CATEGORIES)[number]

export const FAILURE_LABELS: Record<FailureCategory, string> = {
  dead_token: 'token morto (o aparelho desinstalou o app ou trocou de token)',
  credential: 'credencial ausente ou recusada',
  environment: 'ambiente do APNs (BadDeviceToken: token de sandbox × chave de production, ou token morto)',
  provider_error: 'erros do provedor (tentativas esgotadas)',
  rejected: 'mensagem recusada pelo provedor',
  expired: 'validade (TTL) esgotada antes da entrega',
  unknown_failed: 'recusado (motivo não registrado)',
  unknown_errored: 'erro (motivo não registrado)',
}

/** deliveries.status 2 (failed) or 3 (errored) and its reason → the group it is counted in. */
export function failureCategory(status: number, reason: string | null): FailureCategory {
  const kind = reason ? reason.split(':', 1)[0] : ''
  switch (kind) {
    case 'dead_token':
    case 'invalid_token':
      return 'dead_token'
    case 'credential':
    case 'no_credential':
    case 'credencial_ausente':
    case 'credencial_recusada':
      return 'credential'
    case 'bad_device_token':
      return 'environment'
    case 'provider_error':
    case 'local_error':
      return 'provider_error'
    case 'rejected':
      return 'rejected'
    case 'expired':
      return 'expired'
    default:
      return status === 2 ? 'unknown_failed' : 'unknown_errored'
  }
}
