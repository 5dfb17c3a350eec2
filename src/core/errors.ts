// Every error the API can answer, defined once: status, the Portuguese texts of the spec's envelope, extra explain fields.
// Keys are stable codes for logs and tests; callers branch on status and explain fields, never on text (the spec, Errors).

export interface ErrorTexts {
  erro: string
  causa: string
  como_corrigir: string
  /** Extra fields merged into `explain` (the spec, Errors "Special explain fields"). */
  extra?: Record<string, unknown>
}

interface ErrorDef<P> {
  readonly status: number
  readonly texts: (p: P) => ErrorTexts
  /** Headers every answer of this error carries (e.g. Retry-After). */
  readonly headers?: Readonly<Record<string, string>>
}

function def<P = void>(status: number, texts: (p: P) => ErrorTexts, headers?: Record<string, string>): ErrorDef<P> {
  return { status, texts, headers }
}

/** A field that failed validation: `campo` is the wire name (dotted for nested), `motivo` says why. */
export interface FieldProblem {
  campo: string
  motivo: string
}

export const E = {
  // ---- request shape (any route) ----
  INVALID_JSON: def(400, () => ({
    erro: 'JSON inválido.',
    causa: 'O corpo da requisição não é um JSON válido.',
    como_corrigir: 'Envie um objeto JSON bem formado com Content-Type: application/json.',
  })),
  BODY_NOT_OBJECT: def(400, () => ({
    erro: 'O corpo deve ser um objeto JSON.',
    causa: 'O JSON recebido não é um objeto.',
    como_corrigir: 'Envie um objeto JSON ({...}).',
  })),
  INVALID_FIELD: def(400, (p: FieldProblem) => ({
    erro: `Campo inválido: ${p.campo}: ${p.motivo}`,
    causa: `O campo ${p.campo} ${p.motivo}.`,
    como_corrigir: `Corrija o campo ${p.campo} conforme a especificação.`,
    extra: { campo: p.campo },
  })),
  BODY_TOO_LARGE: def(413, (p: { limite: number }) => ({
    erro: `Corpo da requisição acima de ${p.limite} bytes.`,
    causa: `O corpo excede o limite de ${p.limite} bytes desta rota.`,
    como_corrigir: 'Reduza o corpo da requisição.',
    extra: { limite: p.limite },
  })),
  ROUTE_NOT_FOUND: def(404, (p: { method: string; path: string }) => ({
    erro: 'Rota não encontrada.',
    causa: `Não existe rota ${p.method} ${p.path}.`,
    como_corrigir: 'Confira o método e o caminho na especificação (prefixo /api/v1).',
  })),
  IP_RATE_LIMITED: def(
    429,
    (p: { limite: number }) => ({
      erro: `Limite de ${p.limite} requisições por minuto por IP excedido.`,
      causa: 'Este endereço de origem fez requisições demais no último minuto.',
      como_corrigir: 'Aguarde 60 segundos antes de tentar de novo.',
      extra: { limite: p.limite },
    }),
    { 'Retry-After': '60' },
  ),
  INTERNAL: def(500, () => ({
    erro: 'Erro interno.',
    causa: 'Uma falha inesperada impediu o atendimento; nada foi confirmado.',
    como_corrigir: 'Tente de novo; se persistir, informe o request_id ao suporte.',
  })),
  DEPENDENCY_UNAVAILABLE: def(503, (p: { dependencia: 'postgres' | 'redis' | 'armazenamento' }) => ({
    erro: `Dependência indisponível: ${p.dependencia}.`,
    causa: `O serviço não conseguiu falar com ${p.dependencia}; nada foi gravado.`,
    como_corrigir: 'Tente de novo em instantes (com a mesma Idempotency-Key, se houver).',
    extra: { dependencia: p.dependencia },
  })),

  // ---- platform key (operator routes) ----
  PLATFORM_KEY_UNSET: def(503, () => ({
    erro: 'Chave da plataforma não configurada.',
    causa: 'Esta instância não tem PM_PLATFORM_KEY definida.',
    como_corrigir: 'Defina PM_PLATFORM_KEY no ambiente do serviço e reinicie.',
    extra: { dependencia: 'PM_PLATFORM_KEY' },
  })),
  PLATFORM_AUTH_FAILED: def(401, () => ({
    erro: 'Credencial da plataforma ausente ou inválida.',
    causa: 'Esta rota exige Authorization: Bearer <chave da plataforma>.',
    como_corrigir: 'Envie a chave da plataforma no cabeçalho Authorization.',
  })),
  VAULT_UNSET: def(503, () => ({
    erro: 'Cofre de segredos não configurado.',
    causa: 'Esta instância não tem PM_VAULT_KEY definida; segredos não podem ser cifrados.',
    como_corrigir: 'Defina PM_VAULT_KEY (64 caracteres hexadecimais) e reinicie.',
    extra: { dependencia: 'PM_VAULT_KEY' },
  })),

  // ---- app key (server routes) ----
  AUTH_MISSING: def(401, () => ({
    erro: 'Chave de API ausente.',
    causa: 'O cabeçalho Authorization não foi enviado.',
    como_corrigir: 'Envie Authorization: Basic <API_KEY> (ou Bearer <API_KEY>).',
  })),
  AUTH_MALFORMED: def(401, () => ({
    erro: 'Chave de API em formato desconhecido.',
    causa: 'O cabeçalho Authorization não traz uma chave pm_live_<kid>_<segredo> ou pm_test_<kid>_<segredo>.',
    como_corrigir: 'Use Basic <API_KEY>, Bearer <API_KEY> ou Basic base64("qualquer:<API_KEY>").',
  })),
  AUTH_REJECTED: def(401, () => ({
    erro: 'Chave de API desconhecida, revogada ou expirada.',
    causa: 'A chave apresentada não autoriza nenhum app.',
    como_corrigir: 'Confira a chave; se foi perdida ou expirou, gere outra com rotate_key.',
  })),
  AUTH_FOREIGN_APP: def(401, () => ({
    erro: 'Chave de API não pertence a este app_id.',
    causa: 'O app_id informado não é o app da chave apresentada.',
    como_corrigir: 'Use a chave do app indicado em app_id.',
  })),
  APP_ID_REQUIRED: def(400, (p: { where: 'query' | 'corpo' }) => ({
    erro: `app_id ausente ou inválido no ${p.where === 'query' ? 'parâmetro de consulta' : 'corpo'}.`,
    causa: 'Toda rota com chave de API exige o app_id (UUID) do app.',
    como_corrigir: p.where === 'query' ? 'Acrescente ?app_id=<uuid> ao endereço.' : 'Inclua "app_id": "<uuid>" no corpo.',
    extra: { campo: 'app_id' },
  })),

  // ---- apps ----
  APP_PAUSED: def(403, () => ({
    erro: 'App pausado.',
    causa: 'O app está pausado e não atende a esta rota.',
    como_corrigir: 'Peça ao operador que retome o app (pombo app resume).',
  })),
  APP_NOT_FOUND: def(404, () => ({
    erro: 'App não encontrado.',
    causa: 'Não existe app com este id.',
    como_corrigir: 'Confira o id do app.',
  })),
  APP_ID_UNKNOWN: def(400, () => ({
    erro: 'app_id desconhecido.',
    causa: 'Não existe app com este app_id.',
    como_corrigir: 'Confira o app_id configurado no SDK.',
    extra: { campo: 'app_id' },
  })),
  KEY_WRITE_FAILED: def(500, () => ({
    erro: 'Falha ao gravar a nova chave.',
    causa: 'A nova chave não pôde ser gravada; a chave anterior continua valendo.',
    como_corrigir: 'Tente a rotação de novo.',
  })),

  // ---- devices ----
  PLAYER_NOT_FOUND: def(404, () => ({
    erro: 'Dispositivo não encontrado.',
    causa: 'Não existe dispositivo com este player_id neste app.',
    como_corrigir: 'Confira o player_id e o app_id; o dispositivo se registra de novo no próximo uso do app.',
  })),
  EXTERNAL_USER_DEVICE_LIMIT: def(400, (p: { limite: number }) => ({
    erro: `external_user_id já tem ${p.limite} dispositivos (limite de ${p.limite} por valor).`,
    causa: `Cada external_user_id pode estar ligado a no máximo ${p.limite} dispositivos válidos neste app.`,
    como_corrigir: 'Desvincule um dispositivo (PUT com external_user_id: null) ou use outro external_user_id.',
    extra: { campo: 'external_user_id', limite: p.limite },
  })),
  REGISTRATIONS_RATE_LIMITED: def(429, (p: { limite: number }) => ({
    erro: `Limite de ${p.limite} registros de dispositivo por hora para este app excedido.`,
    causa: 'O app registrou dispositivos demais na última hora (contagem somada de todas as instâncias).',
    como_corrigir: 'Aguarde a próxima hora; registros repetidos do mesmo token também contam.',
    extra: { limite: p.limite },
  })),
  EXPORT_RATE_LIMITED: def(429, (p: { limite: number }) => ({
    erro: `Limite de ${p.limite} exportação por segundo para este app excedido.`,
    causa: 'Uma exportação deste app acabou de ser pedida.',
    como_corrigir: 'Reutilize o csv_file_url da exportação anterior, ou aguarde um segundo.',
    extra: { limite: p.limite },
  })),
  EXPORT_STORAGE_UNSET: def(503, () => ({
    erro: 'Armazenamento de exportações não configurado.',
    causa: 'Esta instância não tem PM_EXPORT_DIR definido.',
    como_corrigir: 'Defina PM_EXPORT_DIR com um diretório gravável e reinicie.',
    extra: { dependencia: 'PM_EXPORT_DIR' },
  })),
  EXPORT_NOT_FOUND: def(404, () => ({
    erro: 'Arquivo de exportação indisponível.',
    causa: 'O arquivo ainda está sendo gerado, expirou (validade de 72 horas) ou o endereço não existe.',
    como_corrigir: 'Aguarde pm_pronto_em_s_estimado segundos e tente de novo; se expirou, peça uma nova exportação.',
  })),

  // ---- confirmations ----
  WEBHOOK_URL_NOT_HTTPS: def(400, () => ({
    erro: 'url inválida: o destino do webhook deve ser uma URL https.',
    causa: 'O campo url não é uma URL absoluta https (até 2048 caracteres).',
    como_corrigir: 'Informe o endereço completo do seu endpoint, começando por https://.',
    extra: { campo: 'url' },
  })),
  CONFIRM_MODE_UNKNOWN: def(400, (p: { valid: readonly string[] }) => ({
    erro: 'modo desconhecido.',
    causa: `O campo modo deve ser um de: ${p.valid.join(', ')}.`,
    como_corrigir: 'Envie modo consulta, webhook ou grpc.',
    extra: { campo: 'modo', modos_validos: p.valid },
  })),
  WEBHOOK_DESTINATION_MISSING: def(400, () => ({
    erro: 'modo webhook sem destino registrado.',
    causa: 'O app não tem um destino de webhook e a chamada não trouxe url.',
    como_corrigir: 'Envie url (https) na mesma chamada, ou registre o destino antes de ativar o modo webhook.',
    extra: { campo: 'modo' },
  })),

  // ---- sends ----
  REFUSED_FIELD: def(400, (p: { campo: string; use?: string }) => ({
    erro: p.use ? `Campo recusado: ${p.campo} (use ${p.use}).` : `Campo recusado: ${p.campo}.`,
    causa: `O campo ${p.campo} não é suportado por este serviço; nunca é aceito e ignorado.`,
    como_corrigir: p.use ? `Troque ${p.campo} por ${p.use}.` : `Remova ${p.campo} do corpo.`,
    extra: p.use ? { campo: p.campo, use: p.use } : { campo: p.campo },
  })),
  UNKNOWN_SEGMENT: def(400, (p: { segment: string; valid: readonly string[] }) => ({
    erro: `Segmento desconhecido: ${p.segment}. Segmentos válidos: ${p.valid.join(', ')}.`,
    causa: `included_segments traz "${p.segment}", que não é um segmento deste serviço.`,
    como_corrigir: `Use apenas: ${p.valid.join(', ')}.`,
    extra: { campo: 'included_segments', segmento: p.segment, segmentos_validos: [...p.valid] },
  })),
  RESERVED_DATA_KEY: def(422, (p: { chave: string }) => ({
    erro: `Chave reservada em data: ${p.chave}.`,
    causa: `A chave ${p.chave} é reservada (prefixos pm_, pmx_, gcm., google., aps.; from, message_type, aps).`,
    como_corrigir: `Renomeie a chave ${p.chave} dentro de data.`,
    extra: { campo: `data.${p.chave}`, chave: p.chave },
  })),
  INVALID_MEDIA_URL: def(422, (p: { campo: string }) => ({
    erro: `URL de mídia inválida: ${p.campo}.`,
    causa: `O campo ${p.campo} deve ser uma URL absoluta http(s).`,
    como_corrigir: `Envie em ${p.campo} uma URL completa, como https://exemplo.com/imagem.png.`,
    extra: { campo: p.campo },
  })),
  ATTACHMENT_NOT_HTTPS: def(422, (p: { campo: string }) => ({
    erro: `Anexo iOS sem https: ${p.campo}.`,
    causa: `Os anexos de ios_attachments exigem URL absoluta https; ${p.campo} não é.`,
    como_corrigir: `Sirva o anexo ${p.campo} por https.`,
    extra: { campo: p.campo },
  })),
  INVALID_ACCENT_COLOR: def(422, () => ({
    erro: 'android_accent_color inválido: use exatamente #RRGGBB.',
    causa: 'A cor de destaque deve ter o formato #RRGGBB (seis dígitos hexadecimais).',
    como_corrigir: 'Envie a cor como #RRGGBB, por exemplo #FF6600.',
    extra: { campo: 'android_accent_color' },
  })),
  SEND_AFTER_TOO_FAR: def(422, (p: { limite_dias: number }) => ({
    erro: `send_after além de ${p.limite_dias} dias no futuro.`,
    causa: `Envios podem ser agendados para no máximo ${p.limite_dias} dias à frente.`,
    como_corrigir: `Use um send_after dentro dos próximos ${p.limite_dias} dias.`,
    extra: { campo: 'send_after', limite_dias: p.limite_dias },
  })),
  PAYLOAD_TOO_LARGE: def(422, (p: { bytes: number; limite: number; bytes_injetados_pelo_servidor: number }) => ({
    erro: `Payload final de ${p.bytes} bytes; máximo ${p.limite} bytes.`,
    causa: `A mensagem renderizada (todos os idiomas, data, URLs, mídia e opções) mais ${p.bytes_injetados_pelo_servidor} bytes injetados pelo servidor excede ${p.limite} bytes.`,
    como_corrigir: 'Encurte contents, headings, subtitle ou data, ou envie menos idiomas.',
    extra: { bytes: p.bytes, limite: p.limite, bytes_injetados_pelo_servidor: p.bytes_injetados_pelo_servidor },
  })),
  IDEMPOTENCY_BODY_MISMATCH: def(422, (p: { hash_original: string; hash_recebido: string }) => ({
    erro: 'Chave de idempotência reutilizada com outro corpo.',
    causa: 'Esta chave já foi usada com um corpo diferente (comparado na forma canônica).',
    como_corrigir: 'Use uma chave nova para um envio novo, ou reenvie exatamente o corpo original.',
    extra: { hash_original: p.hash_original, hash_recebido: p.hash_recebido },
  })),
  IDEMPOTENCY_IN_FLIGHT: def(409, () => ({
    erro: 'Envio com esta chave de idempotência ainda em processamento.',
    causa: 'Uma requisição com a mesma chave não terminou dentro da espera de 3 segundos.',
    como_corrigir: 'Tente de novo com a mesma chave em instantes para receber a resposta original.',
  })),
  SEND_RATE_LIMITED: def(429, (p: { limite: number }) => ({
    erro: `Limite de ${p.limite} envios por segundo para este app excedido.`,
    causa: 'O app criou envios demais no último segundo (contagem somada de todas as instâncias).',
    como_corrigir: 'Aguarde um segundo e tente de novo.',
    extra: { limite: p.limite },
  })),
  MAU_EXCEEDED: def(
    422,
    (p: { mau_gratis: number; mau: number; medido_ha_s: number; mes_medido: string; preco_plano_pro: string }) => ({
      erro: `Plano gratuito acima de ${p.mau_gratis} usuários ativos mensais (${p.mau} em ${p.mes_medido}); envio recusado.`,
      causa: 'A organização passou da franquia de usuários ativos mensais do plano gratuito; o envio inteiro foi recusado.',
      como_corrigir: `Mude para o plano pro (${p.preco_plano_pro}); repetir o envio não resolve.`,
      extra: {
        mau_gratis: p.mau_gratis,
        mau: p.mau,
        medido_ha_s: p.medido_ha_s,
        mes_medido: p.mes_medido,
        preco_plano_pro: p.preco_plano_pro,
      },
    }),
  ),
  SEND_NOT_FOUND: def(404, () => ({
    erro: 'Envio não encontrado.',
    causa: 'Não existe envio com este id neste app.',
    como_corrigir: 'Confira o id do envio e o app_id.',
  })),
  SENDS_READ_FORBIDDEN_MODE: def(403, (p: { modo: string }) => ({
    erro: `Leitura de envios indisponível no modo ${p.modo}.`,
    causa: `Com o modo de confirmação ${p.modo}, as rotas de leitura de envios não respondem.`,
    como_corrigir: 'Receba as confirmações pelo canal configurado, ou volte ao modo consulta (PUT /api/v1/confirmacoes).',
    extra: { modo: p.modo },
  })),
  READS_RATE_LIMITED: def(429, (p: { limite: number }) => ({
    erro: `Limite de ${p.limite} leituras de envios por segundo para este app excedido.`,
    causa: 'O app leu envios demais no último segundo.',
    como_corrigir: 'Aguarde um segundo; leituras repetidas do mesmo envio dentro de um segundo vêm do cache.',
    extra: { limite: p.limite },
  })),

  // ---- receipts ----
  // the spec, Authentication 4: one wording for a wrong proof, an unknown send and a send past the 90-day window.
  RECEIPT_PROOF_INVALID: def(403, () => ({
    erro: 'Prova de recebimento inválida.',
    causa: 'O rcpt não comprova a entrega desta notificação a este dispositivo.',
    como_corrigir: 'Envie o pm_rcpt recebido no push, exatamente como chegou, com o pm_msg_id e o player_id do dispositivo.',
  })),

  // ---- in-app ----
  INAPP_CAMPAIGN_INVALID: def(422, (p: { problemas: readonly FieldProblem[] }) => ({
    erro: p.problemas.some((x) => x.motivo.includes('preso'))
      ? 'Campanha inválida: o usuário ficaria preso sem o botão de fechar.'
      : `Campanha inválida: ${p.problemas.length} campo(s) com problema.`,
    causa: p.problemas.map((x) => `${x.campo}: ${x.motivo}`).join('; '),
    como_corrigir: 'Corrija cada campo listado em problemas e envie de novo; nada foi gravado.',
    extra: { problemas: p.problemas },
  })),
  INAPP_CAP_HOURS_INVALID: def(422, () => ({
    erro: 'inapp_cap_horas inválido: use um inteiro de 0 a 168.',
    causa: 'inapp_cap_horas (horas mínimas entre duas mensagens in-app num dispositivo) deve ser um inteiro de 0 a 168.',
    como_corrigir: 'Envie inapp_cap_horas entre 0 e 168.',
    extra: { campo: 'inapp_cap_horas' },
  })),
  INAPP_CAMPAIGN_NOT_FOUND: def(404, () => ({
    erro: 'Campanha in-app não encontrada.',
    causa: 'Não existe campanha com este id neste app.',
    como_corrigir: 'Confira o id da campanha e o app_id.',
  })),
  INAPP_TRANSITION_INVALID: def(409, (p: { operation: string; state: string; origins: readonly string[] }) => ({
    erro: `Operação ${p.operation} não permitida no estado ${p.state}.`,
    causa: `A campanha está em ${p.state}; ${p.operation} só é aceita a partir de: ${p.origins.join(', ')}.`,
    como_corrigir: `Leve a campanha a um dos estados ${p.origins.join(', ')} antes de ${p.operation}.`,
    extra: { estado_atual: p.state, origens_aceitas: p.origins },
  })),
  INAPP_CAMPAIGN_ENDED: def(409, () => ({
    erro: 'Campanha encerrada não pode ser editada.',
    causa: 'A campanha está em encerrada, um estado terminal.',
    como_corrigir: 'Use duplicar para criar um rascunho novo a partir dela.',
    extra: { estado_atual: 'encerrada' },
  })),
  INAPP_DELETE_UNCONFIRMED: def(409, () => ({
    erro: 'Campanha ativa: exclusão exige confirmar=true.',
    causa: 'Excluir uma campanha ativa apaga o funil e o histórico dela; é preciso confirmar.',
    como_corrigir: 'Repita com ?confirmar=true, ou pause/encerre a campanha antes.',
    extra: { estado_atual: 'ativa' },
  })),
  INAPP_CHANNEL_OFF: def(403, () => ({
    erro: 'Canal In-App desligado.',
    causa: 'O app está com inapp_ativo false; nenhuma campanha é servida.',
    como_corrigir: 'Ligue o canal com PUT /api/v1/in_app_messages/config {inapp_ativo: true}.',
  })),
  INAPP_PROOF_INVALID: def(403, () => ({
    erro: 'Prova in-app inválida em todos os itens.',
    causa: 'Nenhuma prova do lote corresponde a um pacote recente deste dispositivo.',
    como_corrigir: 'Envie cada prova exatamente como veio no pacote de /api/v1/inapp/pending, com o player_id que o recebeu.',
  })),
  INAPP_EVENT_TIME_OUTSIDE: def(422, (p: { campo: string }) => ({
    erro: `Horário fora da janela aceita: ${p.campo}.`,
    causa: `${p.campo} deve estar entre 7 dias no passado e 5 minutos no futuro.`,
    como_corrigir: 'Descarte eventos com mais de 7 dias e confira o relógio do dispositivo.',
    extra: { campo: p.campo },
  })),
  // ---- organisations and the dashboard ----
  ORG_NOT_FOUND: def(404, () => ({
    erro: 'Organização não encontrada.',
    causa: 'Não existe organização com este id.',
    como_corrigir: 'Confira o id (pombo org create imprime o id de uma organização nova).',
  })),
  EMAIL_TAKEN: def(409, () => ({
    erro: 'E-mail já cadastrado.',
    causa: 'Já existe uma pessoa com este e-mail no painel.',
    como_corrigir: 'Use outro e-mail, ou entre com a conta existente.',
  })),
} as const

export type ErrorKey = keyof typeof E
type ParamsOf<K extends ErrorKey> = (typeof E)[K] extends ErrorDef<infer P> ? P : never

/** Thrown anywhere below a route; rendered by http/reply.ts alone. */
export class ApiError<K extends ErrorKey = ErrorKey> extends Error {
  readonly key: K
  readonly params: ParamsOf<K>
  constructor(key: K, ...params: ParamsOf<K> extends void ? [] : [ParamsOf<K>]) {
    super(key)
    this.key = key
    this.params = params[0] as ParamsOf<K>
  }
  get status(): number {
    return E[this.key].status
  }
  texts(): ErrorTexts {
    return (E[this.key].texts as (p: unknown) => ErrorTexts)(this.params)
  }
  headers(): Readonly<Record<string, string>> | undefined {
    return (E[this.key] as ErrorDef<unknown>).headers
  }
}

/** Shorthand for the commonest refusal: a named field that breaks a rule. */
export function fieldError(field: string, reason: string): ApiError<'INVALID_FIELD'> {
  return new ApiError('INVALID_FIELD', { campo: field, motivo: reason })
}
