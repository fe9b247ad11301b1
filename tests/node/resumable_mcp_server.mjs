// An MCP server on the official SDK's StreamableHTTPServerTransport with an
// event store, so its SSE streams can be resumed with Last-Event-ID; tests
// tell it, through its tools, to send on its GET stream and to drop streams.
//
//   node resumable_mcp_server.mjs      (listens on 127.0.0.1, a free port;
//                                       prints "omniforge-test-listening 127.0.0.1 <port>")
//
// Tools (all in the caller's session):
//   echo {text}                    the text back
//   announce_tools_changed {count} notifications/tools/list_changed `count`
//                                  times, on the GET stream
//   ping_client                    a ping request on the GET stream; returns
//                                  once the client answered it
//   add_tool {name}                one more read-only tool (it answers
//                                  "<name> ran"), announced with
//                                  notifications/tools/list_changed on the
//                                  GET stream
//   drop_get_stream {then_announce, then_add, hold_ms}
//                                  cuts the GET stream's connection, answers
//                                  its reconnection 503 for `hold_ms`
//                                  (default 300), and meanwhile adds the tool
//                                  `then_add` and announces `then_announce`
//                                  list changes (kept for replay)
//   drop_answer_stream {hold_ms}   sends progress (needs a progressToken),
//                                  cuts this call's own answer stream, then
//                                  sends more progress and the result while
//                                  resumption is answered 503 for `hold_ms`
//   forget_session                 ends the session 50 ms after answering,
//                                  as a restarted server would have
//   stats                          {gets: [{last_event_id, status}],
//                                  replayed, get_streams_open} of the session
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { InMemoryEventStore } from '@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  isInitializeRequest,
} from '@modelcontextprotocol/sdk/types.js';

// The SDK's example store names events `<stream>_<ms>_<random>`: the GET
// stream's id `_GET_stream` then yields an empty stream id (no replay), and
// two events in one millisecond replay in random order. Ids here are
// `<stream>|<sequence>`, so both work; replayed events are counted.
class OrderedEventStore extends InMemoryEventStore {
  constructor() {
    super();
    this.sequence = 0;
    this.replayed = 0;
  }
  generateEventId(streamId) {
    return `${streamId}|${String(++this.sequence).padStart(12, '0')}`;
  }
  getStreamIdFromEventId(eventId) {
    const bar = eventId.lastIndexOf('|');
    return bar < 0 ? '' : eventId.slice(0, bar);
  }
  async replayEventsAfter(lastEventId, { send }) {
    return super.replayEventsAfter(lastEventId, {
      send: async (eventId, message) => {
        this.replayed += 1;
        await send(eventId, message);
      },
    });
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (value) => ({
  content: [{ type: 'text', text: typeof value === 'string' ? value : JSON.stringify(value) }],
});
const objectSchema = (properties) => ({ type: 'object', properties });

const tools = [
  { name: 'echo', inputSchema: objectSchema({ text: { type: 'string' } }) },
  { name: 'announce_tools_changed', inputSchema: objectSchema({ count: { type: 'integer' } }) },
  { name: 'ping_client', inputSchema: objectSchema({}) },
  { name: 'add_tool', inputSchema: objectSchema({ name: { type: 'string' } }) },
  {
    name: 'drop_get_stream',
    inputSchema: objectSchema({
      then_announce: { type: 'integer' },
      then_add: { type: 'string' },
      hold_ms: { type: 'integer' },
    }),
  },
  { name: 'drop_answer_stream', inputSchema: objectSchema({ hold_ms: { type: 'integer' } }) },
  { name: 'forget_session', inputSchema: objectSchema({}) },
  { name: 'stats', inputSchema: objectSchema({}) },
].map(described);
const added = new Set();

function described(tool) {
  return { ...tool, description: tool.name, annotations: { readOnlyHint: true } };
}

function addTool(name) {
  tools.push(described({ name, inputSchema: objectSchema({}) }));
  added.add(name);
}

// sessionId -> {transport, server, store, gets, getResponses, postResponses, holdUntil}
const sessions = new Map();

function newSession() {
  const session = {
    store: new OrderedEventStore(),
    gets: [],
    getResponses: new Set(),
    postResponses: new Map(), // JSON-RPC request id -> its answer stream's response
    holdUntil: 0,
  };
  session.transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    eventStore: session.store,
    onsessioninitialized: (id) => sessions.set(id, session),
  });
  session.transport.onclose = () => {
    if (session.transport.sessionId) sessions.delete(session.transport.sessionId);
  };
  const server = new Server(
    { name: 'omniforge-resumable-test-server', version: '1.0.0' },
    { capabilities: { tools: { listChanged: true } } },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) =>
    callTool(session, server, request.params, extra),
  );
  session.server = server;
  return session;
}

async function callTool(session, server, { name, arguments: args = {} }, extra) {
  switch (name) {
    case 'echo':
      return text(args.text ?? '');
    case 'announce_tools_changed':
      for (let i = 0; i < (args.count ?? 1); i++) await server.sendToolListChanged();
      return text('announced');
    case 'ping_client':
      await server.ping();
      return text('the client answered ping');
    case 'add_tool':
      addTool(args.name);
      await server.sendToolListChanged();
      return text('added');
    case 'drop_get_stream': {
      session.holdUntil = Date.now() + (args.hold_ms ?? 300);
      const cut = session.getResponses.size;
      for (const res of session.getResponses) res.socket?.destroy();
      // Announced while the client has no stream: only a replay delivers them.
      if (args.then_add) addTool(args.then_add);
      for (let i = 0; i < (args.then_announce ?? 0); i++) await server.sendToolListChanged();
      return text({ cut });
    }
    case 'drop_answer_stream': {
      const token = extra._meta?.progressToken;
      if (token === undefined) throw new Error('drop_answer_stream needs a progressToken');
      const progress = (n) =>
        extra.sendNotification({
          method: 'notifications/progress',
          params: { progressToken: token, progress: n, total: 3 },
        });
      await progress(1);
      await sleep(20);
      session.holdUntil = Date.now() + (args.hold_ms ?? 300);
      session.postResponses.get(extra.requestId)?.socket?.destroy();
      await sleep(20);
      await progress(2);
      await progress(3);
      return text('answered after the stream was cut');
    }
    case 'forget_session':
      setTimeout(() => session.transport.close(), 50);
      return text('forgetting');
    case 'stats':
      return text({
        gets: session.gets,
        replayed: session.store.replayed,
        get_streams_open: session.getResponses.size,
      });
    default:
      if (added.has(name)) return text(`${name} ran`);
      throw new Error(`no tool ${name}`);
  }
}

async function readBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
}

const http = createServer(async (req, res) => {
  try {
    if (new URL(req.url, 'http://x').pathname !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    const sessionId = req.headers['mcp-session-id'];
    let session = sessionId ? sessions.get(sessionId) : undefined;
    const body = req.method === 'POST' ? await readBody(req) : undefined;
    if (!session) {
      if (req.method === 'POST' && !sessionId && isInitializeRequest(body)) {
        session = newSession();
        await session.server.connect(session.transport);
      } else {
        res.writeHead(sessionId ? 404 : 400, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }));
        return;
      }
    }
    if (req.method === 'GET') {
      const lastEventId = req.headers['last-event-id'] ?? '';
      if (Date.now() < session.holdUntil) {
        session.gets.push({ last_event_id: lastEventId, status: 503 });
        res.writeHead(503).end();
        return;
      }
      session.gets.push({ last_event_id: lastEventId, status: 200 });
      if (!lastEventId || session.store.getStreamIdFromEventId(lastEventId) === '_GET_stream') {
        session.getResponses.add(res);
        res.on('close', () => session.getResponses.delete(res));
      }
    }
    if (req.method === 'POST' && body && !Array.isArray(body) && body.method && body.id !== undefined) {
      session.postResponses.set(body.id, res);
      res.on('close', () => session.postResponses.delete(body.id));
    }
    await session.transport.handleRequest(req, res, body);
  } catch (error) {
    if (!res.headersSent) res.writeHead(500).end(String(error));
  }
});

http.listen(0, '127.0.0.1', () => {
  console.log(`omniforge-test-listening 127.0.0.1 ${http.address().port}`);
});
