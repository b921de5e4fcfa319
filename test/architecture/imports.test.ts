// The house as its imports draw it (issue 19): no import cycle among the modules of src/, none
// among its folders either, no arrow from the platform (db/) up to a domain folder, the shared
// kernel (kernel/) on nothing of ours, the process wiring (app/) imported only by the entry points
// (cli/, app/), and the workspace packages reached only by name, through their exported entry (the
// `lods-source` condition resolves it to the TypeScript sources); retention asks the queue room what
// to keep instead of splicing its SQL.
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

/** Whether `target`, an import of a module of `graph`, is ours: a file of the repository or a workspace package. */
const ours = (graph: Map<string, string[]>, target: string): boolean =>
  graph.has(target) || target.startsWith('../') || target.startsWith('@lods/');

/** The folder of src/ a module is in (its first segment). */
const folderOf = (file: string): string => file.split('/')[0]!;

/**
 * Imports from one folder of src/ into another that close a cycle of folders today, each to be
 * removed rather than added to: views/ parses its filter with the list's parameter parser of
 * http/, and http/v1/events.ts reads views/view.ts.
 */
const KNOWN_FOLDER_CYCLE_IMPORTS = [
  'views/view.ts -> http/list-parameters.ts',
  'views/view.ts -> http/query-string.ts',
];

/** The imports between folders of src/: each folder with the folders it imports and, per arrow, the imports drawing it. */
function folderGraph(graph: Map<string, string[]>): Map<string, Map<string, string[]>> {
  const folders = new Map<string, Map<string, string[]>>();
  for (const [file, imports] of graph) {
    const arrows = folders.get(folderOf(file)) ?? new Map<string, string[]>();
    folders.set(folderOf(file), arrows);
    for (const target of imports) {
      const edge = `${file} -> ${target}`;
      if (!graph.has(target) || folderOf(target) === folderOf(file) || KNOWN_FOLDER_CYCLE_IMPORTS.includes(edge))
        continue;
      arrows.set(folderOf(target), [...(arrows.get(folderOf(target)) ?? []), edge]);
    }
  }
  return folders;
}

/** The first imports of an arrow between folders, and how many more draw it. */
const named = (imports: string[]): string =>
  imports.slice(0, 3).join(', ') + (imports.length > 3 ? `, and ${imports.length - 3} more` : '');

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

  it('has no import cycle among the folders of src/', async () => {
    const graph = await importGraph();
    const folders = folderGraph(graph);
    const arrows = new Map([...folders].map(([folder, targets]) => [folder, [...targets.keys()]]));
    // Each cycle of folders with the imports that draw each of its arrows.
    const found = cycles(arrows).map((cycle) =>
      cycle
        .slice(1)
        .map((to, i) => `${cycle[i]} -> ${to} (${named(folders.get(cycle[i]!)!.get(to)!)})`)
        .join('; '),
    );
    expect(found).to.deep.equal([]);
    const allImports = [...graph].flatMap(([file, imports]) => imports.map((target) => `${file} -> ${target}`));
    expect(
      KNOWN_FOLDER_CYCLE_IMPORTS.filter((edge) => !allImports.includes(edge)),
      'known folder-cycle imports gone: remove them from KNOWN_FOLDER_CYCLE_IMPORTS',
    ).to.deep.equal([]);
  });

  it('keeps the shared kernel (kernel/) from importing anything of ours outside it', async () => {
    const graph = await importGraph();
    const outward: string[] = [];
    for (const [file, imports] of graph) {
      if (!file.startsWith('kernel/')) continue;
      for (const target of imports)
        if (ours(graph, target) && !target.startsWith('kernel/')) outward.push(`${file} -> ${target}`);
    }
    expect(outward).to.deep.equal([]);
  });

  it('has only the entry points (cli/, app/) import the process wiring (app/)', async () => {
    const intoApp: string[] = [];
    for (const [file, imports] of await importGraph()) {
      if (file.startsWith('cli/') || file.startsWith('app/')) continue;
      for (const target of imports) if (target.startsWith('app/')) intoApp.push(`${file} -> ${target}`);
    }
    expect(intoApp).to.deep.equal([]);
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
