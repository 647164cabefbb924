import type { SandboxRequest } from '@berth/core';
import { loadInstallationKey, parseHostPattern, type SandboxDriverV1 } from '@berth/core/driver';
import { placeholderFor, type BrokeredValue } from './egress-proxy/placeholders.js';
import { EGRESS_PROXY_PORT } from './egress-names.js';
import type { SandboxEntry } from '../lifecycle/sandbox-entry.js';
import type { SandboxSettings } from '../sandbox-settings.js';

/** Where a sandbox finds the bundle (mounted read-only). */
export const CA_BUNDLE_TARGET = '/etc/berth/ca-bundle.pem';

/** The variables that point a sandbox's tools at the proxy and at the bundle. */
const CA_VARIABLES = ['SSL_CERT_FILE', 'NODE_EXTRA_CA_CERTS', 'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE', 'GIT_SSL_CAINFO'] as const;
const PROXY_VARIABLES = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'] as const;
const NO_PROXY_VARIABLES = ['NO_PROXY', 'no_proxy'] as const;
/** What never goes through the proxy: the sandbox itself. */
const NO_PROXY = 'localhost,127.0.0.1,::1';

/** The proxy's table of a sandbox's brokered values, by placeholder, which the variables fill. */
export interface PlaceholderHolder {
  placeholders: Map<string, BrokeredValue>;
}

/**
 * The variables a sandbox's command gets: its brokered ones as placeholders (their values go to
 * `client`, the proxy's table of it), and, once it is attached at `gateway`, the proxy's and the
 * CA bundle's. The same object for the same request and attachment, so the shell's digest of it
 * is made once.
 */
export function createSandboxVariables(options: {
  readonly settings: SandboxSettings;
  readonly driver: SandboxDriverV1;
}): (
  entry: SandboxEntry,
  request: SandboxRequest,
  attached: { gateway: string | undefined; client: PlaceholderHolder | undefined },
) => Readonly<Record<string, string>> {
  const { settings, driver } = options;
  // Where each brokered variable's value goes: its hosts, and the headers, query parameters and ports the operator named.
  const placesOf = new Map<string, Omit<BrokeredValue, 'variable' | 'value'>>(
    Object.entries(settings.docker_secret_hosts).map(([name, hosts]) => [
      name,
      { hosts: [...hosts].map((host) => parseHostPattern(host)), headers: hosts.headers, query: hosts.query, ports: hosts.ports },
    ]),
  );
  // The variables handed to a sandbox, per request and attachment.
  const made = new WeakMap<SandboxRequest, { key: string; variables: Readonly<Record<string, string>>; placeholders: Map<string, BrokeredValue> }>();
  return (entry, request, { gateway, client }) => {
    const key = `${entry.name}\0${gateway ?? ''}`;
    const cached = made.get(request);
    if (cached?.key === key) {
      if (client) client.placeholders = cached.placeholders;
      return cached.variables;
    }
    const variables: Record<string, string> = { ...request.environment.variables };
    // Core keeps the key per root; a sandbox without networking needs no CA.
    const installationKey = loadInstallationKey(request.paths.root);
    const placeholders = new Map<string, BrokeredValue>();
    for (const detail of request.environment.details) {
      const places = placesOf.get(detail.name);
      // Only secrets are brokered: the config refuses brokering a docker_env name.
      if (!places || !detail.secret) continue;
      const placeholder = placeholderFor(installationKey, entry.name, detail.name);
      variables[detail.name] = placeholder;
      placeholders.set(placeholder, { variable: detail.name, value: detail.value, ...places });
    }
    if (client) client.placeholders = placeholders;
    if (gateway !== undefined) {
      for (const name of PROXY_VARIABLES) variables[name] = `http://${gateway}:${EGRESS_PROXY_PORT}`;
      for (const name of NO_PROXY_VARIABLES) variables[name] = NO_PROXY;
      // Node's own fetch and http honour the proxy variables only when told (Node 24).
      variables.NODE_USE_ENV_PROXY = '1';
      if (driver.capabilities.hostFolders) for (const name of CA_VARIABLES) variables[name] = CA_BUNDLE_TARGET;
    }
    const frozen = Object.freeze(variables);
    made.set(request, { key, variables: frozen, placeholders });
    return frozen;
  };
}
