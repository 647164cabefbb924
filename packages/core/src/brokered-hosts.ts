/** The ports a brokered value goes to unless the variable names others: HTTPS's. */
export const DEFAULT_BROKERED_PORTS: readonly number[] = [443];

/** The headers every brokered value may go in: where HTTP carries credentials. */
export const CREDENTIAL_HEADERS: readonly string[] = ['authorization', 'proxy-authorization'];

/**
 * Headers no value may be put in: they frame or route the request (the proxy writes them
 * itself) or belong to one hop only.
 */
export const UNBROKERABLE_HEADERS: readonly string[] = [
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'upgrade',
  'expect',
];

/**
 * Where a brokered variable's value may go (docs/brokered-secrets.md), as `docker_secret_hosts`
 * gives it: the list form (`GITHUB_TOKEN: [api.github.com]`) puts the value in `Authorization`
 * and `Proxy-Authorization` on port 443; the object form names more headers, query parameters
 * and ports (`{ hosts: [...], headers: [X-Api-Key], query: [key], ports: [443, 8443] }`).
 *
 * It is a list of the host patterns, so code that reads the list form keeps working, carrying
 * the rest beside it; {@link BrokeredHosts.toInput} gives the object form back, so a validated
 * config validates again to the same.
 */
export class BrokeredHosts extends Array<string> {
  // Array's own methods (map, filter, slice) make plain lists, not this.
  static override get [Symbol.species](): ArrayConstructor {
    return Array;
  }

  /** Header names the value goes in besides Authorization and Proxy-Authorization, lower case. @default [] */
  readonly headers: readonly string[];
  /** Query parameter names the value goes in. @default [] */
  readonly query: readonly string[];
  /** The ports of the hosts it goes to. @default [443] */
  readonly ports: readonly number[];

  constructor(options: { hosts: readonly string[]; headers?: readonly string[]; query?: readonly string[]; ports?: readonly number[] }) {
    super();
    this.push(...options.hosts);
    this.headers = [...new Set((options.headers ?? []).map((name) => name.toLowerCase()))];
    this.query = [...new Set(options.query ?? [])];
    this.ports = [...new Set(options.ports ?? DEFAULT_BROKERED_PORTS)];
  }

  /** The object form, as an operator writes it. */
  toInput(): { hosts: string[]; headers: string[]; query: string[]; ports: number[] } {
    return { hosts: [...this], headers: [...this.headers], query: [...this.query], ports: [...this.ports] };
  }
}
