// Strings generated from a JSON Schema `pattern` (ECMA-262), as a property-based tester makes them:
// the request generator's source of values for every parameter with a pattern. The subset it reads
// is what the document uses (anchors, groups, alternation, classes with ranges and \d, \uXXXX and
// escaped punctuation, the quantifiers ? * + {n} {n,} {n,m}); anything else is an error, never a
// silent guess. Only Unicode scalar values of the Basic Multilingual Plane are made (no surrogate
// halves: they cannot be sent as UTF-8), and every value is checked against the pattern itself.

type Range = readonly [number, number];
type Node =
  | { kind: 'alt'; options: Node[] }
  | { kind: 'seq'; items: Node[] }
  | { kind: 'repeat'; node: Node; min: number; max: number }
  | { kind: 'set'; ranges: Range[] };

const BMP_MAX = 0xffff;
const SURROGATES: Range = [0xd800, 0xdfff];
/** How many times `*`, `+` and `{n,}` repeat at most (beyond their minimum). */
const OPEN_REPEAT = 8;
const LINE_TERMINATORS = [0x0a, 0x0d, 0x2028, 0x2029];

/** `ranges` without the code points of `cut`, merged and sorted. */
function subtract(ranges: Range[], cut: Range[]): Range[] {
  let out = normalize(ranges);
  for (const [lo, hi] of cut)
    out = out.flatMap(([a, b]): Range[] => {
      if (hi < a || lo > b) return [[a, b]];
      return [...(a < lo ? [[a, lo - 1] as Range] : []), ...(hi < b ? [[hi + 1, b] as Range] : [])];
    });
  return out;
}

function normalize(ranges: Range[]): Range[] {
  const sorted = [...ranges].sort((x, y) => x[0] - y[0]);
  const out: [number, number][] = [];
  for (const [a, b] of sorted) {
    const last = out.at(-1);
    if (last && a <= last[1] + 1) last[1] = Math.max(last[1], b);
    else out.push([a, b]);
  }
  return out;
}

const scalar = (ranges: Range[]): Range[] => subtract(ranges, [SURROGATES]);

class Parser {
  private i = 0;
  private readonly source: string;
  constructor(source: string) {
    this.source = source;
  }

  parse(): Node {
    const node = this.alternation();
    if (this.i !== this.source.length) this.fail('unexpected )');
    return node;
  }

  private fail(why: string): never {
    throw new Error(`pattern-values: ${why} at ${this.i} of ${this.source.slice(0, 80)}`);
  }

  private peek(): string | undefined {
    return this.source[this.i];
  }

  private alternation(): Node {
    const options = [this.sequence()];
    while (this.peek() === '|') {
      this.i++;
      options.push(this.sequence());
    }
    return options.length === 1 ? options[0]! : { kind: 'alt', options };
  }

  private sequence(): Node {
    const items: Node[] = [];
    for (let c = this.peek(); c !== undefined && c !== '|' && c !== ')'; c = this.peek()) {
      if (c === '^' || c === '$') {
        // Anchors: only where they anchor the whole pattern (the generated string is all of it).
        const atEdge = c === '^' ? this.i === 0 : this.i === this.source.length - 1;
        if (!atEdge) this.fail(`${c} inside the pattern`);
        this.i++;
        continue;
      }
      items.push(this.quantified(this.atom()));
    }
    return { kind: 'seq', items };
  }

  private atom(): Node {
    const c = this.source[this.i++]!;
    if (c === '(') {
      if (this.source.startsWith('?:', this.i)) this.i += 2;
      else if (this.peek() === '?') this.fail('lookaround or named group');
      const inner = this.alternation();
      if (this.source[this.i++] !== ')') this.fail('unclosed group');
      return inner;
    }
    if (c === '[') return this.charClass();
    if (c === '.')
      return {
        kind: 'set',
        ranges: scalar(
          subtract(
            [[0, BMP_MAX]],
            LINE_TERMINATORS.map((t) => [t, t]),
          ),
        ),
      };
    if (c === '\\') return { kind: 'set', ranges: this.escape(false) };
    if ('*+?{'.includes(c)) this.fail(`nothing to repeat before ${c}`);
    return { kind: 'set', ranges: [[c.charCodeAt(0), c.charCodeAt(0)]] };
  }

  /** After a backslash: the code points it stands for. */
  private escape(inClass: boolean): Range[] {
    const c = this.source[this.i++];
    if (c === undefined) this.fail('trailing backslash');
    if (c === 'd') return [[0x30, 0x39]];
    if (c === 'u') {
      const hex = this.source.slice(this.i, this.i + 4);
      if (!/^[0-9A-Fa-f]{4}$/.test(hex)) this.fail('\\u without four hex digits');
      this.i += 4;
      const code = parseInt(hex, 16);
      return [[code, code]];
    }
    // Escaped syntax characters stand for themselves; letters would be classes or controls we do not read.
    if (/[\\^$.|?*+()[\]{}/-]/.test(c) || (inClass && c === ',')) return [[c.charCodeAt(0), c.charCodeAt(0)]];
    this.fail(`unsupported escape \\${c}`);
  }

  private charClass(): Node {
    const negated = this.peek() === '^';
    if (negated) this.i++;
    const ranges: Range[] = [];
    const single = (): Range[] => {
      const c = this.source[this.i++];
      if (c === undefined) this.fail('unclosed class');
      return c === '\\' ? this.escape(true) : [[c.charCodeAt(0), c.charCodeAt(0)]];
    };
    while (this.peek() !== ']') {
      const from = single();
      if (this.peek() === '-' && this.source[this.i + 1] !== ']') {
        this.i++;
        const to = single();
        if (from.length !== 1 || to.length !== 1 || from[0]![0] !== from[0]![1] || to[0]![0] !== to[0]![1])
          this.fail('range bound that is a class');
        ranges.push([from[0]![0], to[0]![0]]);
      } else ranges.push(...from);
    }
    this.i++;
    const set = negated ? subtract([[0, BMP_MAX]], ranges) : ranges;
    const out = scalar(set);
    if (out.length === 0) this.fail('empty class');
    return { kind: 'set', ranges: out };
  }

  private quantified(node: Node): Node {
    const c = this.peek();
    let min: number;
    let max: number;
    if (c === '?') [min, max] = [0, 1];
    else if (c === '*') [min, max] = [0, Infinity];
    else if (c === '+') [min, max] = [1, Infinity];
    else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.source.slice(this.i));
      if (!m) this.fail('malformed {n,m}');
      min = Number(m[1]);
      max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
      this.i += m[0].length - 1;
    } else return node;
    this.i++;
    if (this.peek() === '?') this.fail('lazy quantifier');
    return { kind: 'repeat', node, min, max };
  }
}

/** A seeded generator (mulberry32): the same seed, the same values, so a failure can be replayed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Each choice takes its first (min), last (max), or any option: the edges are where services break. */
type Choose = (count: number) => number;

function emit(node: Node, choose: Choose, out: string[]): void {
  switch (node.kind) {
    case 'alt':
      return emit(node.options[choose(node.options.length)]!, choose, out);
    case 'seq':
      for (const item of node.items) emit(item, choose, out);
      return;
    case 'repeat': {
      const max = Number.isFinite(node.max) ? node.max : node.min + OPEN_REPEAT;
      const times = node.min + choose(max - node.min + 1);
      for (let k = 0; k < times; k++) emit(node.node, choose, out);
      return;
    }
    case 'set': {
      const size = node.ranges.reduce((n, [a, b]) => n + b - a + 1, 0);
      let index = choose(size);
      for (const [a, b] of node.ranges) {
        if (index <= b - a) return void out.push(String.fromCharCode(a + index));
        index -= b - a + 1;
      }
    }
  }
}

export type PatternSchema = { pattern: string; minLength?: number; maxLength?: number };

/**
 * Up to `count` distinct strings the schema allows: the least and the greatest choice everywhere
 * first, then strings whose every choice is the least, the greatest or any, at random.
 */
export function valuesOfPattern(schema: PatternSchema, count: number, seed = 1): string[] {
  const tree = new Parser(schema.pattern).parse();
  const regex = new RegExp(schema.pattern, 'u');
  const random = seededRandom(seed);
  const strategies: Choose[] = [
    () => 0,
    (n) => n - 1,
    (n) => {
      const r = random();
      return r < 0.25 ? 0 : r < 0.5 ? n - 1 : Math.floor(random() * n);
    },
  ];
  const values = new Set<string>();
  for (let attempt = 0; values.size < count && attempt < count * 20; attempt++) {
    const parts: string[] = [];
    emit(tree, strategies[Math.min(attempt, 2)]!, parts);
    const value = parts.join('');
    if (!regex.test(value))
      throw new Error(`pattern-values made ${JSON.stringify(value)}, which ${schema.pattern.slice(0, 80)} refuses`);
    if (value.length < (schema.minLength ?? 0) || value.length > (schema.maxLength ?? Infinity)) continue;
    values.add(value);
  }
  return [...values];
}

/** Characters a near miss is made of: ASCII, a few letters and symbols beyond it, NUL. */
const MUTATION_POOL = [
  ...Array.from({ length: 95 }, (_, i) => String.fromCharCode(0x20 + i)),
  '\u0000',
  'é',
  'ß',
  'Ж',
  '日',
  '٣',
  '—',
  '€',
  '\u00a0',
  '\u0301',
];

/**
 * Up to `count` strings the schema refuses, each one edit (a character replaced, removed, inserted
 * or doubled) away from an allowed one, or one character past maxLength: the near misses a client
 * makes. The service must refuse each.
 */
export function nearMisses(schema: PatternSchema, allowed: readonly string[], count: number, seed = 1): string[] {
  const regex = new RegExp(schema.pattern, 'u');
  const random = seededRandom(seed);
  const conforms = (v: string) =>
    regex.test(v) && v.length >= (schema.minLength ?? 0) && v.length <= (schema.maxLength ?? Infinity);
  const misses = new Set<string>();
  if (schema.maxLength !== undefined && allowed[0] !== undefined) {
    const long = allowed[0].padEnd(schema.maxLength + 1, allowed[0].at(-1) ?? 'a');
    if (!conforms(long)) misses.add(long);
  }
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  for (let attempt = 0; misses.size < count && attempt < count * 50 && allowed.length; attempt++) {
    const base = pick(allowed);
    const at = Math.floor(random() * (base.length + 1));
    const edits = [
      () => base.slice(0, at) + pick(MUTATION_POOL) + base.slice(at + 1),
      () => base.slice(0, at) + base.slice(at + 1),
      () => base.slice(0, at) + pick(MUTATION_POOL) + base.slice(at),
      () => base.slice(0, at) + base.slice(at, at + 1) + base.slice(at),
    ];
    const value = pick(edits)();
    if (!conforms(value)) misses.add(value);
  }
  return [...misses];
}
