import { ConfigError } from './errors.js';
import { formatIdentity, type Identity } from './identity.js';
import type { PlatformRegistry } from './platform-registry.js';
import { parseTypedIdentity } from './resolve-typed-identity.js';

/**
 * Operator-declared links: several identities that are one person, who then gets one sandbox
 * whichever app they write from. The first identity of a link is the primary: its folder and
 * container are the person's.
 */
export interface IdentityLinks {
  /** The linked identities of `identity`, primary first; `[identity]` when it is not linked. */
  groupOf(identity: Identity): readonly Identity[];
}

/**
 * Builds the links from `docker_identity_links`. Each entry must be written canonically (an
 * operator types it: see `resolveTypedIdentity`); an identity that appears in two links (or twice
 * in one) is refused, because that would silently join two people.
 */
export function createIdentityLinks(links: readonly (readonly string[])[], registry: PlatformRegistry): IdentityLinks {
  const groups = new Map<string, readonly Identity[]>();
  links.forEach((link, linkIndex) => {
    const members = link.map((value, memberIndex) => {
      try {
        return parseTypedIdentity(registry, value);
      } catch (error) {
        throw new ConfigError(
          `terminal.docker_identity_links.${linkIndex}.${memberIndex}`,
          `terminal.docker_identity_links.${linkIndex}.${memberIndex}: ${(error as Error).message}`,
          { cause: error },
        );
      }
    });
    for (const [memberIndex, member] of members.entries()) {
      const key = formatIdentity(member);
      if (groups.has(key) || members.findIndex((other) => formatIdentity(other) === key) !== memberIndex) {
        throw new ConfigError(
          `terminal.docker_identity_links.${linkIndex}`,
          `terminal.docker_identity_links.${linkIndex} links ${key}, which is already linked; ` +
            'an identity may appear in one link only — merge the two links or remove one',
        );
      }
      groups.set(key, members);
    }
  });
  return {
    groupOf: (identity) => groups.get(formatIdentity(identity)) ?? [identity],
  };
}
