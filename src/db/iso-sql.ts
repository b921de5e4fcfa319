// Timestamps in plain SQL reads, written as the API writes them.

/** A timestamptz as the API writes timestamps (the pool returns timestamps as database text). */
export const isoSql = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
