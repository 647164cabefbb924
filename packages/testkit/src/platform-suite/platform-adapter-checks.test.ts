import { describeForMessage, IdentityError, type PlatformAdapterV1 } from '@berth/core';
import { describe, expect, it } from 'vitest';
import { PROPERTY_TIMEOUT_MS, type PlatformAdapterVectors } from '../test-platform-adapter.js';
import { platformAdapterChecks } from './platform-adapter-checks.js';

// A small, correct adapter: ids are 1 to 30 lower-case letters and digits, kept as they are.
function toyAdapter(overrides: Partial<PlatformAdapterV1> = {}): PlatformAdapterV1 {
  const normalize = (raw: unknown): string => {
    if (typeof raw === 'string' && /^[a-z0-9]{1,30}$/.test(raw)) return raw;
    // Described as the real adapters describe a sender: String() throws for an object whose toString is no function.
    throw new IdentityError('toy', `toy sender ${describeForMessage(raw)} is not 1 to 30 lower-case letters or digits`);
  };
  return {
    specificationVersion: 'v1',
    platform: 'toy',
    normalize,
    folderName: (id) => id,
    envName: (id) => id.toUpperCase(),
    idFromEnvName: (form) => (/^[A-Z0-9]{1,30}$/.test(form) ? form.toLowerCase() : undefined),
    ...overrides,
  };
}

const vectors: PlatformAdapterVectors = {
  valid: [
    { raw: 'alice', id: 'alice', folder: 'alice', env: 'ALICE' },
    { raw: 'bob42', id: 'bob42' },
  ],
  invalid: [{ raw: 'Alice', reason: /lower-case/ }, { raw: 42 }],
};

function runAll(adapter: PlatformAdapterV1, table: PlatformAdapterVectors = vectors): void {
  const checks = platformAdapterChecks({ adapter, vectors: table, numRuns: 300 });
  checks.contract();
  checks.vectorTable();
  for (const vector of table.valid) checks.validVector(vector);
  for (const vector of table.invalid) checks.invalidVector(vector);
  checks.arbitrarySenders();
  checks.arbitraryEnvForms();
  checks.resolverIsolation();
}

describe('the platform-adapter suite', () => {
  // Every property check at once: their budget together.
  it('passes a correct adapter', { timeout: 3 * PROPERTY_TIMEOUT_MS }, () => {
    expect(() => runAll(toyAdapter())).not.toThrow();
  });

  it('fails an adapter whose folder forms collide when compared case-insensitively', () => {
    const adapter = toyAdapter({
      normalize: (raw) => {
        if (typeof raw === 'string' && /^[A-Za-z0-9]{1,30}$/.test(raw)) return raw;
        throw new IdentityError('toy', 'not an id');
      },
      // Injective env forms (hex), so only the folder form is at fault.
      envName: (id) => Buffer.from(id).toString('hex').toUpperCase(),
      idFromEnvName: (form) => (/^(?:[0-9A-F]{2})+$/.test(form) ? Buffer.from(form, 'hex').toString() : undefined),
    });
    expect(() => platformAdapterChecks({ adapter, vectors }).arbitrarySenders()).toThrow(/case-insensitively/);
  });

  it('fails an adapter whose env form drops characters (ab-cd and abcd would share variables)', () => {
    const adapter = toyAdapter({
      normalize: (raw) => {
        if (typeof raw === 'string' && /^[a-z0-9-]{1,30}$/.test(raw) && !raw.startsWith('-')) return raw;
        throw new IdentityError('toy', 'not an id');
      },
      envName: (id) => id.replace(/-/g, '').toUpperCase() || 'X',
      idFromEnvName: (form) => form.toLowerCase(),
    });
    expect(() => platformAdapterChecks({ adapter, vectors, numRuns: 500 }).arbitrarySenders()).toThrow(/env form|idFromEnvName/);
  });

  it('fails an adapter whose env form contains "_" (the naive prefix trap)', () => {
    const adapter = toyAdapter({ envName: (id) => `${id.toUpperCase()}_X` });
    expect(() => platformAdapterChecks({ adapter, vectors }).validVector(vectors.valid[1]!)).toThrow(/env form/);
  });

  it('fails an adapter whose folder form can be ".."', () => {
    const adapter = toyAdapter({
      normalize: (raw) => {
        if (typeof raw === 'string' && /^[a-z0-9.]{1,30}$/.test(raw)) return raw;
        throw new IdentityError('toy', 'not an id');
      },
    });
    expect(() => platformAdapterChecks({ adapter, vectors }).arbitrarySenders()).toThrow(/folderName/);
  });

  it('fails an adapter whose normalize is not idempotent', () => {
    const adapter = toyAdapter({
      normalize: (raw) => {
        if (typeof raw === 'string' && /^[a-z0-9]{1,29}$/.test(raw)) return `u${raw}`.slice(0, 30);
        throw new IdentityError('toy', 'not an id');
      },
    });
    expect(() => platformAdapterChecks({ adapter, vectors }).arbitrarySenders()).toThrow(/idempotent/);
  });

  it('fails an adapter that crashes with a TypeError instead of refusing', () => {
    const adapter = toyAdapter({
      normalize: (raw) => {
        const id = (raw as string).trim();
        if (/^[a-z0-9]{1,30}$/.test(id)) return id;
        throw new IdentityError('toy', 'not an id');
      },
    });
    expect(() => platformAdapterChecks({ adapter, vectors }).arbitrarySenders()).toThrow(/must throw IdentityError/);
  });

  it('fails an adapter whose refusal echoes a 10 KB input', () => {
    const adapter = toyAdapter({
      normalize: (raw) => {
        throw new IdentityError('toy', `not an id: ${String(raw)}`);
      },
    });
    expect(() =>
      platformAdapterChecks({ adapter, vectors: { ...vectors, invalid: [{ raw: 'x'.repeat(10_240) }] } }).invalidVector({ raw: 'x'.repeat(10_240) }),
    ).toThrow(/stay short/);
  });

  it('fails an adapter that accepts one of its invalid vectors', () => {
    expect(() => platformAdapterChecks({ adapter: toyAdapter(), vectors }).invalidVector({ raw: 'alice' })).toThrow(/must refuse/);
  });

  it('fails an adapter whose idFromEnvName accepts a non-canonical form', () => {
    const adapter = toyAdapter({ idFromEnvName: (form) => (/^0*[A-Z0-9]{1,30}$/.test(form) ? form.replace(/^0+(?=.)/, '').toLowerCase() : undefined) });
    expect(() => platformAdapterChecks({ adapter, vectors }).arbitraryEnvForms()).toThrow(/env form/);
  });

  it('fails a vector table with a single valid id', () => {
    const checks = platformAdapterChecks({ adapter: toyAdapter(), vectors: { valid: [vectors.valid[0]!], invalid: vectors.invalid } });
    expect(() => checks.vectorTable()).toThrow(/distinct ids/);
  });
});
