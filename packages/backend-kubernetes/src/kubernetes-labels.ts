import { createHash } from 'node:crypto';

/**
 * How the runtime's labels become Kubernetes labels. Kubernetes label values are at most 63
 * characters of `[A-Za-z0-9._-]`, so a scope key, a user id or a folder cannot be one: every
 * label the runtime asks for is kept exactly in an annotation, and selected by a label whose
 * value is the original when it fits and a digest when it does not.
 *
 * The keys are not the runtime's `dev.berth.*`: the kubelet's dockershim copies a Pod's labels
 * onto its pause container, and Berth's Docker backend, on the same engine, lists containers by
 * `dev.berth.managed-by`. Under `berth.dev/` they can never be taken for Docker sandboxes.
 */

/** The prefix of every label and annotation key Berth sets on Kubernetes. */
export const KUBERNETES_PREFIX = 'berth.dev/';
/** Holds the runtime's labels exactly, as JSON. */
export const LABELS_ANNOTATION = `${KUBERNETES_PREFIX}labels`;
/** Holds the Pod a stopped sandbox starts as, as JSON (a claim with it is a sandbox; without, only kept files). */
export const POD_ANNOTATION = `${KUBERNETES_PREFIX}pod`;
/** Marks what Berth made, for operators and selectors (`app.kubernetes.io/managed-by=berth`). */
export const MANAGED_BY_KEY = 'app.kubernetes.io/managed-by';
export const MANAGED_BY_VALUE = 'berth';
/** The digest of the scope key, on a claim even after its sandbox is removed (so purge finds it). */
export const SCOPE_KEY = `${KUBERNETES_PREFIX}scope`;
/** Which Berth installation (sandbox root) a claim belongs to: two gateways may share a namespace. */
export const INSTALLATION_KEY = `${KUBERNETES_PREFIX}installation`;
/** `none` on the Pods of sandboxes without network (selected by the deny-all policy). */
export const NETWORK_KEY = `${KUBERNETES_PREFIX}network`;

const LABEL_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$/;
const RUNTIME_PREFIX = 'dev.berth.';

const digest = (value: string, length: number): string => createHash('sha256').update(value).digest('hex').slice(0, length);

/** A label value that selects `value`: itself when Kubernetes allows it, else `h-` and a digest. */
export function labelValue(value: string): string {
  return LABEL_NAME.test(value) && !value.startsWith('h-') ? value : `h-${digest(value, 40)}`;
}

/** The Kubernetes label key of a runtime label key: `dev.berth.x` is `berth.dev/x`, anything else a digest. */
export function labelKey(key: string): string {
  if (key === 'dev.berth.managed-by') return MANAGED_BY_KEY;
  const name = key.startsWith(RUNTIME_PREFIX) ? key.slice(RUNTIME_PREFIX.length) : '';
  return name && LABEL_NAME.test(name) ? `${KUBERNETES_PREFIX}${name}` : `${KUBERNETES_PREFIX}x-${digest(key, 16)}`;
}

/** The Kubernetes labels that stand for `labels` (values digested where needed). */
export function toKubernetesLabels(labels: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(labels).map(([key, value]) => [labelKey(key), labelValue(value)]));
}

/** A label selector (`a=b,c=d`) for every label in `labels`. */
export function selectorOf(labels: Readonly<Record<string, string>>): string {
  return Object.entries(toKubernetesLabels(labels))
    .map(([key, value]) => `${key}=${value}`)
    .join(',');
}

/** The digest that stands for a scope key on claims. */
export function scopeLabelValue(scopeKey: string): string {
  return labelValue(scopeKey);
}

/** The runtime's labels read back from an object's annotation; `undefined` when it has none (or a broken one). */
export function runtimeLabelsOf(annotations: Readonly<Record<string, string>> | undefined): Record<string, string> | undefined {
  const text = annotations?.[LABELS_ANNOTATION];
  if (!text) return undefined;
  try {
    const parsed = JSON.parse(text) as unknown;
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
    const entries = Object.entries(parsed as Record<string, unknown>).filter((entry): entry is [string, string] => typeof entry[1] === 'string');
    return Object.fromEntries(entries);
  } catch {
    return undefined;
  }
}

/** Whether `labels` hold every one of `wanted` exactly (the digests of a selector can in theory collide). */
export function holdsAll(labels: Readonly<Record<string, string>>, wanted: Readonly<Record<string, string>>): boolean {
  return Object.entries(wanted).every(([key, value]) => labels[key] === value);
}
