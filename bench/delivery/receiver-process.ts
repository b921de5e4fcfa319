// The benchmark's receiver, run as a child process (forked by run.ts) so that its clock readings are
// not delayed by the producers' and the worker's event loop. It records, per event id, the moment
// the whole body had arrived, answers 200 at once, and reports over IPC.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ReceiverCommand = { type: 'count' } | { type: 'collect' };
export type ReceiverReport =
  | { type: 'ready'; port: number }
  | { type: 'count'; received: number }
  | { type: 'collected'; arrivals: [string, number][]; duplicates: number };

const now = () => performance.timeOrigin + performance.now();
let arrivals = new Map<string, number>();
let duplicates = 0;

const server = createServer({ keepAlive: true, keepAliveTimeout: 60_000 }, (req, res) => {
  const id = String(req.headers['x-service-event-id'] ?? '');
  req.resume();
  req.on('end', () => {
    const at = now();
    if (arrivals.has(id)) duplicates++;
    else arrivals.set(id, at);
    res.writeHead(200, { 'content-length': 0 }).end();
  });
});
server.headersTimeout = 60_000;

server.listen(0, '127.0.0.1', () => {
  process.send!({ type: 'ready', port: (server.address() as AddressInfo).port } satisfies ReceiverReport);
});

process.on('message', (command: ReceiverCommand) => {
  if (command.type === 'count') process.send!({ type: 'count', received: arrivals.size } satisfies ReceiverReport);
  if (command.type === 'collect') {
    process.send!({ type: 'collected', arrivals: [...arrivals], duplicates } satisfies ReceiverReport);
    arrivals = new Map();
    duplicates = 0;
  }
});
process.on('disconnect', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
