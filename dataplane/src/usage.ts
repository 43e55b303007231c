/** `--help` of the data plane's entry point (main.ts): what it runs and the environment it reads (README, "Process environment"). */
export const USAGE = `Data Access Service data plane

Usage:
  npm start [-- --help]                 from the TypeScript sources (development)
  node dist/dataplane/src/main.js       compiled (what the container runs)

Configuration is by environment variable only:
  PORT (8080), HOST (0.0.0.0)           where it listens
  DATA_DIR (.data)                      embedded PostgreSQL, development issuer key, admin manifests
  LOG_LEVEL (info)                      pino level; one JSON line per request
  DATABASE_URL, PG*                     an external PostgreSQL; without them an embedded one is started
  DAS_CONFIG_SOURCE (files)             files | kubernetes
  DAS_MANIFESTS (examples)              files: a manifest file or directory, watched
  DAS_ENVIRONMENT                       the Environment served (files: the first one; kubernetes: required)
  DAS_NAMESPACE                         kubernetes: the namespace of the ConfigMaps
  DAS_MODE (dataplane)                  dataplane | function-gateway (needs DAS_UPSTREAM_URL, DAS_FUNCTION_NAME)
  DAS_ACCESS_KEYS                       function-gateway: the Lambda Invoke API's SigV4 keys (JSON); unset: from
                                        the Environment in DAS_MANIFESTS when that is set, else none
  DAS_SHUTDOWN_DELAY_MS (5000 in a Pod, else 0)
                                        after SIGTERM, keep serving this long with /readyz "draining"
  SHUTDOWN_TIMEOUT_MS (25000)           then in-flight requests and ASYNC writes may take this long
  DAS_BODY_BUDGET_BYTES, DAS_REQUEST_TIMEOUT_MS, DAS_ASYNC_QUEUE_LIMIT
                                        request memory, upload time, ASYNC queue
  DAS_MAX_PIPELINED_REQUESTS, DAS_MAX_UNSENT_RESPONSE_BYTES, DAS_SEND_TIMEOUT_MS
                                        per connection: unanswered requests, unread answers, send timeout
  DAS_SUBSCRIPTIONS_PER_REPLICA, DAS_WS_MAX_CONNECTIONS
                                        caps (default: derived from the cgroup memory limit)
  DAS_SUBSCRIPTIONS_PER_CONNECTION, DAS_SUBSCRIPTION_QUEUE, DAS_SUBSCRIPTION_INIT_TIMEOUT_MS,
  DAS_SUBSCRIPTION_KEEPALIVE_MS, DAS_CHANGE_*   subscriptions and the change log
  DAS_SECRETS_DIR, DAS_IMPORT_ROOT, DAS_S3_ENDPOINT, AWS_*, DAS_BULK_*
                                        secrets, bulk loads

Signals: SIGTERM/SIGINT drain and stop (exit 0; 1 if ASYNC writes were lost).
The README's "Process environment" table describes every variable.
`;
