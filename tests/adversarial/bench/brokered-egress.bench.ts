/**
 * What the egress proxy costs a real sandbox (docs/brokered-secrets.md): curl inside a Docker
 * sandbox, against the fake API of the attack suite (an HTTPS server in a network namespace of
 * the bench's own, on a TEST-NET address), once straight to it and once through the proxy with a
 * brokered token substituted, side by side in alternating rounds of one run.
 *
 * `pnpm --filter @berth/adversarial bench` (root, Docker running, the image of
 * scripts/egress-test-image.sh). Prints a table and writes bench-results/brokered-egress.json.
 */
import { randomBytes } from 'node:crypto';
import dns from 'node:dns';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { LookupFunction } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { loadCertificateAuthority } from '@berth/sandbox-runtime';
import { randomTelegramUser, startAttackGateway } from '../src/support/attack-gateway.js';
import { freeOctet, startStandInNetwork } from '../src/support/stand-in-network.js';

const ROUNDS = 5;
const REQUESTS_PER_ROUND = 20;
const DOWNLOAD_BYTES = 100 * 1024 * 1024;
const IMAGE = process.env.BERTH_EGRESS_TEST_IMAGE ?? 'localhost/berth-egress-test:latest';
const HOST = 'api.brokered.test';

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

const octet = freeOctet((n) => [`198.51.100.${(n * 4) & 0xfc}/30`, `203.0.113.${n}`]);
const address = `203.0.113.${octet}`;
const folder = mkdtempSync(path.join(os.tmpdir(), 'berth-egress-bench-'));
const ca = loadCertificateAuthority(path.join(folder, 'api-ca'), 'the fake API of the egress bench');
const certificates = path.join(folder, 'certificates.json');
writeFileSync(certificates, JSON.stringify({ [HOST]: ca.leafFor(HOST) }), { mode: 0o600 });
const lookup: LookupFunction = (hostname, options, callback) => {
  if (hostname !== HOST) return dns.lookup(hostname, options, callback);
  if (options.all) return (callback as unknown as (error: null, addresses: dns.LookupAddress[]) => void)(null, [{ address, family: 4 }]);
  callback(null, address, 4);
};

const api = await startStandInNetwork({
  link: `198.51.100.${(octet * 4) & 0xfc}`,
  extra: [address],
  server: [path.join(import.meta.dirname, '..', 'src', 'support', 'fake-api.mjs'), certificates],
});
const user = randomTelegramUser();
const gateway = await startAttackGateway({
  config: { backend: 'docker', docker_image: IMAGE, docker_secret_hosts: { GITHUB_TOKEN: [HOST] } },
  environment: { [`HERMES_USER_TELEGRAM_${user.userId}_GITHUB_TOKEN`]: `ghp_${randomBytes(16).toString('hex')}` },
  plugin: { egressProxy: { upstreamCa: [ca.certificatePem], lookup } },
});

try {
  // Straight to the API: no proxy, its name pinned to its address, its certificate checked
  // against the same bundle the sandbox gets plus the bench's CA (a client loading a whole bundle
  // pays about 25 ms for it with OpenSSL 3.0, either way: measured here, so both sides pay it).
  // Through the proxy: as a user's tool runs, with the brokered token in a header.
  await gateway.run(user, `{ cat /etc/berth/ca-bundle.pem; printf '%s\\n' '${ca.certificatePem.trim().replace(/\n/g, "' '")}'; } > /tmp/direct-bundle.pem`);
  const direct = `--noproxy '*' --cacert /tmp/direct-bundle.pem --resolve ${HOST}:443:${address}`;
  const proxied = '-H "Authorization: Bearer $GITHUB_TOKEN"';
  const times = (flags: string, keptAlive: boolean): string => {
    const url = `https://${HOST}/bench`;
    // One curl per request (a new connection each), or one curl for all (kept alive after the first).
    return keptAlive
      ? `curl -s ${flags} -o /dev/null -w '%{time_total}\\n' ${Array.from({ length: REQUESTS_PER_ROUND + 1 }, () => url).join(' ')} | tail -n +2`
      : `for i in $(seq ${REQUESTS_PER_ROUND}); do curl -s ${flags} -o /dev/null -w '%{time_total}\\n' ${url}; done`;
  };
  const run = async (command: string): Promise<number[]> => {
    const result = await gateway.run(user, command);
    if (result.returncode !== 0) throw new Error(`the bench's command failed (${result.returncode}): ${result.output.slice(0, 400)}`);
    return result.output
      .trim()
      .split('\n')
      .map(Number)
      .filter((value) => Number.isFinite(value));
  };
  await run(`curl -s -o /dev/null -w '%{http_code}\\n' https://${HOST}/warm`);
  const samples = {
    newDirect: [] as number[],
    newProxy: [] as number[],
    keptDirect: [] as number[],
    keptProxy: [] as number[],
    mbDirect: [] as number[],
    mbProxy: [] as number[],
  };
  for (let round = 0; round < ROUNDS; round++) {
    samples.newDirect.push(...(await run(times(direct, false))).map((seconds) => seconds * 1000));
    samples.newProxy.push(...(await run(times(proxied, false))).map((seconds) => seconds * 1000));
    samples.keptDirect.push(...(await run(times(direct, true))).map((seconds) => seconds * 1000));
    samples.keptProxy.push(...(await run(times(proxied, true))).map((seconds) => seconds * 1000));
    const download = (flags: string): string => `curl -s ${flags} -o /dev/null -w '%{speed_download}\\n' https://${HOST}/bytes/${DOWNLOAD_BYTES}`;
    samples.mbDirect.push(...(await run(download(direct))).map((bytes) => bytes / 1024 / 1024));
    samples.mbProxy.push(...(await run(download(proxied))).map((bytes) => bytes / 1024 / 1024));
  }
  const rows = [
    { what: 'HTTPS request on a new connection (ms)', direct: median(samples.newDirect), proxy: median(samples.newProxy) },
    { what: 'HTTPS request on a kept-alive connection (ms)', direct: median(samples.keptDirect), proxy: median(samples.keptProxy) },
    { what: '100 MiB download (MiB/s)', direct: median(samples.mbDirect), proxy: median(samples.mbProxy) },
  ];
  console.log(
    'curl in a Docker sandbox, straight to the API and through the egress proxy: ' +
      `medians of ${ROUNDS} alternating rounds (${REQUESTS_PER_ROUND} requests a round)`,
  );
  console.log('| measure | direct | through the proxy | proxy / direct |');
  console.log('| --- | ---: | ---: | ---: |');
  for (const row of rows) console.log(`| ${row.what} | ${row.direct.toFixed(2)} | ${row.proxy.toFixed(2)} | ${(row.proxy / row.direct).toFixed(2)} |`);
  const output = path.resolve(import.meta.dirname, '..', 'bench-results', 'brokered-egress.json');
  mkdirSync(path.dirname(output), { recursive: true });
  const summary = {
    at: new Date().toISOString(),
    rounds: ROUNDS,
    requestsPerRound: REQUESTS_PER_ROUND,
    downloadBytes: DOWNLOAD_BYTES,
    cpus: os.cpus().length,
    rows,
  };
  writeFileSync(output, `${JSON.stringify(summary, null, 2)}\n`);
  console.log(`written: ${path.relative(process.cwd(), output)}`);
} finally {
  await gateway.cleanup();
  api.close();
  rmSync(folder, { recursive: true, force: true });
}
