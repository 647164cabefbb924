import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import type {
  SandboxSocketErrorResponse,
  SandboxSocketFileResult,
  SandboxSocketGetFileRequest,
  SandboxSocketPutFileRequest,
  SandboxSocketRequest,
  SandboxSocketResult,
} from './protocol.js';
import {
  errorAnswerSchema,
  type execRequestSchema,
  execResultSchema,
  fileResultSchema,
  type getFileRequestSchema,
  type putFileRequestSchema,
} from './socket-schemas.js';

// Each interface of protocol.ts and the type of its zod schema, field for field: the same names,
// the same types, the same optional ones (readonly aside). A difference does not compile.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type SameFields<A, B> = Same<A, B> extends true ? Same<keyof A, keyof B> : false;
const sameFields = <A, B>(...difference: SameFields<A, B> extends true ? [] : [never]): number => difference.length;

describe("the socket's zod schemas", () => {
  it("are protocol.ts's interfaces, field for field", () => {
    expect(sameFields<z.infer<typeof execRequestSchema>, SandboxSocketRequest>()).toBe(0);
    expect(sameFields<z.infer<typeof putFileRequestSchema>, SandboxSocketPutFileRequest>()).toBe(0);
    expect(sameFields<z.infer<typeof getFileRequestSchema>, SandboxSocketGetFileRequest>()).toBe(0);
    expect(sameFields<z.infer<typeof execResultSchema>, SandboxSocketResult>()).toBe(0);
    expect(sameFields<z.infer<typeof fileResultSchema>, SandboxSocketFileResult>()).toBe(0);
    expect(sameFields<z.infer<typeof errorAnswerSchema>, SandboxSocketErrorResponse>()).toBe(0);
    expect(sameFields<z.infer<typeof errorAnswerSchema>['error'], SandboxSocketErrorResponse['error']>()).toBe(0);
  });

  it('take what the server answers, and nothing it does not', () => {
    const result = { v: 1, exitCode: 0, stdout: 'hi\n', stderr: '', timedOut: false, truncated: false, durationMs: 1.5, scope: 'task:default' };
    expect(execResultSchema.parse(result)).toEqual(result);
    expect(execResultSchema.safeParse({ ...result, extra: 1 }).success).toBe(false);
    expect(fileResultSchema.parse({ v: 1, path: '/workspace/a', bytes: 3, scope: 'task:default' })).toMatchObject({ bytes: 3 });
    expect(errorAnswerSchema.parse({ v: 1, error: { code: 'INTERNAL', message: 'unexpected error: x' } })).toMatchObject({ error: { code: 'INTERNAL' } });
    expect(errorAnswerSchema.safeParse({ v: 1, error: { code: 'NOT_A_CODE', message: 'x' } }).success).toBe(false);
  });
});
