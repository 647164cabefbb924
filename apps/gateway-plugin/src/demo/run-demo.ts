import { randomBytes, randomInt } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { formatIdentity, runWithSession, type Identity, type SandboxPaths, type TerminalConfig, type TerminalEnvironment } from '@berth/core';
import { createBerthPlugin, providerNameFor } from '../berth-plugin.js';
import { createBerthPlatformRegistry } from '../create-berth-platform-registry.js';
import { createInProcessTerminalRegistry } from '../create-in-process-terminal-registry.js';
import { createBackend } from '../create-backend.js';
import { releaseDisksUnder } from '@berth/sandbox-runtime';

/** The image the set-up builds locally; the demo falls back to it when no registry answers. */
export const LOCAL_BASE_IMAGE = 'localhost/berth-busybox:latest';

/** Options of {@link runDemo}. */
export interface DemoOptions {
  /** The operator's validated config: its backend, image and limits are used. */
  readonly config: TerminalConfig;
  /** Berth's process environment, read only to find the engine (`DOCKER_HOST`, ...). */
  readonly environment?: Readonly<Record<string, string | undefined>>;
  /** Receives each line of the narration as it happens. */
  readonly log?: (line: string) => void;
  /** Progress of long engine operations (pulls, first containers). */
  readonly onProgress?: (event: unknown) => void;
  /** @default 'localhost/berth-busybox:latest' */
  readonly fallbackImage?: string;
}

/** One attempt of one demo user to read something. */
export interface DemoAttempt {
  /** Who tried, e.g. `telegram:123456789`. */
  readonly user: string;
  /** What they tried to read, e.g. `own file` or `GITHUB_TOKEN of whatsapp:+15550001234`. */
  readonly tried: string;
  /** What came back, as the chat would show it (secret values masked). */
  readonly saw: string;
  /** Whether this is what isolation requires (own things seen, others' things not). */
  readonly ok: boolean;
}

/** What {@link runDemo} found. */
export interface DemoReport {
  readonly engine: string;
  readonly image: string;
  readonly sandboxDir: string;
  readonly users: ReadonlyArray<{ readonly identity: string; readonly prefix: string; readonly folder: string }>;
  readonly attempts: readonly DemoAttempt[];
  /** True when every attempt was `ok`. */
  readonly isolationHeld: boolean;
  /** True when every container and the temporary sandbox root were removed. */
  readonly cleanedUp: boolean;
}

interface DemoUser {
  readonly label: string;
  readonly platform: string;
  readonly rawId: string;
  identity: Identity;
  token: string;
  note: string;
  file: string;
  paths?: SandboxPaths;
  scopeKey?: string;
}

function randomDigits(length: number): string {
  let out = String(randomInt(1, 10));
  while (out.length < length) out += String(randomInt(0, 10));
  return out;
}

async function chooseImage(options: DemoOptions, log: (line: string) => void): Promise<{ engine: string; image: string }> {
  const configured = options.config.docker_image;
  const fallback = options.fallbackImage ?? LOCAL_BASE_IMAGE;
  const backend = await createBackend(options.config, { ...(options.environment ? { environment: options.environment } : {}) });
  try {
    const description = await backend.describe({ image: configured });
    const engine = `${description.engine} ${description.version} (API ${description.apiVersion}) at ${description.endpoint}`;
    if (description.image?.present) return { engine, image: configured };
    if ((await backend.describe({ image: fallback })).image?.present) {
      log(`image ${configured} is not on the engine; the demo uses the local base image ${fallback} (a gateway pulls ${configured} at its first command)`);
      return { engine, image: fallback };
    }
    log(`image ${configured} is not on the engine; it is pulled at the first command`);
    return { engine, image: configured };
  } finally {
    await backend.close();
  }
}

/**
 * Berth's main job, played end to end on the local engine: two Telegram users and one WhatsApp
 * user talk to a gateway (an in-process host that registers the plugin and sets the session per
 * message), each writes a file and reads its own `GITHUB_TOKEN` and a forwarded global variable,
 * then each tries to read the others' files and variables. Everything created is removed.
 */
export async function runDemo(options: DemoOptions): Promise<DemoReport> {
  const log = options.log ?? (() => {});
  const { engine, image } = await chooseImage(options, log);
  const run = randomBytes(3).toString('hex');
  const users: DemoUser[] = [
    { label: 'alice', platform: 'telegram', rawId: randomDigits(9) },
    { label: 'bob', platform: 'telegram', rawId: randomDigits(10) },
    { label: 'carol', platform: 'whatsapp', rawId: `+1555${randomDigits(7)}` },
  ].map((user) => ({
    ...user,
    identity: { platform: user.platform, id: user.rawId },
    token: `ghp_${user.label}_${randomBytes(8).toString('hex')}`,
    note: `note of ${user.label} ${run}`,
    file: `${user.label}-notes.txt`,
  }));

  const sandboxDir = await mkdtemp(path.join(os.tmpdir(), 'berth-demo-'));
  const shared = `shared-${randomBytes(8).toString('hex')}`;
  const demoConfig = {
    ...options.config,
    sandbox_dir: sandboxDir,
    docker_image: image,
    docker_user_sandbox: true,
    container_persistent: true,
    docker_forward_env: ['SHARED_NOTICE'],
    docker_identity_links: [],
  };

  // The demo's own gateway environment: one credential per user, under each user's exact prefix.
  const platforms = await createBerthPlatformRegistry(demoConfig);
  const environment: Record<string, string> = { SHARED_NOTICE: shared };
  const prefixOf = (identity: Identity) => `${demoConfig.docker_user_env_prefix}_${platforms.envPlatform(identity.platform)}_${platforms.envName(identity)}_`;
  for (const user of users) {
    user.identity = platforms.resolve(user.platform, user.rawId);
    environment[`${prefixOf(user.identity)}GITHUB_TOKEN`] = user.token;
  }

  const terminal = createInProcessTerminalRegistry();
  const plugin = createBerthPlugin(options.onProgress ? { onProgress: options.onProgress } : {});
  const attempts: DemoAttempt[] = [];
  let cleanedUp = false;
  try {
    await plugin.register({ specificationVersion: 'v1', terminal, config: demoConfig, environment });
    const berth = plugin.instances[0]!;
    for (const user of users) {
      // The sandbox each user's messages go to, decided as for every message (core's resolveScope).
      const request = berth.request({ session: { platform: user.platform, userId: user.rawId }, taskId: `berth-demo-${run}` });
      user.paths = request.paths;
      user.scopeKey = request.scope.key;
    }
    const provider = terminal.get(providerNameFor(demoConfig.backend));
    const session: TerminalEnvironment = await provider.createEnvironment({ taskId: `berth-demo-${run}` });
    // What the host does for every incoming message: set the session, then run the tool.
    const message = (user: DemoUser, command: string) =>
      runWithSession({ platform: user.platform, userId: user.rawId, chatId: user.rawId, taskId: `berth-demo-${run}` }, () =>
        session.execute(command, { timeout: 60 }),
      );

    log(`engine: ${engine}`);
    log(`image: ${image}`);
    log(`sandbox root: ${sandboxDir} (temporary)`);
    for (const user of users) log(`${user.label} is ${formatIdentity(user.identity)}; their GITHUB_TOKEN is ${prefixOf(user.identity)}GITHUB_TOKEN`);
    log('');
    log('round 1: each user writes a note and reads their own credentials (the three messages run at once)');
    const own = await Promise.all(
      users.map((user) =>
        message(
          user,
          `printf '%s\\n' '${user.note}' > /workspace/${user.file} && cat /workspace/${user.file} && ` +
            'echo "GITHUB_TOKEN=$GITHUB_TOKEN" && echo "SHARED_NOTICE=$SHARED_NOTICE"',
        ),
      ),
    );
    for (const [index, user] of users.entries()) {
      const who = formatIdentity(user.identity);
      const output = own[index]!.output;
      log(`  ${user.label} (${who}) -> ${output.trimEnd().split('\n').join(' | ')}`);
      const lines = output.split('\n');
      const tokenLine = lines.find((line) => line.startsWith('GITHUB_TOKEN=')) ?? '';
      const sharedLine = lines.find((line) => line.startsWith('SHARED_NOTICE=')) ?? '';
      const tokenSeen = tokenLine === `GITHUB_TOKEN=${user.token}` || tokenLine === 'GITHUB_TOKEN=***';
      const sharedSeen = sharedLine === `SHARED_NOTICE=${shared}` || sharedLine === 'SHARED_NOTICE=***';
      const othersToken = users.some((other) => other !== user && output.includes(other.token));
      attempts.push({
        user: who,
        tried: 'own file',
        saw: output.includes(user.note) ? `"${user.note}"` : `nothing (exit ${own[index]!.returncode})`,
        ok: own[index]!.returncode === 0 && output.includes(user.note),
      });
      attempts.push({
        user: who,
        tried: 'own GITHUB_TOKEN',
        saw: tokenSeen ? '*** (its own token)' : othersToken ? "ANOTHER USER'S TOKEN" : 'nothing',
        ok: tokenSeen && !othersToken,
      });
      attempts.push({ user: who, tried: 'SHARED_NOTICE (forwarded to all)', saw: sharedSeen ? '*** (the shared value)' : 'nothing', ok: sharedSeen });
    }

    log("round 2: each user tries to read the others' notes and credentials");
    const probes = await Promise.all(
      users.map((user) => {
        const others = users.filter((other) => other !== user);
        const reads = others.map((other) => `cat /workspace/${other.file} /root/${other.file} '${other.paths!.workspace}/${other.file}' 2>&1`).join('; ');
        return message(user, `${reads}; ls -a /workspace /root 2>&1; env`);
      }),
    );
    for (const [index, user] of users.entries()) {
      const output = probes[index]!.output;
      for (const other of users.filter((candidate) => candidate !== user)) {
        const otherName = formatIdentity(other.identity);
        // `ls` prints one name a line when piped: the other's file name on a line of its own is a leak too.
        const fileLeak = output.includes(other.note) || output.split('\n').includes(other.file);
        const tokenLeak = output.includes(other.token) || output.includes(prefixOf(other.identity));
        attempts.push({
          user: formatIdentity(user.identity),
          tried: `file of ${otherName}`,
          saw: fileLeak ? `LEAKED "${other.note}"` : 'nothing (no such file)',
          ok: !fileLeak,
        });
        attempts.push({
          user: formatIdentity(user.identity),
          tried: `GITHUB_TOKEN of ${otherName}`,
          saw: tokenLeak ? 'LEAKED its token' : 'nothing (not in its environment)',
          ok: !tokenLeak,
        });
      }
    }
    await session.cleanup();
  } finally {
    cleanedUp = await removeEverything(plugin, users, sandboxDir, log);
  }
  const report: DemoReport = {
    engine,
    image,
    sandboxDir,
    users: users.map((user) => ({ identity: formatIdentity(user.identity), prefix: prefixOf(user.identity), folder: user.paths?.folder ?? '' })),
    attempts,
    isolationHeld: attempts.length > 0 && attempts.every((attempt) => attempt.ok),
    cleanedUp,
  };
  return report;
}

async function removeEverything(
  plugin: ReturnType<typeof createBerthPlugin>,
  users: readonly DemoUser[],
  sandboxDir: string,
  log: (line: string) => void,
): Promise<boolean> {
  let clean = true;
  const berth = plugin.instances[0];
  if (berth) {
    for (const user of users) {
      if (!user.scopeKey) continue;
      try {
        await berth.backend.remove(user.scopeKey, { purge: true, ...(user.paths ? { paths: user.paths } : {}) });
      } catch (error) {
        clean = false;
        log(`could not remove the sandbox of ${user.scopeKey}: ${(error as Error).message}`);
      }
    }
    try {
      const left = (await berth.backend.list()).filter((info) => users.some((user) => user.scopeKey === info.scopeKey));
      if (left.length > 0) {
        clean = false;
        log(`still on the engine: ${left.map((info) => info.containerName).join(', ')}`);
      }
    } catch {
      clean = false;
    }
  }
  await plugin.close();
  await releaseDisksUnder(sandboxDir);
  await rm(sandboxDir, { recursive: true, force: true });
  return clean;
}
