// RFC 9110 section 10.1.1: an HTTP/1.1 request whose `Expect` holds anything but 100-continue may be
// refused with 417. Node does so itself ('checkExpectation' unheard) with a bare status line; here it is
// answered like any refusal before routing, after the Host check (a request without a valid Host is a
// 400 whatever else it carries). Node sends 100-continue in any letter case, or beside other members,
// to 'checkContinue' (expect-continue.ts) instead.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError } from '../kernel/errors.ts';
import type { Logger } from '../kernel/logger.ts';
import { answerBeforeRouting, hostRefusal } from './host-header.ts';

const reason = 'only 100-continue is understood';

/** The 'checkExpectation' listener: a 417 problem naming Expect, and the connection closes unread. */
export function answerUnknownExpectation(logger: Logger): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const refused =
      hostRefusal(req) ??
      new AppError('EXPECTATION_FAILED', `The Expect header asks for what this server does not do: ${reason}`, {
        invalidParams: [{ name: 'Expect', reason }],
        headers: { Connection: 'close' },
      });
    answerBeforeRouting(logger, req, res, refused);
  };
}
