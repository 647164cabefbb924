import { describe, expect, it } from 'vitest';
import { BERTH_ERROR_CODES, SANDBOX_ERROR_CODES, SOCKET_ERROR_CODES } from './error-codes.js';

describe('the error codes', () => {
  it('lists each code once, spelt as a constant', () => {
    expect(new Set(BERTH_ERROR_CODES).size).toBe(BERTH_ERROR_CODES.length);
    for (const code of BERTH_ERROR_CODES) expect(code).toMatch(/^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$/);
  });

  it("holds the sandbox's codes, and the socket answers with any of them or INTERNAL", () => {
    expect(BERTH_ERROR_CODES).toEqual(expect.arrayContaining([...SANDBOX_ERROR_CODES]));
    expect(SOCKET_ERROR_CODES).toEqual([...BERTH_ERROR_CODES, 'INTERNAL']);
  });
});
