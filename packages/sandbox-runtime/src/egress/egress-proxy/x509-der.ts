import { createHash, type KeyObject, randomBytes, sign } from 'node:crypto';

/**
 * The little of X.509 (RFC 5280) the egress proxy's CA writes, in DER, signed with Node's own
 * `crypto.sign` (native; the asynchronous form runs in libuv's thread pool, off the event loop).
 * Only what the CA and a TLS server certificate need; every input is the CA's own (its name) or a
 * host name already checked to be letters, digits, hyphens and dots.
 */

/** One DER element: tag, length, contents. */
function element(tag: number, ...contents: Buffer[]): Buffer {
  const body = Buffer.concat(contents);
  const length = body.length;
  let header: Buffer;
  if (length < 0x80) header = Buffer.from([tag, length]);
  else if (length < 0x100) header = Buffer.from([tag, 0x81, length]);
  else if (length < 0x10000) header = Buffer.from([tag, 0x82, length >> 8, length & 0xff]);
  else header = Buffer.from([tag, 0x83, length >> 16, (length >> 8) & 0xff, length & 0xff]);
  return Buffer.concat([header, body]);
}

const sequence = (...contents: Buffer[]): Buffer => element(0x30, ...contents);
const set = (...contents: Buffer[]): Buffer => element(0x31, ...contents);
const octets = (contents: Buffer): Buffer => element(0x04, contents);
const utf8 = (text: string): Buffer => element(0x0c, Buffer.from(text, 'utf8'));
const boolean = (value: boolean): Buffer => element(0x01, Buffer.from([value ? 0xff : 0]));
const bits = (contents: Buffer, unused = 0): Buffer => element(0x03, Buffer.from([unused]), contents);
const explicit = (tag: number, contents: Buffer): Buffer => element(0xa0 | tag, contents);

function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const bytes = [40 * parts[0]! + parts[1]!];
  for (const part of parts.slice(2)) {
    const groups = [part & 0x7f];
    for (let rest = part >> 7; rest > 0; rest >>= 7) groups.unshift((rest & 0x7f) | 0x80);
    bytes.push(...groups);
  }
  return element(0x06, Buffer.from(bytes));
}

function integer(value: Buffer): Buffer {
  let start = 0;
  while (start < value.length - 1 && value[start] === 0 && value[start + 1]! < 0x80) start++;
  const trimmed = value.subarray(start);
  return element(0x02, trimmed[0]! >= 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed);
}

/** UTCTime through 2049, GeneralizedTime after (RFC 5280, 4.1.2.5). */
function time(date: Date): Buffer {
  const iso = date.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  return date.getUTCFullYear() < 2050 ? element(0x17, Buffer.from(`${iso.slice(2)}Z`)) : element(0x18, Buffer.from(`${iso}Z`));
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return sequence(oid(id), ...(critical ? [boolean(true)] : []), octets(value));
}

/** A Name of a common name (and an organisation). */
export function distinguishedName(commonName: string, organization?: string): Buffer {
  const attribute = (id: string, value: string): Buffer => set(sequence(oid(id), utf8(value)));
  return sequence(...(organization ? [attribute('2.5.4.10', organization)] : []), attribute('2.5.4.3', commonName));
}

/** The signature algorithm for a key: sha256 with RSA (PKCS #1 v1.5), or ECDSA with sha256. */
function signatureAlgorithm(key: KeyObject): Buffer {
  if (key.asymmetricKeyType === 'rsa') return sequence(oid('1.2.840.113549.1.1.11'), element(0x05));
  if (key.asymmetricKeyType === 'ec') return sequence(oid('1.2.840.10045.4.3.2'));
  throw new Error(`the egress CA's key is ${key.asymmetricKeyType ?? 'of no known type'}; remove the CA's folder and Berth makes a new one`);
}

/** A key's identifier (RFC 5280, 4.2.1.2, method 1): SHA-1 of its subjectPublicKey bits. */
export function keyIdentifier(publicKey: KeyObject): Buffer {
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  return createHash('sha1').update(subjectPublicKeyBits(spki)).digest();
}

/** The BIT STRING contents of an SPKI (the key proper), read from its DER. */
function subjectPublicKeyBits(spki: Buffer): Buffer {
  const [outer] = children(spki);
  const [, key] = children(outer!.contents);
  return key!.contents.subarray(1);
}

/** The elements directly inside a DER element's contents. */
export function children(der: Buffer): Array<{ tag: number; contents: Buffer; whole: Buffer }> {
  const found: Array<{ tag: number; contents: Buffer; whole: Buffer }> = [];
  for (let at = 0; at < der.length; ) {
    const tag = der[at]!;
    let length = der[at + 1]!;
    let header = 2;
    if (length & 0x80) {
      const count = length & 0x7f;
      if (count < 1 || count > 3) throw new Error('a DER length this reader does not take');
      length = der.readUIntBE(at + 2, count);
      header = 2 + count;
    }
    if (at + header + length > der.length) throw new Error('a DER element runs past its container');
    found.push({ tag, contents: der.subarray(at + header, at + header + length), whole: der.subarray(at, at + header + length) });
    at += header + length;
  }
  return found;
}

/** What a certificate says of itself and how it is signed. */
export interface CertificateRequest {
  readonly subject: Buffer;
  readonly issuer: Buffer;
  readonly publicKey: KeyObject;
  readonly signingKey: KeyObject;
  readonly notBefore: Date;
  readonly notAfter: Date;
  /** A CA (keyCertSign) or a TLS server for `host`. */
  readonly role: { readonly ca: true } | { readonly host: string; readonly authorityKeyId: Buffer };
}

function tbsOf(request: CertificateRequest): Buffer {
  const serial = randomBytes(16);
  serial[0] = serial[0]! & 0x7f;
  const subjectKeyId = keyIdentifier(request.publicKey);
  const extensions =
    'ca' in request.role
      ? [
          extension('2.5.29.19', true, sequence(boolean(true), element(0x02, Buffer.from([0])))),
          extension('2.5.29.15', true, bits(Buffer.from([0x06]), 1)),
          extension('2.5.29.14', false, octets(subjectKeyId)),
        ]
      : [
          extension('2.5.29.19', true, sequence()),
          // digitalSignature; keyEncipherment too for an RSA key.
          extension('2.5.29.15', true, request.publicKey.asymmetricKeyType === 'rsa' ? bits(Buffer.from([0xa0]), 5) : bits(Buffer.from([0x80]), 7)),
          extension('2.5.29.37', false, sequence(oid('1.3.6.1.5.5.7.3.1'))),
          extension('2.5.29.17', false, sequence(element(0x82, Buffer.from(request.role.host, 'latin1')))),
          extension('2.5.29.14', false, octets(subjectKeyId)),
          extension('2.5.29.35', false, sequence(element(0x80, request.role.authorityKeyId))),
        ];
  return sequence(
    explicit(0, integer(Buffer.from([2]))),
    integer(serial),
    signatureAlgorithm(request.signingKey),
    request.issuer,
    sequence(time(request.notBefore), time(request.notAfter)),
    request.subject,
    request.publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, sequence(...extensions)),
  );
}

const pem = (der: Buffer): string =>
  `-----BEGIN CERTIFICATE-----\n${der
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .replace(/\n$/, '')}\n-----END CERTIFICATE-----\n`;

/** Makes and signs a certificate on the calling thread (the CA, once per installation). */
export function certificateSync(request: CertificateRequest): string {
  const tbs = tbsOf(request);
  return pem(sequence(tbs, signatureAlgorithm(request.signingKey), bits(sign('sha256', tbs, request.signingKey))));
}

/** Makes a certificate, its signature computed in the thread pool (a host's, while the proxy serves others). */
export async function certificate(request: CertificateRequest): Promise<string> {
  const tbs = tbsOf(request);
  const signature = await new Promise<Buffer>((resolve, reject) =>
    sign('sha256', tbs, request.signingKey, (error, result) => (error ? reject(error) : resolve(result))),
  );
  return pem(sequence(tbs, signatureAlgorithm(request.signingKey), bits(signature)));
}

/** A certificate's subject Name and subjectKeyIdentifier, read from its DER (the CA's, to sign under it). */
export function subjectOf(certificateDer: Buffer): { subject: Buffer; keyId: Buffer | undefined } {
  const [certificateElement] = children(certificateDer);
  const [tbs] = children(certificateElement!.contents);
  const fields = children(tbs!.contents);
  const offset = fields[0]!.tag === 0xa0 ? 1 : 0;
  const subject = fields[offset + 4]!.whole;
  let keyId: Buffer | undefined;
  const extensions = fields.find((field) => field.tag === 0xa3);
  if (extensions) {
    for (const entry of children(children(extensions.contents)[0]!.contents)) {
      const parts = children(entry.contents);
      if (parts[0]!.whole.equals(oid('2.5.29.14'))) keyId = children(parts.at(-1)!.contents)[0]!.contents;
    }
  }
  return { subject, keyId };
}
