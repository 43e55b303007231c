/**
 * The GraphQL endpoint and the browser pages in a dataset's OpenAPI document: `POST /graphql`
 * (queries and introspection; subscriptions go over WebSocket at the same path), `GET /graphql`
 * with `Accept: text/html` (GraphiQL) and `GET /docs` (Swagger UI). The pages need no credentials:
 * they ask for the Authorization value and send it with every request they make. Pure.
 */
import { GET_ERRORS, json, operation, POST_ERRORS, responseHeaders, schemaRef, type Json } from './openapi-parts.js';

const html = (description: string): Json => ({ description, headers: responseHeaders(), content: { 'text/html': { schema: { type: 'string' } } } });

export function graphqlSchemas(): Json {
  return {
    GraphQLRequest: {
      type: 'object',
      required: ['query'],
      additionalProperties: false,
      properties: {
        query: { type: 'string', minLength: 1, maxLength: 100_000, description: 'A query or mutation (subscriptions go over WebSocket).', examples: ['{ __schema { queryType { name } } }'] },
        variables: { type: ['object', 'null'] },
        operationName: { type: ['string', 'null'] },
        extensions: { type: 'object' },
      },
    },
    GraphQLResponse: {
      type: 'object',
      description: 'GraphQL over HTTP: 200 with `data`, and `errors` when something failed.',
      properties: {
        data: { type: ['object', 'null'] },
        errors: { type: 'array', items: { type: 'object', required: ['message'], properties: { message: { type: 'string' }, path: { type: 'array' }, extensions: { type: 'object' } } } },
      },
    },
  };
}

export function graphqlPaths(dataset: { id: string }): Json {
  return {
    '/graphql': {
      post: operation(
        {
          tags: ['graphql'],
          operationId: 'graphql',
          summary: `GraphQL queries over the dataset's schema (types such as ${dataset.id}_Person); subscriptions: WebSocket at this path (graphql-transport-ws or graphql-ws)`,
          requestBody: { required: true, content: { 'application/json': { schema: schemaRef('GraphQLRequest') } } },
        },
        { 200: json('The result; GraphQL errors (syntax, validation, resolvers) come in `errors` with 200.', schemaRef('GraphQLResponse')) },
        POST_ERRORS.filter((s) => s !== 409),
      ),
      get: pageOperation('graphiql', 'GraphiQL for this dataset (a browser page; send Accept: text/html)', 'The GraphiQL page.', [406]),
    },
    '/docs': { get: pageOperation('docs', 'Swagger UI over this document (a browser page)', 'The Swagger UI page.') },
  };
}

/** A page: no credentials (the page asks for them), HTML or an error. */
function pageOperation(operationId: string, summary: string, description: string, extraErrors: number[] = []): Json {
  return operation({ tags: ['dataset'], operationId, summary, security: [{}] }, { 200: html(description) }, [...GET_ERRORS.filter((s) => s !== 401 && s !== 403), ...extraErrors].sort());
}
