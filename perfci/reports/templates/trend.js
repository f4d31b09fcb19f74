/* perfci trend report: the cases table (table.js) and one series chart, drawn with plotly.js from the JSON blob.
   Every string from the store reaches the page through textContent or esc(): never as markup. */
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("perfci-data").textContent);
  var table = document.getElementById("cases");
  var rows = window.perfciTable(table, document.getElementById("filter"),
                                document.getElementById("verdict-filter"), document.getElementById("shown"),
                                document.getElementById("pager"));
  var select = document.getElementById("series-case");
  var byKey = {};
  data.cases.forEach(function (c, i) { byKey[c.runner + "\u0000" + c.id] = i; });
  window.perfciTable(document.getElementById("matrix"), document.getElementById("matrix-filter"),
                     document.getElementById("matrix-status"), document.getElementById("matrix-shown"),
                     document.getElementById("matrix-pager"));
  /* the selector follows the table's order (worst first); a big suite carries series for some cases only */
  var order = rows.map(function (tr) {
    return byKey[tr.cells[1].textContent + "\u0000" + tr.cells[2].textContent];
  }).filter(function (i) { return i !== undefined; });
  order.forEach(function (i) {
    var opt = document.createElement("option");
    opt.value = String(i);
    opt.textContent = data.cases[i].id + " (" + data.cases[i].runner + ")";
    select.appendChild(opt);
  });

  function esc(s) { return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"); }
  var drawn = 0;
  function render() {
    if (typeof window.Plotly === "undefined" || select.value === "") { return; }
    var c = data.cases[parseInt(select.value, 10)], runs = data.runners[c.runner].runs;
    var text = c.x.map(function (x) { return esc(runs[x][0]) + "<br>commit " + esc(runs[x][1] || "?") + "<br>" + esc(runs[x][2]); });
    var up = c.y.map(function (y, i) { return c.hi[i] == null || y == null ? 0 : c.hi[i] - y; });
    var down = c.y.map(function (y, i) { return c.lo[i] == null || y == null ? 0 : y - c.lo[i]; });
    var traces = [{ type: "scatter", mode: "markers", name: "runs", x: c.x, y: c.y, text: text,
                    hovertemplate: "%{text}<br>%{y:.4g} " + esc(c.unit) + "<extra></extra>",
                    marker: { color: "#1f5fbf", size: 6 },
                    error_y: { type: "data", array: up, arrayminus: down, thickness: 1, width: 0, color: "#7f8c9d" } }];
    c.regimes.forEach(function (r, k) {
      traces.push({ type: "scatter", mode: "lines", name: k === 0 ? "regime mean" : "", showlegend: k === 0,
                    x: [r[0] - 0.4, r[1] + 0.4], y: [r[2], r[2]], hoverinfo: "skip",
                    line: { color: "#c77c00", width: 2 } });
    });
    var shapes = [], notes = [];
    c.shifts.forEach(function (s) {
      shapes.push({ type: "line", xref: "x", yref: "paper", x0: s[0] - 0.5, x1: s[0] - 0.5, y0: 0, y1: 1,
                    line: { color: s[1] > 1 ? "#b3261e" : "#1b6e20", width: 1, dash: "dash" } });
      notes.push({ x: s[0] - 0.5, y: 1, xref: "x", yref: "paper", yanchor: "bottom", showarrow: false,
                   text: esc(s[2]) + " " + ((s[1] - 1) * 100).toFixed(1) + "%", font: { size: 10 } });
    });
    (data.runners[c.runner].env || []).forEach(function (e) {
      if (e[0] < c.x[0] || e[0] > c.x[c.x.length - 1]) { return; }
      shapes.push({ type: "line", xref: "x", yref: "paper", x0: e[0] - 0.5, x1: e[0] - 0.5, y0: 0, y1: 1,
                    line: { color: "#888", width: 1, dash: "dot" } });
      notes.push({ x: e[0] - 0.5, y: 0, xref: "x", yref: "paper", yanchor: "top", yshift: -28, showarrow: false,
                   text: esc(e[1]), font: { size: 9, color: "#555" } });
    });
    window.Plotly.newPlot("chart-series", traces, {
      height: 440, margin: { l: 70, r: 20, t: 40, b: 70 }, font: { size: 11 }, shapes: shapes, annotations: notes,
      hovermode: "closest", legend: { orientation: "h", y: -0.2 },
      xaxis: { title: { text: "runs of " + esc(c.runner) + " in time order (date, commit)" }, zeroline: false,
               tickmode: "array", tickvals: ticks(c.x), ticktext: ticks(c.x).map(function (x) {
                 return esc((runs[x][2] || "").slice(0, 10)) + "<br>" + esc(runs[x][1] || "?"); }) },
      yaxis: { title: { text: esc(data.metric) + " (" + esc(c.unit) + ")" }, rangemode: "tozero" }
    }, { displaylogo: false, responsive: true });
    drawn += 1;
  }
  function ticks(xs) {  /* at most 8 runs labelled, evenly spread, whole runs only */
    if (!xs.length) { return []; }
    var step = Math.max(1, Math.ceil(xs.length / 8)), out = [];
    for (var i = 0; i < xs.length; i += step) { out.push(xs[i]); }
    return out;
  }
  select.addEventListener("change", render);
  function show(runner, id) {  /* a click on a case shows its series, where the page carries it */
    var i = byKey[runner + "\u0000" + id];
    if (i === undefined) { return; }
    select.value = String(i);
    render();
    document.getElementById("charts").scrollIntoView();
  }
  table.tBodies[0].addEventListener("click", function (e) {
    var td = e.target.closest("td.case");
    if (td) { show(td.parentNode.cells[1].textContent, td.textContent); }
  });
  Array.prototype.forEach.call(document.querySelectorAll("table.movers"), function (t) {
    t.tBodies[0].addEventListener("click", function (e) {
      var td = e.target.closest("td.case");
      if (td) { show(td.parentNode.cells[1].textContent, td.textContent); }
    });
  });
  var matrix = document.getElementById("matrix");
  matrix.tBodies[0].addEventListener("click", function (e) {  /* a cell: that runner's series of the case */
    var td = e.target.closest("td.cell");
    if (td) { show(matrix.tHead.rows[0].cells[td.cellIndex].textContent, td.parentNode.cells[1].textContent); }
  });
  window.perfciDrawAll = function () { render(); return { drawn: drawn }; };
  render();
  document.body.dataset.ready = "1";
}());
