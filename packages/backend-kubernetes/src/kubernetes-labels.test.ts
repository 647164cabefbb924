import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { holdsAll, labelKey, labelValue, runtimeLabelsOf, selectorOf, toKubernetesLabels, LABELS_ANNOTATION } from './kubernetes-labels.js';
import { PROPERTY_TEST_TIMEOUT_MS } from '../../../vitest.shared.js';

const KUBERNETES_VALUE = /^(?:[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?)?$/;
const KUBERNETES_KEY = /^(?:[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$/;

describe('Kubernetes labels', () => {
  it('turns any value into a valid label value, the same one every time, and distinct values into distinct ones', { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 100 }), fc.string({ unit: 'binary', maxLength: 100 }), (first, second) => {
        expect(labelValue(first)).toMatch(KUBERNETES_VALUE);
        expect(labelValue(first).length).toBeLessThanOrEqual(63);
        expect(labelValue(first)).toBe(labelValue(first));
        if (first !== second) expect(labelValue(first)).not.toBe(labelValue(second));
      }),
    );
  });

  it('keeps a value Kubernetes allows, and digests scope keys, phone numbers and paths', () => {
    expect(labelValue('berth')).toBe('berth');
    for (const value of ['user:telegram:123456789', '+15550001234', '/srv/sandboxes/docker/telegram@1/workspace', 'h-looks-like-a-digest', '']) {
      expect(labelValue(value)).toMatch(/^h-[0-9a-f]{40}$/);
    }
  });

  it("never uses the Docker backend's keys, which dockershim would copy onto the pause container", { timeout: PROPERTY_TEST_TIMEOUT_MS }, () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (name) => {
        const key = labelKey(`dev.berth.${name}`);
        expect(key).toMatch(KUBERNETES_KEY);
        expect(key.startsWith('dev.berth.')).toBe(false);
      }),
    );
    expect(labelKey('dev.berth.managed-by')).toBe('app.kubernetes.io/managed-by');
    expect(labelKey('dev.berth.scope')).toBe('berth.dev/scope');
    expect(labelKey('com.example/run')).toMatch(/^berth\.dev\/x-[0-9a-f]{16}$/);
  });

  it('selects by every label, and reads the exact labels back from the annotation', () => {
    const labels = { 'dev.berth.managed-by': 'berth', 'dev.berth.scope': 'user:signal:ab-cd' };
    expect(selectorOf(labels)).toBe(`app.kubernetes.io/managed-by=berth,berth.dev/scope=${labelValue('user:signal:ab-cd')}`);
    expect(runtimeLabelsOf({ [LABELS_ANNOTATION]: JSON.stringify(labels) })).toEqual(labels);
    expect(runtimeLabelsOf({ [LABELS_ANNOTATION]: '{not json' })).toBeUndefined();
    expect(runtimeLabelsOf(undefined)).toBeUndefined();
    expect(holdsAll(labels, { 'dev.berth.scope': 'user:signal:ab-cd' })).toBe(true);
    expect(holdsAll(labels, { 'dev.berth.scope': 'user:signal:ab' })).toBe(false);
    expect(Object.keys(toKubernetesLabels(labels))).toEqual(['app.kubernetes.io/managed-by', 'berth.dev/scope']);
  });
});
