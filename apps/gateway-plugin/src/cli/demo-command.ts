import { runDemo, type DemoReport } from '../demo/run-demo.js';
import { colorsFor, progressReporter, type CliIo } from './cli-io.js';
import { formatTable } from './format-table.js';
import { loadCliConfig } from './load-cli-config.js';
import type { CliOptions } from './parse-cli-arguments.js';

/** The human form of a demo report: who tried to read what, and what they saw. */
export function formatDemoReport(report: DemoReport, colors = colorsFor({ isTTY: false }, {})): string {
  const rows = report.attempts.map((attempt) => [attempt.user, attempt.tried, attempt.saw, attempt.ok ? colors.green('ok') : colors.red('LEAK')]);
  let out = formatTable(['USER', 'TRIED TO READ', 'SAW', ''], rows);
  out += '\n';
  out += report.isolationHeld
    ? colors.green("isolation held: every user saw their own note and token, and nothing of the others'.")
    : colors.red('ISOLATION BROKEN: see the rows marked LEAK.');
  out += '\n';
  out += report.cleanedUp
    ? `removed the demo's containers and ${report.sandboxDir}\n`
    : `${colors.yellow(`some of the demo's sandboxes could not be removed; run "berth ls" and "berth rm"`)}\n`;
  return out;
}

/** `berth demo`: exit 0 only when isolation held and everything was removed. */
export async function runDemoCommand(io: CliIo, options: CliOptions): Promise<number> {
  const { config } = loadCliConfig(io, options.config);
  const colors = colorsFor(io.stdout, io.environment);
  const onProgress = progressReporter(io);
  const report = await runDemo({
    config,
    environment: io.environment,
    ...(options.json ? {} : { log: (line: string) => io.stdout.write(`${line}\n`) }),
    ...(onProgress ? { onProgress } : {}),
  });
  if (options.json) io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else io.stdout.write(`\n${formatDemoReport(report, colors)}`);
  return report.isolationHeld && report.cleanedUp ? 0 : 1;
}
