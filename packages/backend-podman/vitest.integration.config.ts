import { berthVitestConfig } from '../../vitest.shared.js';

export default berthVitestConfig({ name: 'backend-podman', kind: 'integration' });
