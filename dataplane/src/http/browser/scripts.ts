/**
 * The pages' own scripts and style, served as files under `/_assets/` (assets.ts) so the
 * Content-Security-Policy needs no inline script. Plain browser JavaScript kept as text: the
 * compiled build (dist/) carries it with the code, and nothing transforms it on the way.
 *
 * The Authorization value lives only in the page's memory (its input field): it is never written
 * to storage, never put into a URL, and the server never keeps it. Each request the page makes
 * (Swagger UI's document fetch and "Try it out", GraphiQL's POSTs) carries it as the
 * `Authorization` header; GraphiQL's subscriptions send it in `connection_init`.
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
  document.getElementById('das-auth').addEventListener('submit', function (event) {
    event.preventDefault();
    load();
  });
  load();
})();
`;

const GRAPHIQL_INIT = String.raw`(function () {
  'use strict';
  var input = document.getElementById('das-authorization');
  var endpoint = document.body.getAttribute('data-graphql');
  var socketUrl = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + endpoint;
  var client = null;
  var clientAuthorization = null;
  var mounts = 0;
  var root = ReactDOM.createRoot(document.getElementById('graphiql'));

  function authorization() {
    return input.value.trim();
  }
  // One WebSocket for the page's subscriptions, opened on the first one; a new Authorization value
  // gets a new connection (browsers cannot set headers on a WebSocket: connection_init carries it).
  function socket() {
    var value = authorization();
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
    if (isSubscription(params)) {
      return socket().iterate({ query: params.query, variables: params.variables || undefined, operationName: params.operationName || undefined });
    }
    var headers = { 'content-type': 'application/json', accept: 'application/json' };
    var given = (options && options.headers) || {};
    var hasAuthorization = false;
    for (var key in given) {
      headers[key] = given[key];
      if (key.toLowerCase() === 'authorization') hasAuthorization = true;
    }
    if (!hasAuthorization && authorization()) headers.Authorization = authorization();
    return fetch(endpoint, { method: 'POST', headers: headers, body: JSON.stringify(params), credentials: 'omit' }).then(function (response) {
      return response.json();
    });
  }
  function mount() {
    // A new key remounts GraphiQL, which fetches the schema again with the new credentials.
    mounts += 1;
    root.render(React.createElement(GraphiQL, { key: mounts, fetcher: fetcher, shouldPersistHeaders: false, isHeadersEditorEnabled: true }));
  }
  document.getElementById('das-auth').addEventListener('submit', function (event) {
    event.preventDefault();
    mount();
  });
  mount();
})();
`;

const PAGES_CSS = String.raw`.das-auth { display: flex; gap: 0.5rem; align-items: center; padding: 0.5rem 1rem; font: 14px sans-serif; background: #1b1f24; color: #fff; }
.das-auth label { display: flex; gap: 0.5rem; align-items: center; flex: 1; }
.das-auth input { flex: 1; max-width: 40rem; padding: 0.3rem; font: 13px monospace; }
.das-auth .das-note { opacity: 0.75; font-size: 12px; }
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
