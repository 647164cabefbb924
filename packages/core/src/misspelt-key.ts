import { editDistance } from './edit-distance.js';

/**
 * Prefixes of keys that only Berth writes under `terminal:`: a key starting with one of them was
 * meant for Berth, so one Berth does not know is a mistake however far it is from a known key.
 */
export const BERTH_ONLY_KEY_PREFIXES = ['kubernetes_', 'berth_'] as const;

/**
 * Prefixes that Berth shares with its host (Hermes writes `docker_*` and `container_*` keys of
 * its own, and adds more in newer releases): a key starting with one of them counts as a
 * misspelling only when its rest is within one edit of the rest of a Berth key of either prefix
 * (`docker_memroy` for `container_memory`), so a newer host's own key never stops every command.
 */
export const SHARED_KEY_PREFIXES = ['docker_', 'container_'] as const;

/** How far a key may be from a Berth key and still count as its misspelling. */
function allowedDistance(key: string): number {
  return key.length <= 5 ? 1 : 2;
}

function nearest(candidates: readonly string[], measure: (candidate: string) => number): { key: string; distance: number } | undefined {
  let best: { key: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = measure(candidate);
    if (best === undefined || distance < best.distance || (distance === best.distance && candidate < best.key)) best = { key: candidate, distance };
  }
  return best;
}

function restAfter(key: string, prefixes: readonly string[]): string | undefined {
  const prefix = prefixes.find((candidate) => key.startsWith(candidate));
  return prefix === undefined ? undefined : key.slice(prefix.length);
}

/**
 * Whether an unknown `terminal:` key looks like a misspelling of one of `berthKeys` (the keys
 * Berth itself reads), and of which: `{ suggestion }` when it does (`suggestion` is absent for a
 * Berth-only prefix with no key near), `undefined` when the key is simply not Berth's.
 */
export function misspeltKey(key: string, berthKeys: readonly string[]): { suggestion?: string } | undefined {
  const close = nearest(berthKeys, (candidate) => editDistance(key, candidate));
  if (close && close.distance <= allowedDistance(key)) return { suggestion: close.key };
  const ownPrefix = BERTH_ONLY_KEY_PREFIXES.find((prefix) => key.startsWith(prefix));
  if (ownPrefix !== undefined) {
    const family = berthKeys.filter((candidate) => candidate.startsWith(ownPrefix));
    const inFamily = nearest(family, (candidate) => editDistance(key, candidate));
    return inFamily ? { suggestion: inFamily.key } : {};
  }
  const rest = restAfter(key, SHARED_KEY_PREFIXES);
  if (rest === undefined || rest.length < 3) return undefined;
  const shared = berthKeys.filter((candidate) => restAfter(candidate, SHARED_KEY_PREFIXES) !== undefined);
  const byRest = nearest(shared, (candidate) => editDistance(rest, restAfter(candidate, SHARED_KEY_PREFIXES)!));
  return byRest && byRest.distance <= 1 ? { suggestion: byRest.key } : undefined;
}
