import { createHash } from 'node:crypto';
import { parseTerminalConfig, resolveSandboxDir, type TerminalConfig } from '@berth/core';

/** The `terminal:` keys the Kubernetes backend reads besides the runtime's settings. */
export const KUBERNETES_SETTING_KEYS = [
  'kubernetes_namespace',
  'kubernetes_kubeconfig',
  'kubernetes_context',
  'kubernetes_storage_class',
  'container_disk',
  'sandbox_dir',
] as const;

/** The cluster's part of a validated `terminal:` section. */
export type KubernetesSettings = Pick<TerminalConfig, (typeof KUBERNETES_SETTING_KEYS)[number]>;

/** What {@link kubernetesSettings} takes: a validated config, or any part of a `terminal:` section. */
export type KubernetesSettingsInput = Partial<Record<(typeof KUBERNETES_SETTING_KEYS)[number], unknown>> | TerminalConfig;

/**
 * The cluster keys out of a `terminal:` section (namespace, kubeconfig, context, storage class,
 * `container_disk`, and `sandbox_dir` for the installation's label), validated by core's one
 * schema, so a wrong value is a `ConfigError` naming its key.
 */
export function kubernetesSettings(input: KubernetesSettingsInput = {}): KubernetesSettings {
  const picked: Record<string, unknown> = {};
  for (const key of KUBERNETES_SETTING_KEYS) {
    const value = (input as Record<string, unknown>)[key];
    if (value !== undefined) picked[key] = value;
  }
  const config = parseTerminalConfig(picked);
  return Object.fromEntries(KUBERNETES_SETTING_KEYS.filter((key) => config[key] !== undefined).map((key) => [key, config[key]])) as KubernetesSettings;
}

/**
 * The label value that tells one Berth installation's claims from another's in a shared
 * namespace: a digest of its sandbox root (where its installation key lives).
 */
export function installationLabel(sandboxDir: string | undefined, environment: Readonly<Record<string, string | undefined>> = process.env): string {
  return createHash('sha256')
    .update(resolveSandboxDir(sandboxDir, environment as NodeJS.ProcessEnv))
    .digest('hex')
    .slice(0, 24);
}
