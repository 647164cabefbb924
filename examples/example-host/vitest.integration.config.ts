import { berthVitestConfig } from '../../vitest.shared.js';

export default berthVitestConfig({ name: 'example-host', kind: 'integration' });
