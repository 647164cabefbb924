import { IdentityError } from './errors.js';
import { formatIdentity, truncateForMessage, type Identity } from './identity.js';
import type { PlatformRegistry } from './platform-registry.js';

/**
 * An identity an operator typed (`docker_identity_links`, `berth exec/rm/env --platform P --user
 * ID`): its id must be written exactly as Berth writes it (the canonical id; the platform may be
 * named by an alias such as `tg`, which is no ambiguity), or it is refused with the form to type.
 *
 * Ids that arrive from a platform are read leniently by the adapter (a WhatsApp JID carries its
 * number without `+`, and is international). A person typing an id is not a platform: bare digits
 * may be a national number (`2025550123`, a US number, read as Egypt's +20 2 5550123), so a form
 * the adapter had to interpret would silently name someone else. `show` writes an identity the way
 * the caller's user typed it (the CLI's `--platform P --user ID`); by default `platform:id`.
 */
export function resolveTypedIdentity(registry: PlatformRegistry, typed: Identity, show: (identity: Identity) => string = formatIdentity): Identity {
  const identity = registry.resolve(typed.platform, typed.id);
  if (identity.id === typed.id) return identity;
  const written = show({ platform: typed.platform, id: truncateForMessage(typed.id) });
  throw new IdentityError(
    identity.platform,
    `${written} is not written the way Berth writes that identity: it would be read as ${show(identity)}; ` +
      'type exactly that if it is the person you mean (an id you type must be canonical, so that it can never name someone else)',
  );
}

/** Parses an identity an operator typed as `platform:id`; see {@link resolveTypedIdentity}. */
export function parseTypedIdentity(registry: PlatformRegistry, value: string): Identity {
  const colon = value.indexOf(':');
  if (colon <= 0) {
    throw new IdentityError('', `identity ${JSON.stringify(truncateForMessage(value))} is not of the form platform:id; write it like telegram:123456789`);
  }
  return resolveTypedIdentity(registry, { platform: value.slice(0, colon), id: value.slice(colon + 1) });
}
