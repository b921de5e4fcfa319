// The calendar fetchers of bench/calendar/beside.ts, in a process of their own (as clients are):
// `concurrency` loops fetching distinct calendars (three topics each, a combination not asked for
// before, so that none is answered from the calendars kept) until the parent sends 'stop'; then
// each finishes its request, the process reports { calendars, bytes, failed } and exits. It tells the
// parent once two calendars have arrived ('ready'). Argument: JSON { url, key, topics, concurrency }.
const { url, key, topics, concurrency } = JSON.parse(process.argv[2]!) as {
  url: string;
  key: string;
  topics: string[];
  concurrency: number;
};
let running = true;
process.on('message', (message) => {
  if (message === 'stop') running = false;
});

let next = 0;
let calendars = 0;
let bytes = 0;
let failed = 0;
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (running) {
      const n = next++;
      const pick = (k: number) => topics[Math.floor(n / topics.length ** k) % topics.length]!;
      const res = await fetch(
        `${url}/v1/calendar.ics?topic=${encodeURIComponent([pick(0), pick(1), pick(2)].join(','))}`,
        {
          headers: { authorization: `Bearer ${key}` },
        },
      );
      const text = await res.text();
      if (res.status !== 200) failed++;
      else {
        calendars++;
        bytes += Buffer.byteLength(text);
        if (calendars === 2) process.send!('ready');
      }
    }
  }),
);
process.send!({ calendars, bytes, failed });
process.disconnect();
