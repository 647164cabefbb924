import { defineConfig, type Options } from 'tsup';
import base from '../../tsup.config.js';

// The repository's one build config (entries from this package's exports), plus: the host SDK
// (`openclaw/plugin-sdk/*`) is resolved by the gateway that loads the plugin, never bundled.
export default defineConfig({ ...(base as Options), external: [/^openclaw(\/|$)/] });
