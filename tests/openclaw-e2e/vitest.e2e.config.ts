import { berthVitestConfig } from '../../vitest.shared.js';

// One gateway for the whole file: start, install and the messages take about two minutes.
export default berthVitestConfig({ name: 'openclaw-e2e', kind: 'e2e', timeoutMs: 240_000 });
