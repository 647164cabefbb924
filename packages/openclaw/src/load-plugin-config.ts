import path from 'node:path';
import { ConfigError, describeForMessage, expandHome, loadConfig, parseTerminalConfig, type TerminalConfig } from '@berth/core';
import { z } from 'zod';

/** Where the plugin's settings live in `openclaw.json`. */
export const PLUGIN_CONFIG_KEY = 'plugins.entries.berth.config';

/**
 * `plugins.entries.berth.config` in `openclaw.json`. Every key is optional: with none, the
 * plugin reads the default Berth config file (`${HERMES_HOME:-~/.hermes}/config.yaml`), or the
 * defaults when that file does not exist.
 */
export const openClawPluginConfigSchema = z.strictObject({
  /** A `terminal:` section, keys exactly as in Berth's YAML config. */
  terminal: z.record(z.string(), z.unknown()).optional(),
  /** A Berth YAML config file whose `terminal:` section applies; `~` is the gateway user's home. */
  configFile: z.string().min(1).optional(),
  /**
   * The Unix socket the plugin serves inside the gateway for the spawned clients. Default: a
   * fresh private folder under the system's temporary folder, removed when the gateway stops.
   */
  socket: z.string().min(1).optional(),
  /**
   * Which client each spawned command runs: `perl` (a few ms to start), `node` (`berth exec
   * --socket`, tens of ms), or `auto`: Perl when the gateway's PATH has a perl with its Socket
   * module, else Node. Default `auto`.
   */
  client: z.enum(['auto', 'perl', 'node']).optional(),
});

/** The plugin's own settings, validated. */
export type OpenClawPluginConfig = z.output<typeof openClawPluginConfigSchema>;

/** The plugin's settings and the `terminal:` section they lead to. */
export interface LoadedPluginConfig {
  readonly plugin: OpenClawPluginConfig;
  readonly terminal: TerminalConfig;
  /** Where the `terminal:` settings came from, for the gateway's log. */
  readonly source: string;
}

/**
 * Validates `plugins.entries.berth.config` and loads the `terminal:` settings it names: its
 * own `terminal` section, or the Berth config file `configFile`, or the default Berth config
 * file. A wrong key is a `ConfigError` naming it (`plugins.entries.berth.config.terminal.…`).
 */
export function loadPluginConfig(pluginConfig: unknown, environment: Readonly<Record<string, string | undefined>> = process.env): LoadedPluginConfig {
  const parsed = openClawPluginConfigSchema.safeParse(pluginConfig ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    if (issue.code === 'unrecognized_keys') {
      const key = `${PLUGIN_CONFIG_KEY}.${issue.keys[0]!}`;
      throw new ConfigError(key, `unknown key ${key}; the Berth plugin takes terminal, configFile, socket and client (see docs/openclaw.md)`);
    }
    const key = [PLUGIN_CONFIG_KEY, ...issue.path.map(String)].join('.');
    const given = issue.path.reduce<unknown>((value, part) => (value as Record<PropertyKey, unknown> | undefined)?.[part as PropertyKey], pluginConfig);
    const expected =
      issue.path[0] === 'terminal' ? 'a mapping of terminal settings' : issue.path[0] === 'client' ? '"auto", "perl" or "node"' : 'a non-empty path';
    throw new ConfigError(key, `${key} is ${describeForMessage(given)}: expected ${expected}`);
  }
  const plugin = parsed.data;
  if (plugin.terminal && plugin.configFile) {
    throw new ConfigError(
      `${PLUGIN_CONFIG_KEY}.configFile`,
      `${PLUGIN_CONFIG_KEY} has both terminal and configFile; keep one: the terminal settings inline, or the Berth config file that holds them`,
    );
  }
  if (plugin.terminal) {
    return { plugin, terminal: parseTerminalConfig(plugin.terminal, `${PLUGIN_CONFIG_KEY}.terminal`), source: `${PLUGIN_CONFIG_KEY}.terminal` };
  }
  const loaded = loadConfig({
    ...(plugin.configFile ? { file: path.resolve(expandHome(plugin.configFile, environment)) } : {}),
    environment: environment as NodeJS.ProcessEnv,
  });
  return { plugin, terminal: loaded.config, source: loaded.file ?? 'the defaults (no Berth config file)' };
}
