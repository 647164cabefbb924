import { createHash } from 'node:crypto';
import { createEnvironmentIndex, type EnvironmentIndex } from './environment-index.js';
import { createIdentityLinks, type IdentityLinks } from './identity-links.js';
import type { Identity } from './identity.js';
import type { PlatformRegistry } from './platform-registry.js';
import { resolveEnvironment } from './resolve-environment.js';
import { resolveSandboxDir } from './host-layout.js';
import { resolveSandboxPaths } from './sandbox-paths.js';
import { resolveScope, taskScope, userScope, type SandboxScope } from './scope.js';
import { getActiveSession, type SessionContext } from './session-context.js';
import type { SandboxRequest } from './backend.js';
import type { TerminalConfig } from './terminal-config-schema.js';

/** Turns sessions into sandbox requests: scope, paths and environment. */
export interface SandboxResolver {
  readonly config: TerminalConfig;
  readonly registry: PlatformRegistry;
  readonly index: EnvironmentIndex;
  readonly links: IdentityLinks;
  /** `{sandbox_dir}` after the config, `$TERMINAL_SANDBOX_DIR` and `$HERMES_HOME` fallbacks. */
  readonly sandboxDir: string;
  /**
   * The request for the active (or given) session, falling back to the task scope when the
   * session names nobody — unless `sessionRequired` (a caller that serves many people), when
   * that is refused (see `resolveScope`).
   */
  resolve(options?: SandboxResolveOptions): SandboxRequest;
  /** The request for a scope. */
  forScope(scope: SandboxScope): SandboxRequest;
  /** The scope of an identity (after links) or a task. */
  scopeOf(target: { identity: Identity } | { taskId: string }): SandboxScope;
}

/** What {@link SandboxResolver.resolve} is asked. */
export interface SandboxResolveOptions {
  readonly session?: SessionContext;
  readonly taskId?: string;
  readonly sessionRequired?: boolean;
  /**
   * The variables of the host's own scope for this request — a profile's secrets, when one
   * gateway serves several (Hermes 0.21+) — as the host resolved them for this turn. When given,
   * forwarded (`docker_forward_env`) and user variables come from them alone, never from the
   * gateway's environment, which may hold another profile's values; absent, from the gateway's
   * environment as always.
   */
  readonly variables?: Readonly<Record<string, string>>;
}

/** How many variable sets of host scopes a resolver keeps indexed. */
const SCOPED_INDEXES = 64;

/** An object's entries in name order, so that equal contents give equal text. */
const inNameOrder = (object: object): Array<[string, unknown]> => Object.entries(object).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

/** How many sessions' requests a resolver remembers. */
const REMEMBERED_REQUESTS = 4096;

/** Freezes a request and what it holds, so that one remembered request can serve many commands. */
function freezeRequest(request: SandboxRequest): SandboxRequest {
  Object.freeze(request.paths);
  Object.freeze(request.environment.variables);
  for (const detail of request.environment.details) Object.freeze(detail);
  Object.freeze(request.environment.details);
  Object.freeze(request.environment.secrets);
  Object.freeze(request.environment);
  Object.freeze(request.scope);
  return Object.freeze(request);
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
  const forScope = (scope: SandboxScope, from: EnvironmentIndex = index): SandboxRequest => ({
    scope,
    paths: resolveSandboxPaths(scope, sandboxDir),
    environment: resolveEnvironment(scope, config, from),
  });
  // A host scope's variables, indexed once per distinct set (by digest, so the map holds no values
  // twice and a key says nothing), the least recently used dropped first.
  const scopedIndexes = new Map<string, EnvironmentIndex>();
  const indexOf = ({ digest, variables }: { digest: string; variables: Readonly<Record<string, string>> }): EnvironmentIndex => {
    const found = scopedIndexes.get(digest) ?? createEnvironmentIndex(variables, { prefix: config.docker_user_env_prefix, registry });
    scopedIndexes.delete(digest);
    if (scopedIndexes.size >= SCOPED_INDEXES) scopedIndexes.delete(scopedIndexes.keys().next().value!);
    scopedIndexes.set(digest, found);
    return found;
  };
  // The same session asks again and again (every command of a chat): its request is remembered,
  // frozen, so each command does not canonicalise, encode and check the same id anew. Forwarded
  // variables are read live from the gateway's environment, so a remembered request is used only
  // while they still hold the values it was made with. Refusals are never remembered.
  const remembered = new Map<string, { readonly request: SandboxRequest; readonly forwarded: ReadonlyArray<string | undefined> }>();
  const forwardedValues = (): Array<string | undefined> => config.docker_forward_env.map((name) => index.environment[name]);
  const sameValues = (a: ReadonlyArray<string | undefined>, b: ReadonlyArray<string | undefined>): boolean =>
    a.every((value, position) => value === b[position]);
  const resolve: SandboxResolver['resolve'] = (resolveOptions = {}) => {
    const session = resolveOptions.session ?? getActiveSession();
    // Every field of the session, whichever fields it has: a field left out of the key (the
    // profile, once) would hand one session's sandbox to another that differs only there.
    const { variables } = resolveOptions;
    const scoped = variables && {
      variables,
      digest: createHash('sha256')
        .update(JSON.stringify(inNameOrder(variables)))
        .digest('hex'),
    };
    const key = JSON.stringify([
      session === undefined ? null : inNameOrder(session),
      resolveOptions.taskId,
      resolveOptions.sessionRequired === true,
      scoped?.digest ?? null,
    ]);
    const forwarded = forwardedValues();
    const hit = remembered.get(key);
    if (hit && sameValues(hit.forwarded, forwarded)) {
      // Most recently used last, so the oldest is the one dropped when the map is full.
      remembered.delete(key);
      remembered.set(key, hit);
      return hit.request;
    }
    const request = freezeRequest(
      forScope(
        resolveScope({
          userSandbox: config.docker_user_sandbox,
          registry,
          links,
          ...(session ? { session } : {}),
          taskId: resolveOptions.taskId,
          sessionRequired: resolveOptions.sessionRequired,
        }),
        scoped ? indexOf(scoped) : index,
      ),
    );
    remembered.delete(key);
    if (remembered.size >= REMEMBERED_REQUESTS) remembered.delete(remembered.keys().next().value!);
    remembered.set(key, { request, forwarded });
    return request;
  };
  return {
    config,
    registry,
    index,
    links,
    sandboxDir,
    forScope,
    resolve,
    scopeOf: (target) => ('identity' in target ? userScope(target.identity, registry, links) : taskScope(target.taskId)),
  };
}
