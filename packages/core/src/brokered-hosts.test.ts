import { describe, expect, it } from 'vitest';
import { parseTerminalConfig } from './config.js';
import { ConfigError } from './errors.js';

// docker_secret_hosts' two forms and docker_egress_domains' ports (brokered-hosts.ts,
// host-pattern.ts; docs/brokered-secrets.md), read through the config as an operator writes them.

const message = (fn: () => unknown): string => {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigError');
};

describe('brokered variables and egress domains in the config', () => {
  it('read the object form of a brokered variable: hosts, the headers and query parameters it goes in, and its ports', () => {
    const config = parseTerminalConfig({
      docker_secret_hosts: {
        OPENAI_API_KEY: ['api.openai.com'],
        MAPS_KEY: { hosts: ['maps.example.com'], headers: ['X-Api-Key'], query: ['key'], ports: [443, 8443] },
      },
    });
    const maps = config.docker_secret_hosts.MAPS_KEY!;
    // The hosts read as the list form does (code that reads the list keeps working).
    expect([...maps]).toEqual(['maps.example.com']);
    expect(maps).toMatchObject({ headers: ['x-api-key'], query: ['key'], ports: [443, 8443] });
    // The list form: Authorization and Proxy-Authorization only, on port 443.
    expect(config.docker_secret_hosts.OPENAI_API_KEY).toMatchObject({ headers: [], query: [], ports: [443] });
    // A validated config validates again to the same (sandboxSettings re-reads one).
    const again = parseTerminalConfig({ docker_secret_hosts: config.docker_secret_hosts });
    expect(again.docker_secret_hosts.MAPS_KEY).toMatchObject({ headers: ['x-api-key'], query: ['key'], ports: [443, 8443] });
    expect([...again.docker_secret_hosts.MAPS_KEY!]).toEqual(['maps.example.com']);
  });

  it('refuse each bad value of the object form in one line naming the key, never repeating the value', () => {
    const pasted = 'ghp_16C7e42F292c6912E7710c838347Ae178B4a';
    const cases: Array<[unknown, string]> = [
      [{ hosts: [pasted] }, 'terminal.docker_secret_hosts.T.hosts.0'],
      [{ hosts: [] }, 'terminal.docker_secret_hosts.T.hosts'],
      [{ hosts: ['api.example.com'], headers: [pasted.replace('_', ' ')] }, 'terminal.docker_secret_hosts.T.headers.0'],
      [{ hosts: ['api.example.com'], headers: ['Host'] }, 'terminal.docker_secret_hosts.T.headers.0'],
      [{ hosts: ['api.example.com'], headers: ['content-length'] }, 'terminal.docker_secret_hosts.T.headers.0'],
      [{ hosts: ['api.example.com'], query: ['a=b'] }, 'terminal.docker_secret_hosts.T.query.0'],
      [{ hosts: ['api.example.com'], ports: [0] }, 'terminal.docker_secret_hosts.T.ports.0'],
      [{ hosts: ['api.example.com'], ports: [] }, 'terminal.docker_secret_hosts.T.ports'],
      [{ hosts: ['api.example.com'], port: [443] }, 'terminal.docker_secret_hosts.T.port'],
      [{ hosts: ['*.github.io'] }, 'terminal.docker_secret_hosts.T.hosts.0'],
    ];
    for (const [value, key] of cases) {
      const text = message(() => parseTerminalConfig({ docker_secret_hosts: { T: value } }));
      expect(text, key).toMatch(new RegExp(`^(?:unknown key )?${key.replaceAll('.', '\\.')}[ :;]`));
      expect(text.split('\n')).toHaveLength(1);
      expect(text).not.toContain('ghp_16C7');
    }
  });

  it('read allow-list domains with a port, and refuse a wildcard over a public suffix', () => {
    const config = parseTerminalConfig({ docker_egress: 'allowlist', docker_egress_domains: ['api.github.com', 'git.example.com:22'] });
    expect(config.docker_egress_domains).toEqual(['api.github.com', 'git.example.com:22']);
    expect(message(() => parseTerminalConfig({ docker_egress: 'allowlist', docker_egress_domains: ['*.co.uk'] }))).toMatch(
      /^terminal\.docker_egress_domains\.0 .*covers a public suffix/,
    );
    expect(message(() => parseTerminalConfig({ docker_egress: 'allowlist', docker_egress_domains: ['api.github.com:99999'] }))).toMatch(
      /^terminal\.docker_egress_domains\.0 /,
    );
  });
});
