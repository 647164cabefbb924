import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { HostLogger } from '@berth/core';
import { EGRESS_FOLDER } from '@berth/core/driver';
import { type CertificateAuthority, loadCertificateAuthority, readOwnFile, writeWhole } from './certificate-authority.js';

/** The bundle sandboxes trust: the host's CAs and the installation's, one file beside the CA. */
export const CA_BUNDLE_FILE = 'ca-bundle.pem';

/** The host's own CA bundle, where Debian, Fedora and Alpine keep it; the first found is used. */
const SYSTEM_BUNDLES = ['/etc/ssl/certs/ca-certificates.crt', '/etc/pki/tls/certs/ca-bundle.crt', '/etc/ssl/cert.pem'];

/** A system CA bundle's text, or `undefined` where there is none. */
const readSystemBundle = (file: string): string | undefined => {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
};

/** An installation's CA and the bundle file sandboxes are given. */
export interface InstallationBundle {
  readonly ca: CertificateAuthority;
  readonly bundle: string;
}

/**
 * The CA and bundle of each sandbox root (a gateway has one), made on first use in the root's
 * `EGRESS_FOLDER`: the bundle is the host's own (links followed: Fedora's is one) with the
 * installation's CA after it; only the installation's files are read and written without
 * following any link.
 */
export function createInstallationBundles(options: {
  name: (root: string) => string;
  logger?: Pick<HostLogger, 'warn'> | undefined;
}): (root: string) => InstallationBundle {
  const installations = new Map<string, InstallationBundle>();
  return (root) => {
    let found = installations.get(root);
    if (!found) {
      const folder = path.join(root, EGRESS_FOLDER);
      const ca = loadCertificateAuthority(folder, options.name(root));
      const system = SYSTEM_BUNDLES.map(readSystemBundle).find((text) => text !== undefined);
      const bundleText = `${system?.trimEnd() ?? ''}\n${ca.certificatePem.trimEnd()}\n`.trimStart();
      const bundle = path.join(folder, CA_BUNDLE_FILE);
      if (readOwnFile(bundle) !== bundleText) writeWhole(bundle, bundleText, 0o644);
      if (system === undefined)
        options.logger?.warn(`berth: no CA bundle of this host found (${SYSTEM_BUNDLES.join(', ')}); sandboxes trust only Berth's egress CA`);
      found = { ca, bundle };
      installations.set(root, found);
    }
    return found;
  };
}
