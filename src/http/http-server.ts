// The node:http server of the API with its limits: how long a client may take to send its headers
// and its whole request, how many connections it may hold, and problem+json for parser errors and
// unknown expectations.
import { createServer, type Server } from 'node:http';
import type { Config } from '../kernel/config.ts';
import type { Logger } from '../kernel/logger.ts';
import { answerClientError } from './client-errors.ts';
import { answerUnknownExpectation } from './expectation.ts';

export type HttpLimits = Pick<
  Config['http'],
  'requestTimeoutMs' | 'headersTimeoutMs' | 'keepAliveTimeoutMs' | 'maxConnections'
>;

export function createHttpServer(limits: HttpLimits, logger: Logger): Server {
  const server = createServer({
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // Node looks for requests past those timeouts only this often (30 s by default, so a slow client
    // lasted up to timeout + 30 s): a quarter of the headers timeout, at most 1 s, costs nothing.
    connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(limits.headersTimeoutMs / 4))),
    // A missing Host is refused as problem+json with the other Host refusals (host-header.ts), not
    // with Node's bare 400.
    requireHostHeader: false,
  });
  // Beyond it, Node closes new connections at once instead of letting them queue for memory.
  server.maxConnections = limits.maxConnections;
  server.on('clientError', answerClientError(logger));
  server.on('checkExpectation', answerUnknownExpectation(logger));
  return server;
}
