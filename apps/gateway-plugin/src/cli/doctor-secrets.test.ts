import { parseTerminalConfig } from '@berth/core';
import { describe, expect, it } from 'vitest';
import { secretChecks } from './doctor-secrets.js';

// `berth doctor`'s lines on brokered variables and the egress mode (docs/brokered-secrets.md).

describe("berth doctor's secrets and egress lines", () => {
  const environment = { OPENAI_API_KEY: 'sk-x', SENTRY_DSN: 'https://x', UNSET_ONE: undefined };

  it('name the brokered variables with their hosts, and every secret that still enters sandboxes', () => {
    const config = parseTerminalConfig({
      docker_forward_env: ['OPENAI_API_KEY', 'SENTRY_DSN', 'UNSET_ONE'],
      docker_secret_hosts: {
        OPENAI_API_KEY: ['api.openai.com'],
        GITHUB_TOKEN: ['api.github.com', 'raw.githubusercontent.com'],
        MAPS_KEY: { hosts: ['maps.example.com'], headers: ['X-Api-Key'], query: ['key'], ports: [443, 8443] },
      },
    });
    const [secrets, egress] = secretChecks(
      config,
      new Map([
        ['GITHUB_TOKEN', 3],
        ['NPM_TOKEN', 1],
      ]),
      environment,
      {
        mode: 'open',
        domains: [],
        brokered: {},
        proxy: 'port 3129',
      },
    );
    expect(secrets).toMatchObject({ name: 'secrets', status: 'ok' });
    expect(secrets!.detail).toContain(
      'GITHUB_TOKEN -> api.github.com, raw.githubusercontent.com; ' +
        'MAPS_KEY -> maps.example.com (also header x-api-key, query key, port 443, 8443); OPENAI_API_KEY -> api.openai.com',
    );
    expect(secrets!.detail).toContain('still enter sandboxes: SENTRY_DSN (forwarded), NPM_TOKEN (user variable of 1 user)');
    // A forwarded name with no value in the gateway's environment enters nothing.
    expect(secrets!.detail).not.toContain('UNSET_ONE');
    // The values themselves never appear.
    expect(JSON.stringify([secrets, egress])).not.toContain('sk-x');
    expect(egress).toMatchObject({ name: 'egress', status: 'ok' });
  });

  it('warn where the proxy cannot run, and call allow-list mode there a problem', () => {
    const config = parseTerminalConfig({
      docker_secret_hosts: { GITHUB_TOKEN: ['api.github.com'] },
      docker_egress: 'allowlist',
      docker_egress_domains: ['api.github.com'],
    });
    const unavailable = 'podman sandboxes here are not on networks of this host';
    const [secrets, egress] = secretChecks(config, new Map(), environment, { mode: 'allowlist', domains: ['api.github.com'], brokered: {}, unavailable });
    expect(secrets).toMatchObject({ name: 'secrets', status: 'warning' });
    expect(secrets!.detail).toContain(unavailable);
    expect(egress).toMatchObject({ name: 'egress', status: 'problem' });
    expect(egress!.fix).toMatch(/docker_egress: open/);
    const [, held] = secretChecks(config, new Map(), environment, { mode: 'allowlist', domains: ['api.github.com'], brokered: {}, proxy: 'port 3129' });
    expect(held).toMatchObject({ name: 'egress', status: 'ok', detail: expect.stringContaining('only api.github.com') });
  });

  it('say when nothing is brokered, and suggest it only when secrets enter sandboxes', () => {
    const [none] = secretChecks(parseTerminalConfig({}), new Map(), {}, undefined);
    expect(none).toEqual({ name: 'secrets', status: 'ok', detail: 'no variable is brokered; no secret enters a sandbox' });
    const [some] = secretChecks(parseTerminalConfig({ docker_forward_env: ['OPENAI_API_KEY'] }), new Map(), environment, undefined);
    expect(some!.fix).toMatch(/docker_secret_hosts/);
  });

  it('warn, naming the address, where the proxy could not listen (it is tried again on the next command)', () => {
    const config = parseTerminalConfig({ docker_secret_hosts: { GITHUB_TOKEN: ['api.github.com'] } });
    const proxy =
      "port 3129 on each sandbox network's gateway (0 listening in this process); " +
      "could not listen on 10.217.0.1 (EADDRINUSE), tried again on each of those sandboxes' next command";
    const [secrets] = secretChecks(config, new Map(), {}, { mode: 'open', domains: [], brokered: {}, proxy });
    expect(secrets).toMatchObject({ name: 'secrets', status: 'warning' });
    expect(secrets!.detail).toContain('could not listen on 10.217.0.1 (EADDRINUSE)');
    expect(secrets!.fix).toMatch(/port 3129/);
  });
});
