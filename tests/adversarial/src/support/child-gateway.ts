import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { rmSync } from 'node:fs';
import { releaseDisksUnder } from '@berth/gateway-plugin';
import { removeContainersUnder, within } from './attack-gateway.js';

/** The gateway as a process of its own (gateway-child.ts), for faults that kill it. */
export interface ChildGateway {
  readonly process: ChildProcessWithoutNullStreams;
  /** Sends one request (`platform`, `userId`, `command`); resolves with its answer line. */
  send(request: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Kills it with SIGKILL and waits until it is gone. */
  kill(): Promise<void>;
}

const CHILD = path.join(import.meta.dirname, 'gateway-child.ts');

/** Starts a gateway child with the `terminal:` section `config`; `children` collects it for the suite's clean-up. */
export async function startChildGateway(config: Record<string, unknown>, children: ChildProcessWithoutNullStreams[]): Promise<ChildGateway> {
  const child = spawn(process.execPath, [CHILD], { env: { ...process.env, BERTH_ATTACK_CONFIG: JSON.stringify(config) }, stdio: ['pipe', 'pipe', 'pipe'] });
  children.push(child);
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const waiting = new Map<number, (value: Record<string, unknown>) => void>();
  let ready: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (ready = resolve));
  createInterface({ input: child.stdout }).on('line', (line) => {
    const message = JSON.parse(line) as Record<string, unknown>;
    if ('ready' in message) ready();
    waiting.get(message.id as number)?.(message);
  });
  await within(30_000, `the gateway child (stderr: ${stderr})`, started);
  let next = 0;
  return {
    process: child,
    send(request) {
      const id = ++next;
      child.stdin.write(`${JSON.stringify({ id, ...request })}\n`);
      return new Promise((resolve) => waiting.set(id, resolve));
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await gone;
    },
  };
}

/** Kills every gateway child, then removes what they made under `sandboxDir`: containers, disks, folders. */
export async function clearChildGateways(children: readonly ChildProcessWithoutNullStreams[], sandboxDir: string): Promise<void> {
  for (const child of children) child.kill('SIGKILL');
  await removeContainersUnder(sandboxDir);
  await releaseDisksUnder(sandboxDir);
  rmSync(sandboxDir, { recursive: true, force: true });
}
