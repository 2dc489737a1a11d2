// Sortable tables: click a header of a table.sortable to sort its body by that column,
// again to reverse. A cell's data-sort attribute, when present, is the value sorted on;
// numbers sort numerically, empty values last. No dependencies, no network.
(function () {
  "use strict";
  function key(cell) {
    var raw = cell.hasAttribute("data-sort") ? cell.getAttribute("data-sort") : cell.textContent.trim();
    var num = parseFloat(raw);
    if (raw === "") { return {empty: true}; }
    return isNaN(num) ? {text: raw.toLowerCase()} : {num: num};
  }
  function compare(a, b) {
    if (a.empty || b.empty) { return a.empty === b.empty ? 0 : (a.empty ? 1 : -1); }
    if (a.num !== undefined && b.num !== undefined) { return a.num - b.num; }
    if (a.num !== undefined) { return -1; }
    if (b.num !== undefined) { return 1; }
    return a.text < b.text ? -1 : (a.text > b.text ? 1 : 0);
  }
  function sortBy(table, index, header) {
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) { th.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.map.call(body.rows, function (row, i) { return {row: row, i: i, k: key(row.cells[index])}; });
    rows.sort(function (x, y) {
      var c = compare(x.k, y.k);
      if (x.k.empty || y.k.empty) { return c || x.i - y.i; }
      return (ascending ? c : -c) || x.i - y.i;
    });
    rows.forEach(function (x) { body.appendChild(x.row); });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
      th.setAttribute("tabindex", "0");
      th.setAttribute("title", "sort by this column");
      th.addEventListener("click", function () { sortBy(table, index, th); });
      th.addEventListener("keydown", function (e) { if (e.key === "Enter") { sortBy(table, index, th); } });
    });
  });
}());
