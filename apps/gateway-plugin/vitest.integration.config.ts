import { berthVitestConfig } from '../../vitest.shared.js';

export default berthVitestConfig({ name: 'gateway-plugin', kind: 'integration' });
