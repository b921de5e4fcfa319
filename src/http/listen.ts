// Binding the API's port: the listen itself, a port in use said in one sentence naming it, the
// check main.ts makes before it starts anything else, and the URL a client on this machine uses.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Config, ConfigError } from '../kernel/config.ts';
import { OperatorError } from '../kernel/errors.ts';

type Where = Pick<Config, 'port' | 'host'>;

/** `host:port`, with an IPv6 host in brackets. */
export function hostPort(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** A port in use (a second `npm start`, most often) as a sentence instead of a stack. */
function listenError(error: NodeJS.ErrnoException, where: Where): Error {
  const at = hostPort(where.host, where.port);
  if (error.code === 'EADDRINUSE')
    return new OperatorError(`${at} is already in use (another \`npm start\`?): stop that process or set PORT`, {
      cause: error,
    });
  // A HOST that names no address of this machine is a setting to correct (exit 78), not a crash.
  if (['ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EADDRNOTAVAIL'].includes(error.code ?? ''))
    return new ConfigError([
      `HOST: ${JSON.stringify(where.host)} is not an address of this machine (${error.code}): give one of its addresses, or 0.0.0.0 for every interface`,
    ]);
  return error;
}

/** Listens on PORT and HOST; a port in use rejects with an OperatorError naming it, a HOST of no address here with a ConfigError. */
export async function listenOn(server: Server, where: Where): Promise<AddressInfo> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(listenError(error, where)));
    server.listen(where.port, where.host, () => resolve());
  });
  return server.address() as AddressInfo;
}

/**
 * Fails as listenOn would when PORT is taken, before the database, the queue or the worker start
 * (a second `npm start` must not start a worker only to exit). Binds the port and lets it go at
 * once; PORT=0 (any free port) cannot be taken.
 */
export async function checkPortFree(where: Where): Promise<void> {
  if (where.port === 0) return;
  const probe = createServer();
  await listenOn(probe, where);
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

/** Where a client on this machine reaches a server bound to `address` (loopback for every interface). */
export function reachableUrl({ address, port }: AddressInfo): string {
  const reachable = address === '0.0.0.0' ? '127.0.0.1' : address === '::' ? '::1' : address;
  return `http://${hostPort(reachable, port)}`;
}
