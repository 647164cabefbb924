import { readFileSync } from 'node:fs';
import module from 'node:module';
import { fileURLToPath } from 'node:url';

/** A line of zod's locale index: `export { default as de } from "./de.js";`. */
const LOCALE_LINE = /^export \{ default as ([\w-]+) \} from "\.\/[\w-]+\.js";$/;

/**
 * Loads zod's index of error-message translations (`zod/v4/locales/index.js`, 64 modules) as its
 * English line alone: about 40 ms of the 90 ms that loading zod takes a CLI command here. Berth's
 * messages are English and zod registers English by itself (from `locales/en.js`), so nothing a
 * command does changes; only `z.locales.<other>` is missing in this process. An index of any other
 * shape (a later zod) is loaded as it is. The CLI's own process only, never a host's (the plugin).
 */
export function loadZodInEnglishOnly(): void {
  // Node 22.15 and later; an older Node loads every locale.
  module.registerHooks?.({
    load(url, context, nextLoad) {
      if (!url.startsWith('file:') || !url.endsWith('/zod/v4/locales/index.js')) return nextLoad(url, context);
      const lines = readFileSync(fileURLToPath(url), 'utf8')
        .split('\n')
        .filter((line) => line.trim() !== '');
      const english = lines.filter((line) => LOCALE_LINE.exec(line)?.[1] === 'en');
      if (english.length !== 1 || !lines.every((line) => LOCALE_LINE.test(line))) return nextLoad(url, context);
      return { format: 'module', source: english[0], shortCircuit: true };
    },
  });
}
