/**
 * The DynamoDB benchmark's floor: a bare node:http handler making the calls directly with the AWS
 * SDK on the data plane's tables (docs/dynamodb.md), no framework, auth or validation.
 *
 *   GET  /{dataset}/{schema}/{id}  one GetItem (ConsistentRead, as the data plane reads)
 *   POST /{dataset}                a batch of creates as one TransactWriteItems of conditional Puts:
 *                                  BARE_LAYOUT=plain (default) the record items alone, what a
 *                                  hand-written service would write; BARE_LAYOUT=history also the
 *                                  history item of each, as the data plane's layout keeps.
 *
 * DDB_ENDPOINT, DDB_REGION, DDB_TABLE_PREFIX, DDB_DATASET, PORT; credentials from the environment.
 */
import { createServer } from 'node:http';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';

const raw = new DynamoDBClient({ endpoint: process.env.DDB_ENDPOINT, region: process.env.DDB_REGION ?? 'us-east-1' });
const doc = DynamoDBDocumentClient.from(raw, { marshallOptions: { removeUndefinedValues: true } });
const table = (schema: string) => `${process.env.DDB_TABLE_PREFIX ?? ''}${process.env.DDB_DATASET}_${schema}`;
const withHistory = process.env.BARE_LAYOUT === 'history';

type Create = { create: { schema: string; id: string; data: Record<string, unknown> } };

const server = createServer((req, res) => {
  const send = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  const parts = (req.url ?? '').split('/').map(decodeURIComponent);
  if (req.method === 'GET') {
    doc
      .send(new GetCommand({ TableName: table(parts[2]), Key: { id: parts[3] }, ConsistentRead: true }))
      .then(({ Item }) => (Item ? send(200, { id: Item.id, version: Item.version, ...(Item.d as object) }) : send(404, { error: 'not found' })))
      .catch((err: Error) => send(503, { error: err.message }));
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { batch: { actions: Record<string, Create> } };
    const now = new Date().toISOString();
    const creates = Object.values(body.batch.actions).map((a) => a.create);
    const items = creates.flatMap((c) => {
      const item = { id: c.id, version: 1, createdAt: now, updatedAt: now, d: c.data };
      const put = (TableName: string) => ({ Put: { TableName, Item: item, ConditionExpression: 'attribute_not_exists(id)' } });
      return withHistory ? [put(table(c.schema)), put(`${table(c.schema)}-history`)] : [put(table(c.schema))];
    });
    doc
      .send(new TransactWriteCommand({ TransactItems: items }))
      .then(() => send(200, Object.fromEntries(Object.keys(body.batch.actions).map((name, i) => [name, { id: creates[i].id, version: 1, ...creates[i].data }]))))
      .catch((err: Error) => send(err.name === 'TransactionCanceledException' ? 409 : 503, { error: err.message }));
  });
});
server.listen(Number(process.env.PORT), '127.0.0.1');
