import { z } from 'zod';
import { BrokeredHosts, UNBROKERABLE_HEADERS } from './brokered-hosts.js';
import { parseEgressDomain, parseHostPattern } from './host-pattern.js';

// The value forms of the `terminal:` section's keys that are more than a type: sizes, mounts,
// egress exceptions, host patterns, capability names (config.ts puts them together into the schema).

/** A size in megabytes, as a number or as `512m`, `2g`, `1.5G`. */
export const megabytes = z.union([
  z.number().int().min(16).max(1_048_576),
  z
    .string()
    .regex(/^\d+(?:\.\d+)?\s*[kKmMgGtT]?[iI]?[bB]?$/, { message: 'expected megabytes as a number (5120) or a size like "512m" or "2g"' })
    .transform((value, context) => {
      const match = /^(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)/.exec(value)!;
      const factor = { '': 1, k: 1 / 1024, m: 1, g: 1024, t: 1024 * 1024 }[match[2]!.toLowerCase() as '' | 'k' | 'm' | 'g' | 't'];
      const result = Math.round(Number(match[1]) * factor);
      if (result < 16) context.addIssue({ code: 'custom', message: 'expected at least 16 megabytes' });
      return result;
    }),
]);

/** A host path bound into every sandbox: `host:container` or `host:container:ro`. */
export const volume = z
  .string()
  .regex(/^\/[^:]*:\/[^:]*(?::(?:ro|rw))?$/, { message: 'expected "/host/path:/container/path" or "/host/path:/container/path:ro"' });

/** A `docker_egress_allow` entry: an IPv4 address or range, or a host name, each with an optional port. */
export const egressException = z
  .string()
  .regex(
    /^(?:(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\/(?:[0-9]|[12]\d|3[0-2]))?|[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*)(?::(?:6553[0-5]|655[0-2]\d|65[0-4]\d{2}|6[0-4]\d{3}|[1-5]\d{4}|[1-9]\d{0,3}))?$/,
    {
      message: 'expected an IPv4 address or range, or a host name, with an optional port: 10.1.2.3, 10.1.0.0/16, 10.1.2.3:5432 or db.internal:5432',
    },
  );

/** Capability names as the engines spell them, without the CAP_ prefix. */
export const capability = z.string().regex(/^[A-Z_]+$/, { message: 'expected a capability name such as CHOWN' });

/**
 * A host pattern of `docker_secret_hosts` or `docker_egress_domains`: `api.github.com` or
 * `*.example.com` (host-pattern.ts); kept as written, its refusal is parseHostPattern's line.
 */
export const hostPattern = z.string().superRefine((text, context) => {
  try {
    parseHostPattern(text);
  } catch (error) {
    context.addIssue({ code: 'custom', message: (error as Error).message });
  }
});

/** A `docker_egress_domains` entry: a host pattern with an optional port (host-pattern.ts). */
export const egressDomain = z.string().superRefine((text, context) => {
  try {
    parseEgressDomain(text);
  } catch (error) {
    context.addIssue({ code: 'custom', message: (error as Error).message });
  }
});

/** An HTTP header name (a token, RFC 9110) that may carry a value: never one that frames or routes the request. */
const brokeredHeader = z
  .string()
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/, { message: 'expected an HTTP header name, like X-Api-Key' })
  .refine((name) => !UNBROKERABLE_HEADERS.includes(name.toLowerCase()), {
    message:
      `names a header that frames or routes the request (${UNBROKERABLE_HEADERS.join(', ')}), ` +
      'which the proxy writes itself; name the header the API reads the key from',
  });

/** A URL query parameter name. */
const brokeredQuery = z
  .string()
  .regex(/^[A-Za-z0-9._~-]{1,64}$/, { message: 'expected a query parameter name of letters, digits, ".", "_", "~" or "-", like key' });

const hostList = z
  .array(hostPattern)
  .min(1, { message: 'expected at least one host, like ["api.github.com"], that the value may be sent to; list them or remove the variable' });

const secretHostsObject = z.strictObject({
  hosts: hostList,
  headers: z.array(brokeredHeader).optional(),
  query: z.array(brokeredQuery).optional(),
  ports: z.array(z.number().int().min(1).max(65_535)).min(1, { message: 'expected at least one port, like [443]' }).optional(),
});

/**
 * A `docker_secret_hosts` value: a list of host patterns, or the object form naming headers,
 * query parameters and ports besides (brokered-hosts.ts); read as {@link BrokeredHosts}. The form
 * is chosen by the value's shape, so an error names the entry at fault (`…hosts.0`), not the union.
 */
export const secretHosts = z.unknown().transform((value, context): BrokeredHosts => {
  if (value instanceof BrokeredHosts) return new BrokeredHosts(value.toInput());
  const object = typeof value === 'object' && value !== null && !Array.isArray(value);
  const result = object ? secretHostsObject.safeParse(value) : hostList.safeParse(value);
  if (result.success) return new BrokeredHosts('hosts' in result.data ? result.data : { hosts: result.data });
  for (const issue of result.error.issues) context.addIssue({ ...issue, input: value } as Parameters<typeof context.addIssue>[0]);
  return z.NEVER;
});
