import type { ExecRequest, ExecResult, SandboxBackendV1, SandboxInfo, SandboxPaths, SandboxRequest } from '@berth/core';

/** One call a {@link RecordingBackend} saw. */
export interface RecordedExec {
  readonly request: SandboxRequest;
  readonly exec: ExecRequest;
}

/** A backend that runs nothing: for unit tests of the logic around a backend only. */
export interface RecordingBackend extends SandboxBackendV1 {
  readonly execs: RecordedExec[];
  readonly removed: Array<{ scopeKey: string; purge: boolean; paths?: SandboxPaths }>;
  /** What the next `doExec` returns, computed from the request. */
  respond: (request: SandboxRequest, exec: ExecRequest) => Partial<ExecResult> | Promise<Partial<ExecResult>>;
  closed: number;
}

/** Creates a {@link RecordingBackend} that echoes the scope key and the command. */
export function createRecordingBackend(name = 'docker'): RecordingBackend {
  const backend: RecordingBackend = {
    specificationVersion: 'v1',
    name,
    capabilities: { persistentSession: true, networkIsolation: true, idleStop: true, adoption: true },
    execs: [],
    removed: [],
    closed: 0,
    respond: (request, exec) => ({ stdout: `${request.scope.key} ${exec.command}\n` }),
    async doExec(request, exec) {
      backend.execs.push({ request, exec });
      const partial = await backend.respond(request, exec);
      return { exitCode: 0, stdout: '', stderr: '', timedOut: false, truncated: false, durationMs: 1, ...partial };
    },
    async list(): Promise<SandboxInfo[]> {
      return [];
    },
    async remove(scopeKey, options = {}) {
      backend.removed.push({ scopeKey, purge: options.purge ?? false, ...(options.paths ? { paths: options.paths } : {}) });
    },
    async describe() {
      return { engine: name, endpoint: 'nowhere', discovery: 'a test', version: '0', apiVersion: '0', warnings: [] };
    },
    async close() {
      backend.closed += 1;
    },
  };
  return backend;
}
