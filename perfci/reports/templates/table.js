/* perfci reports: a sortable, filterable table. Shared by the run/comparison report and the trend report.
   window.perfciTable(table, filterBox, statusBox, shownEl) wires it and returns the body rows.
   Sorting: click (or Enter on) a th.sortable; numeric columns (data-type="num") sort on each cell's data-v.
   Filtering: text anywhere in the row, and the row's data-verdict equal to the status box's value. */
(function () {
  "use strict";
  window.perfciTable = function (table, filterBox, statusBox, shown) {
    var tbody = table.tBodies[0];
    var rows = Array.prototype.slice.call(tbody.rows);
    rows.forEach(function (tr, i) { tr.dataset.order = i; tr.dataset.text = tr.textContent.toLowerCase(); });

    function cellValue(tr, col, numeric) {
      var td = tr.cells[col];
      if (!numeric) { return td.textContent; }
      var v = td.getAttribute("data-v");
      return v === null || v === "" ? null : parseFloat(v);
    }
    function sortBy(th) {
      var col = th.cellIndex, numeric = th.dataset.type === "num";
      var dir = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", dir);
      var sign = dir === "ascending" ? 1 : -1;
      var sorted = rows.slice().sort(function (a, b) {
        var x = cellValue(a, col, numeric), y = cellValue(b, col, numeric);
        if (x === null && y === null) { return a.dataset.order - b.dataset.order; }
        if (x === null) { return 1; }
        if (y === null) { return -1; }
        var c = numeric ? x - y : x.localeCompare(y);
        return c !== 0 ? sign * c : a.dataset.order - b.dataset.order;
      });
      var frag = document.createDocumentFragment();
      sorted.forEach(function (tr) { frag.appendChild(tr); });
      tbody.appendChild(frag);
    }
    Array.prototype.forEach.call(table.querySelectorAll("th.sortable"), function (th) {
      th.tabIndex = 0;
      th.addEventListener("click", function () { sortBy(th); });
      th.addEventListener("keydown", function (e) { if (e.key === "Enter") { sortBy(th); } });
    });

    function applyFilter() {
      var q = filterBox.value.trim().toLowerCase(), v = statusBox.value, n = 0;
      rows.forEach(function (tr) {
        var ok = (!v || tr.dataset.verdict === v) && (!q || tr.dataset.text.indexOf(q) >= 0);
        tr.hidden = !ok;
        if (ok) { n += 1; }
      });
      shown.textContent = n === rows.length ? rows.length + " shown" : n + " of " + rows.length + " shown";
    }
    filterBox.addEventListener("input", applyFilter);
    statusBox.addEventListener("change", applyFilter);
    applyFilter();
    return rows;
  };
}());
