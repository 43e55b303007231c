/**
 * The pages' own scripts and style, served as files under `/_assets/` (assets.ts) so the
 * Content-Security-Policy needs no inline script. Plain browser JavaScript kept as text: the
 * compiled build (dist/) carries it with the code, and nothing transforms it on the way.
 *
 * The Authorization value lives only in the page's memory (its input field, GraphiQL's headers
 * editor): it is never written to storage, never put into a URL, and the server never keeps it.
 * Each request the page makes (Swagger UI's document fetch and "Try it out", GraphiQL's POSTs)
 * carries it as the `Authorization` header; GraphiQL's subscriptions send it in `connection_init`.
 * Nothing is fetched without it: Swagger UI waits for a value (its place shows the prompt of
 * pages.ts), GraphiQL fetches its schema only after Use or a run that was accepted.
 */

const SWAGGER_INIT = String.raw`(function () {
  'use strict';
  var input = document.getElementById('das-authorization');
  var openapi = document.body.getAttribute('data-openapi');
  function hasAuthorization(headers) {
    for (var key in headers) if (key.toLowerCase() === 'authorization') return true;
    return false;
  }
  function load() {
    window.ui = SwaggerUIBundle({
      url: openapi,
      dom_id: '#swagger-ui',
      deepLinking: false,
      validatorUrl: null,
      presets: [SwaggerUIBundle.presets.apis],
      layout: 'BaseLayout',
      // Also applied to the document's own fetch: the document needs the same credentials.
      requestInterceptor: function (request) {
        var value = input.value.trim();
        // A value given in Swagger UI's own Authorize dialog wins.
        if (value && !hasAuthorization(request.headers)) request.headers.Authorization = value;
        return request;
      }
    });
  }
  // The document is served to authenticated callers only: until a value is given the page shows
  // its prompt (pages.ts) rather than fetching the document and failing.
  document.getElementById('das-auth').addEventListener('submit', function (event) {
    event.preventDefault();
    if (input.value.trim()) load();
    else input.focus();
  });
  if (input.value.trim()) load();
  else input.focus();
})();
`;

const GRAPHIQL_INIT = String.raw`(function () {
  'use strict';
  var input = document.getElementById('das-authorization');
  var endpoint = document.body.getAttribute('data-graphql');
  var example = document.body.getAttribute('data-authorization-example');
  var socketUrl = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + endpoint;
  var client = null;
  var clientAuthorization = null;
  var mounts = 0;
  // The schema is fetched once credentials are given (Use) or an operation ran with them: an
  // introspection without them would only put an error on the first screen.
  var introspect = false;
  // The headers editor's text at each mount: the gateway's template, or the value given above.
  var headersText = headersFor(example);
  var root = ReactDOM.createRoot(document.getElementById('graphiql'));

  // A template value still holding its <placeholder> is no credential.
  function usable(value) {
    return typeof value === 'string' && value.trim() !== '' && !/<[^>]*>/.test(value) ? value.trim() : '';
  }
  function headersFor(value) {
    return JSON.stringify({ Authorization: value }, null, 2);
  }
  // The headers editor's Authorization (Use puts the field's value there); otherwise the field's.
  function authorization(given) {
    for (var key in given || {}) if (key.toLowerCase() === 'authorization' && usable(given[key])) return usable(given[key]);
    return usable(input.value);
  }
  // One WebSocket for the page's subscriptions, opened on the first one; a new Authorization value
  // gets a new connection (browsers cannot set headers on a WebSocket: connection_init carries it).
  function socket(value) {
    if (client && clientAuthorization === value) return client;
    if (client) client.dispose();
    clientAuthorization = value;
    client = graphqlWs.createClient({
      url: socketUrl,
      lazy: true,
      retryAttempts: 0,
      connectionParams: value ? { Authorization: value } : {}
    });
    return client;
  }
  // From the text itself: GraphiQL's parsed document can lag behind the editor.
  function isSubscription(params) {
    var text = String(params.query || '').replace(/"(?:[^"\\\n]|\\.)*"/g, '""').replace(/#[^\n]*/g, '');
    if (params.operationName) return new RegExp('\\bsubscription\\s+' + params.operationName + '\\b').test(text);
    return /^\s*subscription\b/.test(text);
  }
  function fetcher(params, options) {
    var given = (options && options.headers) || {};
    var value = authorization(given);
    if (isSubscription(params)) {
      return socket(value).iterate({ query: params.query, variables: params.variables || undefined, operationName: params.operationName || undefined });
    }
    var headers = { 'content-type': 'application/json', accept: 'application/json' };
    for (var key in given) if (key.toLowerCase() !== 'authorization') headers[key] = given[key];
    if (value) headers.Authorization = value;
    return fetch(endpoint, { method: 'POST', headers: headers, body: JSON.stringify(params), credentials: 'omit' }).then(function (response) {
      // An operation the user ran was accepted: now the schema can be fetched with the same headers.
      if (response.ok && !introspect && value) {
        introspect = true;
        setTimeout(render, 0);
      }
      return response.json();
    });
  }
  function render() {
    root.render(React.createElement(GraphiQL, {
      key: mounts,
      fetcher: fetcher,
      // null: no introspection; undefined: GraphiQL fetches the schema.
      schema: introspect ? undefined : null,
      headers: headersText,
      defaultEditorToolsVisibility: 'headers',
      shouldPersistHeaders: false,
      isHeadersEditorEnabled: true
    }));
  }
  document.getElementById('das-auth').addEventListener('submit', function (event) {
    event.preventDefault();
    // A new key remounts GraphiQL with the value in its headers editor, and it fetches the schema with it.
    if (usable(input.value)) {
      introspect = true;
      headersText = headersFor(usable(input.value));
    }
    mounts += 1;
    render();
  });
  render();
})();
`;

const PAGES_CSS = String.raw`.das-auth { display: flex; gap: 0.5rem; align-items: center; padding: 0.5rem 1rem; font: 14px sans-serif; background: #1b1f24; color: #fff; }
.das-auth label { display: flex; gap: 0.5rem; align-items: center; flex: 1; }
.das-auth input { flex: 1; max-width: 40rem; padding: 0.3rem; font: 13px monospace; }
.das-auth .das-note { opacity: 0.75; font-size: 12px; }
.das-prompt { max-width: 46rem; margin: 2rem auto; padding: 1rem 1.5rem; font: 14px sans-serif; border: 1px solid #c9d1d9; border-radius: 6px; background: #f6f8fa; color: #1b1f24; }
.das-prompt h2 { margin: 0 0 0.5rem; font-size: 18px; }
.das-prompt code { font: 13px monospace; background: #eaeef2; padding: 0.1rem 0.3rem; border-radius: 3px; }
body { margin: 0; }
body.das-graphiql { height: 100vh; display: flex; flex-direction: column; }
body.das-graphiql #graphiql { flex: 1; min-height: 0; }
`;

/** Name → text, served by assets.ts. */
export const OWN_FILES = {
  'swagger-init.js': SWAGGER_INIT,
  'graphiql-init.js': GRAPHIQL_INIT,
  'pages.css': PAGES_CSS,
} as const;
