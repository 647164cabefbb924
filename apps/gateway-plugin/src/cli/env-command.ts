import { createBerthResolver } from '../create-berth.js';
import type { CliIo } from './cli-io.js';
import { buildEnvironmentReport, formatEnvironmentReport } from './environment-report.js';
import { cliTarget } from './cli-target.js';
import { loadCliConfig } from './load-cli-config.js';
import type { CliOptions } from './parse-cli-arguments.js';

/** `berth env`: the variables (masked) of the sandbox a session gets, and the prefix to set a user's; no engine needed. */
export async function runEnvCommand(io: CliIo, options: CliOptions): Promise<number> {
  const { config } = loadCliConfig(io, options.config);
  const resolver = await createBerthResolver({ config, environment: io.environment, resolveFrom: io.cwd });
  const target = cliTarget(options, resolver.registry);
  const report = buildEnvironmentReport(resolver, resolver.resolve({ ...(target.session ? { session: target.session } : {}), taskId: target.taskId }));
  io.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : formatEnvironmentReport(report));
  return 0;
}
