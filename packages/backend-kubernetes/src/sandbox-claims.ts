import { SandboxError } from '@berth/core';
import type { CoreV1Api, V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import { LABELS_ANNOTATION, POD_ANNOTATION, runtimeLabelsOf } from './kubernetes-labels.js';
import { isConflict, isNotFound, unlessNotFound } from './map-kubernetes-error.js';
import { sleep } from './sandbox-pods.js';

// A sandbox's claim, which is its record: its labels and the Pod it starts as, in annotations. A
// claim without them holds only the files a removed sandbox kept, until a new sandbox takes it
// over or a purge deletes it.

/** The record a claim holds, when it is a sandbox's (not only files kept after a removal). */
export function recordOf(claim: V1PersistentVolumeClaim): { labels: Record<string, string>; pod: V1Pod } | undefined {
  const annotations = claim.metadata?.annotations;
  const labels = runtimeLabelsOf(annotations);
  const pod = annotations?.[POD_ANNOTATION];
  if (!labels || !pod) return undefined;
  try {
    return { labels, pod: JSON.parse(pod) as V1Pod };
  } catch {
    return undefined;
  }
}

export function readClaim(core: CoreV1Api, namespace: string, name: string): Promise<V1PersistentVolumeClaim | undefined> {
  return unlessNotFound(core.readNamespacedPersistentVolumeClaim({ name, namespace }));
}

/**
 * Creates the sandbox's claim, or takes over one whose record a removal dropped (its files kept);
 * `undefined` when the claim is another process's sandbox.
 */
export async function createClaim(core: CoreV1Api, namespace: string, name: string, claim: V1PersistentVolumeClaim): Promise<string | undefined> {
  try {
    await core.createNamespacedPersistentVolumeClaim({ namespace, body: claim });
    return name;
  } catch (error) {
    if (!isConflict(error)) throw error;
  }
  // The claim exists: another process's sandbox (theirs to run), or files a removed
  // sandbox left, which this one takes over.
  const existing = await readClaim(core, namespace, name);
  if (!existing || recordOf(existing)) return undefined;
  const labels = { ...existing.metadata?.labels, ...claim.metadata!.labels };
  const annotations = { ...existing.metadata?.annotations, ...claim.metadata!.annotations };
  try {
    await core.replaceNamespacedPersistentVolumeClaim({ name, namespace, body: { ...existing, metadata: { ...existing.metadata, labels, annotations } } });
    return name;
  } catch (error) {
    if (isConflict(error)) return undefined;
    throw error;
  }
}

/** Strips a claim's record, keeping its files and the labels purge selects it by. */
export async function dropRecord(core: CoreV1Api, namespace: string, name: string): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const claim = await readClaim(core, namespace, name);
    if (!claim || !recordOf(claim)) return;
    const annotations = { ...claim.metadata?.annotations };
    delete annotations[LABELS_ANNOTATION];
    delete annotations[POD_ANNOTATION];
    try {
      await core.replaceNamespacedPersistentVolumeClaim({ name, namespace, body: { ...claim, metadata: { ...claim.metadata, annotations } } });
      return;
    } catch (error) {
      if (!isConflict(error)) throw error;
    }
  }
  throw new SandboxError('SANDBOX_CONFLICT', `claim ${name} kept changing while Berth removed its sandbox; retry`);
}

/** Deletes the kept claims (no record) that `selector` selects, each waited for up to 60 s. */
export async function deleteKeptClaims(core: CoreV1Api, namespace: string, selector: Readonly<Record<string, string>>): Promise<void> {
  const claims = await core.listNamespacedPersistentVolumeClaim({
    namespace,
    labelSelector: Object.entries(selector)
      .map(([key, value]) => `${key}=${value}`)
      .join(','),
  });
  for (const claim of claims.items) {
    const name = claim.metadata?.name;
    // A claim that is a sandbox again belongs to whoever made it meanwhile.
    if (!name || recordOf(claim)) continue;
    try {
      await core.deleteNamespacedPersistentVolumeClaim({ name, namespace });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
    const deadline = Date.now() + 60_000;
    while ((await readClaim(core, namespace, name)) && Date.now() < deadline) await sleep(100);
  }
}
