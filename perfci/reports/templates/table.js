/* perfci reports: a sortable, filterable, paginated table. Shared by the run/comparison report and the trend report.
   window.perfciTable(table, filterBox, statusBox, shownEl, pagerEl) wires it and returns the body rows.
   Sorting: click (or Enter on) a th.sortable; numeric columns (data-type="num") sort on each cell's data-v.
   Filtering: text anywhere in the row, and the row's data-verdict equal to the status box's value.
   Pages: with a pager element, the rows that match are shown a page at a time (table data-page-rows, default
   200): a table of thousands of rows sorts, filters and lays out only what is on screen. Rows after the first
   page may arrive hidden from the server; every row is in the page, in the current order. */
(function () {
  "use strict";
  var SIZES = [100, 200, 500, 1000];
  window.perfciTable = function (table, filterBox, statusBox, shown, pager) {
    var tbody = table.tBodies[0];
    var rows = Array.prototype.slice.call(tbody.rows);
    var texts = null;  /* lower-case text of each row, made at the first text filter */
    var order = rows.map(function (_, i) { return i; });  /* row indices in the current sort order */
    var matching = order;  /* ... of those, the ones the filters let through */
    var size = pager ? parseInt(table.dataset.pageRows || "200", 10) : Infinity;
    if (rows.length <= size) { pager = null; size = Infinity; }  /* one page: no pager */
    var page = 0, visible = rows.filter(function (tr) { return !tr.hidden; });

    function key(tr, col, numeric) {
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
      var sign = dir === "ascending" ? 1 : -1, keys = rows.map(function (tr) { return key(tr, col, numeric); });
      var collate = new Intl.Collator().compare;
      order = rows.map(function (_, i) { return i; }).sort(function (a, b) {
        var x = keys[a], y = keys[b];
        if (x === null && y === null) { return a - b; }
        if (x === null) { return 1; }
        if (y === null) { return -1; }
        var c = numeric ? x - y : collate(x, y);
        return c !== 0 ? sign * c : a - b;
      });
      var frag = document.createDocumentFragment();
      order.forEach(function (i) { frag.appendChild(rows[i]); });
      tbody.appendChild(frag);
      applyFilter();
    }
    Array.prototype.forEach.call(table.querySelectorAll("th.sortable"), function (th) {
      th.tabIndex = 0;
      th.addEventListener("click", function () { sortBy(th); });
      th.addEventListener("keydown", function (e) { if (e.key === "Enter") { sortBy(th); } });
    });

    /* pager: previous / "rows a-b of n" / next, and the page size */
    var prev, next, info, sizeBox;
    function button(text, label, step) {
      var b = document.createElement("button");
      b.type = "button";
      b.textContent = text;
      b.setAttribute("aria-label", label);
      b.addEventListener("click", function () { show(page + step); });
      pager.appendChild(b);
      return b;
    }
    if (pager) {
      prev = button("\u2039 previous", "previous page", -1);
      info = document.createElement("span");
      info.className = "muted";
      pager.appendChild(info);
      next = button("next \u203a", "next page", 1);
      sizeBox = document.createElement("select");
      sizeBox.setAttribute("aria-label", "rows per page");
      SIZES.concat([Infinity]).forEach(function (n) {
        var opt = document.createElement("option");
        opt.value = String(n);
        opt.textContent = n === Infinity ? "all rows" : n + " per page";
        opt.selected = n === size;
        sizeBox.appendChild(opt);
      });
      sizeBox.addEventListener("change", function () { size = parseFloat(sizeBox.value); show(0); });
      pager.appendChild(sizeBox);
    }

    function show(p) {  /* unhide page p of the matching rows; hide the rows shown before */
      var pages = Math.max(1, Math.ceil(matching.length / size));
      page = Math.min(Math.max(0, p), pages - 1);
      var start = page === 0 ? 0 : page * size, end = Math.min(matching.length, start + size);
      visible.forEach(function (tr) { tr.hidden = true; });
      visible = [];
      for (var k = start; k < end; k += 1) { rows[matching[k]].hidden = false; visible.push(rows[matching[k]]); }
      shown.textContent = matching.length === rows.length ? rows.length + " shown"
        : matching.length + " of " + rows.length + " shown";
      if (pager) {
        pager.hidden = false;
        info.textContent = matching.length ? "rows " + (start + 1) + "\u2013" + end + " of " + matching.length : "no rows";
        prev.disabled = page === 0;
        next.disabled = page >= pages - 1;
      }
    }
    function applyFilter() {
      var q = filterBox.value.trim().toLowerCase(), v = statusBox.value;
      if (q && texts === null) { texts = rows.map(function (tr) { return tr.textContent.toLowerCase(); }); }
      matching = !q && !v ? order : order.filter(function (i) {
        return (!v || rows[i].dataset.verdict === v) && (!q || texts[i].indexOf(q) >= 0);
      });
      show(0);
    }
    filterBox.addEventListener("input", applyFilter);
    statusBox.addEventListener("change", applyFilter);
    applyFilter();
    return rows;
  };
}());
