import { describeRunningCap, localHostSize } from '@berth/sandbox-runtime';
import path from 'node:path';
import { createBerth } from '../create-berth.js';
import type { CliIo } from './cli-io.js';
import { formatTable } from './format-table.js';
import { filesOnlyRecords } from './files-only-scopes.js';
import { loadCliConfig } from './load-cli-config.js';
import type { CliOptions } from './parse-cli-arguments.js';
import { SANDBOX_TABLE_HEADERS, type SandboxRecord, sandboxRecordRow, stringifyForDisplay, toSandboxRecord } from './sandbox-record.js';

/** `berth ls`: every sandbox Berth owns on the engine, as a table or as JSON. */
export async function runLsCommand(io: CliIo, options: CliOptions): Promise<number> {
  const { config } = loadCliConfig(io, options.config);
  const berth = await createBerth({ config, environment: io.environment, resolveFrom: io.cwd });
  const { backend } = berth;
  try {
    // The engine's description (for the last line) is asked while the sandboxes are listed.
    const describing = options.json || config.backend === 'kubernetes' ? undefined : backend.describe({ runtimeVersions: false }).catch(() => undefined);
    const containers = (await backend.list()).map(toSandboxRecord);
    // Scopes that hold only files (no container) are listed too, so they can be found and removed.
    const filesOnly =
      config.backend !== 'kubernetes'
        ? filesOnlyRecords(berth.request({}).paths.root, berth.request, new Set(containers.map((record) => path.basename(path.dirname(record.workspace)))))
        : [];
    const key = (record: SandboxRecord): string => record.scope ?? `~${record.workspace}`;
    const records = [...containers, ...filesOnly].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
    if (options.json) io.stdout.write(`${stringifyForDisplay(records)}\n`);
    else if (records.length === 0) io.stdout.write('no sandboxes\n');
    else io.stdout.write(formatTable(SANDBOX_TABLE_HEADERS, records.map(sandboxRecordRow)));
    if (!options.json && filesOnly.length > 0) {
      io.stdout.write(
        `${filesOnly.length} with files only (no container): the next command of its user or task makes the container again; ` +
          'berth rm --purge with its --platform/--user or --task removes the files\n',
      );
    }
    if (describing) {
      // How many may run, and why: the engine's description says whether the shared bound holds.
      const description = await describing;
      const running = records.filter((record) => record.state === 'running').length;
      io.stdout.write(`${running} running; ${describeRunningCap(config, { ...localHostSize(), ...(description?.host ?? {}) }, description?.sharedBound)}\n`);
    }
    return 0;
  } finally {
    await berth.close();
  }
}
