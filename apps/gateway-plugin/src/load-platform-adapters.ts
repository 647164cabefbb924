import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { assertPlatformAdapter, ConfigError, isBerthError, type PlatformAdapterV1 } from '@berth/core';

/** Options of {@link loadPlatformAdapters}. */
export interface LoadPlatformAdaptersOptions {
  /**
   * The folder whose `node_modules` third-party adapters are installed in, when this package
   * cannot resolve them itself (pnpm keeps dependencies apart).
   * @default process.cwd()
   */
  readonly resolveFrom?: string;
}

async function importModule(name: string, resolveFrom: string): Promise<Record<string, unknown>> {
  try {
    return (await import(name)) as Record<string, unknown>;
  } catch (first) {
    if ((first as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND' || !/^(?:@[^/]+\/)?[^/]+/.test(name)) throw first;
    // The gateway installed the adapter next to itself, not next to Berth: resolve from there.
    const require = createRequire(path.join(path.resolve(resolveFrom), 'package.json'));
    let resolved: string;
    try {
      resolved = require.resolve(name);
    } catch {
      throw first;
    }
    return (await import(pathToFileURL(resolved).href)) as Record<string, unknown>;
  }
}

/**
 * Loads the third-party platform adapters named in `terminal.platform_adapters`. Each module's
 * default export is an adapter object, or a function (a factory) that returns one. Any failure
 * is a `ConfigError` naming the package and what to do.
 */
export async function loadPlatformAdapters(names: readonly string[], options: LoadPlatformAdaptersOptions = {}): Promise<PlatformAdapterV1[]> {
  const adapters: PlatformAdapterV1[] = [];
  for (const [index, name] of names.entries()) {
    const key = `terminal.platform_adapters.${index}`;
    let loaded: Record<string, unknown>;
    try {
      loaded = await importModule(name, options.resolveFrom ?? process.cwd());
    } catch (error) {
      const notFound = (error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND';
      const reason = notFound ? 'is not installed' : `failed to load (${(error as Error).message.split('\n')[0]})`;
      throw new ConfigError(key, `platform adapter package ${name} ${reason}; install it next to the gateway (npm install ${name}) or remove it from ${key}`, { cause: error });
    }
    let candidate = loaded.default;
    try {
      if (typeof candidate === 'function') candidate = await (candidate as () => unknown)();
      assertPlatformAdapter(candidate);
    } catch (error) {
      const why = isBerthError(error) ? error.message : `its factory threw: ${(error as Error).message.split('\n')[0]}`;
      throw new ConfigError(key, `platform adapter package ${name} does not default-export a v1 platform adapter (${why}); upgrade the package or remove it from ${key}`, {
        cause: error,
      });
    }
    adapters.push(candidate);
  }
  return adapters;
}
