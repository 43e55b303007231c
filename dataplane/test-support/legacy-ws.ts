/** One operation over the older WebSocket protocol (subscriptions-transport-ws `graphql-ws`): init, start, the first `data` or `error` message. */
import WebSocket from 'ws';
import { wsUrl } from './graphql-ws.js';

export type LegacyAnswer = { type: 'data'; payload: { data?: any; errors?: any[] } } | { type: 'error'; payload: any[] };

export async function legacyOperation(dp: { url: string }, query: string, variables?: Record<string, unknown>, authorization = 'Proxy demo-admin'): Promise<LegacyAnswer> {
  const ws = new WebSocket(wsUrl(dp), 'graphql-ws');
  const messages: Record<string, any>[] = [];
  const waiting: (() => void)[] = [];
  ws.on('message', (data) => {
    messages.push(JSON.parse(String(data)));
    waiting.splice(0).forEach((w) => w());
  });
  const next = async (types: string[]) => {
    for (;;) {
      const i = messages.findIndex((m) => types.includes(m.type));
      if (i >= 0) return messages.splice(i, 1)[0];
      await new Promise<void>((resolve, reject) => {
        waiting.push(resolve);
        setTimeout(() => reject(new Error(`no ${types.join(' or ')} message`)), 10_000).unref();
      });
    }
  };
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  try {
    ws.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: authorization } }));
    await next(['connection_ack']);
    ws.send(JSON.stringify({ type: 'start', id: '1', payload: { query, variables } }));
    return (await next(['data', 'error'])) as LegacyAnswer;
  } finally {
    ws.close();
  }
}
