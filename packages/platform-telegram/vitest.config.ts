import { berthVitestConfig } from '../../vitest.shared.js';

export default berthVitestConfig({ name: 'platform-telegram', kind: 'unit' });
