import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CA_CERTIFICATE_FILE, CA_KEY_FILE, loadCertificateAuthority } from './certificate-authority.js';

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});
const temporary = (): string => {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'berth-ca-'));
  folders.push(folder);
  return path.join(folder, 'ca');
};

describe('the certificate authority', () => {
  it('is made once, its key 0600 in a 0700 folder, and loaded again unchanged', () => {
    const folder = temporary();
    const first = loadCertificateAuthority(folder, 'berth test');
    expect(statSync(path.join(folder, CA_KEY_FILE)).mode & 0o777).toBe(0o600);
    expect(statSync(folder).mode & 0o777).toBe(0o700);
    expect(loadCertificateAuthority(folder, 'berth test').certificatePem).toBe(first.certificatePem);
    const ca = new X509Certificate(first.certificatePem);
    expect(ca.ca).toBe(true);
    expect(ca.subject).toContain('CN=berth test');
  });

  it('signs a certificate for the host asked for, which a client trusting only the CA accepts for that host and no other', () => {
    const authority = loadCertificateAuthority(temporary(), 'berth test');
    const leaf = new X509Certificate(authority.leafFor('api.github.com').cert);
    const ca = new X509Certificate(authority.certificatePem);
    expect(leaf.verify(ca.publicKey)).toBe(true);
    expect(leaf.checkIssued(ca)).toBe(true);
    expect(leaf.checkHost('api.github.com')).toBe('api.github.com');
    expect(leaf.checkHost('evil.example.com')).toBeUndefined();
    expect(leaf.ca).toBe(false);
  });

  it('refuses a key file that is a link (to a file a sandbox could control), naming it', () => {
    const folder = temporary();
    loadCertificateAuthority(folder, 'berth test');
    const elsewhere = path.join(path.dirname(folder), 'planted.key');
    writeFileSync(elsewhere, 'not a key');
    unlinkSync(path.join(folder, CA_KEY_FILE));
    symlinkSync(elsewhere, path.join(folder, CA_KEY_FILE));
    expect(() => loadCertificateAuthority(folder, 'berth test')).toThrow(/ELOOP|link/);
    // The certificate was left alone.
    expect(statSync(path.join(folder, CA_CERTIFICATE_FILE)).isFile()).toBe(true);
  });

  it('signs natively off the event loop: one signature for concurrent asks, kept, with the extensions strict clients want', async () => {
    const authority = loadCertificateAuthority(temporary(), 'berth test');
    expect(authority.has('api.example.com')).toBe(false);
    const [one, two] = await Promise.all([authority.issue('api.example.com'), authority.issue('api.example.com')]);
    expect(one).toBe(two);
    expect(authority.has('api.example.com')).toBe(true);
    expect(await authority.issue('api.example.com')).toBe(one);
    const leaf = new X509Certificate(one.cert);
    const ca = new X509Certificate(authority.certificatePem);
    expect(leaf.checkIssued(ca)).toBe(true);
    expect(leaf.verify(ca.publicKey)).toBe(true);
    expect(leaf.subjectAltName).toBe('DNS:api.example.com');
    expect(leaf.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    // Authority and subject key identifiers (Python 3.13's strict verification needs the first).
    const oid = (last: number) => Buffer.from([0x06, 0x03, 0x55, 0x1d, last]);
    expect(leaf.raw.includes(oid(0x23))).toBe(true);
    expect(leaf.raw.includes(oid(0x0e))).toBe(true);
    expect(leaf.publicKey.asymmetricKeyType).toBe('ec');
  });
});
