// How values become shell text: one quoted word, a printf format that prints exact bytes, the
// lines that set a session's variables, and the command file a shell sources.

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Quotes `value` as one single-quoted shell word. Throws on NUL, which no shell word can hold. */
export function quoteShell(value: string): string {
  if (value.includes('\0')) throw new TypeError('a shell word cannot contain a NUL byte');
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/**
 * The command line that runs Berth's own `script` in the sandbox's session (`$0` is `name`, then
 * `args`): the image's `/bin/sh` by its path, with the system's `PATH`, without the session's
 * preload and start-up variables (`LD_PRELOAD`, `BASH_ENV`, `ENV`, …), so what a user exported (a
 * planted `sh`, `stat` or `dd`, a preload) is not what answers. With `decodeStdin`, the script's
 * stdin is the base64 its caller sent, decoded by the system's `base64`. What it prints is still the
 * sandbox's word: the host checks everything it relies on (docs/security.md).
 */
export function helperScriptCommand(script: string, name: string, args: readonly string[], options: { decodeStdin?: boolean } = {}): string {
  const body = options.decodeStdin ? `base64 -d | (\n${script}\n)` : script;
  const program = `PATH=/usr/sbin:/usr/bin:/sbin:/bin\n${body}`;
  return ['LD_PRELOAD= LD_LIBRARY_PATH= LD_AUDIT= BASH_ENV= ENV=', '/bin/sh', '-c', quoteShell(program), quoteShell(name), ...args.map(quoteShell)].join(' ');
}

/**
 * A single-quoted `printf` format that prints exactly `bytes`: `%` and `\` are escaped, and
 * NUL, quotes and every byte outside printable ASCII are written as three-digit octal escapes
 * (a digit right after an escape is escaped too, so no shell reads a longer number). A leading
 * `-` is escaped so that printf never takes the format for an option.
 */
export function encodePrintfFormat(bytes: Uint8Array): string {
  let out = "'";
  let afterEscape = false;
  for (const byte of bytes) {
    const printable = (byte >= 0x20 && byte < 0x7f) || byte === 0x0a;
    const digit = byte >= 0x30 && byte <= 0x39;
    // A leading `-` would be read as an option by printf.
    const leadingDash = byte === 0x2d && out === "'";
    if (!printable || leadingDash || byte === 0x27 || byte === 0x5c || byte === 0x25 || (digit && afterEscape)) {
      out += `\\${byte.toString(8).padStart(3, '0')}`;
      afterEscape = true;
    } else {
      out += String.fromCharCode(byte);
      afterEscape = false;
    }
  }
  return `${out}'`;
}

/** `export NAME='value'` lines for `variables`, and `unset` for names no longer present. */
export function buildEnvironmentScript(variables: Readonly<Record<string, string>>, removed: Iterable<string> = []): string {
  let script = '';
  for (const name of removed) {
    if (VARIABLE_NAME.test(name) && !(name in variables)) script += `unset ${name}\n`;
  }
  for (const [name, value] of Object.entries(variables)) {
    // Core validates names; a malformed one is skipped rather than written into a script.
    if (!VARIABLE_NAME.test(name)) continue;
    script += `export ${name}=${quoteShell(value)}\n`;
  }
  return script;
}

/** The command file's text: an optional `cd` for this command, then the command itself. */
export function buildCommandFile(command: string, cwd?: string): string {
  const prefix = cwd === undefined ? '' : `cd -- ${quoteShell(cwd)} || exit 1\n`;
  return `${prefix}${command}\n`;
}
