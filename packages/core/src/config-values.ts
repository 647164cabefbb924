import { z } from 'zod';
import { parseHostPattern } from './host-pattern.js';

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
 * `*.githubusercontent.com` (host-pattern.ts); kept as written, its refusal is parseHostPattern's line.
 */
export const hostPattern = z.string().superRefine((text, context) => {
  try {
    parseHostPattern(text);
  } catch (error) {
    context.addIssue({ code: 'custom', message: (error as Error).message });
  }
});
