/**
 * Span attributes many spans share (a store call's system, operation, dataset and schema; the
 * request attributes of one connection), validated once and frozen. A lean span (lean-span.ts)
 * keeps a reference to the template instead of copying it attribute by attribute, and the
 * encoder (otlp-encoder.ts) writes its encoding once and copies it after: per span, one reference
 * and one copy of bytes instead of a check, a store and an encoding per attribute. Any other span
 * is given the template's attributes as usual. No OpenTelemetry import: loaded with tracing off too.
 */
export type TemplateValue = string | number | boolean;

export class AttributeTemplate {
  /** The longest string among the values (a span with a shorter value-length limit copies them instead). */
  readonly longestString: number;
  /** The attributes' OTLP/protobuf encoding, made by the encoder the first time a span of this template is encoded (otlp-encoder.ts). */
  encoding: Uint8Array | undefined = undefined;
  /** The keys, for a span's check of a key set again (a Set's lookup: `hasOwnProperty` on the frozen object cost more, per attribute set). */
  readonly keys: ReadonlySet<string>;

  private constructor(readonly attributes: Readonly<Record<string, TemplateValue>>) {
    let longest = 0;
    const keys = new Set<string>();
    for (const key in attributes) {
      keys.add(key);
      const value = attributes[key];
      if (typeof value === 'string' && value.length > longest) longest = value.length;
    }
    this.longestString = longest;
    this.keys = keys;
  }

  /** How many attributes. */
  get count(): number {
    return this.keys.size;
  }

  /**
   * A template of `attributes`, or undefined when one of them is not a plain valid attribute (an
   * empty key or `__proto__`, a value other than a string, a finite or non-finite number or a boolean): those go
   * through a span's own checks. Undefined and null values are left out, as a span leaves them out.
   */
  static of(attributes: Readonly<Record<string, unknown>>): AttributeTemplate | undefined {
    const kept: Record<string, TemplateValue> = {};
    for (const key of Object.keys(attributes)) {
      const value = attributes[key];
      if (value == null) continue;
      const type = typeof value;
      // `__proto__` would set the kept object's prototype instead of an attribute: left to a span's own checks.
      if (key.length === 0 || key === '__proto__' || (type !== 'string' && type !== 'number' && type !== 'boolean')) return undefined;
      kept[key] = value as TemplateValue;
    }
    return new AttributeTemplate(Object.freeze(kept));
  }
}
