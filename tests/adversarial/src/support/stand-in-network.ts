import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';

/**
 * A network namespace of the test's own, joined to the host by a veth pair, with an HTTP server
 * that answers `reached <address>` on every address it holds. It stands in for the internet (a
 * TEST-NET-3 address) or for a private service next to the gateway (RFC 1918, CGNAT,
 * link-local): the host routes exactly those addresses into the namespace, so no test packet
 * ever goes to an address anyone else owns.
 */
export interface StandInNetwork {
  /** The addresses the server answers on. */
  readonly addresses: readonly string[];
  readonly port: number;
  /** The host's end of the link. */
  readonly hostAddress: string;
  close(): void;
}

const ip = (...args: string[]): void => void execFileSync('ip', args, { stdio: 'pipe' });

/**
 * A number from 1 to 249 for the caller's stand-in addresses that no other stand-in network on
 * the machine uses now: each address `addresses(n)` names is looked for in the host's routes,
 * where every stand-in network's link and extra addresses show. Two suites run egress cases side
 * by side (the attack cases under runc and under gVisor), and two that picked the same /30 took
 * each other's packets (seen: "Connection refused" from the other's server).
 */
export function freeOctet(addresses: (octet: number) => readonly string[]): number {
  const routes = execFileSync('ip', ['-4', 'route', 'show', 'table', 'all'], { encoding: 'utf8' });
  const taken = new Set(routes.split('\n').map((line) => line.split(' ')[0]!.replace(/\/32$/, '')));
  const start = randomInt(1, 250);
  for (let step = 0; step < 249; step++) {
    const octet = ((start + step - 1) % 249) + 1;
    if (addresses(octet).every((address) => !taken.has(address))) return octet;
  }
  throw new Error('every stand-in address range is taken by other stand-in networks on this machine');
}

/**
 * Starts the namespace: `link` is a /30 (host .1, namespace .2); `extra` are /32s routed into it.
 * `server`: the arguments of a Node process of the caller's own to run there instead of the HTTP
 * server (it prints its port as its first line; each later line goes to `onLine`).
 */
export async function startStandInNetwork(options: {
  link: string;
  extra?: readonly string[];
  server?: readonly string[];
  onLine?: (line: string) => void;
}): Promise<StandInNetwork> {
  const tag = randomBytes(3).toString('hex');
  const namespace = `berth-standin-${tag}`;
  const hostEnd = `bsh${tag}`;
  const peerEnd = `bsp${tag}`;
  const [a, b, c, d] = options.link.split('.').map(Number) as [number, number, number, number];
  const base = d & ~3;
  const hostAddress = `${a}.${b}.${c}.${base + 1}`;
  const peerAddress = `${a}.${b}.${c}.${base + 2}`;
  const extra = options.extra ?? [];
  let server: ChildProcess | undefined;
  const close = (): void => {
    server?.kill('SIGKILL');
    try {
      ip('netns', 'del', namespace);
    } catch {
      // Already gone.
    }
    for (const address of extra) {
      try {
        ip('route', 'del', `${address}/32`);
      } catch {
        // Went with the link.
      }
    }
  };
  try {
    ip('netns', 'add', namespace);
    ip('link', 'add', hostEnd, 'type', 'veth', 'peer', 'name', peerEnd);
    ip('link', 'set', peerEnd, 'netns', namespace);
    ip('addr', 'add', `${hostAddress}/30`, 'dev', hostEnd);
    ip('link', 'set', hostEnd, 'up');
    ip('-n', namespace, 'link', 'set', 'lo', 'up');
    ip('-n', namespace, 'addr', 'add', `${peerAddress}/30`, 'dev', peerEnd);
    for (const address of extra) ip('-n', namespace, 'addr', 'add', `${address}/32`, 'dev', peerEnd);
    ip('-n', namespace, 'link', 'set', peerEnd, 'up');
    ip('-n', namespace, 'route', 'add', 'default', 'via', hostAddress);
    for (const address of extra) ip('route', 'add', `${address}/32`, 'via', peerAddress, 'dev', hostEnd);
    const script =
      "const s=require('http').createServer((q,r)=>r.end('reached " +
      "'+q.socket.localAddress.replace(/^::ffff:/,'')+'\\n')).listen(0,'0.0.0.0',()=>console.log(s.address().port));";
    // Into the network namespace only: `ip netns exec` also makes a mount namespace, a private
    // copy of every mount of the host at that moment, users' disks of concurrent suites among
    // them, which this server then held for its lifetime, so a purge there could not let the
    // disk's loop device go (`berth rm --purge` exited 125 naming this process).
    server = spawn('nsenter', [`--net=/run/netns/${namespace}`, '--', process.execPath, ...(options.server ?? ['-e', script])], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const port = await new Promise<number>((resolve, reject) => {
      let pending = '';
      let first = true;
      server!.stdout!.on('data', (chunk: Buffer) => {
        pending += chunk.toString();
        const lines = pending.split('\n');
        pending = lines.pop()!;
        for (const line of lines) {
          if (first) {
            first = false;
            resolve(Number(line.trim()));
          } else options.onLine?.(line);
        }
      });
      server!.once('exit', (code) => reject(new Error(`the stand-in server in ${namespace} exited (${code})`)));
    });
    return { addresses: [peerAddress, ...extra], port, hostAddress, close };
  } catch (error) {
    close();
    throw error;
  }
}
