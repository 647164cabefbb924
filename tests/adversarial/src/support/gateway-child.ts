/*
 * A gateway as its own process, for the SIGKILL fault: registers the plugin, then reads one JSON
 * request per line on stdin and answers one JSON line on stdout. Run with Node's type
 * stripping (`node gateway-child.ts`); it imports packages only, so no loader is needed.
 *
 * Requests: {"id":1,"platform":"telegram","userId":"1","command":"ls"}.
 * The `terminal:` section comes from $BERTH_ATTACK_CONFIG (JSON).
 */
import { createInterface } from 'node:readline';
import { runWithSession, type TerminalEnvironmentProviderV1 } from '@berth/core';
import { createBerthPlugin } from '@berth/gateway-plugin';

const providers = new Map<string, TerminalEnvironmentProviderV1>();
const plugin = createBerthPlugin();
await plugin.register({
  specificationVersion: 'v1',
  terminal: { specificationVersion: 'v1', registerEnvironmentProvider: (provider) => void providers.set(provider.name, provider) },
  config: JSON.parse(process.env.BERTH_ATTACK_CONFIG ?? '{}') as unknown,
  environment: {},
});
const tool = await providers.get('berth-docker')!.createEnvironment({ taskId: 'child' });
const answer = (value: unknown): void => void process.stdout.write(`${JSON.stringify(value)}\n`);
answer({ ready: process.pid });

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const request = JSON.parse(line) as { id: number; platform?: string; userId?: string; command?: string };
  // Requests run concurrently, as a gateway handles messages.
  void (async () => {
    try {
      const result = await runWithSession({ platform: request.platform!, userId: request.userId! }, () => tool.execute(request.command!));
      answer({ id: request.id, ...result });
    } catch (error) {
      answer({ id: request.id, error: (error as Error).message });
    }
  })();
}
