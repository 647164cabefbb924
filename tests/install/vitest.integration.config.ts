import { berthVitestConfig } from '../../vitest.shared.js';

// npm installs from the registry (or its cache) before the first test: minutes on a cold machine.
export default berthVitestConfig({ name: 'install', kind: 'integration', timeoutMs: 600_000 });
