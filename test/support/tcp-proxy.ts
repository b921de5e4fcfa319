// A TCP proxy in front of PostgreSQL that a test can cut and restore, to see the service lose its
// database and recover without a restart (works the same for embedded and external servers), or
// freeze and thaw: bytes stop flowing both ways while every connection stays open, as with a server
// that stopped answering (or a network that drops packets without a reset).
import { createServer, connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export type TcpProxy = {
  port: number;
  cut: () => void;
  restore: () => void;
  freeze: () => void;
  thaw: () => void;
  close: () => Promise<void>;
};

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let open = true;
  let frozen = false;
  const sockets = new Set<Socket>();
  const pairs = new Set<[Socket, Socket]>();
  const flow = ([client, upstream]: [Socket, Socket]) => client.pipe(upstream).pipe(client);
  const stop = ([client, upstream]: [Socket, Socket]) => {
    client.unpipe(upstream);
    upstream.unpipe(client);
    client.pause();
    upstream.pause();
  };
  const server = createServer((client) => {
    if (!open) return void client.destroy();
    const upstream = connect(target.port, target.host);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    for (const s of pair) {
      sockets.add(s);
      s.on('close', () => {
        sockets.delete(s);
        pairs.delete(pair);
      });
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    if (frozen) stop(pair);
    else flow(pair);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    cut: () => {
      open = false;
      for (const s of sockets) s.destroy();
    },
    restore: () => {
      open = true;
    },
    // Each a no-op when already so: piping a flowing pair again would send its bytes twice.
    freeze: () => {
      if (frozen) return;
      frozen = true;
      for (const pair of pairs) stop(pair);
    },
    thaw: () => {
      if (!frozen) return;
      frozen = false;
      for (const pair of pairs) flow(pair);
    },
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
