import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';

/** The nftables tables of Berth's egress policy on this host (`berth_…`), or `undefined` when nft cannot be used here. */
export function berthTables(): string[] | undefined {
  try {
    const text = execFileSync('nft', ['list', 'tables'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return text
      .split('\n')
      .map((line) => /^table inet (berth_\S+)$/.exec(line.trim())?.[1])
      .filter((name): name is string => name !== undefined);
  } catch {
    return undefined;
  }
}

/** Whether an installation table (`berth_inst_<tag>`) has a sandbox bridge (`bth<tag>…`) on this host. */
export function hasBridge(table: string): boolean {
  const tag = /^berth_inst_([0-9a-f]{6})$/.exec(table)?.[1];
  if (tag === undefined) return true;
  return readdirSync('/sys/class/net').some((name) => name.startsWith(`bth${tag}`));
}

/**
 * Installation tables that appeared since `before` and that nothing owns: after `graceMs`, still
 * there without a bridge of theirs. Another installation busy on the same host (a test suite
 * beside this one) makes its table just before its first bridge and removes it just after its
 * last, so its tables are not counted.
 */
export async function unownedNewTables(before: readonly string[], graceMs = 20_000): Promise<string[]> {
  const deadline = Date.now() + graceMs;
  for (;;) {
    const unowned = (berthTables() ?? []).filter((table) => table.startsWith('berth_inst_') && !before.includes(table) && !hasBridge(table));
    if (unowned.length === 0 || Date.now() >= deadline) return unowned;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}
