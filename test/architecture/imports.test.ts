// The house as its imports draw it (issue 19): no import cycle among the modules of src/, none
// among its folders either, no arrow from the platform (db/) up to a domain folder, the shared
// kernel (kernel/) on nothing of ours, the process wiring (app/) imported only by the entry points
// (cli/, app/), and the workspace packages reached only by name from src/, test/, bench/ and tools/,
// through their exported entry (the `lods-source` condition resolves it to the TypeScript sources);
// retention asks the queue room what to keep instead of splicing its SQL, and so do the receivers
// (webhooks/receivers/ calls webhooks/queue/, which imports nothing of receivers/).
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { expect } from 'chai';

const ROOT = resolve(import.meta.dirname, '../..');
const SRC = join(ROOT, 'src');

/** The TypeScript files under `dir`, absolute. */
const tsFiles = async (dir: string): Promise<string[]> =>
  (await readdir(dir, { recursive: true })).filter((f) => f.endsWith('.ts')).map((f) => join(dir, f));

/** The specifiers `file` imports, as written (static, dynamic and side-effect imports; comments ignored). */
async function specifiersOf(file: string): Promise<string[]> {
  const code = (await readFile(file, 'utf8')).replace(/^\s*\/\/.*$/gm, '');
  return [
    ...code.matchAll(
      /(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s+'([^']+)'|\bimport\(\s*'([^']+)'\s*\)|(?:^|\n)\s*import\s+'([^']+)'/g,
    ),
  ].map((m) => m[1] ?? m[2] ?? m[3]!);
}

/** Every module of src/ with the modules of src/ it imports (relative specifiers, comments ignored). */
async function importGraph(): Promise<Map<string, string[]>> {
  const graph = new Map<string, string[]>();
  for (const file of await tsFiles(SRC))
    graph.set(
      relative(SRC, file),
      (await specifiersOf(file)).map((s) => (s.startsWith('.') ? relative(SRC, resolve(dirname(file), s)) : s)),
    );
  return graph;
}

/** Whether `target`, an import of a module of `graph`, is ours: a file of the repository or a workspace package. */
const ours = (graph: Map<string, string[]>, target: string): boolean =>
  graph.has(target) || target.startsWith('../') || target.startsWith('@lods/');

/** The SQL fragments (names ending in Sql, SQL, Condition, Cte(s), CTE(S)) that the modules of `folder` import from `from` (folders of src/). */
async function splicedSql(folder: string, from: string): Promise<string[]> {
  const spliced: string[] = [];
  for (const file of await tsFiles(join(SRC, folder))) {
    const code = await readFile(file, 'utf8');
    for (const [, names, specifier] of code.matchAll(/import\s*(?:type\s*)?\{([^}]*)\}\s*from\s*'([^']+)'/g))
      if (relative(SRC, resolve(dirname(file), specifier!)).startsWith(`${from}/`))
        for (const name of names!.split(',').map((n) => n.trim().replace(/^type\s+/, '')))
          if (/(Sql|SQL|Condition|CONDITION|Ctes?|CTES?)$/.test(name)) spliced.push(`${relative(SRC, file)}: ${name}`);
  }
  return spliced;
}

/** The folder of src/ a module is in (its first segment). */
const folderOf = (file: string): string => file.split('/')[0]!;

/** Imports from one folder of src/ into another that close a cycle of folders today: none. */
const KNOWN_FOLDER_CYCLE_IMPORTS: string[] = [];

/**
 * Imports of a workspace package by a path into it, kept on purpose (each file with the specifier as
 * written): the example receiver is a script beside the kit, not part of it (the package's `files`
 * leave examples/ out, its `exports` name only the index), so its test imports it by path.
 */
const KNOWN_PACKAGE_PATH_IMPORTS = [
  'test/receiver-kit/example-receiver.test.ts -> ../../packages/receiver-kit/examples/receiver.ts',
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
    expect(await splicedSql('retention', 'webhooks/queue')).to.deep.equal([]);
  });

  it('has the receivers call the queue room, splicing none of its SQL, and the queue room import no receiver module', async () => {
    // One arrow, receivers/ -> queue/: the settling statement keeps its receiver-health CTEs in queue/,
    // and the receiver reads ask queue/ for the delivery counts.
    const reverse: string[] = [];
    for (const [file, imports] of await importGraph())
      if (file.startsWith('webhooks/queue/'))
        for (const target of imports)
          if (target.startsWith('webhooks/receivers/')) reverse.push(`${file} -> ${target}`);
    expect(reverse).to.deep.equal([]);
    expect(await splicedSql('webhooks/receivers', 'webhooks/queue')).to.deep.equal([]);
  });

  it('reaches the workspace packages only by name, never by a path into them (src/, test/, bench/, tools/)', async () => {
    const intoPackages: string[] = [];
    for (const dir of ['src', 'test', 'bench', 'tools'])
      for (const file of await tsFiles(join(ROOT, dir)))
        for (const specifier of await specifiersOf(file)) {
          const target = specifier.startsWith('.') ? relative(ROOT, resolve(dirname(file), specifier)) : specifier;
          if (target.startsWith('packages/') || /^@lods\/[^/]+\/./.test(target))
            intoPackages.push(`${relative(ROOT, file)} -> ${specifier}`);
        }
    expect(
      intoPackages.filter((edge) => !KNOWN_PACKAGE_PATH_IMPORTS.includes(edge)),
      "import these by name ('@lods/client', '@lods/receiver-kit'), exporting from the package's index what is missing",
    ).to.deep.equal([]);
    expect(
      KNOWN_PACKAGE_PATH_IMPORTS.filter((edge) => !intoPackages.includes(edge)),
      'known path imports gone: remove them from KNOWN_PACKAGE_PATH_IMPORTS',
    ).to.deep.equal([]);
    expect(relative(ROOT, new URL(import.meta.resolve('@lods/receiver-kit')).pathname)).to.equal(
      'packages/receiver-kit/src/index.ts',
    );
    expect(relative(ROOT, new URL(import.meta.resolve('@lods/client')).pathname)).to.equal(
      'packages/client/src/index.ts',
    );
    expect(() => import.meta.resolve('@lods/client/src/sync.ts')).to.throw(/is not defined by "exports"/);
  });
});
