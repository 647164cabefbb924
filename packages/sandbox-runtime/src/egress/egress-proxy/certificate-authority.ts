import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, randomBytes, X509Certificate } from 'node:crypto';
import { closeSync, constants, fstatSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import path from 'node:path';
import { certificate, certificateSync, distinguishedName, keyIdentifier, subjectOf } from './x509-der.js';

/**
 * The installation's certificate authority for the egress proxy (docs/brokered-secrets.md): the
 * proxy ends a sandbox's TLS to a host a brokered variable is approved for with a certificate for
 * that host, signed by this CA, which sandboxes trust through a mounted bundle. Its key stays in
 * `ca.key` (0600) in a folder of the installation's outside every sandbox; only `ca.pem` is ever
 * given to one.
 *
 * Certificates are written and signed with Node's own crypto (x509-der.ts; docs/dependencies.md):
 * a host's is signed in the thread pool, never on the event loop, made once and kept.
 */
export interface CertificateAuthority {
  /** The CA's certificate, PEM: what sandboxes trust. */
  readonly certificatePem: string;
  /** A certificate and key for `host` (a DNS name), signed by the CA on this thread; made once per host and kept (up to a bound). */
  leafFor(host: string): { readonly cert: string; readonly key: string };
  /** The same, signed off the event loop: what the proxy uses. Concurrent asks for one host share one signature. */
  issue(host: string): Promise<{ readonly cert: string; readonly key: string }>;
  /** Whether `host`'s certificate is made and kept (asking for it costs nothing). */
  has(host: string): boolean;
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
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const subject = distinguishedName(name, 'Berth egress proxy');
  const now = Date.now();
  const pem = certificateSync({
    subject,
    issuer: subject,
    publicKey,
    signingKey: privateKey,
    notBefore: new Date(now - DAY_MS),
    notAfter: new Date(now + CA_DAYS * DAY_MS),
    role: { ca: true },
  });
  // The key first: a certificate without its key would be a CA nobody can sign with.
  writeWhole(path.join(folder, CA_KEY_FILE), privateKey.export({ type: 'pkcs1', format: 'pem' }) as string, 0o600);
  writeWhole(path.join(folder, CA_CERTIFICATE_FILE), pem, 0o644);
}

/**
 * Loads the CA in `folder`, making it (and the folder, 0700) when there is none. `name` is the
 * CA's common name (the installation's tag, so an operator tells installations apart). A CA an
 * earlier release made (with node-forge) loads as it is.
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
  const caKey: KeyObject = createPrivateKey(keyPem);
  const caCertificate = new X509Certificate(certificatePem);
  const { subject: issuer, keyId } = subjectOf(caCertificate.raw);
  const authorityKeyId = keyId ?? keyIdentifier(createPublicKey(caKey));
  // One key for every host's certificate of this process (P-256: made at once, cheap to sign
  // handshakes with), never written anywhere.
  const leafKeys = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const leafKeyPem = leafKeys.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  const cache = new Map<string, { cert: string; key: string; expires: number }>();
  const pending = new Map<string, Promise<{ cert: string; key: string }>>();

  const requestFor = (host: string, now: number) => ({
    subject: distinguishedName(host),
    issuer,
    publicKey: leafKeys.publicKey,
    signingKey: caKey,
    notBefore: new Date(now - DAY_MS),
    notAfter: new Date(now + LEAF_DAYS * DAY_MS),
    role: { host, authorityKeyId },
  });
  const cached = (host: string): { cert: string; key: string } | undefined => {
    const found = cache.get(host);
    if (!found || found.expires <= Date.now() + DAY_MS) return undefined;
    cache.delete(host);
    cache.set(host, found);
    return found;
  };
  const keep = (host: string, cert: string, now: number): { cert: string; key: string } => {
    const made = { cert, key: leafKeyPem, expires: now + LEAF_DAYS * DAY_MS };
    cache.set(host, made);
    if (cache.size > LEAF_CACHE_LIMIT) cache.delete(cache.keys().next().value!);
    return made;
  };

  return {
    certificatePem,
    has: (host) => cached(host) !== undefined,
    leafFor(host) {
      const now = Date.now();
      return cached(host) ?? keep(host, certificateSync(requestFor(host, now)), now);
    },
    issue(host) {
      const found = cached(host);
      if (found) return Promise.resolve(found);
      let making = pending.get(host);
      if (!making) {
        const now = Date.now();
        making = certificate(requestFor(host, now))
          .then((cert) => keep(host, cert, now))
          .finally(() => pending.delete(host));
        pending.set(host, making);
      }
      return making;
    },
  };
}
