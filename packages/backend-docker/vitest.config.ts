import { berthVitestConfig } from '../../vitest.shared.js';

export default berthVitestConfig({ name: 'backend-docker', kind: 'unit' });
