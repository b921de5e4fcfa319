// A signal that aborts when the client goes away before its response is complete (the connection
// closed, or the request was aborted): what an expensive read listens to, to stop its statement
// in PostgreSQL instead of computing an answer nobody will read (db/deadline-reads.ts).
import type { ServerResponse } from 'node:http';
import { ClientGone } from '../kernel/errors.ts';

export function closedSignal(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort(new ClientGone());
  });
  return controller.signal;
}
