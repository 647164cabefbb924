import type { SandboxRequest } from '@berth/core';
import { sandboxName } from '@berth/core/driver';

/**
 * The name a request's sandbox has on the engine: core's opaque `sandboxName` of its scope (keyed
 * with the installation key of its sandbox root) after the runtime's `namePrefix`. The runtime
 * names a sandbox by it before its first command (`run-command.ts`), and tells it to tools as
 * `SandboxRuntime.containerName`. One meaning: a name the engine knows the sandbox by, never a
 * folder, a label or a scope key.
 */
export function containerName(request: SandboxRequest, namePrefix: string): string {
  return sandboxName({ root: request.paths.root, scopeKey: request.scope.key, prefix: namePrefix });
}
