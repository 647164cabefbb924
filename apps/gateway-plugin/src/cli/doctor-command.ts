import { colorsFor, type CliIo } from './cli-io.js';
import type { CliOptions } from './parse-cli-arguments.js';
import { runDoctorChecks } from './run-doctor-checks.js';

export type { DoctorCheck, DoctorReport } from './doctor-report.js';

/** `berth doctor`: exit 0 only when every check passed. */
export async function runDoctorCommand(io: CliIo, options: CliOptions): Promise<number> {
  const report = await runDoctorChecks(io, options);
  if (options.json) {
    io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    const colors = colorsFor(io.stdout, io.environment);
    const mark = { ok: colors.green('ok'), problem: colors.red('PROBLEM'), warning: colors.yellow('warning'), skipped: colors.dim('skipped') };
    for (const check of report.checks) {
      io.stdout.write(`${mark[check.status]}  ${check.name}: ${check.detail}\n`);
      if (check.fix) io.stdout.write(`    -> ${check.fix}\n`);
    }
    io.stdout.write(report.ok ? 'all is well\n' : 'some checks failed\n');
  }
  return report.ok ? 0 : 1;
}
