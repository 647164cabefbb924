import { promises as fs } from 'node:fs';
import path from 'node:path';
import { SandboxFileError } from '@berth/core';
import { SANDBOX_WORKSPACE } from './create-sandbox-fs-bridge.js';

// OpenClaw 2026.9.6 stages every inbound attachment (a document, photo, voice note, video)
// with host fs calls into its own host copy of the session's workspace
// (`stageSandboxMedia`, src/auto-reply/reply/stage-sandbox-media.ts), at
// `media/inbound/openclaw-staged-<uuid>/input-<name>`, and tells the agent that path relative to
// the container's workdir. It never calls the backend for it. Berth's sandbox does not mount
// that host folder, so the file has to be moved into the scope's own /workspace at the same
// relative path before the agent can use it.

/** Where OpenClaw stages inbound attachments, relative to the workspace (its `STAGED_INPUT_DIRECTORY_PREFIX`). */
export const STAGED_INBOUND_FOLDER = 'media/inbound';

/** A staged folder's name: `openclaw-staged-` and a v4 UUID or a SHA-256 (OpenClaw's `stagedInputPathDirectory`). */
const STAGED_FOLDER_NAME = /^openclaw-staged-(?:[a-f0-9]{64}|[a-f0-9]{8}-[a-f0-9]{4}-4[a-f0-9]{3}-[89ab][a-f0-9]{3}-[a-f0-9]{12})$/;

/** What became of one staged file. */
export interface StagedInboundOutcome {
  /** Its path in the sandbox, `/workspace/media/inbound/openclaw-staged-…/input-…`. */
  readonly sandboxPath: string;
  /** Set when it could not be put in the sandbox: the one-line reason. */
  readonly refusal?: string;
}

/** Options of {@link moveStagedInboundMedia}. */
export interface MoveStagedInboundMediaOptions {
  /** OpenClaw's host copy of the session's workspace (the backend factory's `workspaceDir`). */
  readonly hostWorkspaceDir: string;
  /**
   * Puts the host file into the scope's sandbox at `sandboxPath` (`putHostFile` of
   * `@berth/gateway-plugin`: it opens the file without following a link and writes it in the
   * sandbox, refusing a folder that leads out of the user's own).
   */
  readonly put: (hostPath: string, sandboxPath: string) => Promise<unknown>;
}

async function realFolder(folder: string): Promise<boolean> {
  try {
    return (await fs.lstat(folder)).isDirectory();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

/**
 * Moves every file OpenClaw staged under `<hostWorkspaceDir>/media/inbound/openclaw-staged-*`
 * into the sandbox at `/workspace/media/inbound/openclaw-staged-*` (the path the agent was
 * told), then removes the host copy, whether it was put or refused: a refused attachment is not
 * retried every turn, and no user's file stays in OpenClaw's folder. Only real folders and
 * regular files are followed (`lstat`); a link or anything else there is removed, never
 * followed. A refusal (too large for `docker_file_limit`, a folder in the sandbox that leads
 * out of it, a file already at the path) is returned with its reason; other errors are thrown.
 */
export async function moveStagedInboundMedia(options: MoveStagedInboundMediaOptions): Promise<StagedInboundOutcome[]> {
  const root = path.resolve(options.hostWorkspaceDir);
  const media = path.join(root, 'media');
  const inbound = path.join(media, 'inbound');
  // Checked one level at a time without following links: this folder is OpenClaw's, and a link
  // in it would make "the staged file" somebody else's.
  if (!(await realFolder(root)) || !(await realFolder(media)) || !(await realFolder(inbound))) return [];
  const outcomes: StagedInboundOutcome[] = [];
  for (const folderName of (await fs.readdir(inbound)).sort()) {
    if (!STAGED_FOLDER_NAME.test(folderName)) continue;
    const folder = path.join(inbound, folderName);
    if (!(await realFolder(folder))) continue;
    for (const name of (await fs.readdir(folder)).sort()) {
      // OpenClaw's own names only: `input-<name>` and its `.gitignore` marker. A file it is still
      // writing is a `.fs-safe-….tmp` beside them (renamed into place once whole), left alone here.
      if (name !== '.gitignore' && !name.startsWith('input-')) continue;
      const hostPath = path.join(folder, name);
      const sandboxPath = path.posix.join(SANDBOX_WORKSPACE, STAGED_INBOUND_FOLDER, folderName, name);
      const status = await fs.lstat(hostPath).catch(() => undefined);
      if (!status) continue;
      if (status.isFile()) {
        try {
          await options.put(hostPath, sandboxPath);
          outcomes.push({ sandboxPath });
        } catch (error) {
          if (!(error instanceof SandboxFileError)) throw error;
          outcomes.push({ sandboxPath, refusal: error.message });
        }
        await fs.unlink(hostPath).catch(() => undefined);
      } else if (!status.isDirectory()) {
        // OpenClaw stages regular files only: a link here is not followed, just removed.
        await fs.unlink(hostPath).catch(() => undefined);
        outcomes.push({ sandboxPath, refusal: `${sandboxPath} was not a regular file in the gateway's staging folder; it was not put in the sandbox` });
      }
    }
    // Emptied: gone (a folder still holding something unexpected stays, and is not followed).
    await fs.rmdir(folder).catch(() => undefined);
  }
  return outcomes;
}
