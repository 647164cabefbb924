import { createRedactor } from '@berth/core';

/** Characters of a command's first line kept in the audit trail; the rest is cut and counted. */
export const COMMAND_LINE_LIMIT = 500;

/**
 * A command's first line for the audit trail, every secret value masked: masked over the whole
 * command before it is cut (at its first line, then at `limit` characters), so a secret that
 * spans a line break or the limit leaves no piece behind. Values shorter than core's
 * `MIN_SECRET_LENGTH` are not masked, as in output.
 */
export function maskCommandLine(command: string, secrets: readonly string[], limit = COMMAND_LINE_LIMIT): string {
  const masked = createRedactor(secrets).redact(command);
  const end = masked.search(/[\r\n]/);
  const first = end === -1 ? masked : masked.slice(0, end);
  const more = end === -1 ? '' : ' …';
  return first.length > limit ? `${first.slice(0, limit)}… (${first.length - limit} more characters)${more}` : `${first}${more}`;
}
