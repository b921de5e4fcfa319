// The house as its imports draw it (issue 19): no import cycle among the modules of src/, no arrow
// from the platform (db/) up to a domain folder, and the workspace packages reached only by name,
// through their exported entry (the `lods-source` condition resolves it to the TypeScript sources);
// retention asks the queue room what to keep instead of splicing its SQL.
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { expect } from 'chai';

const SRC = resolve(import.meta.dirname, '../../src');

/** Every module of src/ with the modules of src/ it imports (relative specifiers, comments ignored). */
async function importGraph(): Promise<Map<string, string[]>> {
  const files = (await readdir(SRC, { recursive: true })).filter((f) => f.endsWith('.ts')).map((f) => join(SRC, f));
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const code = (await readFile(file, 'utf8')).replace(/^\s*\/\/.*$/gm, '');
    const specifiers = [
      ...code.matchAll(
        /(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s+'([^']+)'|\bimport\(\s*'([^']+)'\s*\)|(?:^|\n)\s*import\s+'([^']+)'/g,
      ),
    ].map((m) => m[1] ?? m[2] ?? m[3]!);
    graph.set(
      relative(SRC, file),
      specifiers.map((s) => (s.startsWith('.') ? relative(SRC, resolve(dirname(file), s)) : s)),
    );
  }
  return graph;
}

/** The import cycles of `graph` among its own modules, each as the path that closes it. */
function cycles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const visit = (file: string, path: string[]) => {
    if (state.get(file) === 'done') return;
    if (state.get(file) === 'open') {
      found.push([...path.slice(path.indexOf(file)), file]);
      return;
    }
    state.set(file, 'open');
    for (const next of graph.get(file) ?? []) if (graph.has(next)) visit(next, [...path, file]);
    state.set(file, 'done');
  };
  for (const file of [...graph.keys()].sort()) visit(file, []);
  return found;
}

describe('the house as its imports draw it', () => {
  it('has no import cycle among the modules of src/', async () => {
    expect(cycles(await importGraph()).map((c) => c.join(' -> '))).to.deep.equal([]);
  });

  it('keeps the platform (db/) from importing any domain folder', async () => {
    const upward: string[] = [];
    for (const [file, imports] of await importGraph()) {
      if (!file.startsWith('db/')) continue;
      // db/ may use db/ and the shared kernel (kernel/: config, errors, logger, metrics).
      for (const target of imports)
        if (target.endsWith('.ts') && !target.startsWith('db/') && !target.startsWith('kernel/'))
          upward.push(`${file} -> ${target}`);
    }
    expect(upward).to.deep.equal([]);
  });

  it('has retention call the queue room, splicing none of its SQL', async () => {
    const spliced: string[] = [];
    for (const file of await readdir(join(SRC, 'retention'))) {
      const code = await readFile(join(SRC, 'retention', file), 'utf8');
      for (const [, names] of code.matchAll(/import\s*(?:type\s*)?\{([^}]*)\}\s*from\s*'[^']*webhooks\/queue[^']*'/g)) {
        for (const name of names!.split(',').map((n) => n.trim()))
          if (/(Sql|Condition|Cte|CTE)$/.test(name)) spliced.push(`retention/${file}: ${name}`);
      }
    }
    expect(spliced).to.deep.equal([]);
  });

  it('reaches the workspace packages only by name, never by a path into them', async () => {
    const intoPackages: string[] = [];
    for (const [file, imports] of await importGraph())
      for (const target of imports)
        if (/(^|\/)packages\//.test(target) || /^@lods\/[^/]+\/./.test(target))
          intoPackages.push(`${file} -> ${target}`);
    expect(intoPackages).to.deep.equal([]);
    expect(relative(resolve(SRC, '..'), new URL(import.meta.resolve('@lods/receiver-kit')).pathname)).to.equal(
      'packages/receiver-kit/src/index.ts',
    );
    expect(relative(resolve(SRC, '..'), new URL(import.meta.resolve('@lods/client')).pathname)).to.equal(
      'packages/client/src/index.ts',
    );
    expect(() => import.meta.resolve('@lods/client/src/sync.ts')).to.throw(/is not defined by "exports"/);
  });
});
