import { describe, expect, it } from 'vitest';
import { SANDBOX_ERROR_CODES } from './error-codes.js';
import { BerthError, isRetryableSandboxError, isSandboxConflict, isSandboxGone, SandboxError, sandboxErrorCode } from './errors.js';

describe('sandbox error codes', () => {
  it('retries only what never started: a gone sandbox or a conflict, unless the maker says otherwise', () => {
    const retryable = SANDBOX_ERROR_CODES.filter((code) => new SandboxError(code, 'x').isRetryable);
    expect(retryable).toEqual(['SANDBOX_GONE', 'SANDBOX_CONFLICT']);
    expect(new SandboxError('SANDBOX_SESSION_CLOSED', 'x', { isRetryable: true }).isRetryable).toBe(true);
    expect(new SandboxError('SANDBOX_GONE', 'x', { isRetryable: false }).isRetryable).toBe(false);
  });

  it('answers for an error that carries only a code, as a driver of a third party may throw', () => {
    const bare = Object.assign(new Error('gone'), { code: 'SANDBOX_GONE' });
    expect(isRetryableSandboxError(bare)).toBe(true);
    expect(isSandboxGone(bare)).toBe(true);
    expect(isSandboxConflict(new BerthError('SANDBOX_CONFLICT', 'taken'))).toBe(true);
    expect(isRetryableSandboxError(new BerthError('CONFIG_INVALID', 'no'))).toBe(false);
    expect(isRetryableSandboxError(new Error('plain'))).toBe(false);
    expect(isRetryableSandboxError(undefined)).toBe(false);
    expect(sandboxErrorCode({ code: 'NOT_A_CODE' })).toBeUndefined();
  });

  it('keeps the error as it was printed and compared: isRetryable is not one of its fields', () => {
    expect(Object.keys(new SandboxError('SANDBOX_GONE', 'x'))).not.toContain('isRetryable');
  });
});
