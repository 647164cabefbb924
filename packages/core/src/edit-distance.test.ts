import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { editDistance } from './edit-distance.js';

describe('editDistance', () => {
  it.each([
    ['', '', 0],
    ['', 'abc', 3],
    ['abc', '', 3],
    ['docker_memroy', 'docker_memory', 1], // two neighbours swapped
    ['docker_imagee', 'docker_image', 1], // one added
    ['docker_imag', 'docker_image', 1], // one dropped
    ['timeuot', 'timeout', 1],
    ['docker_netwrk', 'docker_network', 1],
    ['kitten', 'sitting', 3],
    ['ca', 'abc', 3], // the restricted distance: a swapped pair is not edited again
    ['temp_dir', 'timeout', 6],
  ])('%j to %j is %i', (a, b, distance) => {
    expect(editDistance(a, b)).toBe(distance);
  });

  it('is a distance: zero only for equal strings, symmetric, at most the longer length, at least the difference in length', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 12 }), fc.string({ maxLength: 12 }), (a, b) => {
        const distance = editDistance(a, b);
        expect(distance === 0).toBe(a === b);
        expect(editDistance(b, a)).toBe(distance);
        expect(distance).toBeLessThanOrEqual(Math.max(a.length, b.length));
        expect(distance).toBeGreaterThanOrEqual(Math.abs(a.length - b.length));
      }),
    );
  });

  it('counts one for any single edit of a key', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z_]{2,20}$/), fc.nat(), fc.constantFrom('insert', 'delete', 'substitute', 'swap'), (key, at, edit) => {
        const index = at % key.length;
        const other = key[index] === 'x' ? 'y' : 'x';
        const edited =
          edit === 'insert'
            ? key.slice(0, index) + other + key.slice(index)
            : edit === 'delete'
              ? key.slice(0, index) + key.slice(index + 1)
              : edit === 'substitute'
                ? key.slice(0, index) + other + key.slice(index + 1)
                : index + 1 < key.length
                  ? key.slice(0, index) + key[index + 1] + key[index] + key.slice(index + 2)
                  : key;
        expect(editDistance(key, edited)).toBe(edited === key ? 0 : 1);
      }),
    );
  });
});
