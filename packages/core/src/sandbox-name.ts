import { createHmac, randomBytes } from 'node:crypto';
import { closeSync, constants, fchmodSync, fstatSync, linkSync, lstatSync, mkdirSync, openSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { BerthError, PathEscapeError } from './errors.js';
import { INSTALLATION_KEY_FILE } from './host-layout.js';

/** Hex digits of the keyed digest in a sandbox name: 96 bits. */
const NAME_DIGITS = 24;

const KEY_TEXT = /^[0-9a-f]{64}\n?$/;
const keys = new Map<string, Buffer>();

function readKey(file: string): Buffer | undefined {
  let descriptor: number;
  try {
    // O_NOFOLLOW: a link planted in place of the key is refused, never read through.
    descriptor = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') throw new PathEscapeError(`${file} is a symbolic link; Berth reads its installation key only from a real file — remove the link`);
    throw new BerthError('INSTALLATION_KEY', `cannot read the installation key ${file} (${code}); make it readable by the gateway's user`, { cause: error });
  }
  try {
    if ((fstatSync(descriptor).mode & 0o077) !== 0) fchmodSync(descriptor, 0o600);
    const text = readFileSync(descriptor, 'utf8');
    if (!KEY_TEXT.test(text)) {
      throw new BerthError(
        'INSTALLATION_KEY',
        `the installation key ${file} is malformed; restore it from a backup, or remove it (every sandbox is then recreated under a new name, files kept)`,
      );
    }
    return Buffer.from(text.trim(), 'hex');
  } finally {
    closeSync(descriptor);
  }
}

/** The sandbox root as Berth works in it: resolved, and refused when it is a symbolic link. */
function realRoot(root: string): string {
  const resolved = path.resolve(root);
  let link = false;
  try {
    link = lstatSync(resolved).isSymbolicLink();
  } catch {
    // Missing: nothing to refuse.
  }
  if (link) throw new PathEscapeError(`the sandbox root ${resolved} is a symbolic link; Berth never works through links — replace it with a real folder`);
  return resolved;
}

/**
 * The installation key of a sandbox root when it has one, else `undefined`; creates nothing.
 * Without a key the installation has no sandboxes, so what only reads (`berth ls`, `doctor`)
 * describes them without it.
 */
export function readInstallationKey(root: string): Buffer | undefined {
  const resolved = realRoot(root);
  const cached = keys.get(resolved);
  if (cached) return cached;
  const key = readKey(path.join(resolved, INSTALLATION_KEY_FILE));
  if (key) keys.set(resolved, key);
  return key;
}

/**
 * The installation key of a sandbox root (`{sandbox_dir}/docker`), made on first use: 32
 * random bytes, mode 0600. Created atomically (written aside, then linked into place), so two
 * processes starting at once agree on one key. Cached per root for the life of the process.
 */
export function loadInstallationKey(root: string): Buffer {
  const existing = readInstallationKey(root);
  if (existing) return existing;
  const resolved = path.resolve(root);
  mkdirSync(resolved, { recursive: true, mode: 0o700 });
  realRoot(resolved);
  const file = path.join(resolved, INSTALLATION_KEY_FILE);
  let key = readKey(file);
  if (!key) {
    const aside = `${file}.${process.pid}.${randomBytes(6).toString('hex')}`;
    writeFileSync(aside, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
    try {
      linkSync(aside, file);
    } catch (error) {
      // EEXIST: another process made the key first; use theirs.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      unlinkSync(aside);
    }
    key = readKey(file)!;
  }
  keys.set(resolved, key);
  return key;
}

/** Whether the sandbox root already has its installation key (so naming a sandbox creates nothing). */
export function hasInstallationKey(root: string): boolean {
  const resolved = path.resolve(root);
  if (keys.has(resolved)) return true;
  try {
    return lstatSync(path.join(resolved, INSTALLATION_KEY_FILE)).isFile();
  } catch {
    return false;
  }
}

/**
 * The engine-side name of a scope's sandbox (container, network, pod): `berth-` and a digest of
 * the scope key keyed with the installation key. It says nothing about the platform, the id or
 * how many users there are, cannot be reversed by trying every ten-digit id without the key,
 * and stays the same across restarts, so a gateway adopts its sandboxes by name.
 */
export function sandboxName(options: { root: string; scopeKey: string; prefix?: string }): string {
  const digest = createHmac('sha256', loadInstallationKey(options.root)).update(options.scopeKey, 'utf8').digest('hex');
  return `${options.prefix ?? 'berth-'}${digest.slice(0, NAME_DIGITS)}`;
}
