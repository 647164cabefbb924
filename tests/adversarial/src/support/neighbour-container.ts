import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { promisify } from 'node:util';
import { ATTACK_IMAGE } from './attack-gateway.js';

const run = promisify(execFile);

/**
 * A container that is not Berth's, as an operator's other services on the gateway host are: an
 * HTTP server (busybox httpd) answering `answer` on port 80 of its engine's default network
 * (Docker's `docker0`, Podman's `podman0`), published on a host port the engine picks, so the
 * host DNATs that port on every one of its addresses to the container's address.
 */
export interface NeighbourContainer {
  readonly engine: 'docker' | 'podman';
  /** The container's address on its engine's network. */
  readonly address: string;
  /** The host port published to the container's port 80. */
  readonly hostPort: number;
  /** What the server answers (the last line of its page). */
  readonly answer: string;
  /** Removes the container; safe to call twice, and after a start that failed half-way. */
  close(): Promise<void>;
}

/** GETs `/` from the host; the page's last line, or `undefined` when nothing answers yet. */
const fetchPage = (url: string): Promise<string | undefined> =>
  new Promise((resolve) => {
    const request = http.get(url, { timeout: 2_000 }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => resolve(text.trim().split('\n').at(-1)));
    });
    request.on('timeout', () => request.destroy());
    request.on('error', () => resolve(undefined));
  });

/**
 * Starts a neighbour with the engine's own CLI and waits until it answers the host. Podman is
 * given explicit ulimits: on the CI machines its defaults cannot be applied (runc fails with
 * "error setting rlimit type 7/6").
 */
export async function startNeighbourContainer(engine: 'docker' | 'podman'): Promise<NeighbourContainer> {
  const name = `berth-attack-neighbour-${randomBytes(4).toString('hex')}`;
  const answer = `neighbour-secret-${engine}-${randomBytes(4).toString('hex')}`;
  const close = async (): Promise<void> => {
    await run(engine, ['rm', '-f', name]).catch(() => undefined);
  };
  try {
    const limits = engine === 'podman' ? ['--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=1024:1024'] : [];
    const serve = `mkdir -p /www && echo ${answer} > /www/index.html && exec httpd -f -p 80 -h /www`;
    await run(engine, ['run', '-d', '--name', name, ...limits, '-p', '80', ATTACK_IMAGE, 'sh', '-c', serve]);
    const address = (await run(engine, ['inspect', '-f', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}', name])).stdout.trim();
    // `0.0.0.0:32768`, and for Docker a second line for IPv6.
    const published = (await run(engine, ['port', name, '80/tcp'])).stdout.trim().split('\n')[0] ?? '';
    const hostPort = Number(published.slice(published.lastIndexOf(':') + 1));
    if (!/^\d+\.\d+\.\d+\.\d+$/.test(address) || !Number.isInteger(hostPort) || hostPort <= 0) {
      throw new Error(
        `the ${engine} neighbour ${name} has no address or published port (address ${JSON.stringify(address)}, port ${JSON.stringify(published)})`,
      );
    }
    // Waited for, not timed: the server answers once its shell ran.
    for (let attempt = 0; attempt < 50 && (await fetchPage(`http://${address}/`)) !== answer; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    if ((await fetchPage(`http://${address}/`)) !== answer) throw new Error(`the ${engine} neighbour ${name} does not answer on ${address}:80`);
    return { engine, address, hostPort, answer, close };
  } catch (error) {
    await close();
    throw error;
  }
}
