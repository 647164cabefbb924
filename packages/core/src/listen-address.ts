/** Where a TCP listener binds (the metrics endpoint): a host and a port. */
export interface ListenAddress {
  readonly host: string;
  /** 0 lets the system pick a free port (tests). */
  readonly port: number;
}

/** What a listen address looks like, for the one line that refuses another. */
export const LISTEN_ADDRESS_FORMS = 'HOST:PORT, [IPv6]:PORT or :PORT (loopback), like 127.0.0.1:9464 or :9464';

/** The host a bare `:PORT` binds: loopback, so metrics leave the host only when the operator names an address. */
export const DEFAULT_LISTEN_HOST = '127.0.0.1';

const ADDRESS = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?)?):(\d{1,5})$/;

/**
 * `HOST:PORT`, `[IPv6]:PORT` or `:PORT` as a host and a port (`:PORT` is loopback, never every
 * interface); `undefined` for anything else, or a port past 65535.
 */
export function parseListenAddress(text: string): ListenAddress | undefined {
  const match = ADDRESS.exec(text);
  if (!match) return undefined;
  const port = Number(match[3]);
  if (port > 65_535) return undefined;
  return { host: match[1] ?? match[2] ?? DEFAULT_LISTEN_HOST, port };
}
