/** Names a record's properties and a query's arguments may not take. */

/**
 * Names every JavaScript object inherits (`Object.prototype`'s members): a record's data is a plain
 * object, so a property of one of these names would read as present when it is absent (a create
 * refused for a "constructor" it never sent) and `__proto__` would set the prototype of the object
 * a stored value is written into, polluting every object of the process. Refused as property and
 * argument names; the identifier pattern alone lets them through.
 */
export const INHERITED_NAMES: ReadonlySet<string> = new Set(Object.getOwnPropertyNames(Object.prototype));

export function inheritedNameMessage(name: string, what: 'property' | 'argument'): string {
  return `"${name}" is reserved: every JavaScript object has a member of that name; name the ${what} otherwise`;
}
