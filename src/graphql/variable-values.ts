// graphql-js repeats a rejected variable's whole value in its message ('Variable "$input" got invalid
// value { url: ..., secret: "...", typo: 1 }; Field "typo" is not defined ...'): a receiver's signing
// secret would come back in the error. Only the variable's name, the path in it and the reason are kept.
const HEAD = /^Variable "\$[A-Za-z_][A-Za-z0-9_]*" got invalid value/;

export function withoutVariableValue(message: string, original: unknown): string {
  const head = HEAD.exec(message)?.[0];
  if (!head) return message;
  const reason = (original as { originalError?: { message?: unknown } } | null)?.originalError?.message;
  if (typeof reason !== 'string' || !message.endsWith(`; ${reason}`)) return `${head}.`;
  const at = / at "[^"]*"$/.exec(message.slice(0, -(reason.length + 2)))?.[0] ?? '';
  // A scalar's own message may quote the value too ('String cannot represent a non string value: ...').
  return `${head}${at}; ${reason.replace(/^([^:]*cannot represent[^:]*): .*$/s, '$1')}`;
}
