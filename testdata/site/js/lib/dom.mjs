// Small DOM helpers, imported by ../app.mjs.
export function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    node.setAttribute(name, value);
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

export function list(items) {
  const ul = el("ul", {});
  for (const item of items) {
    ul.appendChild(el("li", {}, item));
  }
  return ul;
}
