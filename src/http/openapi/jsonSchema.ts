import type * as t from 'io-ts';

/**
 * io-ts codec -> JSON Schema (draft 2020-12, the dialect of OpenAPI 3.1). The API's bodies, parameters and
 * answers are io-ts codecs; this walker turns them into the schemas of /openapi.json, so the document says
 * what the code checks. Hand-made codecs (`new t.Type`) carry their schema with `describeSchema`; the
 * project's `refine` and `strict` (src/http/validation.ts) leave their base codec / properties on the codec.
 * A codec the walker cannot read is an error, never a silently empty schema.
 */
export type JsonSchema = Record<string, unknown>;

const SCHEMA = Symbol('jsonSchema');
const SHARPER = Symbol('jsonSchemaKeywords');

/** Attaches the JSON Schema of a hand-made codec (or a sharper one than the walker would find). */
export function describeSchema<C extends object>(codec: C, schema: JsonSchema): C {
  return Object.assign(codec, { [SCHEMA]: schema });
}

/**
 * Adds keywords to the schema the walker finds for a codec: the form a refinement checks (a `pattern`, a
 * `propertyNames`), so a generated client checks what the route checks, while the walked schema stays.
 */
export function sharpenSchema<C extends object>(codec: C, keywords: JsonSchema): C {
  return Object.assign(codec, { [SHARPER]: keywords });
}

interface Annotated {
  [SCHEMA]?: JsonSchema;
  [SHARPER]?: JsonSchema;
  refinementOf?: t.Mixed;
  refinementMessage?: string;
  strictProps?: { required: t.Props; optional: t.Props };
  _tag?: string;
  name: string;
}

/** Codecs registered here are written as `$ref: '#/components/schemas/<name>'` wherever they occur. */
export type SchemaRefs = Map<unknown, string>;

export function toJsonSchema(codec: t.Mixed, refs: SchemaRefs = new Map(), top = true): JsonSchema {
  const ref = refs.get(codec);
  if (ref && !top) return { $ref: `#/components/schemas/${ref}` };
  const keywords = (codec as unknown as Annotated)[SHARPER];
  const schema = walked(codec, refs);
  return keywords ? { ...schema, ...keywords } : schema;
}

function walked(codec: t.Mixed, refs: SchemaRefs): JsonSchema {
  const c = codec as unknown as Annotated & Record<string, unknown>;
  const walk = (x: t.Mixed) => toJsonSchema(x, refs, false);
  const own = c[SCHEMA];
  if (own) return { ...own };
  if (c.strictProps) return object(c.strictProps.required, c.strictProps.optional, walk, false);
  if (c.refinementOf) {
    const base = walk(c.refinementOf);
    return c.refinementMessage && !('$ref' in base) ? { ...base, description: c.refinementMessage } : base;
  }
  switch (c._tag) {
    case 'StringType':
      return { type: 'string' };
    case 'NumberType':
      return { type: 'number' };
    case 'BooleanType':
      return { type: 'boolean' };
    case 'NullType':
      return { type: 'null' };
    case 'UnknownType':
    case 'AnyType':
      return {};
    case 'UnknownRecordType':
    case 'AnyDictionaryType':
      // Said outright: client generators read a bare `type: object` as an object with no keys at all.
      return { type: 'object', additionalProperties: true };
    case 'UnknownArrayType':
    case 'AnyArrayType':
      return { type: 'array' };
    case 'LiteralType':
      return { const: c.value };
    case 'KeyofType':
      return { type: 'string', enum: Object.keys(c.keys as object) };
    case 'UnionType': {
      const members = (c.types as t.Mixed[]).map(walk);
      // A union of plain constants reads better as one enum.
      if (members.every((m) => 'const' in m && Object.keys(m).length === 1))
        return { enum: members.map((m) => m.const) };
      return { anyOf: members };
    }
    case 'IntersectionType':
      return mergeObjects((c.types as t.Mixed[]).map(walk));
    case 'InterfaceType':
      return object(c.props as t.Props, {}, walk, true);
    case 'PartialType':
      return object({}, c.props as t.Props, walk, true);
    case 'ExactType':
    case 'StrictType': {
      const inner = walk(c.type as t.Mixed);
      return inner.type === 'object' ? { ...inner, additionalProperties: false } : inner;
    }
    case 'ArrayType':
    case 'ReadonlyArrayType':
      return { type: 'array', items: walk(c.type as t.Mixed) };
    case 'DictionaryType': {
      const domain = c.domain as unknown as Annotated & { keys?: object };
      if (domain._tag === 'KeyofType' && domain.keys) {
        const value = walk(c.codomain as t.Mixed);
        const keys = Object.keys(domain.keys);
        return {
          type: 'object',
          properties: Object.fromEntries(keys.map((k) => [k, value])),
          required: keys,
          additionalProperties: false,
        };
      }
      return { type: 'object', additionalProperties: walk(c.codomain as t.Mixed) };
    }
    case 'TupleType': {
      const items = (c.types as t.Mixed[]).map(walk);
      return { type: 'array', prefixItems: items, minItems: items.length, maxItems: items.length };
    }
    case 'RefinementType':
    case 'ReadonlyType':
      return walk(c.type as t.Mixed);
    default:
      throw new Error(`no JSON Schema for the codec "${c.name}": describe it with describeSchema()`);
  }
}

function object(
  required: t.Props,
  optional: t.Props,
  walk: (x: t.Mixed) => JsonSchema,
  open: boolean,
): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  for (const [k, v] of Object.entries(required)) properties[k] = walk(v);
  for (const [k, v] of Object.entries(optional)) properties[k] = walk(v);
  const names = Object.keys(required);
  return {
    type: 'object',
    properties,
    ...(names.length ? { required: names } : {}),
    ...(open ? {} : { additionalProperties: false }),
  };
}

/** `t.intersection` of objects: one object with every member's properties (closed if any member is). */
function mergeObjects(members: JsonSchema[]): JsonSchema {
  if (!members.every((m) => m.type === 'object' && m.properties)) return { allOf: members };
  return {
    type: 'object',
    properties: Object.assign({}, ...members.map((m) => m.properties)),
    required: members.flatMap((m) => (m.required as string[] | undefined) ?? []),
    ...(members.some((m) => m.additionalProperties === false) ? { additionalProperties: false } : {}),
  };
}
