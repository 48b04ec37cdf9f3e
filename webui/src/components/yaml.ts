// A small YAML writer for showing an experiment's stored (expanded) config: block mappings and
// sequences, scalars quoted only where YAML would misread them. Display only; nothing parses it.

function scalar(v: unknown): string {
  if (v === null || v === undefined) return "null";
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  const s = String(v);
  const plain = /^[A-Za-z_./][\w./ -]*$/.test(s) && !/^(true|false|null|yes|no|on|off|~)$/i.test(s) && !/\s$/.test(s) && !/: /.test(s);
  return plain ? s : JSON.stringify(s);
}

function isEmpty(v: unknown): boolean {
  return (Array.isArray(v) && v.length === 0) || (v !== null && typeof v === "object" && !Array.isArray(v) && Object.keys(v as object).length === 0);
}

export function toYaml(v: unknown, indent = 0): string {
  const pad = "  ".repeat(indent);
  if (Array.isArray(v)) {
    if (!v.length) return `${pad}[]\n`;
    return v
      .map((item) => {
        if (item !== null && typeof item === "object" && !isEmpty(item)) {
          const inner = toYaml(item, indent + 1).replace(/^\s+/, "");
          return `${pad}- ${inner}`;
        }
        return `${pad}- ${isEmpty(item) ? (Array.isArray(item) ? "[]" : "{}") : scalar(item)}\n`;
      })
      .join("");
  }
  if (v !== null && typeof v === "object") {
    const entries = Object.entries(v as Record<string, unknown>);
    if (!entries.length) return `${pad}{}\n`;
    return entries
      .map(([k, x]) => {
        if (x !== null && typeof x === "object" && !isEmpty(x)) return `${pad}${scalar(k)}:\n${toYaml(x, indent + 1)}`;
        return `${pad}${scalar(k)}: ${isEmpty(x) ? (Array.isArray(x) ? "[]" : "{}") : scalar(x)}\n`;
      })
      .join("");
  }
  return `${pad}${scalar(v)}\n`;
}
