import { berthVitestConfig } from '../../vitest.shared.js';

export default berthVitestConfig({ name: 'testkit', kind: 'integration' });
