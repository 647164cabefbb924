import { requestProtocolConstants, SESSION_VARIABLE_FIELDS, SOCKET_ERROR_CODES } from '@berth/core';
import { z } from 'zod';
import { FRAMED_RESULT_TAG } from './protocol.js';
import { errorAnswerSchema, execRequestSchema, execResultSchema, fileResultSchema, getFileRequestSchema, putFileRequestSchema } from './socket-schemas.js';

/** A schema as JSON Schema (draft 2020-12), as zod writes it: fields, types, which are required, bounds. */
const jsonSchemaOf = (schema: z.ZodType): Record<string, unknown> => z.toJSONSchema(schema) as Record<string, unknown>;

/**
 * The wire contract of `berth serve`'s socket, as `integrations/hermes/berth_hermes/request_protocol.json`
 * holds it for the clients in other languages: core's request protocol (its limits, at the top,
 * as before), the session variables a request's fields come from, every error code an answer may
 * carry, and each request and answer as the JSON Schema of the zod schema the server uses. Written
 * by `scripts/write-request-protocol.ts`; request-protocol-file.test.ts fails while the file is stale.
 */
export function socketWireContract() {
  return {
    ...requestProtocolConstants(),
    /** Which session variable of Hermes' is which field of a request (core's `SESSION_VARIABLE_FIELDS`). */
    sessionVariables: SESSION_VARIABLE_FIELDS,
    /** Every `error.code` of an error answer: a Berth error's own, or `INTERNAL`. */
    errorCodes: SOCKET_ERROR_CODES,
    /** The first word of the header line of a framed result (`reply: "framed"`). */
    framedResultTag: FRAMED_RESULT_TAG,
    /** A request, by its `op`: a command (`op` absent or `exec`), or a file in or out. */
    requests: {
      exec: jsonSchemaOf(execRequestSchema),
      'put-file': jsonSchemaOf(putFileRequestSchema),
      'get-file': jsonSchemaOf(getFileRequestSchema),
    },
    /** An answer: a command's result, a file's, or a refusal. */
    answers: {
      result: jsonSchemaOf(execResultSchema),
      file: jsonSchemaOf(fileResultSchema),
      error: jsonSchemaOf(errorAnswerSchema),
    },
  };
}
