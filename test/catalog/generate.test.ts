// The seeded generator behind `seed`: the same seed makes the same records, and different seeds make
// different ones, including seeds that a 32-bit generator would have placed on the same cycle.
import { expect } from 'chai';
import { generateContent, type Random, seededRandom } from '../../src/catalog/generate.ts';

const AT = new Date('2026-01-01T00:00:00Z');
const idsOf = (seed: number, count: number): string[] => {
  const rnd = seededRandom(seed);
  return Array.from({ length: count }, () => generateContent(rnd, AT).id);
};

describe('the seeded generator', () => {
  it('makes the same records for the same seed', () => {
    expect(idsOf(42, 20)).to.deep.equal(idsOf(42, 20));
  });

  it('makes unrelated records for seeds that mulberry32 would put one record apart on its one cycle', () => {
    // How many draws one record takes from seed 1.
    let draws = 0;
    const base = seededRandom(1);
    const counting: Random = () => (draws++, base());
    generateContent(counting, AT);
    // mulberry32 adds 0x6d2b79f5 to its state per draw: this seed's first record was seed 1's second.
    const shifted = (1 + Math.imul(0x6d2b79f5, draws)) >>> 0;
    const one = new Set(idsOf(1, 50));
    expect(idsOf(shifted, 50).filter((id) => one.has(id))).to.deep.equal([]);
  });
});
