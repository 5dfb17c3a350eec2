// The SDK's version, reported as `sdk_versao` at registration and as `schema` when asking for in-app messages. The
// service serves a campaign only to an SDK whose MAJOR.MINOR is at least the campaign's capability level (0.5 for
// fixed fields, `ao_abrir` and blocks; 0.6 for `evento`, `sessao_duracao`, `inatividade` and scheduled starts), and
// this SDK implements all of them.
export const SDK_VERSION = '0.7.0'
