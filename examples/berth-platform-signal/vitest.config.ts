// Inside the Berth repository the example uses the shared settings (so its results are summed
// with the rest); a standalone adapter needs no more than `defineConfig({})` from vitest/config.
import { berthVitestConfig } from '../../vitest.shared.js';

export default berthVitestConfig({ name: 'berth-platform-signal', kind: 'unit' });
