// One error type with a stable code. http/problem.ts maps it to problem+json, graphql/errors.ts to
// GraphQL errors; anything that is not an AppError is internal and becomes a generic 500.

export type InvalidParam = { name: string; reason: string };

export const ERROR_CODES = {
  BAD_USER_INPUT: { status: 400, slug: 'invalid-parameters', title: 'Invalid parameters' },
  UNAUTHENTICATED: { status: 401, slug: 'unauthenticated', title: 'Missing or invalid API key' },
  FORBIDDEN: { status: 403, slug: 'forbidden', title: 'Insufficient scope' },
  NOT_FOUND: { status: 404, slug: 'not-found', title: 'Not found' },
  METHOD_NOT_ALLOWED: { status: 405, slug: 'method-not-allowed', title: 'Method not allowed' },
  REQUEST_TIMEOUT: { status: 408, slug: 'request-timeout', title: 'Request timeout' },
  INVALID_STATE_TRANSITION: { status: 409, slug: 'invalid-state-transition', title: 'Invalid state transition' },
  CURSOR_EXPIRED: { status: 410, slug: 'cursor-expired', title: 'Cursor expired' },
  PAYLOAD_TOO_LARGE: { status: 413, slug: 'payload-too-large', title: 'Request body too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, slug: 'unsupported-media-type', title: 'Unsupported media type' },
  EXPECTATION_FAILED: { status: 417, slug: 'expectation-failed', title: 'Expectation failed' },
  QUERY_TOO_COMPLEX: { status: 400, slug: 'query-too-complex', title: 'GraphQL query too complex' },
  REQUEST_HEADER_FIELDS_TOO_LARGE: {
    status: 431,
    slug: 'request-header-fields-too-large',
    title: 'Request header fields too large',
  },
  RATE_LIMITED: { status: 429, slug: 'rate-limited', title: 'Too many requests' },
  INTERNAL_SERVER_ERROR: { status: 500, slug: 'internal', title: 'Internal server error' },
  SERVICE_UNAVAILABLE: { status: 503, slug: 'service-unavailable', title: 'Service temporarily unavailable' },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly invalidParams: InvalidParam[] | undefined;
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    detail: string,
    options: { invalidParams?: InvalidParam[]; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(detail, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.invalidParams = options.invalidParams;
    this.headers = options.headers ?? {};
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }
}

/** What a read abandoned by its client rejects with (http/closed-signal.ts): there is no one left to answer. */
export class ClientGone extends Error {
  constructor() {
    super('the client went away');
    this.name = 'ClientGone';
  }
}

/** A failure at start the operator can act on: its message says why and what to do, so it has no stack. */
export class OperatorError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.stack = message; // what prints it (main.ts, mocha, the CLI) shows the sentence alone
  }
}

export const badInput = (invalidParams: InvalidParam[]): AppError =>
  new AppError('BAD_USER_INPUT', invalidParams.map((p) => `${p.name}: ${p.reason}`).join('; '), { invalidParams });

/**
 * Checks of several inputs that report every bad one at once: `check` runs one (a parse that throws
 * badInput) and gives its value; `done` then throws one badInput naming every input that failed, in
 * order. A failed check gives undefined in place of its value, which only code before `done` can see
 * (call `done` before using any). Any other error goes through at once.
 */
export function inputChecks(): { check: <T>(parse: () => T) => T; done: () => void } {
  const problems: InvalidParam[] = [];
  return {
    check(parse) {
      try {
        return parse();
      } catch (error) {
        if (!(error instanceof AppError) || error.code !== 'BAD_USER_INPUT' || !error.invalidParams) throw error;
        problems.push(...error.invalidParams);
        return undefined as never;
      }
    },
    done() {
      if (problems.length) throw badInput(problems);
    },
  };
}

export const notFound = (what: string): AppError => new AppError('NOT_FOUND', `${what} was not found`);

const CONNECTION_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
]);

/**
 * True for errors that mean "the database cannot be reached right now" (as opposed to a bug), also
 * when wrapped (`cause`) or among the errors of an AggregateError (a connect to every address of a
 * host). Used for 503s, the replica fallback and pg-boss's outage log.
 */
export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (!error || depth > 5) return false;
  const e = error as { code?: unknown; severity?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  // FATAL ends the session: the server refused the connection (55000 a database not accepting
  // connections, 28P01 a rotated password, 3D000 a database dropped for a restore) or closed it.
  if (e.severity === 'FATAL' || e.severity === 'PANIC') return true;
  if (typeof e.code === 'string') {
    if (CONNECTION_ERROR_CODES.has(e.code)) return true;
    // 08xxx connection exceptions, 57P01-57P03 admin shutdown / crash / cannot connect now, 53300 too many connections
    if (/^08...$/.test(e.code) || /^57P0[1-3]$/.test(e.code) || e.code === '53300') return true;
  }
  if (
    typeof e.message === 'string' &&
    /Connection terminated|timeout exceeded when trying to connect|connection timeout|Client has encountered a connection error|Query read timeout/i.test(
      e.message,
    )
  )
    return true;
  if (Array.isArray(e.errors) && e.errors.some((inner) => isDatabaseUnavailable(inner, depth + 1))) return true;
  return e.cause !== error && isDatabaseUnavailable(e.cause, depth + 1);
}

export const databaseUnavailable = (cause: unknown): AppError =>
  new AppError('SERVICE_UNAVAILABLE', 'The database is unreachable; try again shortly', {
    headers: { 'Retry-After': '5' },
    cause,
  });

/** Turns anything thrown into an AppError; unknown errors become INTERNAL_SERVER_ERROR (detail is generic). */
export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  if (isDatabaseUnavailable(error)) return databaseUnavailable(error);
  return new AppError('INTERNAL_SERVER_ERROR', 'An unexpected error occurred', { cause: error });
}
