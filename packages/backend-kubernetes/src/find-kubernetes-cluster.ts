import { existsSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, EngineUnavailableError, expandHome } from '@berth/core';
import { KubeConfig } from '@kubernetes/client-node';

/** Where the service account of a pod keeps its token (in-cluster discovery). */
const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** How to reach the cluster: the client configuration and what it says, for messages and `berth doctor`. */
export interface KubernetesCluster {
  readonly kubeConfig: KubeConfig;
  /** The API server's URL. */
  readonly endpoint: string;
  /** How it was found, e.g. `$KUBECONFIG (/home/gw/.kube/berth), context berth`. */
  readonly discovery: string;
}

/** What {@link findKubernetesCluster} looks at. */
export interface FindKubernetesClusterOptions {
  /** A ready client configuration (tests, or a host that has one); wins over everything. */
  readonly kubeConfig?: KubeConfig;
  /** `terminal.kubernetes_kubeconfig`. */
  readonly kubeconfig?: string;
  /** `terminal.kubernetes_context`. @default the kubeconfig's current context */
  readonly context?: string;
  /** The gateway's environment (`KUBECONFIG`, `HOME`, `KUBERNETES_SERVICE_HOST`). */
  readonly environment?: Readonly<Record<string, string | undefined>>;
}

function load(file: string, how: string): KubeConfig {
  const kubeConfig = new KubeConfig();
  try {
    kubeConfig.loadFromFile(file);
  } catch (error) {
    throw new ConfigError(
      'terminal.kubernetes_kubeconfig',
      `${file} (${how}) cannot be read as a kubeconfig (${(error as Error).message.split('\n')[0]}); point terminal.kubernetes_kubeconfig at a valid one`,
      { cause: error },
    );
  }
  return kubeConfig;
}

/**
 * Finds the cluster the gateway talks to, the way kubectl does, in the gateway's environment:
 * `terminal.kubernetes_kubeconfig`, else the first file of `$KUBECONFIG`, else `~/.kube/config`,
 * else the pod's own service account when the gateway runs in the cluster. Then the context:
 * `terminal.kubernetes_context`, else the kubeconfig's current one. One-line errors name the
 * setting that fixes them.
 */
export function findKubernetesCluster(options: FindKubernetesClusterOptions = {}): KubernetesCluster {
  const environment = options.environment ?? process.env;
  let kubeConfig: KubeConfig;
  let how: string;
  if (options.kubeConfig) {
    kubeConfig = options.kubeConfig;
    how = 'the kubeConfig option';
  } else if (options.kubeconfig) {
    const file = expandHome(options.kubeconfig, environment);
    if (!existsSync(file))
      throw new ConfigError(
        'terminal.kubernetes_kubeconfig',
        `terminal.kubernetes_kubeconfig is ${file}, which does not exist; point it at the cluster's kubeconfig`,
      );
    kubeConfig = load(file, 'terminal.kubernetes_kubeconfig');
    how = `terminal.kubernetes_kubeconfig (${file})`;
  } else {
    const fromVariable = (environment.KUBECONFIG ?? '')
      .split(path.delimiter)
      .filter(Boolean)
      .find((file) => existsSync(file));
    const home = environment.HOME ? path.join(environment.HOME, '.kube', 'config') : undefined;
    if (fromVariable) {
      kubeConfig = load(fromVariable, '$KUBECONFIG');
      how = `$KUBECONFIG (${fromVariable})`;
    } else if (home && existsSync(home)) {
      kubeConfig = load(home, '~/.kube/config');
      how = `~/.kube/config (${home})`;
    } else if (environment.KUBERNETES_SERVICE_HOST && existsSync(SERVICE_ACCOUNT_TOKEN)) {
      kubeConfig = new KubeConfig();
      kubeConfig.loadFromCluster();
      how = "the pod's service account";
    } else {
      throw new EngineUnavailableError(
        'kubeconfig',
        'no Kubernetes cluster is configured: no terminal.kubernetes_kubeconfig, no $KUBECONFIG file, ' +
          "no ~/.kube/config and no service account; set terminal.kubernetes_kubeconfig to the cluster's kubeconfig",
      );
    }
  }
  if (options.context) {
    const names = kubeConfig.getContexts().map((context) => context.name);
    if (!names.includes(options.context)) {
      throw new ConfigError(
        'terminal.kubernetes_context',
        `terminal.kubernetes_context is ${options.context}, but ${how} has ${names.length ? `only ${names.join(', ')}` : 'no context'}; set it to one of those`,
      );
    }
    kubeConfig.setCurrentContext(options.context);
  }
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) {
    throw new ConfigError(
      'terminal.kubernetes_context',
      `${how} has no cluster for context ${kubeConfig.getCurrentContext() || '(none)'}; set terminal.kubernetes_context to a context with a cluster`,
    );
  }
  const context = kubeConfig.getCurrentContext();
  return {
    kubeConfig,
    endpoint: cluster.server,
    discovery: `${how}${context ? `, context ${context}` : ''}`,
  };
}
