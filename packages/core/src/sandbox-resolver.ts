import { createEnvironmentIndex, type EnvironmentIndex } from './environment-index.js';
import { createIdentityLinks, type IdentityLinks } from './identity-links.js';
import type { Identity } from './identity.js';
import type { PlatformRegistry } from './platform-registry.js';
import { resolveEnvironment } from './resolve-environment.js';
import { resolveSandboxDir, resolveSandboxPaths } from './sandbox-paths.js';
import { resolveScope, taskScope, userScope, type SandboxScope } from './scope.js';
import type { SessionContext } from './session-context.js';
import type { SandboxRequest } from './backend.js';
import type { TerminalConfig } from './config.js';

/** Turns sessions into sandbox requests: scope, paths and environment. */
export interface SandboxResolver {
  readonly config: TerminalConfig;
  readonly registry: PlatformRegistry;
  readonly index: EnvironmentIndex;
  readonly links: IdentityLinks;
  /** `{sandbox_dir}` after the config, `$TERMINAL_SANDBOX_DIR` and `$HERMES_HOME` fallbacks. */
  readonly sandboxDir: string;
  /** The request for the active (or given) session, falling back to the task scope. */
  resolve(options?: { session?: SessionContext; taskId?: string }): SandboxRequest;
  /** The request for a scope. */
  forScope(scope: SandboxScope): SandboxRequest;
  /** The scope of an identity (after links) or a task. */
  scopeOf(target: { identity: Identity } | { taskId: string }): SandboxScope;
}

/**
 * Builds a resolver over a validated config, a platform registry and the gateway's environment
 * (indexed once here; build a new resolver when the environment changes).
 */
export function createSandboxResolver(options: {
  config: TerminalConfig;
  registry: PlatformRegistry;
  environment?: Readonly<Record<string, string | undefined>>;
}): SandboxResolver {
  const { config, registry } = options;
  const environment = options.environment ?? process.env;
  const index = createEnvironmentIndex(environment, { prefix: config.docker_user_env_prefix, registry });
  const links = createIdentityLinks(config.docker_identity_links, registry);
  const sandboxDir = resolveSandboxDir(config.sandbox_dir, environment as NodeJS.ProcessEnv);
  const forScope = (scope: SandboxScope): SandboxRequest => ({
    scope,
    paths: resolveSandboxPaths(scope, sandboxDir),
    environment: resolveEnvironment(scope, config, index),
  });
  return {
    config,
    registry,
    index,
    links,
    sandboxDir,
    forScope,
    resolve: (resolveOptions = {}) =>
      forScope(
        resolveScope({
          userSandbox: config.docker_user_sandbox,
          registry,
          links,
          ...(resolveOptions.session ? { session: resolveOptions.session } : {}),
          taskId: resolveOptions.taskId,
        }),
      ),
    scopeOf: (target) => ('identity' in target ? userScope(target.identity, registry, links) : taskScope(target.taskId)),
  };
}
