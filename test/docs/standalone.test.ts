// The repository stands on its own: no file of it cites the working documents the service was first
// specified in (they live outside the repository; docs/contract.md is the contract now), and what
// the README and docs/ point at exists: every link to a file of the repository (and its #anchor),
// every docs/*.md a file names, and every quoted heading after a link or such a name
// (`docs/contract.md, "Events"`, `[bench/README.md](../bench/README.md), "Ordering"`).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { execFileChild } from '../support/child-processes.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const run = promisify(execFileChild);

// Spelled in pieces, so that this file does not name them itself.
const OUTSIDE_NAMES = [['CONTRACT', 'md'].join('.'), ['SPEC', 'md'].join('.'), ['..', 'shared'].join('/')];
const NOT_WALKED = new Set(['node_modules', '.git', '.data', 'dist']);

/** The repository's files (tracked, and new ones not ignored), relative to ROOT; a tree walk where git is missing. */
async function repositoryFiles(): Promise<string[]> {
  try {
    const { stdout } = await run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
      cwd: ROOT,
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout.split('\0').filter((f) => f && existsSync(join(ROOT, f)));
  } catch {
    const walk = (dir: string): string[] =>
      readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
        NOT_WALKED.has(e.name) ? [] : e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)],
      );
    return walk('');
  }
}

/** The text of a file, or null for a binary one (a NUL among its first bytes) or a directory. */
function textOf(file: string): string | null {
  const path = join(ROOT, file);
  if (!statSync(path).isFile()) return null;
  const bytes = readFileSync(path);
  return bytes.subarray(0, 8000).includes(0) ? null : bytes.toString('utf8');
}

/** Markdown without its code: fenced blocks and inline code spans. */
const prose = (markdown: string): string =>
  markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');

/** A heading as a reader names it: no markup, lower case. */
const headingText = (heading: string): string =>
  heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*_]/g, '')
    .trim()
    .toLowerCase();

/** The headings of a Markdown file (outside code blocks). */
const headingsOf = (markdown: string): string[] =>
  [...markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)].map(
    (m) => m[1]!,
  );

/** GitHub's anchors for those headings: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const heading of headingsOf(markdown)) {
    const base = headingText(heading)
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n ? `${base}-${n}` : base);
  }
  return anchors;
}

describe('the repository stands on its own', function () {
  this.timeout(60_000);
  let files: string[];
  let markdown: string[];
  before(async () => {
    files = await repositoryFiles();
    // The README, docs/ and the other READMEs: every Markdown file of the repository.
    markdown = files.filter((f) => f.endsWith('.md'));
  });

  it('finds its files, the README and docs/contract.md among them', () => {
    expect(files).to.include('README.md').and.include('docs/contract.md').and.include('package.json');
  });

  it('has no file that cites the documents outside it', () => {
    const citing: string[] = [];
    for (const file of files) {
      const text = textOf(file);
      if (text === null) continue;
      text.split('\n').forEach((line, i) => {
        if (OUTSIDE_NAMES.some((name) => line.includes(name))) citing.push(`${file}:${i + 1}: ${line.trim()}`);
      });
    }
    expect(citing, `lines citing documents outside the repository:\n${citing.join('\n')}\n`).to.deep.equal([]);
  });

  it('links from Markdown only to files (and headings) that exist', () => {
    const broken: string[] = [];
    for (const file of markdown) {
      const text = prose(readFileSync(join(ROOT, file), 'utf8'));
      for (const [, target] of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target!)) continue; // http:, https:, mailto:
        const [path, anchor] = target!.split('#') as [string, string | undefined];
        const resolved = path ? resolve(ROOT, dirname(file), decodeURIComponent(path)) : join(ROOT, file);
        if (!resolved.startsWith(ROOT) || !existsSync(resolved)) {
          broken.push(`${file}: ${target} (no such file)`);
          continue;
        }
        if (anchor && resolved.endsWith('.md') && !anchorsOf(readFileSync(resolved, 'utf8')).has(anchor))
          broken.push(`${file}: ${target} (no such heading in ${relative(ROOT, resolved)})`);
      }
    }
    expect(broken, `broken links:\n${broken.join('\n')}\n`).to.deep.equal([]);
  });

  it('names only docs that exist, and only headings they have', () => {
    const wrong: string[] = [];
    const headingsCache = new Map<string, string[]>();
    const hasHeading = (path: string, quoted: string): boolean => {
      if (!headingsCache.has(path)) headingsCache.set(path, headingsOf(readFileSync(path, 'utf8')).map(headingText));
      const wanted = headingText(quoted);
      return headingsCache.get(path)!.some((h) => h.startsWith(wanted));
    };
    for (const file of files) {
      const text = textOf(file);
      if (text === null) continue;
      // A repository path in prose or a comment: docs/<name>.md, bench/README.md, packages/<p>/README.md,
      // optionally followed by the heading it means, in quotes (JSON escapes them).
      for (const m of text.matchAll(
        /(?<![\w./-])((?:docs\/[\w/-]+|bench\/README|packages\/[\w-]+\/README)\.md)(?:\)?,? (?:section )?\\?"([^"\\\n]+)\\?")?/g,
      )) {
        const path = join(ROOT, m[1]!);
        if (!existsSync(path)) wrong.push(`${file}: ${m[1]} (no such file)`);
        else if (m[2] && !hasHeading(path, m[2])) wrong.push(`${file}: ${m[1]}, "${m[2]}" (no such heading)`);
      }
      // A link to a Markdown file followed by the heading it means: [contract.md](contract.md), "Events".
      if (file.endsWith('.md'))
        for (const m of prose(text).matchAll(/\]\(([^)\s#]+\.md)\),? "([^"\n]+)"/g)) {
          const path = resolve(ROOT, dirname(file), m[1]!);
          if (existsSync(path) && !hasHeading(path, m[2]!)) wrong.push(`${file}: ${m[1]}, "${m[2]}" (no such heading)`);
        }
    }
    expect(wrong, `references to docs that are not there:\n${wrong.join('\n')}\n`).to.deep.equal([]);
  });
});
