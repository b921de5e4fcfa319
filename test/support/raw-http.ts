// Raw TCP conversations with the API, for what fetch cannot send: malformed or oversized requests,
// headers dribbled byte by byte, idle connections.
import { connect, type Socket } from 'node:net';

export type RawAnswer = {
  text: string;
  status: number | null;
  headers: Record<string, string>;
  body: string;
  closedAfterMs: number;
};

/** Opens a connection to the API at `url` (resolves once connected). */
export async function openSocket(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port) });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  return socket;
}

/** Everything the server sends until it closes the connection, parsed as one HTTP/1.1 response. */
export function readUntilClosed(socket: Socket): Promise<RawAnswer> {
  const started = performance.now();
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => {}); // a reset after the answer still ends the conversation
  return new Promise((resolve) => {
    socket.once('close', () =>
      resolve(parseAnswer(Buffer.concat(chunks).toString('utf8'), performance.now() - started)),
    );
  });
}

function parseAnswer(text: string, closedAfterMs: number): RawAnswer {
  const end = text.indexOf('\r\n\r\n');
  const head = end < 0 ? text : text.slice(0, end);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const status = /^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1];
  const headers = Object.fromEntries(
    lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
  );
  return {
    text,
    status: status ? Number(status) : null,
    headers,
    body: end < 0 ? '' : text.slice(end + 4),
    closedAfterMs,
  };
}
