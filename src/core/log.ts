// One pino root; children per request and per component. Secrets never reach a log line.
import pino, { type Logger } from 'pino'

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { svc: 'pombo' },
      redact: {
        paths: [
          'authorization',
          '*.authorization',
          'api_key',
          '*.api_key',
          'receipt_key',
          '*.receipt_key',
          'segredo',
          '*.segredo',
          'identifier',
          '*.identifier',
        ],
        censor: '[redigido]',
      },
    },
    destination,
  )
}
