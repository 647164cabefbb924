// `@berth/sandbox-runtime/metrics`: the runtime's Prometheus metrics, an entry of its own so that
// prom-client (about 150 ms to load) is loaded only by a process that serves metrics: a host
// imports it when it turns them on and hands the runtime `observer`. A name is in one entry only
// (src/entry-points.test.ts).
export { createRuntimeMetrics, EXEC_DURATION_BUCKETS, type RuntimeMetrics } from './metrics/runtime-metrics.js';
export type { RuntimeObserver, RuntimeView } from './runtime-observer.js';
