import { formatIdentity } from './identity.js';
import type { EnvironmentIndex } from './environment-index.js';
import type { SandboxScope } from './scope.js';

/** Where a sandbox variable came from. */
export type VariableSource = 'static' | 'forwarded' | 'user' | 'linked';

/** One variable a sandbox gets. */
export interface ResolvedVariable {
  readonly name: string;
  readonly value: string;
  readonly source: VariableSource;
  /** The gateway variable or config key it came from, e.g. `HERMES_USER_TELEGRAM_1_GITHUB_TOKEN`. */
  readonly from: string;
  /** Whether the value is masked in output (forwarded and user variables). */
  readonly secret: boolean;
}

/** The environment of one sandbox. */
export interface ResolvedEnvironment {
  /** Name to value, ready to hand to a backend. */
  readonly variables: Readonly<Record<string, string>>;
  /** Every variable with its provenance, in name order. */
  readonly details: readonly ResolvedVariable[];
  /** The values to mask in output. */
  readonly secrets: readonly string[];
}

/** What {@link resolveEnvironment} reads from the config. */
export interface EnvironmentConfig {
  readonly docker_env: Readonly<Record<string, string>>;
  readonly docker_forward_env: readonly string[];
  readonly docker_user_env_prefix: string;
}

/**
 * The variables of a scope's sandbox, lowest to highest precedence: `docker_env` (static),
 * `docker_forward_env` (from the gateway's environment), then the user's own variables. For
 * linked identities, the identity that appears first in the link wins on the same name (source
 * `user` for the identity the message came from, `linked` for the others). A task scope gets
 * no user variables.
 */
export function resolveEnvironment(scope: SandboxScope, config: EnvironmentConfig, index: EnvironmentIndex): ResolvedEnvironment {
  const result = new Map<string, ResolvedVariable>();
  for (const [name, value] of Object.entries(config.docker_env)) {
    result.set(name, { name, value, source: 'static', from: `terminal.docker_env.${name}`, secret: false });
  }
  // The schema refuses forwarded names under the user prefix (config.ts), so none reach here.
  for (const name of config.docker_forward_env) {
    const value = index.environment[name];
    if (value !== undefined) result.set(name, { name, value, source: 'forwarded', from: name, secret: true });
  }
  if (scope.kind === 'user') {
    // Lowest priority first, so the earliest identity of a link is written last and wins.
    for (const member of [...scope.identities].reverse()) {
      const source: VariableSource = formatIdentity(member) === formatIdentity(scope.identity) ? 'user' : 'linked';
      for (const variable of index.variablesOf(member)) {
        result.set(variable.name, { name: variable.name, value: variable.value, source, from: variable.source, secret: true });
      }
    }
  }
  const details = [...result.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return {
    variables: Object.fromEntries(details.map((variable) => [variable.name, variable.value])),
    details,
    secrets: details.filter((variable) => variable.secret).map((variable) => variable.value),
  };
}
