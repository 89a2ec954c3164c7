// ES module entry for /demo/js-generated.html. Imports ./lib/dom.mjs (a module import chain)
// and fetches ../data/notes.json relative to this module's own URL.
import { el, list } from "./lib/dom.mjs";

const target = document.getElementById("module-notes");
const url = new URL("../data/notes.json", import.meta.url);

fetch(url)
  .then((response) => response.json())
  .then((data) => {
    target.appendChild(el("h2", {}, "Notes loaded by a module"));
    target.appendChild(list(data.notes.map((note) => `${note.species}: ${note.note}`)));
    target.setAttribute("data-module", "ready");
  })
  .catch((error) => {
    target.textContent = `Could not load notes: ${error}`;
    target.setAttribute("data-module", "failed");
  });
