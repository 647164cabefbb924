// The generic adapter runs the same published suite as every other adapter. The suite is
// imported from the testkit's sources by path because @berth/testkit depends on @berth/core: a
// package dependency back would be a cycle in the build graph. The suite drives core's built
// registry and resolver (so run `pnpm build` first, as scripts/test.sh does).
import fc from 'fast-check';
import { testPlatformAdapter } from '../../testkit/src/test-platform-adapter.js';
import { createGenericAdapter } from './platform-adapter.js';

testPlatformAdapter({
  adapter: createGenericAdapter({ platform: 'signal' }),
  senders: fc.oneof(fc.uuid(), fc.stringMatching(/^[A-Za-z0-9_.+-]{1,30}$/)),
  vectors: {
    valid: [
      { raw: 'ab', id: 'ab', folder: 'ab', env: 'AB' },
      { raw: 'ab-cd', id: 'ab-cd', folder: 'ab-cd', env: 'ABZ2DCD' },
      { raw: 'AB-CD', id: 'AB-CD', folder: '%41%42-%43%44', env: 'Z41Z42Z2DZ43Z44' },
      { raw: 'ab_cd', id: 'ab_cd', folder: 'ab_cd', env: 'ABZ5FCD' },
      { raw: 'zeta', id: 'zeta', env: 'Z7AETA' },
      { raw: 123456789, id: '123456789', folder: '123456789', env: '123456789' },
      { raw: '+447700900123', id: '+447700900123', folder: '+447700900123' },
      { raw: 'é', id: 'é', folder: '%C3%A9' },
      { raw: 'x'.repeat(256), id: 'x'.repeat(256) },
    ],
    invalid: [
      { raw: '', reason: /empty/ },
      { raw: '..', reason: /reads as a path/ },
      { raw: '.', reason: /reads as a path/ },
      { raw: 'a/b', reason: /reads as a path/ },
      { raw: '../x', reason: /reads as a path/ },
      { raw: 'a\\b', reason: /reads as a path/ },
      { raw: 'a\0b', reason: /control characters/ },
      { raw: 'x'.repeat(10_240), reason: /256 characters/ },
      { raw: '\ud800', reason: /lone surrogate/ },
      { raw: 'admin\u202e', reason: /bidi-control/ },
      { raw: 'al\u200bice', reason: /invisible/ },
      { raw: 'bob\u2028', reason: /line-separator/ },
      { raw: '\ufeffcarol', reason: /invisible/ },
      { raw: null, reason: /null/ },
      { raw: 2 ** 53 + 2, reason: /safe integer/ },
      { raw: { id: 1 }, reason: /string or a safe integer/ },
    ],
  },
});
