// Structured JSON logs (pino). Secrets are redacted by path as a second line of defence; the first
// is never passing them to a logger at all.
import { pino, type Logger } from 'pino';

export type { Logger };

export const REDACT_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  '*.authorization',
  '*.secret',
  '*.key',
  '*.signature',
  '*.password',
];

export function createLogger(options: {
  level: string;
  pretty?: boolean;
  destination?: NodeJS.WritableStream;
}): Logger {
  const base = {
    level: options.level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: { service: 'lods' },
  };
  if (options.pretty) {
    return pino({
      ...base,
      transport: {
        target: 'pino-pretty',
        options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service' },
      },
    });
  }
  return options.destination ? pino(base, options.destination as pino.DestinationStream) : pino(base);
}
