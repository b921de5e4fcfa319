// A signal that aborts when the client goes away before its response is complete (the connection
// closed, or the request was aborted): what an expensive read listens to, to stop its statement
// in PostgreSQL instead of computing an answer nobody will read (db/deadline-reads.ts).
// The response's own 'close' says it for the request being answered; a pipelined request queued
// behind it on the same connection has a response not attached to the socket yet, which Node never
// closes when the socket dies: found from outside, six pipelined searches whose client left ran on
// for up to 4.8 s, two at a time. So the socket's 'close' is listened to as well, once per socket
// (a registry, not a listener per request: a hundred pipelined requests would pass Node's listener
// limit).
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { ClientGone } from '../kernel/errors.ts';

const onSocketClose = new WeakMap<Socket, Set<() => void>>();

/** Calls `gone` when `socket` closes (at once when it has); returns what stops listening. */
function whenSocketCloses(socket: Socket, gone: () => void): () => void {
  if (socket.destroyed) {
    gone();
    return () => {};
  }
  let listeners = onSocketClose.get(socket);
  if (!listeners) {
    const registered = new Set<() => void>();
    onSocketClose.set(socket, registered);
    socket.once('close', () => {
      onSocketClose.delete(socket);
      for (const listener of registered) listener();
    });
    listeners = registered;
  }
  const all = listeners;
  all.add(gone);
  return () => all.delete(gone);
}

export function closedSignal(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  const gone = () => {
    if (!res.writableFinished) controller.abort(new ClientGone());
  };
  const socket = res.req?.socket;
  const stop = socket ? whenSocketCloses(socket, gone) : () => {};
  res.once('close', () => {
    stop();
    gone();
  });
  return controller.signal;
}
