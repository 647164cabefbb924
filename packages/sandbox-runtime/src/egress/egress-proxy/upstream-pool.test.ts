import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { UpstreamPool } from './upstream-pool.js';

/** A stand-in upstream connection. */
const connection = async () => new PassThrough();

describe('the upstream pool', () => {
  it('holds a sandbox to its cap: the next request waits until one is given back, and reuses it', async () => {
    const pool = new UpstreamPool({ perSandbox: 2, total: 10, idleMs: 10_000 });
    const first = await pool.acquire('a', 'https://x:443', connection);
    const second = await pool.acquire('a', 'https://x:443', connection);
    let third: Awaited<ReturnType<typeof pool.acquire>> | undefined;
    void pool.acquire('a', 'https://x:443', connection).then((lease) => (third = lease));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(third).toBeUndefined();
    expect(pool.counts().get('a')).toBe(2);
    first.release(true);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(third?.socket).toBe(first.socket);
    expect(third?.fresh).toBe(false);
    second.release(false);
    third?.release(false);
    expect(pool.counts().get('a')).toBeUndefined();
    pool.close();
  });

  it('shares a full pool fairly: a sandbox below its share takes an idle connection of the one holding most, and waiters holding fewest go first', async () => {
    const pool = new UpstreamPool({ perSandbox: 8, total: 4, idleMs: 10_000 });
    const hog = await Promise.all(Array.from({ length: 4 }, () => pool.acquire('hog', 'https://x:443', connection)));
    // One of the hog's goes idle; the newcomer takes its place at once.
    hog[0]!.release(true);
    const newcomer = await pool.acquire('new', 'https://y:443', connection);
    expect(pool.counts()).toEqual(
      new Map([
        ['hog', 3],
        ['new', 1],
      ]),
    );
    // Both wait now; when one is given back, the newcomer (holding fewer) is served first.
    const order: string[] = [];
    void pool.acquire('hog', 'https://x:443', connection).then(() => order.push('hog'));
    void pool.acquire('new', 'https://y:443', connection).then(() => order.push('new'));
    hog[1]!.release(false);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(order).toEqual(['new']);
    newcomer.release(false);
    pool.close();
  });

  it('never lends a connection that has bytes left over, or that the upstream wrote to while idle', async () => {
    const pool = new UpstreamPool({ perSandbox: 4, total: 4, idleMs: 10_000 });
    // Bytes left over: the upstream sent more than the response it gave (the reader still holds
    // them) when the lease is given back as reusable. Closed at once, never kept idle.
    const leftover = await pool.acquire('a', 'k', connection);
    (leftover.socket as PassThrough).write('HTTP/1.1 200 OK\r\n\r\n');
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(leftover.reader.buffered).toBeGreaterThan(0);
    leftover.release(true);
    expect(leftover.socket.destroyed).toBe(true);
    expect(pool.counts().get('a')).toBeUndefined();
    // Written to while idle.
    const lease = await pool.acquire('a', 'k', connection);
    expect(lease.socket).not.toBe(leftover.socket);
    lease.release(true);
    (lease.socket as PassThrough).write('HTTP/1.1 200 OK\r\n\r\n');
    await new Promise((resolve) => setTimeout(resolve, 20));
    const next = await pool.acquire('a', 'k', connection);
    expect(next.socket).not.toBe(lease.socket);
    expect(lease.socket.destroyed).toBe(true);
    pool.close();
  });
});
