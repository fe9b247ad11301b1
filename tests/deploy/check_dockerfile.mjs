// Checks deploy/docker/Dockerfile without a Docker engine: what can go wrong
// before the first RUN does.
//   - it parses (dockerfile-ast) and has a Debian 12 build stage and a
//     debian:12-slim final stage;
//   - every COPY from the build context names paths that exist in the
//     repository and that Dockerfile.dockerignore lets through (evaluated
//     with @balena/dockerignore, Docker's own matching rules), and every
//     COPY --from names an earlier stage;
//   - the final stage runs as a non-root user and has an ENTRYPOINT; when
//     the entry point is a file copied from the context, that file is
//     executable.
//
//   node check_dockerfile.mjs REPO_ROOT [DOCKERFILE]
//
// DOCKERFILE defaults to deploy/docker/Dockerfile; its ignore file is
// deploy/docker/Dockerfile.dockerignore either way.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const nodeDir = process.env.OMNIFORGE_NODE_DIR ||
    path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../node");
const require = createRequire(path.join(nodeDir, "package.json"));
const { DockerfileParser } = require("dockerfile-ast");
const dockerignore = require("@balena/dockerignore");

const root = process.argv[2];
if (!root) {
  console.error("usage: node check_dockerfile.mjs REPO_ROOT [DOCKERFILE]");
  process.exit(2);
}
const dockerfilePath = process.argv[3] || path.join(root, "deploy/docker/Dockerfile");
const ignorePath = path.join(root, "deploy/docker/Dockerfile.dockerignore");
const problems = [];

const text = fs.readFileSync(dockerfilePath, "utf8");
const ignore = dockerignore({ ignorecase: false })
    .add(fs.readFileSync(ignorePath, "utf8").split("\n"));
const instructions = DockerfileParser.parse(text).getInstructions();

// Files under a context path (a file, or a directory walked), relative to root.
function contextFiles(relative) {
  const absolute = path.join(root, relative);
  if (!fs.existsSync(absolute)) return null;
  if (fs.statSync(absolute).isFile()) return [relative];
  const files = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const child = path.posix.join(dir, entry.name);
      if (entry.isDirectory()) {
        // Whole trees the ignore file drops (build trees, node_modules) are
        // not walked.
        if (!ignore.ignores(`${child}/`)) walk(child);
      } else {
        files.push(child);
      }
    }
  };
  walk(relative);
  return files;
}

// ARGs before the first FROM: their defaults stand for ${NAME} in FROM lines
// (BASE_IMAGE, RUNTIME_IMAGE, BINARIES).
const globalArgs = new Map();
const expand = (text) => text.replace(/\$\{(\w+)\}|\$(\w+)/g,
    (whole, a, b) => globalArgs.get(a ?? b) ?? whole);
// Made by scripts/image.sh before a BINARIES=prebuilt build, so not in the
// repository: only the ignore file's letting it through is checked.
const staged = (relative) => relative === "build/image" || relative.startsWith("build/image/");

const stages = [];
let user = null;
let entrypoint = false;
let entrypointPath = null;
const copiedFrom = new Map();  // destination in the final stage -> context path
for (const instruction of instructions) {
  const keyword = instruction.getKeyword();
  const args = instruction.getArguments().map((a) => a.getValue());
  const line = instruction.getRange().start.line + 1;
  const where = `Dockerfile:${line}`;
  if (keyword === "ARG" && stages.length === 0) {
    const [name, value] = args[0].split("=");
    globalArgs.set(name, value ?? "");
  } else if (keyword === "FROM") {
    const name = args[2] ?? null;
    stages.push({ image: expand(args[0]), name });
    user = null;
    entrypoint = false;
    entrypointPath = null;
    copiedFrom.clear();
  } else if (keyword === "COPY") {
    const from = instruction.getFlags().find((f) => f.getName() === "from");
    const sources = args.slice(0, -1);
    if (sources.length === 0) problems.push(`${where}: COPY without a source`);
    if (from) {
      if (!stages.slice(0, -1).some((s) => s.name === expand(from.getValue()))) {
        problems.push(`${where}: COPY --from=${from.getValue()} names no earlier stage`);
      }
      continue;
    }
    if (sources.length === 1) copiedFrom.set(args[args.length - 1], sources[0]);
    for (const source of sources) {
      const relative = path.posix.normalize(source.replace(/^\.\//, "")).replace(/\/$/, "");
      if (staged(relative)) {
        if (ignore.ignores(`${relative}/bin/omniforge`)) {
          problems.push(`${where}: COPY ${source}: Dockerfile.dockerignore leaves nothing of it in the context`);
        }
        continue;
      }
      const files = contextFiles(relative);
      if (files === null) {
        problems.push(`${where}: COPY ${source}: no such file in the repository`);
        continue;
      }
      const sent = files.filter((f) => !ignore.ignores(f));
      if (sent.length === 0) {
        problems.push(`${where}: COPY ${source}: Dockerfile.dockerignore leaves nothing of it in the context`);
      } else if (fs.statSync(path.join(root, relative)).isFile() && sent.length !== 1) {
        problems.push(`${where}: COPY ${source}: excluded by Dockerfile.dockerignore`);
      }
    }
  } else if (keyword === "USER") {
    user = args[0];
  } else if (keyword === "ENTRYPOINT") {
    entrypoint = true;
    try {
      entrypointPath = JSON.parse(instruction.getTextContent().replace(/^\s*ENTRYPOINT\s+/i, ""))[0];
    } catch {
      entrypointPath = args[0];
    }
  }
}

if (stages.length < 2) problems.push("expected a build stage and a runtime stage");
if (stages.length > 0 && !/^debian:12(@|$)/.test(stages[0].image)) {
  problems.push(`the build stage is ${stages[0].image}, not debian:12`);
}
const last = stages[stages.length - 1];
if (last && !/^debian:12-slim(@|$)/.test(last.image)) {
  problems.push(`the runtime stage is ${last.image}, not debian:12-slim`);
}
if (user === null || /^(0|root)(:|$)/.test(user)) problems.push("the runtime stage does not run as a non-root user");
if (!entrypoint) problems.push("the runtime stage has no ENTRYPOINT");
const entrySource = entrypointPath && copiedFrom.get(entrypointPath);
if (entrySource && fs.existsSync(path.join(root, entrySource)) &&
    (fs.statSync(path.join(root, entrySource)).mode & 0o111) === 0) {
  problems.push(`the entry point ${entrypointPath} is copied from ${entrySource}, which is not executable`);
}

for (const problem of problems) console.log(problem);
console.log(`${instructions.length} instructions checked, ${problems.length} problems`);
process.exit(problems.length === 0 ? 0 : 1);
