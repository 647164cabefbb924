import { describeRunningCap, localHostSize } from '@berth/sandbox-runtime';
import { createBackend } from '../create-backend.js';
import type { CliIo } from './cli-io.js';
import { formatTable } from './format-table.js';
import { loadCliConfig } from './load-cli-config.js';
import type { CliOptions } from './parse-cli-arguments.js';
import { SANDBOX_TABLE_HEADERS, sandboxRecordRow, stringifyForDisplay, toSandboxRecord } from './sandbox-record.js';

/** `berth ls`: every sandbox Berth owns on the engine, as a table or as JSON. */
export async function runLsCommand(io: CliIo, options: CliOptions): Promise<number> {
  const { config } = loadCliConfig(io, options.config);
  const backend = await createBackend(config, { environment: io.environment });
  try {
    // The engine's description (for the last line) is asked while the sandboxes are listed.
    const describing = options.json || config.backend === 'kubernetes' ? undefined : backend.describe().catch(() => undefined);
    const records = (await backend.list()).map(toSandboxRecord).sort((a, b) => (a.scope < b.scope ? -1 : a.scope > b.scope ? 1 : 0));
    if (options.json) io.stdout.write(`${stringifyForDisplay(records)}\n`);
    else if (records.length === 0) io.stdout.write('no sandboxes\n');
    else io.stdout.write(formatTable(SANDBOX_TABLE_HEADERS, records.map(sandboxRecordRow)));
    if (describing) {
      // How many may run, and why: the engine's description says whether the shared bound holds.
      const description = await describing;
      const running = records.filter((record) => record.state === 'running').length;
      io.stdout.write(`${running} running; ${describeRunningCap(config, { ...localHostSize(), ...(description?.host ?? {}) }, description?.sharedBound)}\n`);
    }
    return 0;
  } finally {
    await backend.close();
  }
}
