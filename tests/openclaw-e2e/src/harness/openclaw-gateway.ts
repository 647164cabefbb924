import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

/** The pinned OpenClaw, installed by scripts/install-openclaw.sh outside the repository. */
export interface OpenClawInstall {
  /** `openclaw.mjs`, the package's command. */
  readonly cli: string;
  /** The Node binary that runs it (OpenClaw needs Node 24.16 or newer). */
  readonly node: string;
  readonly version: string;
}

const RUN_IT = 'run it with "pnpm --filter @berth/openclaw-e2e test:e2e" (scripts/run-e2e.sh installs the pinned openclaw and packs the plugin first)';

/** Reads `BERTH_OPENCLAW_HOME` and `BERTH_OPENCLAW_NODE` (set by scripts/run-e2e.sh); fails loudly when they are missing. */
export function locateOpenClaw(expectedVersion: string): OpenClawInstall {
  const home = process.env.BERTH_OPENCLAW_HOME;
  if (!home) throw new Error(`BERTH_OPENCLAW_HOME is not set, so there is no OpenClaw to test inside; ${RUN_IT}`);
  const manifest = path.join(home, 'node_modules', 'openclaw', 'package.json');
  if (!existsSync(manifest)) throw new Error(`${manifest} is missing: OpenClaw is not installed in ${home}; ${RUN_IT}`);
  const version = (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
  if (version !== expectedVersion) throw new Error(`${home} holds openclaw ${version}, not the pinned ${expectedVersion}; ${RUN_IT}`);
  const node = process.env.BERTH_OPENCLAW_NODE || process.execPath;
  if (!existsSync(node)) throw new Error(`BERTH_OPENCLAW_NODE names ${node}, which does not exist; ${RUN_IT}`);
  return { cli: path.join(home, 'node_modules', 'openclaw', 'openclaw.mjs'), node, version };
}

/** The plugin archive scripts/run-e2e.sh packed (`BERTH_OPENCLAW_PLUGIN_ARCHIVE`). */
export function locatePluginArchive(): string {
  const archive = process.env.BERTH_OPENCLAW_PLUGIN_ARCHIVE;
  if (!archive || !existsSync(archive))
    throw new Error(`BERTH_OPENCLAW_PLUGIN_ARCHIVE ${archive ? `names ${archive}, which does not exist` : 'is not set'}; ${RUN_IT}`);
  return archive;
}

/** Everything one gateway owns, inside one temporary folder. */
export interface GatewayHome {
  readonly root: string;
  readonly configPath: string;
  readonly stateDir: string;
  readonly logFile: string;
  /** The gateway's whole environment. */
  readonly environment: Record<string, string>;
}

/**
 * The folders and environment of a gateway that keeps everything under `root`: `HOME`,
 * `OPENCLAW_STATE_DIR`, `OPENCLAW_CONFIG_PATH`, `TMPDIR`. Outbound traffic is sent to
 * `proxyUrl` (a proxy that forwards nothing), and OpenClaw's update checks, mDNS and npm's
 * registry access are off. `extra` adds variables (the users' `HERMES_USER_…` credentials).
 */
export function createGatewayHome(root: string, options: { proxyUrl: string; extra?: Record<string, string> }): GatewayHome {
  const home = path.join(root, 'home');
  const stateDir = path.join(root, 'state');
  const tmp = path.join(root, 'tmp');
  for (const folder of [home, stateDir, tmp]) mkdirSync(folder, { recursive: true });
  const configPath = path.join(root, 'openclaw.json');
  const logFile = path.join(root, 'gateway.log');
  const environment: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    LANG: 'C.UTF-8',
    HOME: home,
    TMPDIR: tmp,
    OPENCLAW_STATE_DIR: stateDir,
    OPENCLAW_CONFIG_PATH: configPath,
    // Berth's own defaults stay inside the test too (the plugin config names sandbox_dir).
    HERMES_HOME: path.join(root, 'hermes'),
    // Keep the tracked process the gateway itself, and nothing advertised or fetched.
    OPENCLAW_NO_RESPAWN: '1',
    OPENCLAW_NO_AUTO_UPDATE: '1',
    OPENCLAW_DISABLE_BONJOUR: '1',
    OPENCLAW_SKIP_GMAIL_WATCHER: '1',
    OPENCLAW_SKIP_BROWSER_CONTROL_SERVER: '1',
    OPENCLAW_SKIP_CANVAS_HOST: '1',
    HTTP_PROXY: options.proxyUrl,
    HTTPS_PROXY: options.proxyUrl,
    ALL_PROXY: options.proxyUrl,
    http_proxy: options.proxyUrl,
    https_proxy: options.proxyUrl,
    NO_PROXY: '127.0.0.1,localhost,::1',
    no_proxy: '127.0.0.1,localhost,::1',
    NODE_USE_ENV_PROXY: '1',
    npm_config_offline: 'true',
    npm_config_update_notifier: 'false',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    ...(process.env.DOCKER_HOST ? { DOCKER_HOST: process.env.DOCKER_HOST } : {}),
    ...options.extra,
  };
  return { root, configPath, stateDir, logFile, environment };
}

/** A port nothing listens on right now, on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Runs `openclaw ARGS` as the gateway's user would, in its environment; resolves with the output or rejects with it. */
export function runOpenClaw(install: OpenClawInstall, home: GatewayHome, args: string[], timeoutMs = 120_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      install.node,
      [install.cli, ...args],
      { env: home.environment, cwd: home.root, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const output = `${stdout}${stderr}`.trim();
        if (error) reject(new Error(`openclaw ${args.join(' ')} failed (${error.code ?? error.signal}): ${output.split('\n').slice(-8).join(' | ')}`));
        else resolve(output);
      },
    );
  });
}

/** Deep-merges `patch` into the `openclaw.json` the CLI wrote (objects merge, everything else replaces). */
export function updateConfig(home: GatewayHome, patch: Record<string, unknown>): Record<string, unknown> {
  const merge = (base: unknown, addition: unknown): unknown => {
    if (typeof base !== 'object' || base === null || Array.isArray(base) || typeof addition !== 'object' || addition === null || Array.isArray(addition))
      return addition;
    const result: Record<string, unknown> = { ...(base as Record<string, unknown>) };
    for (const [key, value] of Object.entries(addition)) result[key] = merge(result[key], value);
    return result;
  };
  const current = existsSync(home.configPath) ? (JSON.parse(readFileSync(home.configPath, 'utf8')) as Record<string, unknown>) : {};
  const next = merge(current, patch) as Record<string, unknown>;
  writeFileSync(home.configPath, `${JSON.stringify(next, null, 2)}\n`);
  return next;
}

/** A running `openclaw gateway`. */
export interface RunningGateway {
  readonly process: ChildProcess;
  /** What the gateway printed so far. */
  output(): string;
  /** The gateway's log file (`logging.file`) so far. */
  log(): string;
  /** Resolves when the output matches; rejects on exit or after `timeoutMs`, with the output's tail. */
  waitForOutput(pattern: RegExp, timeoutMs: number): Promise<void>;
  /** Kills the gateway and every process it started (it ignores SIGTERM for minutes while draining). */
  stop(): Promise<void>;
}

/** Starts `openclaw gateway --bind loopback` in its own process group. */
export function startGateway(install: OpenClawInstall, home: GatewayHome): RunningGateway {
  const child = spawn(install.node, [install.cli, 'gateway', '--bind', 'loopback'], {
    env: home.environment,
    cwd: home.root,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const watchers = new Set<() => void>();
  const append = (chunk: Buffer): void => {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: terminal colour codes start with ESC, what it strips
    output += chunk.toString('utf8').replace(/\u001b\[[0-9;]*m/g, '');
    for (const watcher of watchers) watcher();
  };
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const tail = (): string => output.trim().split('\n').slice(-12).join('\n');
  return {
    process: child,
    output: () => output,
    log: () => (existsSync(home.logFile) ? readFileSync(home.logFile, 'utf8') : ''),
    waitForOutput(pattern, timeoutMs) {
      if (pattern.test(output)) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const done = (error?: Error): void => {
          clearTimeout(timer);
          watchers.delete(check);
          if (error) reject(error);
          else resolve();
        };
        const check = (): void => {
          if (pattern.test(output)) done();
        };
        const timer = setTimeout(
          () => done(new Error(`the gateway printed no ${pattern} within ${timeoutMs / 1000} s; its last lines:\n${tail()}`)),
          timeoutMs,
        );
        watchers.add(check);
        void exited.then((code) => done(new Error(`the gateway exited (${code}) before printing ${pattern}; its last lines:\n${tail()}`)));
      });
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // Already gone.
      }
      await exited;
    },
  };
}
