import { describe, expect, it } from 'vitest';
import { parsePodMetrics, parseQuantity } from './pod-metrics.js';

// The resource metrics API's answer as metrics-server gives it (a PodMetricsList: each Pod's
// containers with `usage.cpu` and `usage.memory` as quantities). The test cluster serves no such
// API; the integration test checks berth top says so there.
describe('parseQuantity', () => {
  it('reads the forms a metrics API writes, and nothing else', () => {
    expect(parseQuantity('123456789n')).toBeCloseTo(0.123456789, 9);
    expect(parseQuantity('250m')).toBe(0.25);
    expect(parseQuantity('1500u')).toBeCloseTo(0.0015, 9);
    expect(parseQuantity('2')).toBe(2);
    expect(parseQuantity('1.5')).toBe(1.5);
    expect(parseQuantity('10Mi')).toBe(10 * 2 ** 20);
    expect(parseQuantity('12345Ki')).toBe(12345 * 1024);
    expect(parseQuantity('1e3')).toBe(1000);
    expect(parseQuantity('1G')).toBe(1e9);
    for (const bad of ['', '-1', '1 Mi', '1Xi', 'NaN', 'Infinity', '1e999', 12, null, '9'.repeat(70)]) expect(parseQuantity(bad)).toBeUndefined();
  });
});

describe('parsePodMetrics', () => {
  it("sums each Pod's containers, and leaves out a Pod any part of which is not a reading", () => {
    const list = {
      kind: 'PodMetricsList',
      apiVersion: 'metrics.k8s.io/v1beta1',
      items: [
        {
          metadata: { name: 'berth-aaa', namespace: 'berth' },
          window: '15s',
          containers: [
            { name: 'sandbox', usage: { cpu: '250m', memory: '64Mi' } },
            { name: 'side', usage: { cpu: '50000000n', memory: '1Mi' } },
          ],
        },
        { metadata: { name: 'berth-bbb' }, containers: [{ name: 'sandbox', usage: { cpu: 'lots', memory: '1Mi' } }] },
        { metadata: {}, containers: [] },
        null,
      ],
    };
    const usage = parsePodMetrics(list);
    expect([...usage.keys()]).toEqual(['berth-aaa']);
    expect(usage.get('berth-aaa')!.cpuCores).toBeCloseTo(0.3, 9);
    expect(usage.get('berth-aaa')!.memoryBytes).toBe(65 * 2 ** 20);
    expect(parsePodMetrics({ items: 'no' }).size).toBe(0);
    expect(parsePodMetrics(undefined).size).toBe(0);
  });
});
