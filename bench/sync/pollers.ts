// The long polls of bench/sync/woken-together.ts, in a process of their own (as clients are): each
// follows the feed from its head and polls again as soon as it is answered, until the parent sends
// 'stop'; then each finishes its outstanding poll (the parent commits once more to answer them) and
// the process exits. Argument: JSON { url, keys, waiters } (the waiters' keys taken in turn).
const { url, keys, waiters } = JSON.parse(process.argv[2]!) as { url: string; keys: string[]; waiters: number };
let running = true;
process.on('message', (message) => {
  if (message !== 'stop') return;
  running = false;
  process.send!('stopped'); // no poll is sent after this
});

const head = async (key: string) =>
  (
    (await (await fetch(`${url}/v1/events/head`, { headers: { authorization: `Bearer ${key}` } })).json()) as {
      cursor: string;
    }
  ).cursor;

await Promise.all(
  Array.from({ length: waiters }, async (_, i) => {
    const key = keys[i % keys.length]!;
    const headers = { authorization: `Bearer ${key}` };
    let cursor = await head(key);
    while (running) {
      const res = await fetch(`${url}/v1/events?after=${encodeURIComponent(cursor)}&wait=30`, { headers });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`long poll: ${res.status} ${text}`);
      cursor = (JSON.parse(text) as { pagination: { next: string } }).pagination.next;
    }
  }),
);
process.disconnect();
