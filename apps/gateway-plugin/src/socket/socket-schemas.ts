import { MAX_COMMAND_TIMEOUT_SECONDS, SOCKET_ERROR_CODES } from '@berth/core';
import { z } from 'zod';
import { MAX_SANDBOX_SOCKET_REQUEST_BYTES, SANDBOX_SOCKET_PROTOCOL_VERSION } from './protocol.js';

// The requests `berth serve` takes and the answers it gives, as zod schemas: the server parses
// requests with them (parse-sandbox-socket-request.ts), and the wire contract the Python bridge
// and the Perl client are held to is written from them (wire-contract.ts). Their types are
// protocol.ts's interfaces, field for field (socket-schemas.test.ts).

// NUL never belongs in an id, a path or a shell command line; refusing it here keeps it from
// reaching the engine or an error message.
const text = (max: number) =>
  z
    .string()
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`)
    .refine((value) => !value.includes('\u0000'), 'must not contain NUL');

const version = z.literal(SANDBOX_SOCKET_PROTOCOL_VERSION);

/** The most variables a request may carry of its host's scope (`variables`). */
const MAX_SCOPE_VARIABLES = 1024;

// A host scope's variables: names as a shell takes them, values without NUL, bounded in number
// (the request line's 1 MiB bounds their size).
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,255}$/;
const variables = z
  .record(
    z.string(),
    z.string().refine((value) => !value.includes('\u0000'), 'must not contain NUL'),
  )
  .superRefine((record, context) => {
    const names = Object.keys(record);
    if (names.length > MAX_SCOPE_VARIABLES) context.addIssue({ code: 'custom', message: `must hold at most ${MAX_SCOPE_VARIABLES} variables` });
    for (const name of names.filter((key) => !VARIABLE_NAME.test(key)).slice(0, 1)) {
      context.addIssue({ code: 'custom', path: [name], message: 'must be a variable name: letters, digits and "_", not beginning with a digit' });
    }
  });

// Whose sandbox: the same fields in every kind of request.
const target = {
  v: version,
  sessionKey: text(1024).optional(),
  platform: text(64).optional(),
  userId: text(1024).optional(),
  chatId: text(1024).optional(),
  taskId: text(1024).optional(),
  profile: text(64).optional(),
  variables: variables.optional(),
  sessionRequired: z.boolean().optional(),
  stopOnLeave: z.boolean().optional(),
};

const hostPath = text(4096).refine((value) => value.startsWith('/'), 'must be an absolute host path');

/** `put-file`: a host file into the sandbox (`SandboxSocketPutFileRequest`). */
export const putFileRequestSchema = z.strictObject({ ...target, op: z.literal('put-file'), source: hostPath, path: text(4096) });

/** `get-file`: a sandbox file out to a host folder (`SandboxSocketGetFileRequest`). */
export const getFileRequestSchema = z.strictObject({ ...target, op: z.literal('get-file'), path: text(4096), target: hostPath });

/** A command (`SandboxSocketRequest`), the request without an `op`. */
export const execRequestSchema = z.strictObject({
  ...target,
  op: z.literal('exec').optional(),
  command: text(MAX_SANDBOX_SOCKET_REQUEST_BYTES),
  cwd: text(4096).optional(),
  timeout: z.number().positive('must be more than 0').max(MAX_COMMAND_TIMEOUT_SECONDS, `must be at most ${MAX_COMMAND_TIMEOUT_SECONDS} seconds`).optional(),
  stdin: z.string().max(MAX_SANDBOX_SOCKET_REQUEST_BYTES).optional(),
  reply: z.enum(['json', 'framed']).optional(),
});

/** What a command produced, as one JSON line (`SandboxSocketResult`). */
export const execResultSchema = z.strictObject({
  v: version,
  exitCode: z.number().int(),
  stdout: z.string(),
  stderr: z.string(),
  timedOut: z.boolean(),
  truncated: z.boolean(),
  durationMs: z.number(),
  scope: z.string(),
});

/** A file that went between the host and a sandbox (`SandboxSocketFileResult`). */
export const fileResultSchema = z.strictObject({
  v: version,
  path: z.string(),
  bytes: z.number().int(),
  hostPath: z.string().optional(),
  scope: z.string(),
});

/** A refusal: one of the socket's error codes and a one-line message (`SandboxSocketErrorResponse`). */
export const errorAnswerSchema = z.strictObject({
  v: version,
  error: z.strictObject({ code: z.enum(SOCKET_ERROR_CODES), message: z.string() }),
});
