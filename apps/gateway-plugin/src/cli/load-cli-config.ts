import path from 'node:path';
import { loadConfig, type LoadedConfig } from '@berth/core';
import type { CliIo } from './cli-io.js';

/** The config the CLI uses: `--config FILE` (relative to the current folder), else the default file, else defaults. */
export function loadCliConfig(io: CliIo, file: string | undefined): LoadedConfig {
  return loadConfig({
    ...(file !== undefined ? { file: path.resolve(io.cwd, file) } : {}),
    environment: io.environment as NodeJS.ProcessEnv,
  });
}
