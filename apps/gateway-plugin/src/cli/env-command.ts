import { createBerthResolver } from '../create-berth.js';
import type { CliIo } from './cli-io.js';
import { buildEnvironmentReport, formatEnvironmentReport } from './environment-report.js';
import { loadCliConfig } from './load-cli-config.js';
import type { CliOptions } from './parse-cli-arguments.js';

/** `berth env`: a user's sandbox variables (masked) and the prefix to set them; no engine needed. */
export async function runEnvCommand(io: CliIo, options: CliOptions): Promise<number> {
  const { config } = loadCliConfig(io, options.config);
  const resolver = await createBerthResolver({ config, environment: io.environment, resolveFrom: io.cwd });
  const identity = resolver.registry.resolve(options.platform!, options.user!);
  const report = buildEnvironmentReport(resolver, identity);
  io.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : formatEnvironmentReport(report));
  return 0;
}
