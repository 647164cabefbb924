import type { V1Role } from '@kubernetes/client-node';

/**
 * The Role the gateway's Kubernetes user needs in its namespace, and nothing more: Pods (and
 * exec into them, `get` for the WebSocket upgrade and `create` for newer servers), the claims,
 * the two NetworkPolicies, reading its own namespace (so a missing one is told apart), and
 * listing its Pods' metrics (`berth top`, where metrics-server runs).
 * docs/backend-kubernetes.md shows it as YAML to paste; a test keeps the two the same.
 */
export function kubernetesRole(namespace: string, name = 'berth-sandboxes'): V1Role {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name, namespace },
    rules: [
      { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch', 'create', 'delete'] },
      { apiGroups: [''], resources: ['pods/exec'], verbs: ['get', 'create'] },
      { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['get', 'list', 'create', 'update', 'delete'] },
      { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ['create'] },
      { apiGroups: [''], resources: ['namespaces'], resourceNames: [namespace], verbs: ['get'] },
      // berth top's usage, where the cluster serves the resource metrics API (metrics-server).
      { apiGroups: ['metrics.k8s.io'], resources: ['pods'], verbs: ['list'] },
    ],
  };
}
