import { truncateForMessage } from './identity.js';
import { SessionAttributionError } from './errors.js';

/*
 * A host profile: one of several agents that one gateway process serves, each with its own
 * config, secrets and users (Hermes 0.21+ "multiplexing", docs/hermes-0.21.md). The same person
 * talking to two profiles is two sandboxes: a profile is part of whose a sandbox is.
 *
 * Hermes' rules, read at NousResearch/hermes-agent 00067189dfecf833d4d009c2dd977ae85cf800e0,
 * hermes_cli/profiles.py: a profile id matches `^[a-z0-9][a-z0-9_-]{0,63}$` (`_PROFILE_ID_RE`,
 * :25); `normalize_profile_name` strips, matches `default` case-insensitively and lowercases the
 * rest; `default` is the profile of the root home (`get_profile_dir`), the one a gateway had
 * before profiles existed.
 */

/** The profile of a host that has none, and Hermes' root profile: its sandboxes keep their pre-profile names and folders. */
export const DEFAULT_PROFILE = 'default';

// A profile id as Hermes writes it on disk (hermes_cli/profiles.py:25 at 0006718).
const PROFILE_ID = '[a-z0-9][a-z0-9_-]{0,63}';
const PROFILE_ID_PATTERN = new RegExp(`^${PROFILE_ID}$`);
const PROFILE_FOLDER_PATTERN = new RegExp(`^profile~(${PROFILE_ID})~(.+)$`, 's');

/**
 * The profile a session names, in Hermes' canonical form, or `undefined` for the default
 * profile (absent, empty or any spelling of `default`). Anything that is not a profile id is
 * refused: a profile Berth cannot name exactly would merge, or split, someone's sandboxes.
 */
export function sessionProfile(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const canonical = raw.trim().toLowerCase();
  if (canonical === '' || canonical === DEFAULT_PROFILE) return undefined;
  if (!PROFILE_ID_PATTERN.test(canonical)) {
    throw new SessionAttributionError(
      `the session names the profile ${JSON.stringify(truncateForMessage(raw))}, which is not a profile id, so Berth cannot tell whose sandbox it is; ` +
        'a profile id is 1 to 64 of a-z, 0-9, "_" and "-", beginning with a letter or digit (the host sets it, e.g. HERMES_SESSION_PROFILE)',
    );
  }
  return canonical;
}

/** The scope key of `key` inside a named profile: `profile:{profile}:{key}`. */
export const profileScopeKey = (profile: string, key: string): string => `profile:${profile}:${key}`;

/**
 * The folder of `folderName` inside a named profile: `profile~{profile}~{folderName}`, one folder
 * under the sandbox root like every other. No folder of the default profile has this form (a
 * plain task id has no `~`, an escaped one begins `task~`, a user's is `{platform}@…`), and a
 * profile id has no `~`, so the first `~` after the profile ends it: two profiles, or a profile
 * and the default one, never share a folder.
 */
export const profileFolderName = (profile: string, folderName: string): string => `profile~${profile}~${folderName}`;

/** The profile and inner folder of a folder named by {@link profileFolderName}, or `undefined`. */
export function splitProfileFolderName(name: string): { profile: string; folderName: string } | undefined {
  const found = PROFILE_FOLDER_PATTERN.exec(name);
  return found ? { profile: found[1]!, folderName: found[2]! } : undefined;
}
