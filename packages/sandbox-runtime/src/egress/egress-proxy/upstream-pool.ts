import type { Duplex } from 'node:stream';
import { ByteReader } from './byte-reader.js';

/** An upstream connection lent to one exchange (or one passed-through tunnel). */
export interface UpstreamLease {
  readonly socket: Duplex;
  readonly reader: ByteReader;
  /** Whether it was opened for this lease (else it was kept alive from an earlier one). */
  readonly fresh: boolean;
  /** Gives it back: kept alive for the sandbox's next request to the same place when `reusable`, else closed. */
  release(reusable: boolean): void;
}

interface Connection {
  readonly sandbox: string;
  readonly key: string;
  readonly socket: Duplex;
  readonly reader: ByteReader;
  counted: boolean;
  idleTimer?: NodeJS.Timeout | undefined;
  /** While idle: what closes it if the upstream sends anything. */
  onIdleData?: (() => void) | undefined;
}

interface Waiter {
  readonly key: string;
  readonly connect: () => Promise<Duplex>;
  readonly resolve: (lease: UpstreamLease) => void;
  readonly reject: (error: Error) => void;
}

/**
 * The proxy's connections to upstreams, counted per sandbox and in all (issue 37: 400 pipelined
 * requests must not become 400 sockets). A sandbox holds at most `perSandbox` of them, all
 * sandboxes together at most `total`; past either, a request waits for one to be given back.
 * When all are taken, a sandbox below its fair share (`total` over the sandboxes using the proxy)
 * may close another's idle connection, and waiting sandboxes are served fewest-held first: one
 * user's flood makes that user wait, not the others. A connection is never lent to two sandboxes
 * (a server that ties something to a connection must never see two users on one).
 */
export class UpstreamPool {
  readonly #perSandbox: number;
  readonly #total: number;
  readonly #idleMs: number;
  readonly #idle = new Map<string, Connection[]>();
  readonly #held = new Map<string, number>();
  readonly #waiting = new Map<string, Waiter[]>();
  #count = 0;
  #closed = false;

  constructor(options: { perSandbox: number; total: number; idleMs: number }) {
    this.#perSandbox = options.perSandbox;
    this.#total = options.total;
    this.#idleMs = options.idleMs;
  }

  /** Upstream connections open now, per sandbox (for `berth doctor` and tests). */
  counts(): ReadonlyMap<string, number> {
    return new Map(this.#held);
  }

  /**
   * A connection of `sandbox` to the place `key` names (one kept alive, or a new one from
   * `connect`), when its share allows; waits otherwise. `key` must name everything the
   * connection is for (scheme, host, port): only a connection of the same key is reused.
   */
  acquire(sandbox: string, key: string, connect: () => Promise<Duplex>): Promise<UpstreamLease> {
    if (this.#closed) return Promise.reject(new Error('the egress proxy is closing'));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { key, connect, resolve, reject };
      if (this.#serve(sandbox, waiter)) return;
      const queue = this.#waiting.get(sandbox) ?? [];
      queue.push(waiter);
      this.#waiting.set(sandbox, queue);
    });
  }

  /** Closes a sandbox's idle connections (its last connection to the proxy went a while ago). */
  closeIdle(sandbox: string): void {
    for (const [slot, connections] of this.#idle) {
      if (!slot.startsWith(`${sandbox}\0`)) continue;
      for (const connection of connections) this.#discard(connection);
      this.#idle.delete(slot);
    }
    this.#dispatch();
  }

  close(): void {
    this.#closed = true;
    for (const connections of this.#idle.values()) for (const connection of connections) this.#discard(connection);
    this.#idle.clear();
    for (const queue of this.#waiting.values()) for (const waiter of queue) waiter.reject(new Error('the egress proxy is closing'));
    this.#waiting.clear();
  }

  /** Serves `waiter` now if its sandbox's share allows; false when it must wait. */
  #serve(sandbox: string, waiter: Waiter): boolean {
    const slot = `${sandbox}\0${waiter.key}`;
    const idle = this.#idle.get(slot);
    while (idle && idle.length > 0) {
      const connection = idle.pop()!;
      if (idle.length === 0) this.#idle.delete(slot);
      this.#wake(connection);
      if (connection.socket.destroyed || connection.reader.buffered > 0 || connection.reader.finished) {
        this.#discard(connection);
        continue;
      }
      waiter.resolve(this.#lease(connection, false));
      return true;
    }
    const held = this.#held.get(sandbox) ?? 0;
    if (held >= this.#perSandbox && !this.#evict((connection) => connection.sandbox === sandbox)) return false;
    if (this.#count >= this.#total) {
      // Full: a sandbox under its fair share takes an idle connection of whoever holds the most.
      const users = new Set([...this.#held.keys(), ...this.#waiting.keys(), sandbox]).size;
      const share = Math.max(1, Math.floor(this.#total / users));
      if (held >= share) return false;
      const richest = [...this.#held].sort((a, b) => b[1] - a[1])[0]?.[0];
      if (!this.#evict((connection) => connection.sandbox === richest) && !this.#evict(() => true)) return false;
    }
    this.#count += 1;
    this.#held.set(sandbox, held + 1);
    waiter.connect().then(
      (socket) => {
        const connection: Connection = { sandbox, key: waiter.key, socket, reader: new ByteReader(socket), counted: true };
        socket.once('close', () => {
          this.#uncount(connection);
          this.#dispatch();
        });
        waiter.resolve(this.#lease(connection, true));
      },
      (error: Error) => {
        this.#count -= 1;
        this.#decrement(sandbox);
        waiter.reject(error);
        this.#dispatch();
      },
    );
    return true;
  }

  #lease(connection: Connection, fresh: boolean): UpstreamLease {
    let given = false;
    return {
      socket: connection.socket,
      reader: connection.reader,
      fresh,
      release: (reusable) => {
        if (given) return;
        given = true;
        if (!reusable || this.#closed || connection.socket.destroyed || connection.reader.buffered > 0) {
          this.#discard(connection);
        } else {
          const slot = `${connection.sandbox}\0${connection.key}`;
          const idle = this.#idle.get(slot) ?? [];
          idle.push(connection);
          this.#idle.set(slot, idle);
          // Anything an upstream sends while no request is out is not a response to anything: closed.
          connection.idleTimer = setTimeout(() => this.#drop(connection), this.#idleMs);
          connection.idleTimer.unref();
          connection.onIdleData = () => this.#drop(connection);
          connection.socket.once('data', connection.onIdleData);
        }
        this.#dispatch();
      },
    };
  }

  /** Closes an idle connection and takes it out of the idle lists. */
  #drop(connection: Connection): void {
    const slot = `${connection.sandbox}\0${connection.key}`;
    const idle = this.#idle.get(slot)?.filter((other) => other !== connection) ?? [];
    if (idle.length > 0) this.#idle.set(slot, idle);
    else this.#idle.delete(slot);
    this.#discard(connection);
    this.#dispatch();
  }

  /** Closes one idle connection matching `which`; whether there was one. */
  #evict(which: (connection: Connection) => boolean): boolean {
    for (const [slot, connections] of this.#idle) {
      const index = connections.findIndex(which);
      if (index < 0) continue;
      const [connection] = connections.splice(index, 1);
      if (connections.length === 0) this.#idle.delete(slot);
      this.#discard(connection!);
      return true;
    }
    return false;
  }

  /** Ends a connection's idle watch (it is lent again, or closed). */
  #wake(connection: Connection): void {
    clearTimeout(connection.idleTimer);
    if (connection.onIdleData) connection.socket.off('data', connection.onIdleData);
    connection.onIdleData = undefined;
  }

  #discard(connection: Connection): void {
    this.#wake(connection);
    // Counted out at once, not on 'close': the slot is free for the next request now.
    this.#uncount(connection);
    connection.socket.destroy();
  }

  #uncount(connection: Connection): void {
    if (!connection.counted) return;
    connection.counted = false;
    this.#count -= 1;
    this.#decrement(connection.sandbox);
  }

  #decrement(sandbox: string): void {
    const left = (this.#held.get(sandbox) ?? 1) - 1;
    if (left > 0) this.#held.set(sandbox, left);
    else this.#held.delete(sandbox);
  }

  /** Serves waiting requests, the sandboxes that hold fewest first, until none can be. */
  #dispatch(): void {
    for (let served = true; served && this.#waiting.size > 0; ) {
      served = false;
      const order = [...this.#waiting.keys()].sort((a, b) => (this.#held.get(a) ?? 0) - (this.#held.get(b) ?? 0));
      for (const sandbox of order) {
        const queue = this.#waiting.get(sandbox)!;
        if (!this.#serve(sandbox, queue[0]!)) continue;
        queue.shift();
        if (queue.length === 0) this.#waiting.delete(sandbox);
        served = true;
        break;
      }
    }
  }
}
