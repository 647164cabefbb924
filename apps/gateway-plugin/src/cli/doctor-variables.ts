import { existsSync } from 'node:fs';
import path from 'node:path';
import { sandboxRootOf, type SandboxResolver } from '@berth/core';
import type { DoctorCheck } from './doctor-report.js';

/**
 * `berth doctor`'s lines on user variables: those that reach no sandbox (refused, by name), and
 * each one that does, with the identity it reaches and the name it has there. Where a name looks
 * written for another user whose id the env form escapes (`…_SIGNAL_AB_CD_TOKEN` for `signal:ab_cd`
 * reaches `signal:ab` as `CD_TOKEN`), it says so, with the name to write; as a warning when that
 * user already has a sandbox folder under `sandboxDir` (someone this gateway serves), else as a note.
 */
export function variableChecks(resolver: SandboxResolver, prefix: string, sandboxDir: string): DoctorCheck[] {
  const checks: DoctorCheck[] = [];
  const refused = resolver.index.refused.map((error) => error.variable);
  if (refused.length > 0) {
    checks.push({
      name: 'variables',
      status: 'warning',
      detail: `${refused.length} variable(s) reach no sandbox: ${refused.join(', ')}`,
      fix: 'run "berth env --platform P --user ID" for the exact prefix of each user and rename them',
    });
  }
  const readings = resolver.index.readings();
  for (const reading of readings) {
    const reaches = `${reading.source} reaches ${reading.identity} as ${reading.name}`;
    if (!reading.meantFor) {
      checks.push({ name: 'variables', status: 'ok', detail: reaches });
      continue;
    }
    const other = resolver.registry.parse(reading.meantFor.identity);
    const known = existsSync(path.join(sandboxRootOf(sandboxDir), resolver.registry.folderName(other)));
    checks.push({
      name: 'variables',
      status: known ? 'warning' : 'ok',
      detail:
        `${reaches}; for ${reading.meantFor.identity}${known ? ', who has a sandbox here,' : ''} ` +
        `it would be ${reading.meantFor.source} (as ${reading.meantFor.name})`,
      ...(known ? { fix: `rename it to ${reading.meantFor.source} if it is meant for ${reading.meantFor.identity}` } : {}),
    });
  }
  if (refused.length === 0 && readings.length === 0) checks.push({ name: 'variables', status: 'ok', detail: `no ${prefix}_* variables` });
  return checks;
}
