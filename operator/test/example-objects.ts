/** What the example Environment `local` (internal, function gateway on) renders into: Kind/name. */
export const EXAMPLE_ENVIRONMENT_OBJECTS = [
  'ServiceAccount/local-dataplane',
  'Role/local-dataplane',
  'RoleBinding/local-dataplane',
  'ConfigMap/local-dataplane',
  'Deployment/local-dataplane',
  'Service/local-internal',
  'Service/local-api',
  'Deployment/service-local-function-service-gateway',
  'Service/service-local-function-service-gateway',
  'NetworkPolicy/local-firewall',
  'NetworkPolicy/service-local-function-service-gateway',
  // Two data-plane replicas by default: a disruption budget keeps a drain from taking both.
  'PodDisruptionBudget/local-dataplane',
];
