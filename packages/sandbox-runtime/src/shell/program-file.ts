// The shell programs Berth sends into sandboxes are the `.sh` files of this folder, bundled as
// text (tsup's `.sh` loader; in tests, the plugin in vitest.shared.ts). A file is:
//
//   - a header, for shellcheck and readers, never sent: the lines before the first blank line,
//     all comments, the first `# shellcheck shell=sh` (the programs run under busybox ash and dash);
//   - the program, sent as written, but for its `# shellcheck …` lines (directives, each on a line
//     of its own, before the command it is about);
//   - in a template, `@NAME@` placeholders for what the code computes: see fillTemplate.

const HEADER = /^# shellcheck shell=sh\n(?:#.*\n)*\n/;
const DIRECTIVE = /^[ \t]*# shellcheck [^\n]*\n/gm;
const PLACEHOLDER = /@([A-Z][A-Z0-9_]*)@/g;

/** The text a program file sends: without its header and its shellcheck directives, ending with its final newline. */
export function programText(file: string): string {
  const header = HEADER.exec(file);
  if (!header) throw new Error('a shell program file starts with `# shellcheck shell=sh`, then comments, then a blank line');
  const text = file.slice(header[0].length).replace(DIRECTIVE, '');
  if (!text.endsWith('\n')) throw new Error('a shell program file ends with a newline');
  return text;
}

/** A one-line program (an argument of `/bin/sh -c`, which a process list shows): its line, without the newline. */
export function programLine(file: string): string {
  const text = programText(file);
  if (text.indexOf('\n') !== text.length - 1) throw new Error('this shell program file must hold one line');
  return text.slice(0, -1);
}

/**
 * `template` with each `@NAME@` replaced by `values[NAME]`, inserted as it is: the caller passes
 * shell text (a value becomes one word through quoteShell). Throws when a placeholder has no
 * value or a value has no placeholder, so a template and its code cannot drift apart unseen. A
 * value's own text is never searched for placeholders.
 */
export function fillTemplate(template: string, values: Readonly<Record<string, string>>): string {
  const unused = new Set(Object.keys(values));
  const text = template.replace(PLACEHOLDER, (_match, name: string) => {
    if (!Object.hasOwn(values, name)) throw new Error(`the shell template's @${name}@ has no value`);
    unused.delete(name);
    return values[name]!;
  });
  if (unused.size > 0) throw new Error(`the shell template has no ${[...unused].map((name) => `@${name}@`).join(', ')}`);
  return text;
}
