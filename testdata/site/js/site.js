/* Acme Field Guide — tiny site script (loaded with defer on every page). */
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  var year = document.querySelector("[data-year]");
  if (year) {
    year.textContent = "2026";
  }
})();
