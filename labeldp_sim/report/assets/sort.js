// Click a column heading of a table.sortable to sort by it (again: reverse).  Cells with a
// data-sort attribute sort as numbers; the rest as text, numbers inside text compared numerically.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });
  function key(cell) {
    var n = cell.getAttribute("data-sort");
    return n === null ? cell.textContent.trim() : parseFloat(n);
  }
  function compare(a, b) {
    if (typeof a === "number" && typeof b === "number") { return a - b; }
    if (typeof a === "number") { return -1; }
    if (typeof b === "number") { return 1; }
    return collator.compare(a, b);
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th, column) {
      th.setAttribute("title", "sort by this column");
      th.addEventListener("click", function () {
        var body = table.tBodies[0];
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (r, s) {
          var c = compare(key(r.cells[column]), key(s.cells[column]));
          return ascending ? c : -c;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });
});
