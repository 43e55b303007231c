/** `--help` of the data plane's entry point (main.ts): what it runs and the variables it reads, rendered from their declarations (model/settings/dataplane.ts). */
import { renderUsage } from '../../model/settings/declare.js';
import { DATAPLANE_SETTINGS } from '../../model/settings/dataplane.js';

export const USAGE = `Data Access Service data plane

Usage:
  npm start [-- --help]                 from the TypeScript sources (development)
  node dist/dataplane/src/main.js       compiled (what the container runs)

Configuration is by environment variable only (a bad value stops the start, naming it):
${renderUsage(DATAPLANE_SETTINGS, 'dataplane')}

With DAS_MODE=function-gateway (the function gateway) it reads:
${renderUsage(DATAPLANE_SETTINGS, 'function-gateway')}

Signals: SIGTERM/SIGINT drain and stop (exit 0; 1 if ASYNC writes were lost).
The README's "Process environment" table describes every variable.
`;
