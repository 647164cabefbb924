/**
 * HTTP/1.1 message heads (RFC 9112) as the egress proxy reads them from sandboxes and upstreams:
 * parsed strictly by the host, never handed to a lenient parser. Anything a recipient could read
 * two ways is refused: a bare CR or LF, a folded line, whitespace before a colon, a control
 * character in a value, a malformed request or status line, more than {@link MAX_HEADERS} fields.
 */

/** The longest head read from either side, bytes (Node's own default is 16 KiB). */
export const MAX_HEAD_BYTES = 32 * 1024;
/** The most header fields in one head. */
export const MAX_HEADERS = 128;

/** One header field as it came: its name as written, its value without surrounding whitespace. */
export type HeaderField = readonly [name: string, value: string];

/** A request head. */
export interface RequestHead {
  readonly method: string;
  readonly target: string;
  readonly version: '1.0' | '1.1';
  readonly headers: readonly HeaderField[];
}

/** A response head. */
export interface ResponseHead {
  readonly version: '1.0' | '1.1';
  readonly status: number;
  readonly reason: string;
  readonly headers: readonly HeaderField[];
}

/** A head that cannot be read one way only; its message names what is wrong, never a value. */
export class HeadError extends Error {}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const REQUEST_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}) ([\x21-\x7e]{1,8192}) HTTP\/1\.([01])$/;
const STATUS_LINE = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: ([\t \x21-\x7e\x80-\xff]*))?$/;
const FIELD_VALUE = /^[\t \x21-\x7e\x80-\xff]*$/;

/** The lines of a head (its bytes up to and including the empty line), each checked for stray CR and LF. */
function linesOf(bytes: Buffer): string[] {
  const text = bytes.toString('latin1');
  if (!text.endsWith('\r\n\r\n')) throw new HeadError('the head does not end with an empty line');
  const lines = text.slice(0, -4).split('\r\n');
  for (const line of lines) if (/[\r\n\0]/.test(line)) throw new HeadError('a line of the head holds a bare CR, LF or NUL');
  return lines;
}

function fieldsOf(lines: readonly string[]): HeaderField[] {
  if (lines.length > MAX_HEADERS) throw new HeadError(`the head has more than ${MAX_HEADERS} header fields`);
  return lines.map((line) => {
    if (line.startsWith(' ') || line.startsWith('\t')) throw new HeadError('the head folds a header over two lines (obsolete line folding)');
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon) : '';
    if (!TOKEN.test(name)) throw new HeadError('a header field has no valid name (or whitespace before its colon)');
    const value = line.slice(colon + 1).replace(/^[\t ]+|[\t ]+$/g, '');
    if (!FIELD_VALUE.test(value)) throw new HeadError(`the ${name.slice(0, 64)} header holds a control character`);
    return [name, value] as const;
  });
}

/** Parses a request head (its bytes up to and including the empty line). Throws {@link HeadError}. */
export function parseRequestHead(bytes: Buffer): RequestHead {
  // RFC 9112, 2.2: empty lines before a request line are ignored.
  let start = 0;
  while (bytes[start] === 0x0d && bytes[start + 1] === 0x0a) start += 2;
  const lines = linesOf(bytes.subarray(start));
  const match = REQUEST_LINE.exec(lines[0] ?? '');
  if (!match) throw new HeadError('the request line is not "METHOD target HTTP/1.1"');
  return { method: match[1]!, target: match[2]!, version: match[3] === '0' ? '1.0' : '1.1', headers: fieldsOf(lines.slice(1)) };
}

/** Parses a response head. Throws {@link HeadError}. */
export function parseResponseHead(bytes: Buffer): ResponseHead {
  const lines = linesOf(bytes);
  const match = STATUS_LINE.exec(lines[0] ?? '');
  if (!match) throw new HeadError('the status line is not "HTTP/1.1 NNN reason"');
  return { version: match[1] === '0' ? '1.0' : '1.1', status: Number(match[2]), reason: match[3] ?? '', headers: fieldsOf(lines.slice(1)) };
}

/** The values of every field named `name` (any case), in order. */
export function valuesOf(headers: readonly HeaderField[], name: string): string[] {
  const lower = name.toLowerCase();
  return headers.filter(([field]) => field.toLowerCase() === lower).map(([, value]) => value);
}

/** The comma-separated elements of every field named `name`, trimmed and lower case (Connection, Transfer-Encoding). */
export function tokensOf(headers: readonly HeaderField[], name: string): string[] {
  return valuesOf(headers, name)
    .flatMap((value) => value.split(','))
    .map((token) => token.trim().toLowerCase())
    .filter((token) => token !== '');
}

/** The bytes of a head: `startLine`, then each field, then the empty line. Values were checked on the way in. */
export function formatHead(startLine: string, headers: readonly HeaderField[]): Buffer {
  let text = `${startLine}\r\n`;
  for (const [name, value] of headers) text += `${name}: ${value}\r\n`;
  return Buffer.from(`${text}\r\n`, 'latin1');
}
