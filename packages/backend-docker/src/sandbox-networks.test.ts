import type Dockerode from 'dockerode';
import { describe, expect, it, vi } from 'vitest';
import { createSandboxNetworks } from './sandbox-networks.js';

/** An engine error shaped as dockerode makes it. */
function engineError(statusCode: number, message: string): Error {
  return Object.assign(new Error(`(HTTP code ${statusCode}) server error - ${message}`), { statusCode, json: { message } });
}

/**
 * A stand-in for the engine's network calls only: it lists nothing, and refuses the subnets in
 * `refused` the way a real engine does when a subnet is used where its list cannot see it.
 */
function fakeEngine(refuse: (subnet: string) => Error | undefined) {
  const tried: string[] = [];
  const docker = {
    listNetworks: async () => [],
    getNetwork: () => ({
      inspect: async () => {
        throw engineError(404, 'network not found');
      },
    }),
    createNetwork: async (options: { IPAM: { Config: Array<{ Subnet: string }> } }) => {
      const subnet = options.IPAM.Config[0]!.Subnet;
      tried.push(subnet);
      const error = refuse(subnet);
      if (error) throw error;
      return {};
    },
  } as unknown as Dockerode;
  return { docker, tried };
}

describe('createSandboxNetworks', () => {
  it.each([
    ['Docker', 403, 'Pool overlaps with other one on this address space'],
    ['Podman', 500, 'subnet 10.217.33.8/29 is already used on the host or by another config'],
  ])('skips a subnet %s calls taken and takes the next one', async (_engine, status, message) => {
    let refusals = 0;
    const { docker, tried } = fakeEngine(() => (refusals++ < 2 ? engineError(status, message) : undefined));
    await createSandboxNetworks({ docker, endpoint: 'unix:///engine.sock', pool: '10.217.0.0/16' }).prepare('berth-net-a');
    expect(tried).toHaveLength(3);
    expect(new Set(tried).size).toBe(3);
  });

  it('tries the same subnet again when Podman lost a host interface while it read the routes (another network removed meanwhile), a few times at most', async () => {
    let races = 0;
    const { docker, tried } = fakeEngine(() => (races++ < 2 ? engineError(500, 'route ip+net: no such network interface') : undefined));
    await createSandboxNetworks({ docker, engine: 'podman', endpoint: 'unix:///engine.sock', pool: '10.217.0.0/16' }).prepare('berth-net-r');
    expect(tried).toHaveLength(3);
    expect(new Set(tried).size).toBe(1);
    const always = fakeEngine(() => engineError(500, 'route ip+net: no such network interface'));
    await expect(
      createSandboxNetworks({ docker: always.docker, engine: 'podman', endpoint: 'unix:///engine.sock', pool: '10.217.0.0/16' }).prepare('berth-net-s'),
    ).rejects.toThrow(/berth-net-s/);
    expect(always.tried).toHaveLength(6);
  });

  it('reports any other refusal at once, naming the network', async () => {
    const { docker, tried } = fakeEngine(() => engineError(500, 'netavark: permission denied'));
    await expect(
      createSandboxNetworks({ docker, engine: 'podman', endpoint: 'unix:///engine.sock', pool: '10.217.0.0/16' }).prepare('berth-net-b'),
    ).rejects.toThrow(/berth-net-b/);
    expect(tried).toHaveLength(1);
  });

  it('says the pool is full when every subnet is taken', async () => {
    const { docker } = fakeEngine(() => engineError(403, 'Pool overlaps with other one on this address space'));
    await expect(createSandboxNetworks({ docker, endpoint: 'unix:///engine.sock', pool: '10.217.0.0/28' }).prepare('berth-net-c')).rejects.toMatchObject({
      code: 'NETWORK_POOL_FULL',
    });
  });

  it('removes, in the background, Berth networks older than ten minutes whose sandbox is gone, and nothing else', async () => {
    const old = new Date(Date.now() - 11 * 60_000).toISOString();
    const young = new Date(Date.now() - 60_000).toISOString();
    const berth = { 'dev.berth.managed-by': 'berth' };
    const networks = [
      { Id: 'n1', Name: 'berth-orphan', Created: old, Labels: berth },
      { Id: 'n2', Name: 'berth-alive', Created: old, Labels: berth },
      { Id: 'n3', Name: 'berth-just-made', Created: young, Labels: berth },
      { Id: 'n4', Name: 'someone-elses', Created: old, Labels: {} },
    ];
    const removed: string[] = [];
    const docker = {
      listNetworks: async () => networks,
      listContainers: async () => [{ Names: ['/berth-alive'] }],
      getNetwork: (id: string) => ({
        inspect: async () => {
          throw engineError(404, 'network not found');
        },
        remove: async () => void removed.push(id),
      }),
      createNetwork: async () => ({}),
    } as unknown as Dockerode;
    await createSandboxNetworks({ docker, endpoint: 'unix:///engine.sock', pool: '10.217.0.0/16' }).prepare('berth-new');
    // The sweep runs in the background: wait for it, not for a time that a busy machine outlasts.
    await vi.waitFor(() => expect(removed).toEqual(['n1']), { timeout: 10_000 });
  });

  it('gives a new sandbox the spare made ahead, with a random name, and makes the next one only when asked', async () => {
    const made: string[] = [];
    const docker = {
      listNetworks: async () => [],
      listContainers: async () => [],
      getNetwork: (name: string) => ({
        inspect: async () => {
          if (!made.includes(name)) throw engineError(404, 'network not found');
          return { Labels: { 'dev.berth.managed-by': 'berth' } };
        },
        remove: async () => void made.splice(made.indexOf(name), 1),
      }),
      createNetwork: async (options: { Name: string }) => void made.push(options.Name),
    } as unknown as Dockerode;
    const networks = createSandboxNetworks({ docker, endpoint: 'unix:///engine.sock', pool: '10.217.0.0/16' });
    const first = await networks.take();
    expect(first).toMatchObject({ pool: true });
    expect(first.mode).toMatch(/^berth-net-[0-9a-f]{16}$/);
    networks.refill();
    await vi.waitFor(() => expect(made).toHaveLength(2), { timeout: 10_000 });
    const second = await networks.take();
    expect(second.mode, 'the spare, not a new network').toBe(made[1]);
    expect(made).toHaveLength(2);
    networks.refill();
    await networks.close();
    expect(made, 'closing removes the spare').toEqual([first.mode, second.mode]);
    networks.refill();
    // An absence: given ten times what making the spare took above on an idle machine.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(made, 'nothing is made after closing').toEqual([first.mode, second.mode]);
  });

  it('names each bridge as the installation asks, labels the network with it, and makes an older network (no such label) again under its name', async () => {
    const networks = new Map<string, { Labels: Record<string, string>; Options: Record<string, string> }>();
    networks.set('berth-net-old', { Labels: { 'dev.berth.managed-by': 'berth' }, Options: {} });
    networks.set('berth-net-new', { Labels: { 'dev.berth.managed-by': 'berth', 'dev.berth.bridge': 'bthabcdef-new' }, Options: {} });
    const removed: string[] = [];
    const created: Array<{ Name: string; Labels: Record<string, string>; Options: Record<string, string> }> = [];
    const docker = {
      listNetworks: async () => [],
      getNetwork: (name: string) => ({
        inspect: async () => {
          const found = networks.get(name);
          if (!found) throw engineError(404, 'network not found');
          return found;
        },
        remove: async () => {
          removed.push(name);
          networks.delete(name);
        },
      }),
      createNetwork: async (options: { Name: string; Labels: Record<string, string>; Options: Record<string, string> }) => {
        created.push(options);
        networks.set(options.Name, { Labels: options.Labels, Options: options.Options });
        return {};
      },
    } as unknown as Dockerode;
    const sandboxNetworks = createSandboxNetworks({
      docker,
      endpoint: 'unix:///engine.sock',
      pool: '10.217.0.0/16',
      bridgeName: (name) => `bthabcdef-${name.slice(10)}`,
      driverOptions: { isolate: 'true' },
    });
    await sandboxNetworks.prepare('berth-net-new');
    expect(removed).toEqual([]);
    await sandboxNetworks.prepare('berth-net-old');
    expect(removed).toEqual(['berth-net-old']);
    expect(created).toHaveLength(1);
    expect(created[0]).toMatchObject({
      Name: 'berth-net-old',
      Labels: { 'dev.berth.managed-by': 'berth', 'dev.berth.bridge': 'bthabcdef-old' },
      Options: { 'com.docker.network.bridge.enable_icc': 'false', 'com.docker.network.bridge.name': 'bthabcdef-old', isolate: 'true' },
    });
    // Made again, it is left alone.
    await sandboxNetworks.prepare('berth-net-old');
    expect(removed).toEqual(['berth-net-old']);
  });
});
