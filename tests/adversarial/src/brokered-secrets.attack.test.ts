import { randomBytes } from 'node:crypto';
import dns from 'node:dns';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { LookupFunction } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { EGRESS_PROXY_PORT, loadCertificateAuthority } from '@berth/sandbox-runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineClient, randomTelegramUser, startAttackGateway, type AttackGateway, type Sender } from './support/attack-gateway.js';
import { freeOctet, startStandInNetwork, type StandInNetwork } from './support/stand-in-network.js';

// Brokered variables and egress by domain (docs/brokered-secrets.md), tried from real sandboxes
// on Docker and rootful Podman with real clients (curl, Python, Node) against a fake API of the
// test's own: an HTTPS server in a network namespace of its own, on a TEST-NET address that
// stands in for the internet, with certificates of its own CA, which only the gateway's proxy
// is told to trust. Output masking is off in these gateways, so whatever a sandbox could read
// of a value would show in what the test gets back.

/** The image with the clients (scripts/egress-test-image.sh builds it). */
const CLIENT_IMAGE = process.env.BERTH_EGRESS_TEST_IMAGE ?? 'localhost/berth-egress-test:latest';

const API = 'api.brokered.test';
const ELSEWHERE = 'elsewhere.brokered.test';
const LISTED = 'listed.brokered.test';

/** What the fake API received: one line per request. */
interface Received {
  readonly sni: string | null;
  readonly host: string | null;
  readonly method: string;
  readonly target: string;
  readonly headers: readonly string[];
}

const octet = freeOctet((n) => [`198.51.100.${(n * 4) & 0xfc}/30`, `203.0.113.${n}`]);
const apiAddress = `203.0.113.${octet}`;
const received: Received[] = [];
let api: StandInNetwork;
let folder: string;
let apiCa: ReturnType<typeof loadCertificateAuthority>;

/** Names under `.brokered.test` are the fake API's; the rest resolve as usual. */
const lookup: LookupFunction = (hostname, options, callback) => {
  if (!hostname.endsWith('.brokered.test')) return dns.lookup(hostname, options, callback);
  if (options.all) return (callback as unknown as (error: null, addresses: dns.LookupAddress[]) => void)(null, [{ address: apiAddress, family: 4 }]);
  callback(null, apiAddress, 4);
};

/** The requests the fake API received whose target holds `marker`. */
const arrived = (marker: string): Received[] => received.filter((request) => request.target.includes(marker));
/** A header's value in a received request (the first of that name). */
const headerOf = (request: Received, name: string): string | undefined => {
  const index = request.headers.findIndex((header, position) => position % 2 === 0 && header.toLowerCase() === name.toLowerCase());
  return index < 0 ? undefined : request.headers[index + 1];
};
/** Waits for the fake API's line about `marker` (its output is read as it comes). */
async function waitForArrival(marker: string): Promise<Received> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const found = arrived(marker)[0];
    if (found) return found;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the fake API received no request for ${marker}`);
}

beforeAll(async () => {
  folder = mkdtempSync(path.join(os.tmpdir(), 'berth-brokered-'));
  apiCa = loadCertificateAuthority(path.join(folder, 'api-ca'), 'the fake API of the brokered-secrets test');
  const certificates = path.join(folder, 'certificates.json');
  writeFileSync(certificates, JSON.stringify(Object.fromEntries([API, ELSEWHERE, LISTED].map((name) => [name, apiCa.leafFor(name)]))), { mode: 0o600 });
  api = await startStandInNetwork({
    link: `198.51.100.${(octet * 4) & 0xfc}`,
    extra: [apiAddress],
    server: [path.join(import.meta.dirname, 'support', 'fake-api.mjs'), certificates, apiAddress],
    onLine: (line) => received.push(JSON.parse(line) as Received),
  });
});

afterAll(() => {
  api?.close();
  if (folder) rmSync(folder, { recursive: true, force: true });
});

/** One UDP datagram to the fake API's echo, from inside a sandbox: its answer, or the error. */
const udpProbe =
  "python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3); " +
  `s.connect(("${apiAddress}", 443)); s.send(b"x"); print(s.recv(20))' 2>&1 | tail -n 1`;

/** A marker of one request, so each case finds its own in what the fake API received. */
const marker = (): string => `m${randomBytes(6).toString('hex')}`;

describe.each(['docker', 'podman'] as const)('brokered variables on %s', (backend) => {
  const [alice, bob] = [randomTelegramUser(), randomTelegramUser()];
  const aliceToken = `ghp_alice_${randomBytes(16).toString('hex')}`;
  const bobToken = `ghp_bob_${randomBytes(16).toString('hex')}`;
  const sharedKey = `sk_shared_${randomBytes(16).toString('hex')}`;
  const values = [aliceToken, bobToken, sharedKey];
  let gateway: AttackGateway;
  let allowlisted: AttackGateway;

  beforeAll(async () => {
    const common = {
      backend,
      docker_image: CLIENT_IMAGE,
      docker_mask_secrets: false,
      docker_forward_env: ['SHARED_KEY'],
      // GITHUB_TOKEN also in the query parameter token, SHARED_KEY also in the X-Shared header.
      docker_secret_hosts: { GITHUB_TOKEN: { hosts: [API], query: ['token'] }, SHARED_KEY: { hosts: [API, `*.${LISTED}`], headers: ['X-Shared'] } },
    };
    const environment = {
      [`HERMES_USER_TELEGRAM_${alice.userId}_GITHUB_TOKEN`]: aliceToken,
      [`HERMES_USER_TELEGRAM_${bob.userId}_GITHUB_TOKEN`]: bobToken,
      SHARED_KEY: sharedKey,
    };
    const plugin = { egressProxy: { upstreamCa: [apiCa.certificatePem], lookup } };
    [gateway, allowlisted] = await Promise.all([
      startAttackGateway({ config: common, environment, plugin }),
      startAttackGateway({ config: { ...common, docker_egress: 'allowlist', docker_egress_domains: [API, LISTED] }, environment, plugin }),
    ]);
  });

  afterAll(async () => {
    await Promise.all([gateway?.cleanup(), allowlisted?.cleanup()]);
  });

  const run = async (target: AttackGateway, sender: Sender, command: string): Promise<string> => {
    const result = await target.run(sender, command);
    return result.output;
  };

  it('gives the sandbox a placeholder: the value is in no variable, /proc, file, engine configuration or log', async () => {
    const shown = (await run(gateway, alice, 'echo "$GITHUB_TOKEN"; echo "$SHARED_KEY"')).trim().split('\n');
    expect(shown[0]).toMatch(/^berth_secret_[0-9a-f]{32}$/);
    expect(shown[1]).toMatch(/^berth_secret_[0-9a-f]{32}$/);
    expect(shown[0]).not.toBe(shown[1]);
    // The same placeholder for the sandbox's whole life; another for another user.
    expect((await run(gateway, alice, 'echo "$GITHUB_TOKEN"')).trim()).toBe(shown[0]);
    expect((await run(gateway, bob, 'echo "$GITHUB_TOKEN"')).trim()).not.toBe(shown[0]);
    // Everything the sandbox can read of its processes and its files.
    const everything = await run(
      gateway,
      alice,
      "env; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr '\\0' '\\n' < $f 2>/dev/null; " +
        'done; grep -rIs . /tmp /root /workspace /etc/berth 2>/dev/null | head -c 2000000',
    );
    expect(everything).toContain(shown[0]);
    for (const value of values) expect(everything).not.toContain(value);
    // The engine's view of the container: its configuration and labels.
    const container = await gateway.containerOf(alice);
    const inspected = JSON.stringify(await engineClient(backend).getContainer(container!.Id).inspect());
    for (const value of values) expect(inspected).not.toContain(value);
    for (const value of values) expect(gateway.logs.join('\n')).not.toContain(value);
  });

  it('puts the real value in requests to its approved host only where it goes (never the path), from curl, Python and Node', async () => {
    const [viaCurl, viaPython, viaNode] = [marker(), marker(), marker()];
    const placeholder = (await run(gateway, alice, 'echo "$GITHUB_TOKEN"')).trim();
    const curl = await run(
      gateway,
      alice,
      `curl -sS -H "Authorization: Bearer $GITHUB_TOKEN" -H "X-Shared: $SHARED_KEY" "https://${API}/${viaCurl}/$GITHUB_TOKEN?token=$GITHUB_TOKEN"`,
    );
    expect(curl).toContain(`answered GET /${viaCurl}/${placeholder} for ${API}`);
    const python = await run(
      gateway,
      alice,
      `python3 -c 'import os, urllib.request; r = urllib.request.Request("https://${API}/${viaPython}", ` +
        `headers={"Authorization": "token " + os.environ["GITHUB_TOKEN"]}); print(urllib.request.urlopen(r).read().decode())'`,
    );
    expect(python).toContain(`answered GET /${viaPython} for ${API}`);
    const node = await run(
      gateway,
      alice,
      `node -e 'fetch("https://${API}/${viaNode}", { headers: { authorization: "Bearer " + process.env.GITHUB_TOKEN } }).then((r) ` +
        `=> r.text()).then(console.log, (e) => console.log("failed", e.cause ?? e))'`,
    );
    expect(node).toContain(`answered GET /${viaNode} for ${API}`);
    const fromCurl = await waitForArrival(viaCurl);
    expect(headerOf(fromCurl, 'authorization')).toBe(`Bearer ${aliceToken}`);
    expect(headerOf(fromCurl, 'x-shared')).toBe(sharedKey);
    // The path is no place for a value: an API that echoes it in an error returns only the placeholder.
    expect(fromCurl.target).toBe(`/${viaCurl}/${placeholder}?token=${aliceToken}`);
    expect(fromCurl.sni).toBe(API);
    expect(headerOf(await waitForArrival(viaPython), 'authorization')).toBe(`token ${aliceToken}`);
    expect(headerOf(await waitForArrival(viaNode), 'authorization')).toBe(`Bearer ${aliceToken}`);
    // Nothing of it came back into the sandbox's output.
    for (const output of [curl, python, node]) for (const value of values) expect(output).not.toContain(value);
  });

  it("leaves the placeholder as it is for any other host, whose TLS the proxy does not open (the sandbox sees the host's own certificate)", async () => {
    const sent = marker();
    const placeholder = (await run(gateway, alice, 'echo "$GITHUB_TOKEN"')).trim();
    // -k: the fake API's CA is the gateway's to trust, not the sandbox's; -v shows whose certificate came.
    const output = await run(gateway, alice, `curl -sS -k -v -H "Authorization: Bearer $GITHUB_TOKEN" "https://${ELSEWHERE}/${sent}" 2>&1`);
    expect(output).toContain(`answered GET /${sent} for ${ELSEWHERE}`);
    expect(output).toMatch(/issuer: .*the fake API of the brokered-secrets test/);
    expect(headerOf(await waitForArrival(sent), 'authorization')).toBe(`Bearer ${placeholder}`);
    for (const value of values) expect(gateway.logs.join('\n')).not.toContain(value);
  });

  it('sends a GET with a chunked body on as one request: a request smuggled in its body never reaches the API', async () => {
    const [outer, smuggled] = [marker(), marker()];
    const output = await run(
      gateway,
      alice,
      `python3 - <<'EOF'
import os, socket, ssl
address, port = os.environ["HTTPS_PROXY"].split("//")[1].split(":")
raw = socket.create_connection((address, int(port)), timeout=10)
raw.sendall(b"CONNECT ${API}:443 HTTP/1.1\\r\\nHost: ${API}:443\\r\\n\\r\\n")
raw.recv(200)
secure = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"]).wrap_socket(raw, server_hostname="${API}")
inner = ("GET /${smuggled} HTTP/1.1\\r\\nHost: ${API}\\r\\nAuthorization: Bearer " + os.environ["GITHUB_TOKEN"] + "\\r\\n\\r\\n").encode()
body = b"%x\\r\\n" % len(inner) + inner + b"\\r\\n0\\r\\n\\r\\n"
secure.sendall(b"GET /${outer} HTTP/1.1\\r\\nHost: ${API}\\r\\nTransfer-Encoding: chunked\\r\\nConnection: content-length, transfer-encoding\\r\\n\\r\\n" + body)
secure.settimeout(5)
data = b""
while b"answered" not in data and (piece := secure.recv(4096)): data += piece
print(data.decode(errors="replace"))
EOF`,
    );
    expect(output).toContain(`answered GET /${outer}`);
    await waitForArrival(outer).then(() => new Promise((resolve) => setTimeout(resolve, 1_000)));
    expect(arrived(outer)).toHaveLength(1);
    expect(arrived(smuggled)).toEqual([]);
  });

  it("never substitutes one user's placeholder in another user's request", async () => {
    const stolen = marker();
    const alicePlaceholder = (await run(gateway, alice, 'echo "$GITHUB_TOKEN"')).trim();
    const output = await run(gateway, bob, `curl -sS -H "Authorization: Bearer ${alicePlaceholder}" "https://${API}/${stolen}"`);
    expect(output).toContain(`answered GET /${stolen}`);
    const request = await waitForArrival(stolen);
    // Where Bob's own value goes, anything but Bob's placeholder is dropped.
    expect(headerOf(request, 'authorization')).toBeUndefined();
    expect(JSON.stringify(request)).not.toContain(aliceToken);
  });

  it('a client that ignores the proxy reaches the internet directly in open mode, over TCP and UDP (the control of the allow-list case below)', async () => {
    const direct = await run(gateway, alice, `curl -sS --noproxy '*' -k -m 5 "https://${apiAddress}/direct-${marker()}" 2>&1`);
    expect(direct).toContain('answered GET /direct-');
    expect(await run(gateway, alice, udpProbe)).toContain("b'echo x'");
  });

  describe('in allow-list mode', () => {
    it('reaches a listed domain, and refuses an unlisted one and a raw address', async () => {
      const listed = marker();
      // No variable is approved for it: its TLS passes unopened (-k: the fake API's CA is not the sandbox's).
      expect(await run(allowlisted, alice, `curl -sS -k -m 10 "https://${LISTED}/${listed}" 2>&1`)).toContain(`answered GET /${listed} for ${LISTED}`);
      const unlisted = marker();
      const refused = await run(allowlisted, alice, `curl -sS -m 10 "https://${ELSEWHERE}/${unlisted}" 2>&1; echo "exit $?"`);
      expect(refused).toMatch(/403|CONNECT tunnel failed/);
      expect(refused).not.toContain('answered');
      const raw = await run(allowlisted, alice, `curl -sS -k -m 10 "https://${apiAddress}/${marker()}" 2>&1; echo "exit $?"`);
      expect(raw).toMatch(/403|CONNECT tunnel failed/);
      expect(arrived(unlisted)).toEqual([]);
    });

    it('refuses a TLS name or a Host header that differs from the host asked for', async () => {
      const forgedHost = marker();
      const host = await run(allowlisted, alice, `curl -sS -m 10 -H "Host: ${ELSEWHERE}" "https://${API}/${forgedHost}" 2>&1`);
      expect(host).not.toContain('answered');
      expect(arrived(forgedHost)).toEqual([]);
      // CONNECT to a listed host, then TLS naming an unlisted one.
      const sni = await run(
        allowlisted,
        alice,
        `python3 - <<'EOF'
import os, socket, ssl
proxy = os.environ["HTTPS_PROXY"].split("//")[1]
address, port = proxy.split(":")
raw = socket.create_connection((address, int(port)), timeout=10)
raw.sendall(b"CONNECT ${LISTED}:443 HTTP/1.1\\r\\nHost: ${LISTED}:443\\r\\n\\r\\n")
print(raw.recv(200).split(b"\\r\\n")[0].decode())
context = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
context.check_hostname = False
try:
    secure = context.wrap_socket(raw, server_hostname="${ELSEWHERE}")
    secure.sendall(b"GET /sni HTTP/1.1\\r\\nHost: ${ELSEWHERE}\\r\\n\\r\\n")
    print("answered:", secure.recv(200))
except Exception as error:
    print("refused:", type(error).__name__)
EOF`,
      );
      expect(sni).toContain('200');
      expect(sni).toContain('refused:');
    });

    it('blocks a client that ignores the proxy variables, by address or by a listed name it resolves itself', async () => {
      const byAddress = await run(allowlisted, alice, `curl -sS --noproxy '*' -k -m 5 "https://${apiAddress}/direct-${marker()}" 2>&1; echo "exit $?"`);
      expect(byAddress).not.toContain('answered');
      expect(byAddress).toMatch(/exit (7|28)/);
      // A listed domain, straight to its address: the list is the proxy's, never the way around it.
      const byName = await run(
        allowlisted,
        alice,
        `curl -sS --noproxy '*' -k -m 5 --resolve ${LISTED}:443:${apiAddress} "https://${LISTED}/direct-${marker()}" 2>&1; echo "exit $?"`,
      );
      expect(byName).not.toContain('answered');
      expect(byName).toMatch(/exit (7|28)/);
      // And UDP (QUIC, say) to anything but DNS.
      const udp = await run(allowlisted, alice, udpProbe);
      expect(udp).not.toContain('echo');
      // The firewall's reject (ICMP administratively prohibited): "No route to host".
      expect(udp).toMatch(/No route to host|ConnectionRefusedError|timed out/);
    });

    it('still substitutes for the approved host', async () => {
      const sent = marker();
      expect(await run(allowlisted, bob, `curl -sS -m 10 -H "Authorization: Bearer $GITHUB_TOKEN" "https://${API}/${sent}"`)).toContain('answered');
      expect(headerOf(await waitForArrival(sent), 'authorization')).toBe(`Bearer ${bobToken}`);
    });
  });

  it("holds one user's slowloris and 200 connections at once while another user's requests are served", async () => {
    // Alice opens 200 connections to the proxy and trickles on each; Bob asks meanwhile.
    const started = await run(
      gateway,
      alice,
      `cat > /tmp/hoard.py <<'EOF'
import os, socket, time
proxy = os.environ["HTTPS_PROXY"].split("//")[1]
address, port = proxy.split(":")
held = []
for _ in range(200):
    try:
        connection = socket.create_connection((address, int(port)), timeout=5)
        connection.sendall(b"CONNECT ${API}:443 HTTP/1.1\\r\\n")
        held.append(connection)
    except OSError:
        pass
open("/tmp/hoard.ready", "w").write(str(len(held)))
time.sleep(30)
EOF
(python3 /tmp/hoard.py >/dev/null 2>&1 &) ; for i in $(seq 100); do [ -f /tmp/hoard.ready ] && break; sleep 0.1; done; cat /tmp/hoard.ready`,
    );
    expect(Number(started.trim().split('\n').at(-1))).toBeGreaterThan(0);
    const sent = marker();
    const answer = await run(gateway, bob, `curl -sS -m 10 -H "Authorization: Bearer $GITHUB_TOKEN" "https://${API}/${sent}" 2>&1`);
    expect(answer).toContain(`answered GET /${sent}`);
    expect(headerOf(await waitForArrival(sent), 'authorization')).toBe(`Bearer ${bobToken}`);
  });

  it(`is reachable only on the sandbox's own gateway, port ${EGRESS_PROXY_PORT}`, async () => {
    // Bob's proxy address, from Alice's sandbox: another sandbox's gateway is refused by the firewall.
    const bobProxy = (await run(gateway, bob, 'echo "$HTTPS_PROXY"')).trim();
    expect(bobProxy).toMatch(new RegExp(`^http://[0-9.]+:${EGRESS_PROXY_PORT}$`));
    const output = await run(gateway, alice, `curl -sS -m 5 --proxy "${bobProxy}" "https://${API}/${marker()}" 2>&1; echo "exit $?"`);
    expect(output).not.toContain('answered');
    expect(output).toMatch(/exit (7|28|56)/);
  });
});
