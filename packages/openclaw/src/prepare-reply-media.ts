import { randomBytes } from 'node:crypto';
import { constants, promises as fs } from 'node:fs';
import path from 'node:path';
import { SandboxFileError } from '@berth/core';
import { SANDBOX_WORKSPACE } from './create-sandbox-fs-bridge.js';

// OpenClaw 2026.9.6 sends a file the agent names with `MEDIA:/workspace/…` (or a relative path)
// by reading its own host copy of the session's workspace: `createReplyMediaSourcePreparer`
// (src/auto-reply/reply/reply-media-paths.ts) maps `/workspace/rel` onto
// `<host workspaceDir>/rel` (`mapContainerWorkspacePath`) and reads that host file. Berth's
// sandbox does not mount that folder, so before OpenClaw builds the reply, Berth makes the host
// path hold exactly what the scope's own sandbox has at that path, read there with every check
// of `readSandboxFile` — or nothing, so that OpenClaw reports the file as missing.

/** The paths of the `MEDIA:` lines of a reply, as OpenClaw's `splitMediaOutput` finds them (a superset). */
export function replyMediaCandidates(text: string): string[] {
  const candidates = new Set<string>();
  let fenced = false;
  for (const line of text.split('\n')) {
    // OpenClaw leaves lines inside fenced code blocks alone.
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      continue;
    }
    if (fenced || !line.trimStart().slice(0, 6).toUpperCase().startsWith('MEDIA:')) continue;
    for (const match of line.matchAll(/\bMEDIA:\s*`?([^\n]+)`?/gi)) {
      const payload = (match[1] ?? '').trim();
      const quoted = /^(["'`])(.*)\1$/.exec(payload);
      // Quoted, the whole; unquoted, the whole and each word: OpenClaw picks among these.
      const parts = quoted ? [quoted[2] ?? ''] : [payload, ...payload.split(/\s+/)];
      for (const part of parts) {
        const candidate = part
          .trim()
          .replace(/^[`"'[{(]+/, '')
          .replace(/[`"'\\})\],]+$/, '');
        if (candidate) candidates.add(candidate);
      }
    }
  }
  return [...candidates];
}

/** Where OpenClaw will read a named file on the host, and the same place in the sandbox. */
export interface ReplyMediaTarget {
  /** The path the agent wrote. */
  readonly named: string;
  /** `/workspace/…`: where Berth reads it, in the scope's own sandbox. */
  readonly sandboxPath: string;
  /** `<host workspaceDir>/…`: where OpenClaw will read it. */
  readonly hostPath: string;
}

function isStrictlyInside(root: string, candidate: string): boolean {
  return candidate.startsWith(`${root}${path.sep}`);
}

/**
 * The host path OpenClaw reads for a named reply file when it lies in the session's host
 * workspace (`/workspace/…`, `file:///workspace/…`, a relative path, or the host folder's own
 * absolute path), or `undefined` for every other path: OpenClaw refuses those itself ("Path
 * escapes sandbox root") or reads only its own temporary and outbound media folders, which hold
 * no user's files. `..` is resolved as OpenClaw resolves it, on the path's text.
 */
export function replyMediaTargetOf(named: string, hostWorkspaceDir: string): ReplyMediaTarget | undefined {
  const root = path.resolve(hostWorkspaceDir);
  let candidate = named.trim().replace(/\\/g, '/');
  if (/^file:/i.test(candidate)) {
    try {
      const url = new URL(candidate);
      if (url.hostname && url.hostname !== 'localhost') return undefined;
      if (/%2f|%5c/i.test(url.pathname)) return undefined;
      candidate = decodeURIComponent(url.pathname);
    } catch {
      return undefined;
    }
  }
  // A scheme (https:, data:) is not a file; `~` is the gateway's home, never a sandbox path.
  if (candidate === '' || candidate.startsWith('~') || /^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(candidate)) return undefined;
  let hostPath: string;
  if (candidate === SANDBOX_WORKSPACE || candidate.startsWith(`${SANDBOX_WORKSPACE}/`)) {
    hostPath = path.resolve(root, ...candidate.slice(SANDBOX_WORKSPACE.length).split('/').filter(Boolean));
  } else if (path.isAbsolute(candidate)) {
    hostPath = path.resolve(candidate);
  } else {
    // OpenClaw takes a relative source for a file only with a folder or an extension in it (isLikelyLocalMediaSource).
    if (!candidate.includes('/') && !/\.\w{1,10}$/.test(candidate)) return undefined;
    hostPath = path.resolve(root, candidate);
  }
  if (!isStrictlyInside(root, hostPath)) return undefined;
  const relative = path.relative(root, hostPath).split(path.sep).join('/');
  return { named, sandboxPath: path.posix.join(SANDBOX_WORKSPACE, relative), hostPath };
}

/** What became of one named reply file. */
export interface ReplyMediaOutcome extends ReplyMediaTarget {
  /** Bytes placed at the host path for OpenClaw to send. */
  readonly bytes?: number;
  /** Set when nothing was placed: the one-line reason (OpenClaw then says "File not found"). */
  readonly refusal?: string;
}

/** Options of {@link prepareReplyMedia}. */
export interface PrepareReplyMediaOptions {
  /** OpenClaw's host copy of the session's workspace (the backend factory's `workspaceDir`). */
  readonly hostWorkspaceDir: string;
  /** The reply's text, with its `MEDIA:` lines. */
  readonly text: string;
  /** Reads a file from the scope's own sandbox (`readSandboxFile`), throwing a `SandboxFileError` on a refusal. */
  readonly read: (sandboxPath: string) => Promise<Buffer>;
  /**
   * The bytes one reply's copies may hold on the host (`outboxBudgetOf` of `@berth/gateway-plugin`: the
   * user's share of the host's disk); a file past it is refused in one line. The previous reply's
   * copies are removed before a new reply's are placed, so this bounds the user's copies in all.
   */
  readonly budget: number;
}

/** Removes what is at `hostPath` unless it is a folder; never follows a link. */
async function clearHostPath(hostPath: string): Promise<'cleared' | 'folder'> {
  const status = await fs.lstat(hostPath).catch(() => undefined);
  if (status?.isDirectory()) return 'folder';
  if (status) await fs.unlink(hostPath);
  return 'cleared';
}

/** Creates the folders from `root` down to `folder`, one at a time, refusing a link or a file on the way. */
async function makeRealFolders(root: string, folder: string): Promise<boolean> {
  let current = root;
  for (const part of path.relative(root, folder).split(path.sep).filter(Boolean)) {
    current = path.join(current, part);
    const status = await fs.lstat(current).catch(() => undefined);
    if (!status)
      await fs.mkdir(current, { mode: 0o700 }).catch((error: NodeJS.ErrnoException) => (error.code === 'EEXIST' ? undefined : Promise.reject(error)));
    const now = await fs.lstat(current);
    if (!now.isDirectory()) return false;
  }
  return true;
}

/** Writes `bytes` at `hostPath` whole: a new private file (0600, `O_EXCL|O_NOFOLLOW`) renamed into place. */
async function placeHostFile(root: string, hostPath: string, bytes: Buffer): Promise<boolean> {
  if (!(await makeRealFolders(root, path.dirname(hostPath)))) return false;
  const temporary = path.join(path.dirname(hostPath), `.berth-reply-${randomBytes(8).toString('hex')}`);
  const handle = await fs.open(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    await handle.writeFile(bytes);
  } finally {
    await handle.close();
  }
  try {
    await fs.rename(temporary, hostPath);
  } catch (error) {
    await fs.unlink(temporary).catch(() => undefined);
    throw error;
  }
  return true;
}

/**
 * Makes each file the reply names in `/workspace` (see {@link replyMediaTargetOf}) exist at
 * OpenClaw's host path with exactly the bytes the sandbox has there, read with every check of
 * `read`; a refused or missing file leaves nothing at that host path (whatever was there is
 * removed first, so a stale or foreign host file is never sent instead). Returns one outcome
 * per named file in the host workspace; the host paths written are the caller's to remove once
 * OpenClaw has sent them.
 */
export async function prepareReplyMedia(options: PrepareReplyMediaOptions): Promise<ReplyMediaOutcome[]> {
  const root = path.resolve(options.hostWorkspaceDir);
  const targets = new Map<string, ReplyMediaTarget>();
  for (const named of replyMediaCandidates(options.text)) {
    const target = replyMediaTargetOf(named, root);
    if (target && !targets.has(target.hostPath)) targets.set(target.hostPath, target);
  }
  const outcomes: ReplyMediaOutcome[] = [];
  let placed = 0;
  for (const target of targets.values()) {
    if ((await clearHostPath(target.hostPath)) === 'folder') {
      outcomes.push({ ...target, refusal: `${target.sandboxPath} is a folder; name a file in it` });
      continue;
    }
    let bytes: Buffer;
    try {
      bytes = await options.read(target.sandboxPath);
    } catch (error) {
      if (!(error instanceof SandboxFileError)) throw error;
      outcomes.push({ ...target, refusal: error.message });
      continue;
    }
    if (placed + bytes.length > options.budget) {
      outcomes.push({
        ...target,
        refusal:
          `${target.sandboxPath} would take this reply's files past ${Math.round(options.budget / 1024 / 1024)} MB, ` +
          "the user's share of the gateway's disk; send it in a reply of its own",
      });
      continue;
    }
    placed += bytes.length;
    if (!(await placeHostFile(root, target.hostPath, bytes))) {
      outcomes.push({ ...target, refusal: `${target.sandboxPath} cannot be placed for delivery: a folder on its way in the gateway's copy is not a folder` });
      continue;
    }
    outcomes.push({ ...target, bytes: bytes.length });
  }
  return outcomes;
}

/** Removes host copies {@link prepareReplyMedia} placed, once OpenClaw has sent them (regular files only, never through a link). */
export async function removeReplyMediaCopies(hostPaths: Iterable<string>): Promise<void> {
  for (const hostPath of hostPaths) {
    const status = await fs.lstat(hostPath).catch(() => undefined);
    if (status?.isFile()) await fs.unlink(hostPath).catch(() => undefined);
  }
}
