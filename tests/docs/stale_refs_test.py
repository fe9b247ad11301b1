#!/usr/bin/env python3
"""Fails when the documentation names something the repository no longer has.

Reads README.md and docs/**/*.md and reports, as `file:line: message`, every
  - repository path (inline code, fenced code, markdown link) that does not
    exist, and every markdown link whose #anchor is not a heading there;
  - `make <target>` whose target the Makefile does not define;
  - config key the services do not read (the keys are taken from the code:
    see known_config_keys below), and every key the code reads that
    docs/configuration.md does not name;
  - RPC (`ChatService.StreamChat`, or a bare `ListActions`-like name) that no
    protos/**/*.proto declares.

Usage:
  stale_refs_test.py [--root DIR]             check the repository's docs
  stale_refs_test.py --root DIR --self-test   check that the fixtures in
      tests/docs/fixtures are judged as their annotations say (every stale
      reference in stale.md found, nothing in fresh.md), so the checker
      cannot pass everything silently.
  stale_refs_test.py --root DIR --list-config-keys
Standard library only.
"""

import argparse
import fnmatch
import glob
import os
import re
import sys

# ---------------------------------------------------------------- repository


class Repo:
    """What the documentation may name, read from the repository itself."""

    SKIP_DIRS = {".git", "node_modules", ".cache"}

    def __init__(self, root):
        self.root = os.path.abspath(root)
        self.files = []  # repository-relative paths of files
        self.dirs = set()
        for dirpath, dirnames, filenames in os.walk(self.root):
            rel = os.path.relpath(dirpath, self.root)
            dirnames[:] = [
                d for d in dirnames
                if d not in self.SKIP_DIRS and not (rel == "." and (d == "build" or d.startswith("build-")))
            ]
            if rel != ".":
                self.dirs.add(rel)
            for name in filenames:
                self.files.append(name if rel == "." else os.path.join(rel, name))
        self.file_set = set(self.files)
        self.basenames = {os.path.basename(f) for f in self.files}
        self.top_level = {p.split("/")[0] for p in self.files} | {d.split("/")[0] for d in self.dirs}
        self.make_targets = self._make_targets()
        self.services, self.rpcs, self.proto_names = self._protos()
        self.config = ConfigKeys(self)
        self.sql_names = set()
        for rel in self.files:
            if rel.endswith(".sql"):
                self.sql_names.update(re.findall(r"\b([a-z_]+\.[a-z_]+)\b", self.read(rel)))

    def read(self, rel):
        with open(os.path.join(self.root, rel), encoding="utf-8") as f:
            return f.read()

    def exists(self, rel):
        rel = os.path.normpath(rel).rstrip("/")
        return rel in self.file_set or rel in self.dirs or rel == "."

    def glob_exists(self, pattern):
        pattern = os.path.normpath(pattern).rstrip("/")
        return any(fnmatch.fnmatchcase(p, pattern) for p in self.files) or any(
            fnmatch.fnmatchcase(d, pattern) for d in self.dirs)

    def suffix_exists(self, tail):
        tail = "/" + tail.rstrip("/")
        if "*" in tail:
            return any(fnmatch.fnmatchcase("/" + p, "*" + tail) for p in self.files)
        return any(("/" + p).endswith(tail) for p in self.files) or any(
            ("/" + d).endswith(tail) for d in self.dirs)

    def ignored(self, rel):
        """Whether `rel` is a generated file: one that a .gitignore in an
        existing directory above it keeps out of the repository."""
        parts = os.path.normpath(rel).split("/")
        for i in range(len(parts) - 1, -1, -1):
            base = "/".join(parts[:i])
            if base and not self.exists(base):
                continue
            ignore = os.path.join(self.root, base, ".gitignore")
            if not os.path.isfile(ignore):
                continue
            rest = parts[i:]
            with open(ignore, encoding="utf-8") as f:
                for pattern in f.read().splitlines():
                    pattern = pattern.strip()
                    if not pattern or pattern.startswith(("#", "!")):
                        continue
                    pattern = pattern.strip("/")
                    if fnmatch.fnmatchcase(rest[0], pattern) or fnmatch.fnmatchcase("/".join(rest), pattern):
                        return True
        return False

    def _make_targets(self):
        targets = set()
        for line in self.read("Makefile").splitlines():
            m = re.match(r"^([A-Za-z0-9_.%-][A-Za-z0-9_. %-]*?)\s*:(?![:=])", line)
            if m and not line.startswith("\t"):
                targets.update(t for t in m.group(1).split() if not t.startswith("."))
        return targets

    def _protos(self):
        services = {}  # service -> set of methods
        names = set()  # messages, enums and enum values
        for rel in self.files:
            if not (rel.startswith("protos/") and rel.endswith(".proto")):
                continue
            text = self.read(rel)
            for m in re.finditer(r"\bservice\s+(\w+)\s*\{(.*?)\n\}", text, re.S):
                services.setdefault(m.group(1), set()).update(
                    re.findall(r"\brpc\s+(\w+)\s*\(", m.group(2)))
            names.update(re.findall(r"\b(?:message|enum)\s+(\w+)", text))
            names.update(re.findall(r"^\s*([A-Z][A-Z0-9_]+)\s*=\s*\d+", text, re.M))
        rpcs = set().union(*services.values()) if services else set()
        return services, rpcs, names


# ---------------------------------------------------------------- config keys

GETTERS = "String|Int|Double|Bool|StringList|StringMap|Keys"

# Config paths the code builds instead of spelling them out. Each rule names a
# source file (by its base name, so moving the file does not break it), a
# regex for the getter calls it explains, and the key template (`*` stands for
# a name the user chooses) with `{0}` for the regex's first group. A rule that
# no longer matches anything fails the check, and so does a getter call that
# neither spells its key nor is explained by a rule: when the code changes, the
# checker says which rule to update instead of silently knowing fewer keys.
COMPOSED_KEY_RULES = [
    # llm_config.cc: Key("x") is "llm.x"; a provider's keys are path + ".x"
    # under llm.providers.<name>; a profile is read as a list at its path.
    ("llm_config.cc", r"reader_\.(?P<getter>\w+)\(Key\(\"(?P<leaf>[^\"]+)\"\)", "llm.{leaf}"),
    ("llm_config.cc", r"reader_\.(?P<getter>\w+)\(path \+ \"\.(?P<leaf>[^\"]+)\"", "llm.providers.*.{leaf}"),
    ("llm_config.cc", r"reader_\.(?P<getter>StringList)\(path,", "llm.profiles.*"),
    # mcp_config.cc: key("x") is "mcp.servers.<name>.x".
    ("mcp_config.cc", r"reader\.(?P<getter>\w+)\(key\(\"(?P<leaf>[^\"]+)\"\)", "mcp.servers.*.{leaf}"),
    # approval_gate.cc: level("x", ...) reads "approvals.x" as a String.
    ("approval_gate.cc", r"reader\.(?P<getter>String)\(path,", None),
    ("approval_gate.cc", r"\blevel\(\"(?P<leaf>\w+)\",", "approvals.{leaf}"),
    # domain_tools.cc: each domain's server list.
    ("domain_tools.cc", r"reader\.(?P<getter>StringList)\(key,", "domains.*.servers"),
    # tenant_limits.cc: each limit is read as "limits.x" and
    # "limits.tenants.<tenant>.x" (amount("x") a Double, Int(prefix + "x")).
    ("tenant_limits.cc", r"c\.(?P<getter>Double)\(prefix \+ key,", None),
    ("tenant_limits.cc", r"\bamount\(\"(?P<leaf>\w+)\"", "limits.{leaf}"),
    ("tenant_limits.cc", r"\bamount\(\"(?P<leaf>\w+)\"", "limits.tenants.*.{leaf}"),
    ("tenant_limits.cc", r"c\.(?P<getter>Int)\(prefix \+ \"(?P<leaf>\w+)\"", "limits.{leaf}"),
    ("tenant_limits.cc", r"c\.(?P<getter>Int)\(prefix \+ \"(?P<leaf>\w+)\"",
     "limits.tenants.*.{leaf}"),
]


class ConfigKeys:
    """Every config key the services read, derived from their source.

    A key is a tuple of path segments; "*" is a segment the user names (a
    provider, an MCP server, a tenant). `maps` holds keys read as a map, whose
    children are user-named too."""

    SOURCE_DIRS = ("libs", "services", "cli")

    def __init__(self, repo):
        self.repo = repo
        self.keys = {}  # tuple -> (getter, "file:line")
        self.problems = []  # (file, line, message) about the derivation itself
        for rel in sorted(repo.files):
            if self._is_config_source(rel):
                self._scan(rel)
        used = {i for i, _ in self._rule_hits}
        for i, rule in enumerate(COMPOSED_KEY_RULES):
            if i not in used:
                self.problems.append(("tests/docs/stale_refs_test.py", 0,
                                      f"config rule for {rule[0]} /{rule[1]}/ matches no code: update COMPOSED_KEY_RULES"))
        self.maps = {k for k, (g, _) in self.keys.items() if g == "StringMap"}
        self.sections = {k for k, (g, _) in self.keys.items() if g == "Keys"}
        self.top = {k[0] for k in self.keys}

    _rule_hits = None

    def _is_config_source(self, rel):
        if not rel.endswith((".cc", ".h")) or rel.split("/")[0] not in self.SOURCE_DIRS:
            return False
        if rel.endswith("_test.cc") or "/tests/" in rel or "/testing/" in rel:
            return False
        return os.path.basename(rel) not in ("config.cc", "config.h")

    def _scan(self, rel):
        if self._rule_hits is None:
            self._rule_hits = []
        text = self.repo.read(rel)
        receivers = set(re.findall(r"ConfigReader\s*&\s*(\w+)", text))
        if not receivers:
            return
        line_of = lambda pos: text.count("\n", 0, pos) + 1
        explained = set()
        for i, (base, pattern, template) in enumerate(COMPOSED_KEY_RULES):
            if os.path.basename(rel) != base:
                continue
            for m in re.finditer(pattern, text):
                self._rule_hits.append((i, rel))
                explained.add(m.start())
                if template is None:
                    continue
                leaf = m.groupdict().get("leaf")
                key = template.format(leaf=leaf) if leaf else template
                getter = m.groupdict().get("getter") or "String"
                self._add(tuple(key.split(".")), getter, f"{rel}:{line_of(m.start())}")
        for m in re.finditer(r"\b(\w+)\.(" + GETTERS + r")\(\s*", text):
            if m.group(1) not in receivers:
                continue
            lit = re.match(r"\"([^\"]+)\"\s*[,)]", text[m.end():])
            if lit:
                self._add(tuple(lit.group(1).split(".")), m.group(2), f"{rel}:{line_of(m.start())}")
            elif m.start() not in explained:
                self.problems.append((rel, line_of(m.start()),
                                      "config key built in a way the docs checker does not know: "
                                      "add a rule to COMPOSED_KEY_RULES in tests/docs/stale_refs_test.py"))

    def _add(self, key, getter, where):
        self.keys.setdefault(key, (getter, where))

    @staticmethod
    def _segment_matches(doc_seg, code_seg):
        """A doc's `*` is any key; a placeholder (`<name>`, `NAME`) stands for
        a name the user chooses and so matches only such a segment; a word
        matches itself or a user-chosen name."""
        if doc_seg == "*":
            return True
        if is_placeholder(doc_seg):
            return code_seg == "*"
        return code_seg in ("*", doc_seg)

    def known(self, doc_key):
        """Whether a key named in a doc is one the code reads, a section of
        such keys, or a user-named child of a map the code reads."""
        segs = tuple(doc_key)
        for key in self.keys:
            if len(segs) <= len(key) and all(self._segment_matches(d, c) for d, c in zip(segs, key)):
                return True
        for key in self.maps:
            if len(segs) == len(key) + 1 and all(
                    self._segment_matches(d, c) for d, c in zip(segs, key)):
                return True
        return False

    def leaves(self):
        """Keys a reference page must name: every key read, not the sections
        whose children are listed by name."""
        return sorted(k for k in self.keys if k not in self.sections)


def is_placeholder(seg):
    return seg == "*" or bool(re.fullmatch(r"<[^>]+>|\{[^}]+\}|[A-Z][A-Z0-9_]*", seg))


# ---------------------------------------------------------------- docs

FILE_EXTENSIONS = ("md", "cc", "h", "proto", "sql", "sh", "py", "mjs", "js", "json", "yaml", "yml",
                   "txt", "cmake", "conf", "toml", "csv", "tsv", "ftz", "bin")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"\[(?:[^\]]|\][^(])*?\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


class Finding:
    def __init__(self, doc, line, kind, message):
        self.doc, self.line, self.kind, self.message = doc, line, kind, message

    def __str__(self):
        return f"{self.doc}:{self.line}: {self.kind}: {self.message}"


def github_slug(heading):
    text = re.sub(r"`", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text, flags=re.U)
    return text.replace(" ", "-")


def headings(text):
    slugs, counts, fence = set(), {}, False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
            continue
        m = None if fence else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            slug = github_slug(m.group(1))
            n = counts.get(slug, 0)
            counts[slug] = n + 1
            slugs.add(slug if n == 0 else f"{slug}-{n}")
    return slugs


class DocChecker:
    def __init__(self, repo):
        self.repo = repo
        self.findings = []
        self.config_keys_named = set()  # keys named in docs/configuration.md

    def report(self, doc, line, kind, message):
        self.findings.append(Finding(doc, line, kind, message))

    def check(self, doc_rel):
        text = self.repo.read(doc_rel)
        fence = None
        for n, line in enumerate(text.splitlines(), 1):
            stripped = line.strip()
            if stripped.startswith("```"):
                fence = None if fence is not None else (stripped[3:].strip() or "text")
                continue
            if fence is not None:
                self.check_code_line(doc_rel, n, line, fence)
                continue
            for m in LINK.finditer(line):
                self.check_link(doc_rel, n, m.group(1))
            spans = [m.group(2).strip() for m in CODE_SPAN.finditer(line)]
            for span in spans:
                self.check_span(doc_rel, n, span)
            prose = CODE_SPAN.sub(" ", line)
            prose = LINK.sub(" ", prose)
            self.check_qualified_rpcs(doc_rel, n, prose)

    # -- links
    def check_link(self, doc, n, target):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            return
        path, _, anchor = target.partition("#")
        if path:
            rel = os.path.normpath(os.path.join(os.path.dirname(doc), path))
            if rel.startswith(".."):
                self.report(doc, n, "link", f"'{target}' leaves the repository")
                return
            if not self.repo.exists(rel):
                self.report(doc, n, "link", f"'{target}': no such file or directory ({rel})")
                return
        else:
            rel = doc
        if anchor and rel.endswith(".md") and anchor not in headings(self.repo.read(rel)):
            self.report(doc, n, "link", f"'{target}': {rel} has no heading #{anchor}")

    # -- inline code
    def check_span(self, doc, n, span):
        if span.startswith("make ") or span == "make":
            self.check_make(doc, n, span)
        for token in re.split(r"[\s,;()|]+", span):
            self.check_path_token(doc, n, token)
        self.check_config_token(doc, n, span)
        self.check_qualified_rpcs(doc, n, span)
        self.check_bare_rpc(doc, n, span)

    def check_code_line(self, doc, n, line, lang):
        for cmd in re.split(r"&&|\|\||;|\|", line):
            cmd = re.sub(r"^\s*(\$\s+)?", "", cmd)
            if re.match(r"make(\s|$)", cmd):
                self.check_make(doc, n, cmd.split("#")[0])
        for token in re.split(r"[\s,;()|=\"'`]+", line.split(" #")[0]):
            self.check_path_token(doc, n, token, strict_basename=False)
        if lang in ("yaml", "yml"):
            self.check_yaml_line(doc, n, line)
        self.check_qualified_rpcs(doc, n, line)

    # -- make
    def check_make(self, doc, n, text):
        words = text.split()[1:]
        for w in words:
            if w.startswith("-") or "=" in w:
                continue
            if not re.fullmatch(r"[A-Za-z0-9_.-]+", w):
                break
            if w not in self.repo.make_targets:
                self.report(doc, n, "make", f"'make {w}': the Makefile has no target '{w}'")

    # -- paths
    def check_path_token(self, doc, n, token, strict_basename=True):
        token = token.strip("'\",:;!?").rstrip(".")
        token = re.sub(r"(:\d+(-\d+)?|#L\d+.*)$", "", token)
        if not token or token.startswith(("/", "~", "$", "http", "-", "@", "<")) or "://" in token:
            return
        if not re.fullmatch(r"[\w.<>*{}/+-]+", token):
            return
        pattern = re.sub(r"<[^>/]+>|\{[^}/]+\}|\.\.\.", "*", token)
        pattern = re.sub(r"\bN{2,}\b|(?<![A-Za-z])N{2,}(?=_)", "*", pattern)
        parts = token.split("/")
        first = parts[0]
        if first in ("build", "build-asan") or first.startswith("build"):
            return
        if "/" in token:
            if first in self.repo.top_level and first not in (".",):
                if not (self.repo.exists(token) or self.repo.glob_exists(pattern)
                        or self.repo.exists(token + ".cc") or self.repo.ignored(token)):
                    self.report(doc, n, "path", f"'{token}' does not exist")
            elif re.search(r"\.(" + "|".join(FILE_EXTENSIONS) + r")$", token) and first not in ("..", "."):
                if not self.repo.suffix_exists(pattern):
                    self.report(doc, n, "path", f"'{token}': no file ends with this path")
            return
        if token in self.repo.basenames:
            return
        if strict_basename and re.fullmatch(r"[\w*<>{}.-]+\.(cc|h|proto|sql|sh|py|mjs|md)", token):
            if not any(fnmatch.fnmatchcase(b, pattern) for b in self.repo.basenames):
                self.report(doc, n, "path", f"'{token}': no file of this name in the repository")

    # -- config keys
    def config_token(self, span):
        token = re.split(r"[\s:=]", span.strip(), maxsplit=1)[0].rstrip(".,")
        if not re.fullmatch(r"[a-z][a-z0-9_]*(\.([a-z0-9_-]+|<[^>]+>|\{[^}]+\}|[A-Z][A-Z0-9_]*|\*))+", token):
            return None
        segs = token.split(".")
        if segs[0] not in self.repo.config.top:
            return None
        if re.fullmatch("|".join(FILE_EXTENSIONS), segs[-1]):
            return None
        if len(segs) == 2 and segs[1] in ("env", "key", "log", "pem", "crt"):
            return None  # a file such as llm.env
        if token in self.repo.sql_names:
            return None  # a table or function of the database schema
        return segs

    def check_config_token(self, doc, n, span):
        segs = self.config_token(span)
        if segs is None:
            return
        if doc == "docs/configuration.md":
            self.config_keys_named.add(tuple(segs))
        if not self.repo.config.known(segs):
            self.report(doc, n, "config", f"'{'.'.join(segs)}' is not a config key the services read")

    def check_yaml_line(self, doc, n, line):
        # Tracks the block-mapping path of a YAML example; indentation only.
        m = re.match(r"^(\s*)(#\s*)?([a-z][a-z0-9_]*):(\s|$)", line)
        if not m or m.group(2):
            return
        stack = self._yaml_stack.setdefault(doc, [])
        indent = len(m.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, m.group(3)))
        segs = [s for _, s in stack]
        if segs[0] in self.repo.config.top and not self.repo.config.known(segs):
            self.report(doc, n, "config", f"'{'.'.join(segs)}' (YAML example) is not a config key the services read")

    _yaml_stack = {}

    # -- RPCs
    def check_qualified_rpcs(self, doc, n, text):
        for m in re.finditer(r"\b([A-Z]\w*Service)[./]([A-Z]\w*)\b", text):
            service, method = m.group(1), m.group(2)
            if service not in self.repo.services:
                self.report(doc, n, "rpc", f"'{service}' is not a service in protos/")
            elif method not in self.repo.services[service]:
                self.report(doc, n, "rpc", f"'{service}.{method}' is not an RPC of {service}")

    RPC_VERBS = ("Get", "List", "Create", "Update", "Delete", "Append", "Stream", "Cancel", "Invoke",
                 "Analyze", "Set", "Watch", "Approve", "Reject", "Decide", "Submit", "Resume", "Search")

    def check_bare_rpc(self, doc, n, span):
        m = re.fullmatch(r"([A-Z][a-z]+)([A-Z]\w*)(\(\))?", span)
        if not m or m.group(1) not in self.RPC_VERBS:
            return
        name = m.group(1) + m.group(2)
        if name in self.repo.rpcs or name in self.repo.proto_names:
            return
        if name in self.code_identifiers():
            return  # a C++ function or type, not an RPC
        self.report(doc, n, "rpc", f"'{name}' is not an RPC in protos/ (nor a name in the code)")

    _identifiers = None

    def code_identifiers(self):
        if self._identifiers is None:
            ids = set()
            for rel in self.repo.files:
                if rel.split("/")[0] in ("libs", "services", "cli", "tests", "bench") and rel.endswith((".cc", ".h")):
                    ids.update(re.findall(r"\b[A-Z]\w+\b", self.repo.read(rel)))
            self._identifiers = ids
        return self._identifiers

    # -- configuration.md names every key
    def check_config_coverage(self, doc="docs/configuration.md"):
        for key in self.repo.config.leaves():
            if not any(len(k) == len(key) and all(
                    d == c or (c == "*" and d != "*") for d, c in zip(k, key))
                    for k in self.config_keys_named):
                getter, where = self.repo.config.keys[key]
                self.report(doc, 1, "config", f"'{'.'.join(key)}' (read at {where}) is not named here")


def shipped_config_keys(repo):
    """Keys set in the service config files the deployments ship (block YAML,
    the subset these files use), with their file and line."""
    out = []
    for rel in repo.files:
        if not re.match(r"deploy/(local|docker/ollama|k8s/base/config)/[^/]+\.yaml$", rel):
            continue
        stack = []
        for n, line in enumerate(repo.read(rel).splitlines(), 1):
            m = re.match(r"^(\s*)([A-Za-z0-9_-]+):(.*)$", line)
            if not m or line.lstrip().startswith("#"):
                continue
            indent = len(m.group(1))
            while stack and stack[-1][0] >= indent:
                stack.pop()
            stack.append((indent, m.group(2)))
            out.append((rel, n, [s for _, s in stack]))
    return out


def doc_files(repo):
    docs = ["README.md"] + sorted(p for p in repo.files if p.startswith("docs/") and p.endswith(".md"))
    return [d for d in docs if d in repo.file_set]


def run(root, docs=None, coverage=True):
    repo = Repo(root)
    checker = DocChecker(repo)
    for rel, line, msg in repo.config.problems:
        checker.report(rel, line, "config-code", msg)
    for rel, n, segs in shipped_config_keys(repo):
        if not repo.config.known(segs):
            checker.report(rel, n, "config-code",
                           f"'{'.'.join(segs)}' is set here but the docs checker found no code reading it")
    for doc in docs or doc_files(repo):
        checker.check(doc)
    if coverage and "docs/configuration.md" in repo.file_set:
        checker.check_config_coverage()
    return checker.findings


def self_test(root):
    """The fixtures say what must be found: a line of stale.md ending in
    `<!-- stale: KIND[, KIND] -->` must give exactly those findings, and
    fresh.md must give none."""
    fixtures = "tests/docs/fixtures"
    failures = []
    findings = run(root, docs=[f"{fixtures}/stale.md", f"{fixtures}/fresh.md"], coverage=False)
    findings = [f for f in findings if f.doc.startswith(fixtures)]
    repo = Repo(root)
    expected = {}
    for n, line in enumerate(repo.read(f"{fixtures}/stale.md").splitlines(), 1):
        m = re.search(r"<!-- stale: ([\w, -]+) -->", line)
        if m:
            expected[n] = sorted(k.strip() for k in m.group(1).split(","))
    got = {}
    for f in findings:
        if f.doc.endswith("fresh.md"):
            failures.append(f"false alarm in fresh.md: {f}")
        else:
            got.setdefault(f.line, []).append(f.kind)
    for n, kinds in expected.items():
        if sorted(got.get(n, [])) != kinds:
            failures.append(f"stale.md:{n}: expected {kinds}, found {sorted(got.get(n, []))}")
    for n, kinds in got.items():
        if n not in expected:
            failures.append(f"stale.md:{n}: unexpected {kinds}")
    if len(expected) < 8:
        failures.append("stale.md annotates fewer than 8 stale references")
    for f in failures:
        print(f)
    print(f"self-test: {len(expected)} stale lines annotated, {len(failures)} problems")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    parser.add_argument("--self-test", action="store_true")
    parser.add_argument("--list-config-keys", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test(args.root)
    if args.list_config_keys:
        repo = Repo(args.root)
        for key in sorted(repo.config.keys):
            getter, where = repo.config.keys[key]
            print(f"{'.'.join(key):55} {getter:11} {where}")
        return 0
    findings = run(args.root)
    for f in findings:
        print(f)
    repo_docs = len(doc_files(Repo(args.root)))
    print(f"{len(findings)} stale references in README.md and {repo_docs - 1} docs files")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
