import { BerthError, type SocketRequestErrorCode, truncateForMessage } from '@berth/core';
import type { z } from 'zod';
import {
  MAX_SANDBOX_SOCKET_REQUEST_BYTES,
  SANDBOX_SOCKET_PROTOCOL_VERSION,
  type SandboxSocketAnyRequest,
  type SandboxSocketFileRequest,
  type SandboxSocketRequest,
} from './protocol.js';
import { execRequestSchema, getFileRequestSchema, putFileRequestSchema } from './socket-schemas.js';

/** A request on the sandbox socket that is not valid JSON, too large, or not a valid request. */
export class SandboxSocketRequestError extends BerthError {
  declare readonly code: SocketRequestErrorCode;

  constructor(code: SocketRequestErrorCode, message: string) {
    super(code, message);
  }
}

const fieldsOf = (schema: { shape: object }) => Object.keys(schema.shape).join(', ');

function valueAt(input: unknown, at: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of at) value = value !== null && typeof value === 'object' ? (value as Record<PropertyKey, unknown>)[key] : undefined;
  return value;
}

function describeIssue(issue: z.core.$ZodIssue, input: unknown, fields: string): string {
  const field = issue.path.length > 0 ? issue.path.map(String).join('.') : 'the request';
  switch (issue.code) {
    case 'custom':
      // Cross-field rules carry a whole sentence; per-field checks a predicate ("must …").
      return issue.message.startsWith('must') ? `field ${field} ${issue.message}` : issue.message;
    case 'unrecognized_keys':
      return `unknown field ${issue.keys.map((key) => JSON.stringify(truncateForMessage(key))).join(', ')}; the fields are ${fields}`;
    case 'invalid_type':
      if (issue.path.length === 0) return `the request must be a JSON object, e.g. {"v":${SANDBOX_SOCKET_PROTOCOL_VERSION},"command":"ls"}`;
      return valueAt(input, issue.path) === undefined ? `field ${field} is required` : `field ${field} must be a ${issue.expected}`;
    case 'invalid_value':
      if (field === 'v') return `field v must be ${SANDBOX_SOCKET_PROTOCOL_VERSION}, the protocol version this server speaks`;
      if (field === 'op') return 'field op must be "exec", "put-file" or "get-file"';
      return field === 'reply' ? 'field reply must be "json" or "framed"' : `field ${field} has an unexpected value`;
    default:
      return `field ${field} ${issue.message}`;
  }
}

function parseLine(line: string): unknown {
  if (Buffer.byteLength(line) > MAX_SANDBOX_SOCKET_REQUEST_BYTES) {
    throw new SandboxSocketRequestError('REQUEST_TOO_LARGE', `the request is larger than ${MAX_SANDBOX_SOCKET_REQUEST_BYTES} bytes; send less input with it`);
  }
  try {
    return JSON.parse(line);
  } catch (error) {
    const reason = truncateForMessage((error as Error).message, 120);
    throw new SandboxSocketRequestError('REQUEST_MALFORMED', `the request is not valid JSON (${reason}); send one JSON object on one line`);
  }
}

function validate<T>(schema: z.ZodType & { shape: object }, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new SandboxSocketRequestError('REQUEST_INVALID', `invalid request: ${issue ? describeIssue(issue, value, fieldsOf(schema)) : 'not a request'}`);
  }
  return parsed.data as T;
}

/**
 * Parses one request line of the sandbox socket as a command. Throws
 * {@link SandboxSocketRequestError} with a one-line message naming the field at fault: malformed
 * JSON, an unknown field, a missing command or a wrong type. Which fields of the session go
 * together is core's decision (`resolveScope`), made when the command is run: the parser carries
 * whatever the host sent.
 */
export function parseSandboxSocketRequest(line: string): SandboxSocketRequest {
  return validate<SandboxSocketRequest>(execRequestSchema, parseLine(line));
}

/**
 * Parses one request line as `berth serve` takes it: a command, or (`op` `put-file` or
 * `get-file`) a file between the host and the sandbox, with the same one-line refusals.
 */
export function parseSandboxSocketLine(line: string): SandboxSocketAnyRequest {
  const value = parseLine(line);
  const op = value !== null && typeof value === 'object' ? (value as { op?: unknown }).op : undefined;
  if (op === 'put-file') return validate<SandboxSocketFileRequest>(putFileRequestSchema, value);
  if (op === 'get-file') return validate<SandboxSocketFileRequest>(getFileRequestSchema, value);
  return validate<SandboxSocketRequest>(execRequestSchema, value);
}
