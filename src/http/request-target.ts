// The request target in origin form (path and query). Node hands an absolute-form target
// (`GET http://host/v1/... HTTP/1.1`, RFC 9112 3.2.2, which a server must accept) to the request
// listener as is; express's parser routes it on its path, and so do the handlers outside express.
/** `target` without its scheme and authority when it has them; unchanged otherwise. */
export function originForm(target: string): string {
  if (target.startsWith('/')) return target;
  const authority = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/.exec(target);
  if (!authority) return target;
  const rest = target.slice(authority[0].length);
  return rest.startsWith('/') ? rest : `/${rest}`;
}
