import net from 'node:net';

/**
 * Fails unless this process has no route off the machine: a connection to 192.0.2.1 (TEST-NET-1,
 * never a real host) must be refused as unreachable at once. scripts/run-e2e.sh runs the test in
 * a network namespace whose only interface is loopback, so nothing the gateway tries can leave.
 */
export function assertOffline(): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '192.0.2.1', port: 80 });
    const refuse = (reason: string): void => {
      socket.destroy();
      reject(
        new Error(
          `this test must run with nothing but loopback (${reason}); ` +
            'run it through "pnpm --filter @berth/openclaw-e2e test:e2e", which starts it in a network namespace of its own (unshare --net, as root)',
        ),
      );
    };
    const timer = setTimeout(() => refuse('a connection to 192.0.2.1 did not fail at once, so there is a route'), 1500);
    socket.once('connect', () => {
      clearTimeout(timer);
      refuse('a connection to 192.0.2.1 succeeded');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (error.code === 'ENETUNREACH' || error.code === 'EHOSTUNREACH') resolve();
      else refuse(`a connection to 192.0.2.1 failed with ${error.code}, not as unreachable`);
    });
  });
}
