import type { SandboxRequest, SandboxResolver, VariableSource } from '@berth/core';
import { formatIdentity } from '@berth/core';
import { formatTable, maskValue } from './format-table.js';

/** One variable of a user's sandbox as `berth env` shows it (the value masked). */
export interface EnvironmentReportVariable {
  readonly name: string;
  readonly source: VariableSource;
  /** The config key or gateway variable it comes from. */
  readonly from: string;
  /** `***`, or `(empty)`; never the value. */
  readonly value: string;
}

/** What `berth env --json` prints. */
export interface EnvironmentReport {
  /** The canonical identity, e.g. `telegram:123456789`; `null` for a sandbox of no user. */
  readonly identity: string | null;
  readonly scope: string;
  /** The prefix an operator writes before a variable name for this user; `null` without a user. */
  readonly prefix: string | null;
  /** Identities linked to this one (including itself), primary first. */
  readonly linked: readonly string[];
  readonly variables: readonly EnvironmentReportVariable[];
  /** Variables under the user prefix that no sandbox gets, by name, with the reason. */
  readonly refused: ReadonlyArray<{ readonly variable: string; readonly reason: string }>;
  /**
   * Variables that look written for this user but reach another: the name an id with `_`, `-`,
   * `.` or upper-case letters gets when only upper-cased (`…_SIGNAL_AB_CD_TOKEN` reaches
   * `signal:ab`), with whose they are and the name to write instead.
   */
  readonly misnamed: ReadonlyArray<{ readonly variable: string; readonly reaches: string; readonly as: string; readonly write: string }>;
}

// Core's message repeats the name and ends with advice to run this very command: keep the why.
function refusalReason(variable: string, message: string): string {
  return message.replace(`variable ${variable} is not forwarded to any sandbox: `, '').replace(/; run "berth env[^"]*" for the exact prefix of a user$/, '');
}

/** Builds the report of a sandbox's environment (resolved as the terminal tool resolves it); touches no engine. */
export function buildEnvironmentReport(resolver: SandboxResolver, request: SandboxRequest): EnvironmentReport {
  const { scope } = request;
  return {
    identity: scope.kind === 'user' ? formatIdentity(scope.identity) : null,
    scope: scope.key,
    prefix: scope.kind === 'user' ? resolver.index.prefixFor(scope.identity) : null,
    linked: scope.kind === 'user' ? scope.identities.map(formatIdentity) : [],
    variables: request.environment.details.map((variable) => ({
      name: variable.name,
      source: variable.source,
      from: variable.from,
      value: maskValue(variable.value),
    })),
    refused: resolver.index.refused.map((error) => ({ variable: error.variable, reason: refusalReason(error.variable, error.message) })),
    misnamed:
      scope.kind === 'user'
        ? resolver.index
            .readings()
            .filter((reading) => reading.meantFor?.identity === formatIdentity(scope.identity))
            .map((reading) => ({ variable: reading.source, reaches: reading.identity, as: reading.name, write: reading.meantFor!.source }))
        : [],
  };
}

/** The human form of an {@link EnvironmentReport}. */
export function formatEnvironmentReport(report: EnvironmentReport): string {
  let out = report.identity === null ? `${report.scope}\n` : `${report.identity} (${report.scope})\n`;
  if (report.prefix === null) {
    out += 'no user: user variables reach no task sandbox (with docker_user_sandbox false, no user has one of their own)\n';
  } else {
    out += `prefix for this user's variables: ${report.prefix}\n`;
    out += `  e.g. ${report.prefix}GITHUB_TOKEN=... reaches this sandbox as GITHUB_TOKEN\n`;
  }
  if (report.linked.length > 1) out += `linked identities: ${report.linked.join(', ')}\n`;
  out += '\n';
  out +=
    report.variables.length === 0
      ? 'no variables\n'
      : formatTable(
          ['NAME', 'SOURCE', 'FROM', 'VALUE'],
          report.variables.map((variable) => [variable.name, variable.source, variable.from, variable.value]),
        );
  for (const misnamed of report.misnamed) {
    out += `\nnot this user's: ${misnamed.variable} reaches ${misnamed.reaches} as ${misnamed.as}; for ${report.identity} write ${misnamed.write}\n`;
  }
  if (report.refused.length > 0) {
    out += `\nrefused (reach no sandbox):\n`;
    for (const refused of report.refused) out += `  ${refused.variable}: ${refused.reason}\n`;
  }
  return out;
}
