// Checks the Envoy recipe (deploy/envoy/envoy.yaml) and the descriptor set it
// loads, without an Envoy binary: what a REST, SSE or gRPC client through the
// gateway relies on.
//   - the descriptor set (decoded to JSON by buf) holds ChatService and no
//     other omniforge service; every method has a google.api.http rule whose
//     path variables name scalar fields of its request and whose body is
//     "*" or a field of the request (none for GET and DELETE);
//   - envoy.yaml parses; its grpc_json_transcoder names services of the
//     descriptor set, loads the file docs/gateway.md mounts, frames streams
//     as server-sent events and comes before the router;
//   - the ChatService route lets a 90 s turn finish (route, idle, stream and
//     grpc-timeout limits), retries on UNAVAILABLE only, with a per-try
//     timeout; its cluster speaks HTTP/2 with keepalive pings no closer than
//     the orchestrator accepts; the admin interface is on loopback.
//
//   node check_envoy.mjs ENVOY_YAML DESCRIPTOR_JSON GATEWAY_DOC
//
// Prints one line per problem; exits 1 when there is any.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const nodeDir = process.env.OMNIFORGE_NODE_DIR ||
    path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../node");
const require = createRequire(path.join(nodeDir, "package.json"));
const YAML = require("yaml");

const [envoyPath, descriptorPath, docPath] = process.argv.slice(2);
if (!docPath) {
  console.error("usage: node check_envoy.mjs ENVOY_YAML DESCRIPTOR_JSON GATEWAY_DOC");
  process.exit(2);
}

const kPublicService = "omniforge.orchestrator.v1.ChatService";
// The turn's time limit (turn.timeout_ms): every limit on the call must exceed it.
const kTurnSeconds = 90;
// The orchestrator's GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS.
const kMinPingSeconds = 10;
const kTranscoderType =
    "type.googleapis.com/envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder";
const kHcmType =
    "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager";
const kUpstreamOptions = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions";
const kVerbs = ["get", "put", "post", "delete", "patch"];
const problems = [];

// A protobuf Duration in YAML ("120s", "0.25s"), in seconds; null when unset.
function seconds(value) {
  if (value === undefined || value === null) return null;
  const match = /^(\d+(?:\.\d+)?)s$/.exec(String(value));
  if (!match) {
    problems.push(`duration ${JSON.stringify(value)} is not of the form <seconds>s`);
    return null;
  }
  return Number(match[1]);
}

// --- the descriptor set -------------------------------------------------

function indexMessages(descriptor) {
  const messages = new Map();
  const add = (prefix, message) => {
    const name = `${prefix}.${message.name}`;
    messages.set(name, message);
    for (const nested of message.nestedType || []) add(name, nested);
  };
  for (const file of descriptor.file) {
    for (const message of file.messageType || []) add(file.package ? `.${file.package}` : "", message);
  }
  return messages;
}

// The field a dotted path (`conversation_id`, `a.b`) names in a message, or null.
function resolveField(messages, typeName, fieldPath) {
  let message = messages.get(typeName);
  let field = null;
  for (const part of fieldPath.split(".")) {
    if (!message) return null;
    field = (message.field || []).find((f) => f.name === part);
    if (!field) return null;
    message = field.type === "TYPE_MESSAGE" ? messages.get(field.typeName) : null;
  }
  return field;
}

function checkRule(messages, method, rule, seen) {
  const where = `${method.name}`;
  const verbs = kVerbs.filter((verb) => rule[verb] !== undefined);
  if (rule.custom) verbs.push(rule.custom.kind);
  if (verbs.length !== 1) {
    problems.push(`${where}: an http rule needs exactly one verb and path, has ${verbs.length}`);
    return;
  }
  const verb = verbs[0];
  const template = rule.custom ? rule.custom.path : rule[verb];
  if (!template.startsWith("/v1/")) problems.push(`${where}: path ${template} is not under /v1/`);
  const key = `${verb.toUpperCase()} ${template}`;
  if (seen.has(key)) problems.push(`${where}: ${key} is also ${seen.get(key)}'s`);
  seen.set(key, method.name);
  for (const [, variable] of template.matchAll(/\{([^}=]+)(?:=[^}]*)?\}/g)) {
    const field = resolveField(messages, method.inputType, variable);
    if (!field) {
      problems.push(`${where}: path variable {${variable}} names no field of ${method.inputType.slice(1)}`);
    } else if (field.type === "TYPE_MESSAGE" || field.label === "LABEL_REPEATED") {
      problems.push(`${where}: path variable {${variable}} is not a single scalar field`);
    }
  }
  const body = rule.body || "";
  if ((verb === "get" || verb === "delete") && body !== "") {
    problems.push(`${where}: ${verb.toUpperCase()} ${template} has a body ("${body}")`);
  } else if (body !== "" && body !== "*" && !resolveField(messages, method.inputType, body)) {
    problems.push(`${where}: body "${body}" is neither "*" nor a field of ${method.inputType.slice(1)}`);
  }
}

// The services of the set, by full name; problems for the public one.
function checkDescriptor(descriptor) {
  const messages = indexMessages(descriptor);
  const services = new Map();
  for (const file of descriptor.file) {
    for (const service of file.service || []) services.set(`${file.package}.${service.name}`, service);
  }
  const chat = services.get(kPublicService);
  if (!chat) {
    problems.push(`the descriptor set has no ${kPublicService}`);
    return services;
  }
  for (const name of services.keys()) {
    if (name.startsWith("omniforge.") && name !== kPublicService) {
      problems.push(`the descriptor set holds ${name}: only the public API belongs behind the gateway`);
    }
  }
  const seen = new Map();
  for (const method of chat.method || []) {
    const rule = method.options?.["[google.api.http]"];
    if (!rule) {
      problems.push(`${method.name}: no google.api.http rule`);
      continue;
    }
    checkRule(messages, method, rule, seen);
    for (const binding of rule.additionalBindings || []) checkRule(messages, method, binding, seen);
  }
  if (!messages.has(".google.rpc.Status")) {
    problems.push("the descriptor set lacks google.rpc.Status (convert_grpc_status needs it)");
  }
  return services;
}

// --- envoy.yaml -----------------------------------------------------------

function findConnectionManagers(config) {
  const managers = [];
  for (const listener of config.static_resources?.listeners || []) {
    for (const chain of listener.filter_chains || []) {
      for (const filter of chain.filters || []) {
        if (filter.typed_config?.["@type"] === kHcmType) managers.push(filter.typed_config);
      }
    }
  }
  return managers;
}

function checkTranscoder(hcm, services, doc) {
  const filters = hcm.http_filters || [];
  const index = filters.findIndex((f) => f.typed_config?.["@type"] === kTranscoderType);
  if (index < 0) {
    problems.push("no grpc_json_transcoder filter");
    return;
  }
  const last = filters[filters.length - 1];
  if (last?.name !== "envoy.filters.http.router") problems.push("the router is not the last HTTP filter");
  const corsIndex = filters.findIndex((f) => f.name === "envoy.filters.http.cors");
  if (corsIndex > index) problems.push("the CORS filter comes after the transcoder (preflights would be transcoded)");
  const transcoder = filters[index].typed_config;
  const named = transcoder.services || [];
  if (!named.includes(kPublicService)) problems.push(`the transcoder does not name ${kPublicService}`);
  for (const name of named) {
    if (!services.has(name)) problems.push(`the transcoder names ${name}, which the descriptor set does not hold`);
  }
  const descriptorFile = transcoder.proto_descriptor;
  if (!descriptorFile) {
    problems.push("the transcoder has no proto_descriptor file");
  } else if (!doc.includes(`:${descriptorFile}`)) {
    problems.push(`docs/gateway.md mounts no file at ${descriptorFile}, the transcoder's proto_descriptor`);
  }
  if (transcoder.print_options?.stream_sse_style_delimited !== true) {
    problems.push("print_options.stream_sse_style_delimited is not true: StreamChat would not be server-sent events");
  }
  if (transcoder.convert_grpc_status !== true) {
    problems.push("convert_grpc_status is not true: a refused REST call would have no JSON status");
  }
}

// A limit on the call: unset or 0 (none) passes; otherwise above a turn.
function checkCallLimit(label, value) {
  const limit = seconds(value);
  if (limit !== null && limit !== 0 && limit <= kTurnSeconds) {
    problems.push(`${label} is ${value}: a ${kTurnSeconds} s turn would be cut`);
  }
}

function checkRetryPolicy(label, policy) {
  const conditions = String(policy.retry_on || "").split(",").map((s) => s.trim()).filter(Boolean);
  if (conditions.length !== 1 || conditions[0] !== "unavailable") {
    problems.push(`${label} retry_on is "${policy.retry_on}", not "unavailable" alone (a turn is not idempotent)`);
  }
  if (!(Number(policy.num_retries) >= 1)) problems.push(`${label} retry_policy has no num_retries`);
  if (!(seconds(policy.per_try_timeout) > 0)) problems.push(`${label} retry_policy has no per_try_timeout`);
}

// The ChatService route; returns its cluster's name.
function checkRoutes(hcm) {
  checkCallLimit("the connection manager's stream_idle_timeout", hcm.stream_idle_timeout);
  const gRpcPath = `/${kPublicService}/StreamChat`;
  for (const host of hcm.route_config?.virtual_hosts || []) {
    if (host.retry_policy) checkRetryPolicy(`virtual host ${host.name}:`, host.retry_policy);
    const route = (host.routes || []).find((r) => r.match?.prefix !== undefined &&
                                                  gRpcPath.startsWith(r.match.prefix));
    if (!route) continue;
    const action = route.route || {};
    checkCallLimit("the route's timeout", action.timeout ?? "15s");
    checkCallLimit("the route's idle_timeout", action.idle_timeout);
    checkCallLimit("max_stream_duration.max_stream_duration", action.max_stream_duration?.max_stream_duration);
    checkCallLimit("max_stream_duration.grpc_timeout_header_max",
                   action.max_stream_duration?.grpc_timeout_header_max);
    if (!action.retry_policy && !host.retry_policy) {
      problems.push("the ChatService route has no retry policy (UNAVAILABLE from a draining replica)");
    }
    if (action.retry_policy) checkRetryPolicy("the ChatService route's", action.retry_policy);
    return action.cluster;
  }
  problems.push(`no route matches ${gRpcPath}`);
  return null;
}

function checkCluster(config, name) {
  const cluster = (config.static_resources?.clusters || []).find((c) => c.name === name);
  if (!cluster) {
    problems.push(`the route's cluster ${name} is not defined`);
    return;
  }
  const options = cluster.typed_extension_protocol_options?.[kUpstreamOptions];
  const http2 = options?.explicit_http_config?.http2_protocol_options;
  if (!http2) {
    problems.push(`cluster ${name} does not speak HTTP/2 (explicit_http_config.http2_protocol_options)`);
    return;
  }
  const keepalive = http2.connection_keepalive;
  const interval = seconds(keepalive?.interval);
  if (interval === null || !(seconds(keepalive?.timeout) > 0)) {
    problems.push(`cluster ${name} has no HTTP/2 keepalive (connection_keepalive interval and timeout)`);
  } else if (interval < kMinPingSeconds) {
    problems.push(`cluster ${name} pings every ${keepalive.interval}: the orchestrator accepts one per ` +
                  `${kMinPingSeconds} s and closes the connection`);
  }
}

function checkEnvoy(config, services, doc) {
  const admin = config.admin?.address?.socket_address?.address;
  if (admin !== undefined && admin !== "127.0.0.1" && admin !== "::1") {
    problems.push(`the admin interface listens on ${admin}, not loopback`);
  }
  const managers = findConnectionManagers(config);
  if (managers.length === 0) {
    problems.push("no listener with an HTTP connection manager");
    return;
  }
  for (const hcm of managers) {
    checkTranscoder(hcm, services, doc);
    const cluster = checkRoutes(hcm);
    if (cluster) checkCluster(config, cluster);
  }
}

const descriptor = JSON.parse(fs.readFileSync(descriptorPath, "utf8"));
const services = checkDescriptor(descriptor);
const document = YAML.parseDocument(fs.readFileSync(envoyPath, "utf8"));
if (document.errors.length > 0) {
  for (const error of document.errors) problems.push(`envoy.yaml: ${error.message}`);
} else {
  checkEnvoy(document.toJS(), services, fs.readFileSync(docPath, "utf8"));
}
for (const problem of problems) console.log(problem);
const methods = services.get(kPublicService)?.method?.length ?? 0;
console.log(`${kPublicService}: ${methods} methods; envoy.yaml checked; ${problems.length} problems`);
process.exit(problems.length === 0 ? 0 : 1);
