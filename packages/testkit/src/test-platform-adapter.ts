import type { PlatformAdapterV1 } from '@berth/core';
import type fc from 'fast-check';
import { describe, it } from 'vitest';
import { platformAdapterChecks, sampleLabel } from './platform-suite/platform-adapter-checks.js';

/** A raw sender the adapter must accept, and what it must turn it into. */
export interface PlatformAdapterValidVector {
  /** What a host hands over: a string, a number, an update object... */
  readonly raw: unknown;
  /** The canonical id `normalize(raw)` must return. */
  readonly id: string;
  /** The folder form `folderName(id)` must return, when given. */
  readonly folder?: string;
  /** The env form `envName(id)` must return, when given. */
  readonly env?: string;
}

/** A raw sender the adapter must refuse with an `IdentityError`. */
export interface PlatformAdapterInvalidVector {
  /** What a host hands over. */
  readonly raw: unknown;
  /** A pattern the error message must match, e.g. `/group/`. */
  readonly reason?: RegExp;
}

/** The adapter's own example table: real-looking ids and the senders it refuses. */
export interface PlatformAdapterVectors {
  /** At least two, with distinct ids. */
  readonly valid: readonly PlatformAdapterValidVector[];
  /** At least one. */
  readonly invalid: readonly PlatformAdapterInvalidVector[];
}

/** Options of {@link testPlatformAdapter}. */
export interface TestPlatformAdapterOptions {
  /** The adapter under test, or a factory returning it. */
  readonly adapter: PlatformAdapterV1 | (() => PlatformAdapterV1);
  /** The adapter's example table. */
  readonly vectors: PlatformAdapterVectors;
  /**
   * Extra raw senders for the property tests, ideally mostly valid ones (e.g. `fc.uuid()`), so
   * that injectivity is tried on many distinct ids and not only on the vectors.
   */
  readonly senders?: fc.Arbitrary<unknown>;
  /**
   * Runs per property test.
   * @default 200
   */
  readonly numRuns?: number;
  /**
   * The time budget of each property test, in milliseconds: its runs on a busy two-core machine
   * (a CI runner doing other work), with room to spare.
   * @default 120000
   */
  readonly propertyTimeoutMs?: number;
}

/** The default time budget of each property test of {@link testPlatformAdapter}. */
export const PROPERTY_TIMEOUT_MS = 120_000;

/**
 * Registers vitest tests that check a platform adapter against the v1 contract and Berth's
 * safety rules: the contract shape and registration, the adapter's own vectors, idempotent
 * canonical ids, refusals as `IdentityError`, and property tests over arbitrary input that
 * folder and env forms are safe and injective and that a variable set for one identity never
 * reaches another through core's real resolver. Call it at the top level of a test file.
 */
export function testPlatformAdapter(options: TestPlatformAdapterOptions): void {
  const checks = platformAdapterChecks(options);
  describe(`testPlatformAdapter: ${checks.platform}`, () => {
    it('implements the v1 contract and registers with core', checks.contract);
    it('has a vector table with at least two distinct valid ids and one refusal', checks.vectorTable);
    describe('valid vectors', () => {
      for (const vector of options.vectors.valid) {
        it(`accepts ${sampleLabel(vector.raw)} as ${JSON.stringify(vector.id)}`, () => checks.validVector(vector));
      }
    });
    describe('invalid vectors', () => {
      for (const vector of options.vectors.invalid) {
        it(`refuses ${sampleLabel(vector.raw)}${vector.reason ? ` (${vector.reason})` : ''}`, () => checks.invalidVector(vector));
      }
    });
    const budget = { timeout: options.propertyTimeoutMs ?? PROPERTY_TIMEOUT_MS };
    it('over arbitrary input: refuses with IdentityError or returns an idempotent canonical id with safe, injective forms', budget, checks.arbitrarySenders);
    it('over arbitrary env forms: idFromEnvName returns undefined or the id whose env form it is, and never throws', budget, checks.arbitraryEnvForms);
    it("through core's resolver: a variable set for one identity never reaches another, and each has its own folder", budget, checks.resolverIsolation);
  });
}
