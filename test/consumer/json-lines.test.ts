// The JSON-lines files of `walk` and `sync` (src/consumer/json-lines.ts): one record a line, for any
// line reader, whatever the records' text holds.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { expect } from 'chai';
import { jsonLine, readLines } from '../../src/consumer/json-lines.ts';
import { readCopy } from '../../src/consumer/sync-files.ts';

const collect = async (lines: AsyncIterable<string>) => {
  const all: string[] = [];
  for await (const line of lines) all.push(line);
  return all;
};

describe('JSON-lines files of walk and sync', () => {
  it('write U+2028 and U+2029 escaped, and read lines split at \\n alone, across chunks', async () => {
    const record = { id: 'a', title: 'one\u2028two\u2029three' };
    const line = jsonLine(record);
    expect(line).not.to.match(/[\u2028\u2029\n]/);
    expect(JSON.parse(line)).to.deep.equal(record);
    // Chunks that cut lines (and a \r\n) anywhere; the last line has no \n.
    const text = `${line}\r\n{"id":"b","t":"x\u2028y"}\n{"id":"c"}`;
    const chunks = [text.slice(0, 7), text.slice(7, line.length + 1), text.slice(line.length + 1)];
    expect(await collect(readLines(Readable.from(chunks.map((c) => Buffer.from(c)))))).to.deep.equal([
      line,
      '{"id":"b","t":"x\u2028y"}',
      '{"id":"c"}',
    ]);
  });

  it('sync reads a copy an earlier version wrote with them raw, and keeps them escaped from then on', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'lods-jsonl-'));
    try {
      const path = join(dir, 'copy.jsonl');
      await writeFile(path, '{"id":"a","title":"x\u2028y"}\n{"id":"b","title":"p\u2029q"}\n');
      const copy = await readCopy(path);
      expect([...copy!.keys()]).to.deep.equal(['a', 'b']);
      expect(copy!.get('a')).to.equal('{"id":"a","title":"x\\u2028y"}');
      expect(JSON.parse(copy!.get('b') as string)).to.deep.equal({ id: 'b', title: 'p\u2029q' });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
