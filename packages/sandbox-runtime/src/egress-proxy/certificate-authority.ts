import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import path from 'node:path';
import forge from 'node-forge';

/**
 * The installation's certificate authority for the egress proxy (docs/brokered-secrets.md): the
 * proxy ends the sandboxes' TLS with a certificate for the host they asked for, signed by this
 * CA, which sandboxes trust through a mounted bundle. Its key stays in `ca.key` (0600) in a
 * folder of the installation's outside every sandbox; only `ca.pem` is ever given to one.
 *
 * Certificates are made with node-forge (docs/dependencies.md); keys with Node's own crypto
 * (native, where forge's key generation is pure JavaScript and takes seconds).
 */
export interface CertificateAuthority {
  /** The CA's certificate, PEM: what sandboxes trust. */
  readonly certificatePem: string;
  /** A certificate and key for `host` (a DNS name), signed by the CA; made once per host and kept (up to a bound). */
  leafFor(host: string): { readonly cert: string; readonly key: string };
}

/** CA file names inside its folder. */
export const CA_CERTIFICATE_FILE = 'ca.pem';
export const CA_KEY_FILE = 'ca.key';

/** How many hosts' certificates are kept; past it the least recently used is made again when asked. */
const LEAF_CACHE_LIMIT = 2048;
/** A CA lasts ten years; a host's certificate thirty days (a proxy that runs longer makes new ones). */
const CA_DAYS = 3650;
const LEAF_DAYS = 30;
const DAY_MS = 86_400_000;

function rsaKeyPair(): { privatePem: string; publicPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  return { privatePem: privateKey, publicPem: publicKey };
}

/** A positive serial number of 16 random bytes, as forge wants it (hex). */
function serial(): string {
  const bytes = randomBytes(16);
  bytes[0] = bytes[0]! & 0x7f;
  return bytes.toString('hex');
}

/** Reads a file of the CA's folder without following a link; undefined when it is missing. */
export function readOwnFile(file: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    if (!fstatSync(fd).isFile()) throw new Error(`${file} is not a regular file; remove it, and Berth makes a new certificate authority`);
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/** Writes `text` to `file` with `mode`, whole or not at all (a new file renamed over the name). */
export function writeWhole(file: string, text: string, mode: number): void {
  const temporary = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  const fd = openSync(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode);
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, file);
}

function createCaFiles(folder: string, name: string): void {
  const keys = rsaKeyPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(keys.publicPem);
  cert.serialNumber = serial();
  const now = Date.now();
  cert.validity.notBefore = new Date(now - DAY_MS);
  cert.validity.notAfter = new Date(now + CA_DAYS * DAY_MS);
  const subject = [
    { name: 'commonName', value: name },
    { name: 'organizationName', value: 'Berth egress proxy' },
  ];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(forge.pki.privateKeyFromPem(keys.privatePem), forge.md.sha256.create());
  // The key first: a certificate without its key would be a CA nobody can sign with.
  writeWhole(path.join(folder, CA_KEY_FILE), keys.privatePem, 0o600);
  writeWhole(path.join(folder, CA_CERTIFICATE_FILE), forge.pki.certificateToPem(cert), 0o644);
}

/**
 * Loads the CA in `folder`, making it (and the folder, 0700) when there is none. `name` is the
 * CA's common name (the installation's tag, so an operator tells installations apart).
 */
export function loadCertificateAuthority(folder: string, name: string): CertificateAuthority {
  mkdirSync(folder, { recursive: true, mode: 0o700 });
  let keyPem = readOwnFile(path.join(folder, CA_KEY_FILE));
  let certificatePem = readOwnFile(path.join(folder, CA_CERTIFICATE_FILE));
  if (keyPem === undefined || certificatePem === undefined) {
    createCaFiles(folder, name);
    keyPem = readOwnFile(path.join(folder, CA_KEY_FILE))!;
    certificatePem = readOwnFile(path.join(folder, CA_CERTIFICATE_FILE))!;
  }
  const caKey = forge.pki.privateKeyFromPem(keyPem);
  const caCert = forge.pki.certificateFromPem(certificatePem);
  // One key for every host's certificate of this process: made once, never written anywhere.
  const leafKeys = rsaKeyPair();
  const leafPublic = forge.pki.publicKeyFromPem(leafKeys.publicPem);
  const cache = new Map<string, { cert: string; key: string; expires: number }>();

  const leafFor = (host: string): { cert: string; key: string } => {
    const now = Date.now();
    const cached = cache.get(host);
    if (cached && cached.expires > now + DAY_MS) {
      cache.delete(host);
      cache.set(host, cached);
      return cached;
    }
    const cert = forge.pki.createCertificate();
    cert.publicKey = leafPublic;
    cert.serialNumber = serial();
    cert.validity.notBefore = new Date(now - DAY_MS);
    cert.validity.notAfter = new Date(now + LEAF_DAYS * DAY_MS);
    cert.setSubject([{ name: 'commonName', value: host }]);
    cert.setIssuer(caCert.subject.attributes);
    cert.setExtensions([
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: host }] },
      { name: 'authorityKeyIdentifier', keyIdentifier: caCert.generateSubjectKeyIdentifier().getBytes() },
    ]);
    cert.sign(caKey, forge.md.sha256.create());
    const made = { cert: forge.pki.certificateToPem(cert), key: leafKeys.privatePem, expires: cert.validity.notAfter.getTime() };
    cache.set(host, made);
    if (cache.size > LEAF_CACHE_LIMIT) cache.delete(cache.keys().next().value!);
    return made;
  };

  return { certificatePem, leafFor };
}
