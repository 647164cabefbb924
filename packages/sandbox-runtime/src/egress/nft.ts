import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

// The host's `nft`, found and run: the egress policy's one way to the kernel's firewall.

const SEARCH = ['/usr/sbin', '/sbin', '/usr/bin', '/bin'];
/** Where `nft` is, or `undefined` when this host has none. */
export const findNft = (): string | undefined =>
  [...SEARCH, ...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean)].map((folder) => path.join(folder, 'nft')).find((file) => existsSync(file));

/** Runs `nft` with `args`, the script on stdin; rejects with nft's first line of complaint. */
export function nft(args: readonly string[], script = ''): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const child = execFile(findNft()!, [...args], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (!error) return resolve(stdout);
      reject(new Error((stderr || error.message).trim().split('\n')[0]));
    });
    // nft may exit before it reads its stdin (a list or delete command, or a refusal): its exit
    // status and stderr are the answer, and a broken pipe here must not become an unhandled error.
    child.stdin?.on('error', () => undefined);
    if (script) child.stdin?.end(script);
    else child.stdin?.end();
  });
}

/** Whether the host has the nftables table `inet {table}`. */
export async function tableExists(table: string): Promise<boolean> {
  try {
    await nft(['list', 'table', 'inet', table]);
    return true;
  } catch {
    return false;
  }
}
