// An order-tracking MCP server on the official SDK's Streamable HTTP server
// transport that fails on purpose: the fault-injection benchmark and tests
// tell it which calls fail and how, and it fails each named call once (its
// first call), as a service that is briefly down or overloaded would.
//
//   node flaky_mcp_server.mjs <faults.json>
//       listens on 127.0.0.1, a free port; prints
//       "omniforge-test-listening 127.0.0.1 <port>"
//
// faults.json maps an order id to how its first lookup fails:
//   "http_503"      the POST carrying the call is answered HTTP 503
//   "http_429"      ... HTTP 429 with Retry-After: 0
//   "rate_limited"  the tool runs and reports isError with structuredContent
//                   {"error": {"code": "rate_limited", ...}}
//   "not_found"     ... {"error": {"code": "not_found", ...}} on every call
//                   (a permanent failure, never recovers)
// Faults can also be set while it runs: POST /faults with the same JSON
// (merged into the map). GET /stats answers {"calls": n, "injected":
// {"<kind>": n}}.
//
// Tool: lookup_order {order_id} (read-only) -> {"order_id", "status",
// "carrier", "eta"} as structuredContent and text.
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  isInitializeRequest,
} from '@modelcontextprotocol/sdk/types.js';

const faults = new Map(Object.entries(process.argv[2] ? JSON.parse(readFileSync(process.argv[2], 'utf8')) : {}));
const fired = new Set(); // order ids whose one-time fault has fired
const injected = {};
let calls = 0;

const tools = [
  {
    name: 'lookup_order',
    description: 'Where an order is: its status, carrier and expected delivery date.',
    inputSchema: {
      type: 'object',
      properties: { order_id: { type: 'string', description: 'the order number' } },
      required: ['order_id'],
    },
    annotations: { readOnlyHint: true, idempotentHint: true },
  },
];

// The fault `order_id`'s call meets now, if any: a one-time fault only on
// its first call, a permanent one on every call.
function faultFor(orderId) {
  const kind = faults.get(orderId);
  if (!kind) return undefined;
  if (kind !== 'not_found') {
    if (fired.has(orderId)) return undefined;
    fired.add(orderId);
  }
  injected[kind] = (injected[kind] ?? 0) + 1;
  return kind;
}

function toolError(code, message) {
  return {
    content: [{ type: 'text', text: message }],
    structuredContent: { error: { code, message } },
    isError: true,
  };
}

function lookupOrder({ order_id: orderId = '' }) {
  calls += 1;
  const kind = faultFor(orderId);
  if (kind === 'rate_limited') return toolError('rate_limited', 'Too many lookups: try again in a moment.');
  if (kind === 'not_found') return toolError('not_found', `There is no order ${orderId}.`);
  const order = { order_id: orderId, status: 'shipped', carrier: 'Parcelway', eta: '2026-12-02' };
  return { content: [{ type: 'text', text: JSON.stringify(order) }], structuredContent: order };
}

const sessions = new Map();

function newSession() {
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => sessions.set(id, transport),
  });
  transport.onclose = () => {
    if (transport.sessionId) sessions.delete(transport.sessionId);
  };
  const server = new Server({ name: 'omniforge-flaky-orders', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async ({ params }) => {
    if (params.name !== 'lookup_order') throw new Error(`no tool ${params.name}`);
    return lookupOrder(params.arguments ?? {});
  });
  return { transport, server };
}

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
}

// An HTTP-level fault for this POST, answered here before the transport
// sees it: true when answered.
function answeredWithHttpFault(body, res) {
  if (!body || Array.isArray(body) || body.method !== 'tools/call') return false;
  const orderId = body.params?.arguments?.order_id;
  const kind = faults.get(orderId);
  if (kind !== 'http_503' && kind !== 'http_429') return false;
  if (!faultFor(orderId)) return false;
  calls += 1;
  if (kind === 'http_429') {
    res.writeHead(429, { 'Retry-After': '0', 'Content-Type': 'text/plain' }).end('slow down');
  } else {
    res.writeHead(503, { 'Content-Type': 'text/plain' }).end('temporarily unavailable');
  }
  return true;
}

const http = createServer(async (req, res) => {
  try {
    const path = new URL(req.url, 'http://x').pathname;
    if (path === '/stats' && req.method === 'GET') {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ calls, injected }));
      return;
    }
    if (path === '/faults' && req.method === 'POST') {
      for (const [id, kind] of Object.entries(await readBody(req))) faults.set(id, kind);
      res.writeHead(204).end();
      return;
    }
    if (path !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    const sessionId = req.headers['mcp-session-id'];
    let session = sessionId ? sessions.get(sessionId) : undefined;
    const body = req.method === 'POST' ? await readBody(req) : undefined;
    if (answeredWithHttpFault(body, res)) return;
    if (!session) {
      if (req.method === 'POST' && !sessionId && isInitializeRequest(body)) {
        const made = newSession();
        await made.server.connect(made.transport);
        session = made.transport;
      } else {
        res.writeHead(sessionId ? 404 : 400, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }));
        return;
      }
    }
    await session.handleRequest(req, res, body);
  } catch (error) {
    if (!res.headersSent) res.writeHead(500).end(String(error));
  }
});

http.listen(0, '127.0.0.1', () => {
  console.log(`omniforge-test-listening 127.0.0.1 ${http.address().port}`);
});
