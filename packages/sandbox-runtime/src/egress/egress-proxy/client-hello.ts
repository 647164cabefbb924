import { type ByteReader, ReadError } from './byte-reader.js';

/** The most handshake bytes read to find a ClientHello's server name (post-quantum key shares make it a few KiB). */
const MAX_HELLO_BYTES = 64 * 1024;

/**
 * The server name (SNI) of a TLS ClientHello read from `reader`, without consuming it: the bytes
 * read are returned so they can be passed on as they are. `name` is undefined when the hello
 * names none; `malformed` when the bytes are no ClientHello the proxy can read (refused in
 * allow-list mode: a name it cannot check is not on the list).
 */
export async function readClientHello(
  reader: ByteReader,
  timing: { wholeMs: number },
): Promise<{ bytes: Buffer; name: string | undefined; malformed: boolean }> {
  const records: Buffer[] = [];
  let handshake = Buffer.alloc(0);
  const deadline = Date.now() + timing.wholeMs;
  while (handshake.length < 4 || handshake.length < 4 + handshake.readUIntBE(1, 3)) {
    const left = deadline - Date.now();
    if (left <= 0) throw new ReadError('timeout', `the TLS ClientHello did not come within ${timing.wholeMs} ms`);
    const header = await withTimeout(reader.readExactly(5, 'the TLS ClientHello'), left);
    records.push(header);
    const length = header.readUInt16BE(3);
    if (header[0] !== 0x16 || length === 0 || length > 16_384 + 2048) return { bytes: Buffer.concat(records), name: undefined, malformed: true };
    const fragment = await withTimeout(reader.readExactly(length, 'the TLS ClientHello'), deadline - Date.now());
    records.push(fragment);
    handshake = Buffer.concat([handshake, fragment]);
    if (handshake.length > MAX_HELLO_BYTES || handshake[0] !== 0x01) return { bytes: Buffer.concat(records), name: undefined, malformed: true };
  }
  const bytes = Buffer.concat(records);
  try {
    return { bytes, name: serverNameOf(handshake.subarray(4, 4 + handshake.readUIntBE(1, 3))), malformed: false };
  } catch {
    return { bytes, name: undefined, malformed: true };
  }
}

async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new ReadError('timeout', 'the TLS ClientHello was too slow')), Math.max(0, ms)))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The host_name of a ClientHello body's server_name extension (RFC 6066); throws on a malformed body. */
export function serverNameOf(hello: Buffer): string | undefined {
  let at = 2 + 32; // client_version, random
  const skip = (lengthBytes: number): number => {
    if (at + lengthBytes > hello.length) throw new RangeError('ClientHello ends early');
    const length = hello.readUIntBE(at, lengthBytes);
    at += lengthBytes + length;
    if (at > hello.length) throw new RangeError('ClientHello ends early');
    return length;
  };
  skip(1); // session_id
  skip(2); // cipher_suites
  skip(1); // compression_methods
  if (at === hello.length) return undefined;
  const extensionsEnd = at + 2 + hello.readUInt16BE(at);
  if (extensionsEnd > hello.length) throw new RangeError('ClientHello ends early');
  at += 2;
  while (at + 4 <= extensionsEnd) {
    const type = hello.readUInt16BE(at);
    const length = hello.readUInt16BE(at + 2);
    const body = hello.subarray(at + 4, at + 4 + length);
    at += 4 + length;
    if (at > extensionsEnd) throw new RangeError('an extension runs past the ClientHello');
    if (type !== 0) continue;
    // server_name_list: one host_name (type 0) entry is all TLS allows.
    let inner = 2;
    while (inner + 3 <= body.length) {
      const nameType = body[inner]!;
      const nameLength = body.readUInt16BE(inner + 1);
      const name = body.subarray(inner + 3, inner + 3 + nameLength);
      inner += 3 + nameLength;
      if (inner > body.length) throw new RangeError('a server name runs past its extension');
      if (nameType === 0) return name.toString('latin1');
    }
    return undefined;
  }
  return undefined;
}
