import { existsSync, readFileSync } from 'node:fs';
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

/** The entry of a package's `exports` for ESM under Node (conditions `import`, `node`, `default`). */
function exportsEntry(exportsField: unknown): string | undefined {
  if (typeof exportsField === 'string') return exportsField;
  if (Array.isArray(exportsField)) {
    for (const item of exportsField) {
      const entry = exportsEntry(item);
      if (entry) return entry;
    }
    return undefined;
  }
  if (exportsField === null || typeof exportsField !== 'object') return undefined;
  const record = exportsField as Record<string, unknown>;
  if ('.' in record) return exportsEntry(record['.']);
  for (const condition of ['import', 'node', 'default']) {
    if (condition in record) {
      const entry = exportsEntry(record[condition]);
      if (entry) return entry;
    }
  }
  return undefined;
}

/**
 * Finds `name` in the `node_modules` folders at and above `resolveFrom`, the way Node resolves
 * an ESM import there (createRequire would use the `require` condition and miss ESM-only
 * packages).
 */
function resolvePackageEntry(name: string, resolveFrom: string): string | undefined {
  type Manifest = { name?: string; exports?: unknown; module?: string; main?: string };
  const entryOf = (packageFolder: string, manifest: Manifest): string =>
    path.resolve(
      packageFolder,
      (manifest.exports !== undefined ? exportsEntry(manifest.exports) : undefined) ?? manifest.module ?? manifest.main ?? 'index.js',
    );
  const read = (file: string): Manifest | undefined => (existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Manifest) : undefined);
  let folder = path.resolve(resolveFrom);
  for (;;) {
    const packageFolder = path.join(folder, 'node_modules', name);
    const installed = read(path.join(packageFolder, 'package.json'));
    if (installed) return entryOf(packageFolder, installed);
    // A package naming itself (Node's self-reference), e.g. an adapter's own tests.
    const own = read(path.join(folder, 'package.json'));
    if (own?.name === name && own.exports !== undefined) return entryOf(folder, own);
    const parent = path.dirname(folder);
    if (parent === folder) return undefined;
    folder = parent;
  }
}

async function importModule(name: string, resolveFrom: string): Promise<Record<string, unknown>> {
  try {
    return (await import(name)) as Record<string, unknown>;
  } catch (first) {
    if ((first as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND' || !/^(?:@[^/]+\/)?[^/.][^/]*$/.test(name)) throw first;
    // The gateway installed the adapter next to itself, not next to Berth: resolve from there.
    const resolved = resolvePackageEntry(name, resolveFrom);
    if (!resolved) throw first;
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
      throw new ConfigError(key, `platform adapter package ${name} ${reason}; install it next to the gateway (npm install ${name}) or remove it from ${key}`, {
        cause: error,
      });
    }
    let candidate = loaded.default;
    try {
      if (typeof candidate === 'function') candidate = await (candidate as () => unknown)();
      assertPlatformAdapter(candidate);
    } catch (error) {
      const why = isBerthError(error) ? error.message : `its factory threw: ${(error as Error).message.split('\n')[0]}`;
      throw new ConfigError(
        key,
        `platform adapter package ${name} does not default-export a v1 platform adapter (${why}); upgrade the package or remove it from ${key}`,
        {
          cause: error,
        },
      );
    }
    adapters.push(candidate);
  }
  return adapters;
}
