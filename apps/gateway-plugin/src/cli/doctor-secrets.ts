import type { BackendDescription, TerminalConfig } from '@berth/core';
import type { DoctorCheck } from './doctor-report.js';

/**
 * Which variables are brokered (their values only ever in requests to their hosts, through the
 * egress proxy) and which still enter sandboxes, and the egress mode (docs/brokered-secrets.md).
 */
export function secretChecks(
  config: TerminalConfig,
  userVariables: ReadonlyMap<string, number>,
  environment: Readonly<Record<string, string | undefined>>,
  egress: BackendDescription['egress'],
): DoctorCheck[] {
  const hosts = config.docker_secret_hosts;
  const brokered = Object.keys(hosts).sort();
  const entering = [
    ...config.docker_forward_env.filter((name) => environment[name] !== undefined && !(name in hosts)).map((name) => `${name} (forwarded)`),
    ...[...userVariables]
      .filter(([name]) => !(name in hosts))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, users]) => `${name} (user variable of ${users} user${users === 1 ? '' : 's'})`),
  ];
  const placesOf = (name: string): string => {
    const places = hosts[name]!;
    const extra = [
      ...places.headers.map((header) => `header ${header}`),
      ...places.query.map((parameter) => `query ${parameter}`),
      ...(places.ports.length === 1 && places.ports[0] === 443 ? [] : [`port ${places.ports.join(', ')}`]),
    ];
    return `${places.join(', ')}${extra.length > 0 ? ` (also ${extra.join(', ')})` : ''}`;
  };
  const brokeredText = brokered.map((name) => `${name} -> ${placesOf(name)}`).join('; ');
  const enteringText = entering.length === 0 ? 'no secret enters a sandbox' : `still enter sandboxes: ${entering.join(', ')}`;
  const checks: DoctorCheck[] = [];
  if (brokered.length === 0) {
    checks.push({
      name: 'secrets',
      status: 'ok',
      detail: `no variable is brokered; ${enteringText}`,
      ...(entering.length > 0 ? { fix: 'broker the ones that are API keys with terminal.docker_secret_hosts (docs/brokered-secrets.md)' } : {}),
    });
  } else if (egress?.unavailable && config.docker_network) {
    checks.push({
      name: 'secrets',
      status: 'warning',
      detail: `brokered: ${brokeredText} — but ${egress.unavailable}: sandboxes get placeholders that nothing replaces; ${enteringText}`,
      fix: 'run sandboxes on Docker or rootful Podman on this host for the egress proxy (docs/brokered-secrets.md)',
    });
  } else if (config.docker_network && egress?.proxy?.includes('could not listen on')) {
    // The runtime's status says where the proxy failed to listen (egress-broker.ts).
    checks.push({
      name: 'secrets',
      status: 'warning',
      detail:
        `brokered: ${brokeredText} — but the egress proxy ${egress.proxy.slice(egress.proxy.indexOf('could not listen on'))}; ` +
        `those sandboxes' requests carry placeholders until it listens; ${enteringText}`,
      fix: 'stop the other Berth process that holds the address (berth serve, or a CLI command still running), or free port 3129 there',
    });
  } else {
    checks.push({
      name: 'secrets',
      status: 'ok',
      detail:
        'brokered (sandboxes hold placeholders; the values go only to these hosts, only in Authorization, ' +
        `Proxy-Authorization and what each names${config.docker_network ? '' : ', and nowhere while docker_network is false'}): ` +
        `${brokeredText}; ${enteringText}`,
    });
  }
  if (config.docker_egress === 'allowlist') {
    const domains = config.docker_egress_domains.length > 0 ? config.docker_egress_domains.join(', ') : 'none';
    checks.push(
      egress?.unavailable && config.docker_network
        ? {
            name: 'egress',
            status: 'problem',
            detail: `docker_egress is allowlist, but ${egress.unavailable}: no sandbox starts with networking`,
            fix: 'set terminal.docker_egress: open, or docker_network: false, or use Docker or rootful Podman on this host',
          }
        : { name: 'egress', status: 'ok', detail: `allowlist: sandboxes reach only DNS and the egress proxy, which lets through only ${domains}` },
    );
  } else {
    checks.push({
      name: 'egress',
      status: 'ok',
      detail: 'open (the default): sandboxes reach the internet directly, as the egress policy allows; docker_egress: allowlist limits them to named domains',
    });
  }
  return checks;
}
