// What `npm start` prints on a terminal once the API listens: where it is, how to get a key, and
// how to reach the database. Production gets log lines only (stdout carries JSON logs there).
import type { Config } from '../kernel/config.ts';
import { embeddedUrlFile } from './database.ts';
import type { Logger } from '../kernel/logger.ts';
import type { Api } from './service.ts';
import { hostPort } from '../http/listen.ts';

const ALL_INTERFACES = ['0.0.0.0', '::'];

export function announce(options: { api: Api; config: Config; demoKey: string | null; logger: Logger }): void {
  const { api, config, demoKey, logger } = options;
  const { address, port } = api.bound;
  logger.info({ address, port, url: api.url }, 'listening');
  const everywhere = ALL_INTERFACES.includes(address);
  if (everywhere)
    logger.warn(
      { address, port },
      'listening on every network interface: /healthz, /readyz, /metrics and /problems need no key; put a proxy in front or set HOST=127.0.0.1',
    );
  if (config.production) return;
  const lines = [
    `Learning Opportunities Data Service is running at ${api.url}`,
    `Listening on ${hostPort(address, port)}${everywhere ? ' (every network interface: reachable from other machines)' : ''}`,
  ];
  if (demoKey) {
    lines.push(
      `Demo API key (all scopes; kept in ${config.dataDir}/demo-key): ${demoKey}`,
      '',
      `  curl -H "Authorization: Bearer ${demoKey}" "${api.url}/v1/learning-opportunities?limit=2"`,
    );
  } else {
    lines.push(
      'No demo key on this database. Create a key with the CLI, on the same database:',
      '',
      `  ${config.databaseUrl ? 'DATABASE_URL=<the same URL> ' : ''}npm run cli -- keys create --name me --scope catalog:read`,
    );
  }
  if (!config.databaseUrl) {
    lines.push(
      '',
      `Embedded PostgreSQL; its URL is in ${embeddedUrlFile(config.dataDir)} while the service runs:`,
      '',
      `  psql "$(cat ${embeddedUrlFile(config.dataDir)})"`,
    );
  }
  process.stdout.write(`\n${lines.join('\n')}\n\n`);
}
