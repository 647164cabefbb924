import { BerthError, ConfigError, EngineUnavailableError, SandboxError } from '@berth/core';
import { ApiException } from '@kubernetes/client-node';

/** What a Kubernetes call was doing, for the message. */
export interface KubernetesErrorContext {
  /** The API server's URL. */
  readonly endpoint: string;
  /** The namespace Berth works in. */
  readonly namespace: string;
  /** A verb phrase such as `create pod berth-ab12`. */
  readonly action: string;
}

/** Network failures: the API server did not answer. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
]);
/** TLS failures: an answer, from a server the kubeconfig does not trust. */
const TLS_CODES = /^(?:UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|CERT_|ERR_TLS_|ERR_SSL_)/;

interface StatusBody {
  readonly message?: string;
  readonly reason?: string;
  readonly details?: { readonly kind?: string; readonly name?: string };
}

/** The HTTP status of an API answer or of a refused WebSocket upgrade. */
export function kubernetesStatus(error: unknown): number | undefined {
  if (error instanceof ApiException) return error.code;
  const message = (error as { message?: unknown } | null)?.message;
  const upgrade = typeof message === 'string' ? /Unexpected server response: (\d{3})/.exec(message) : null;
  return upgrade ? Number(upgrade[1]) : undefined;
}

/** The Status object the API server sent back, when there is one. */
function statusBody(error: unknown): StatusBody | undefined {
  if (!(error instanceof ApiException)) return undefined;
  const body: unknown = error.body;
  if (body && typeof body === 'object') return body as StatusBody;
  if (typeof body !== 'string' || !body.startsWith('{')) return undefined;
  try {
    return JSON.parse(body) as StatusBody;
  } catch {
    return undefined;
  }
}

/** The network or TLS code under a failed request (`fetch failed` keeps it in `cause`). */
function transportCode(error: unknown): string | undefined {
  for (let current: unknown = error, depth = 0; current && depth < 4; current = (current as { cause?: unknown }).cause, depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && (CONNECTION_CODES.has(code) || TLS_CODES.test(code))) return code;
  }
  // fetch refuses some addresses before connecting ("bad port"): no answer either.
  if (error instanceof TypeError && error.message === 'fetch failed') {
    const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
    return typeof cause?.code === 'string' ? cause.code : typeof cause?.message === 'string' ? cause.message : 'no connection';
  }
  return undefined;
}

/** The first line of what the server (or the client) said, bounded. */
export function kubernetesMessage(error: unknown): string {
  const body = statusBody(error);
  const raw =
    body?.message ??
    (error instanceof ApiException
      ? `HTTP ${error.code}`
      : error instanceof Error
        ? error.message
        : String((error as { message?: unknown })?.message ?? error));
  const text = raw.split('\n')[0]!.trim();
  return text.length > 240 ? `${text.slice(0, 240)}…` : text;
}

/** The object does not exist (404, not the namespace). */
export function isNotFound(error: unknown): boolean {
  return kubernetesStatus(error) === 404 && statusBody(error)?.details?.kind !== 'namespaces';
}

/** The name is taken, or an update lost a race (409). */
export function isConflict(error: unknown): boolean {
  return kubernetesStatus(error) === 409;
}

/**
 * The one place where Kubernetes answers become Berth errors: an API server that does not
 * answer or refuses the credentials is `EngineUnavailableError` naming it; a missing namespace
 * is a `ConfigError` on `terminal.kubernetes_namespace`; RBAC refusals say which Role to bind;
 * 404 is `SANDBOX_GONE`, 409 `SANDBOX_CONFLICT`, the rest `ENGINE_ERROR`. BerthErrors pass
 * through unchanged. Every message is one line and names what to do.
 */
export function mapKubernetesError(error: unknown, context: KubernetesErrorContext): BerthError {
  if (error instanceof BerthError) return error;
  const transport = transportCode(error);
  if (transport) {
    const hint = TLS_CODES.test(transport)
      ? "its certificate is not one the kubeconfig trusts; fix the cluster's certificate-authority in the kubeconfig"
      : 'check terminal.kubernetes_kubeconfig and terminal.kubernetes_context, or start the cluster';
    return new EngineUnavailableError(
      context.endpoint,
      `could not ${context.action}: the Kubernetes API at ${context.endpoint} did not answer (${transport}); ${hint}`,
      { cause: error },
    );
  }
  const status = kubernetesStatus(error);
  const said = kubernetesMessage(error);
  switch (status) {
    case 401:
      return new EngineUnavailableError(
        context.endpoint,
        `could not ${context.action}: the Kubernetes API at ${context.endpoint} refused the kubeconfig's credentials (401); renew them in the kubeconfig`,
        { cause: error },
      );
    case 403:
      return new SandboxError(
        'ENGINE_ERROR',
        `could not ${context.action}: ${said} (403); bind the Role in docs/backend-kubernetes.md to this user in namespace ${context.namespace}`,
        { cause: error },
      );
    case 404:
      if (statusBody(error)?.details?.kind === 'namespaces') {
        return new ConfigError(
          'terminal.kubernetes_namespace',
          `could not ${context.action}: namespace ${context.namespace} does not exist on the cluster at ${context.endpoint}; ` +
            `create it (kubectl create namespace ${context.namespace}) or set terminal.kubernetes_namespace`,
          { cause: error },
        );
      }
      return new SandboxError(
        'SANDBOX_GONE',
        `could not ${context.action}: it does not exist in namespace ${context.namespace} (${said}); the next command recreates it`,
        { cause: error },
      );
    case 409:
      return new SandboxError('SANDBOX_CONFLICT', `could not ${context.action}: ${said} (409); retry the command`, { cause: error });
    case 422:
      return new SandboxError(
        'ENGINE_ERROR',
        `could not ${context.action}: the cluster refused it as invalid (${said}); check the terminal: settings it names`,
        { cause: error },
      );
    default:
      return new SandboxError('ENGINE_ERROR', `could not ${context.action}: the Kubernetes API answered ${status ?? 'with an error'} (${said})`, {
        cause: error,
      });
  }
}

/** What `read` resolves to, or `undefined` when the object is not there (404). */
export async function unlessNotFound<T>(read: Promise<T>): Promise<T | undefined> {
  try {
    return await read;
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}
