/* perfci report: table sorting and filtering, charts drawn with plotly.js from the embedded JSON blob.
   Every string from the results reaches the page through textContent or esc(): never as markup. */
(function () {
  "use strict";
  var t0 = performance.now();
  var data = JSON.parse(document.getElementById("perfci-data").textContent);
  var ids = data.cases;
  var COLORS = { regression: "#b3261e", error: "#b3261e", inconclusive: "#c77c00", improvement: "#1b6e20",
                 unchanged: "#5f6b7a", "new": "#5b3ea8", missing: "#5b3ea8", slower: "#b3261e", faster: "#1b6e20",
                 grew: "#b3261e", shrank: "#1b6e20" };
  var BASE = "#7f8c9d", CAND = "#1f5fbf";
  var CONFIG = { displaylogo: false, responsive: true };
  var LAZY_ABOVE = 100;  /* with more cases than this, charts are drawn as they scroll into view */

  /* plotly.js reads a small HTML subset in text; escape so names show as typed. */
  function esc(s) { return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"); }
  function short(s, n) { s = String(s); return s.length > n ? s.slice(0, n - 1) + "\u2026" : s; }
  function pct(r) { return r == null ? null : (r - 1) * 100; }

  /* ---- table: sort on header click, filter by text and verdict (table.js) ---- */
  var tbody = document.getElementById("cases").tBodies[0];
  var rows = window.perfciTable(document.getElementById("cases"), document.getElementById("filter"),
                                document.getElementById("verdict-filter"), document.getElementById("shown"),
                                document.getElementById("pager"));
  var tableMs = Math.round(performance.now() - t0);

  /* ---- charts ---- */
  if (typeof window.Plotly === "undefined") { document.body.dataset.ready = "1"; return; }
  function show(name) { document.getElementById(name + "-block").hidden = false; }
  function draw(id, traces, layout) {
    layout.margin = layout.margin || { l: 60, r: 20, t: 20, b: 50 };
    layout.font = { size: 11 };
    window.Plotly.newPlot(id, traces, layout, CONFIG);
  }
  function hline(y, color, dash) {
    return { type: "line", xref: "paper", x0: 0, x1: 1, y0: y, y1: y, line: { color: color, width: 1, dash: dash } };
  }

  function ratioChart(r) {
    if (!r) { return; }
    show("ratio");
    var byVerdict = {}, primary = r.rows.length ? r.rows[0][1] : "", ranks = {};
    r.rows.forEach(function (row) { if (row[1] === "latency.median") { primary = row[1]; } });
    r.rows.forEach(function (row) {
      var v = row[1] === primary ? row[5] : row[1], rank = ranks[row[1]] = (ranks[row[1]] || 0) + 1;
      var t = byVerdict[v] || (byVerdict[v] = { x: [], y: [], hi: [], lo: [], text: [], other: row[1] !== primary });
      var p = pct(row[2]);
      t.x.push(rank); t.y.push(p);
      t.hi.push(row[4] == null ? 0 : pct(row[4]) - p);
      t.lo.push(row[3] == null ? 0 : p - pct(row[3]));
      t.text.push(esc(ids[row[0]]) + " (" + esc(row[1]) + ")");
    });
    var traces = Object.keys(byVerdict).map(function (v) {
      var t = byVerdict[v];
      return { type: "scatter", mode: "markers", name: esc(t.other ? v : primary + ": " + v), x: t.x, y: t.y, text: t.text,
               visible: t.other ? "legendonly" : true,
               hovertemplate: "%{text}<br>change %{y:+.1f}%<extra>" + esc(v) + "</extra>",
               marker: { color: COLORS[v] || "#555", size: 6 },
               error_y: { type: "data", array: t.hi, arrayminus: t.lo, thickness: 1, width: 0, color: COLORS[v] || "#555" } };
    });
    var shapes = [hline(0, "#333", "solid")];
    if (r.threshold != null) {
      shapes.push(hline(r.threshold * 100, COLORS.regression, "dash"));
      shapes.push(hline((1 / (1 + r.threshold) - 1) * 100, COLORS.improvement, "dash"));
    }
    draw("chart-ratio", traces, { height: 420, shapes: shapes, hovermode: "closest",
      legend: { orientation: "h", y: 1.02, yanchor: "bottom" }, margin: { l: 60, r: 20, t: 40, b: 50 },
      xaxis: { title: { text: "cases, sorted by change (hover for names)" }, zeroline: false,
               dtick: Math.max(1, Math.ceil(r.rows.length / 20)) },
      yaxis: { title: { text: "candidate vs baseline (%)" }, ticksuffix: "%" } });
  }

  var showCase = null;  /* set once the distribution chart is drawn */
  function distChart(dist) {
    if (!dist.length) { return; }
    show("dist");
    var select = document.getElementById("dist-case");
    var byCase = {};
    dist.forEach(function (d, i) {
      var opt = document.createElement("option");
      opt.value = String(i); opt.textContent = ids[d.c];
      select.appendChild(opt);
      byCase[ids[d.c]] = i;
    });
    function jitter(i) { return ((i * 0.6180339887) % 1 - 0.5) * 0.5; }
    function median(v) {
      var xs = v.filter(function (x) { return x !== null; }).sort(function (a, b) { return a - b; }), m = xs.length >> 1;
      return xs.length % 2 ? xs[m] : (xs[m - 1] + xs[m]) / 2;
    }
    function render() {
      var d = dist[parseInt(select.value, 10)], traces = [];
      [["baseline", d.b, BASE, 0], ["candidate", d.n, CAND, 1]].forEach(function (s) {
        var side = s[1], pos = s[3];
        if (!side) { return; }
        traces.push({ type: "scatter", mode: "markers", name: s[0] + " samples", y: side.s,
                      x: side.s.map(function (_, i) { return pos + jitter(i); }),
                      marker: { color: s[2], size: 5, opacity: 0.45 }, hovertemplate: "%{y}<extra>sample</extra>" });
        traces.push({ type: "scatter", mode: "markers", name: s[0] + " round medians", y: side.r,
                      x: side.r.map(function (_, i) { return pos + jitter(i + 7) * 0.4; }),
                      marker: { symbol: "diamond", size: 11, color: s[2], line: { color: "#000", width: 1 } },
                      hovertemplate: "%{y}<extra>round median</extra>" });
        var m = median(side.r);
        traces.push({ type: "scatter", mode: "lines", x: [pos - 0.3, pos + 0.3], y: [m, m], showlegend: false,
                      line: { color: s[2], width: 3 }, hovertemplate: "%{y}<extra>median of rounds</extra>" });
      });
      draw("chart-dist", traces, { height: 380, hovermode: "closest", legend: { orientation: "h" },
        xaxis: { tickvals: [0, 1], ticktext: ["baseline", "candidate"], range: [-0.6, 1.6], zeroline: false },
        yaxis: { title: { text: "time per call (" + d.u + ")" } } });
    }
    select.addEventListener("change", render);
    showCase = function (name) {
      if (byCase[name] === undefined) { return; }
      select.value = String(byCase[name]);
      render();
      document.getElementById("dist-block").scrollIntoView({ behavior: "auto" });
    };
    render();
  }

  function roofChart(r) {
    if (!r) { return; }
    show("roof");
    var traces = [], xs = r.points.map(function (p) { return p[2]; });
    ["baseline", "candidate"].forEach(function (side) {
      var pts = r.points.filter(function (p) { return p[1] === side; });
      if (!pts.length) { return; }
      traces.push({ type: "scatter", mode: "markers", name: side, x: pts.map(function (p) { return p[2]; }),
        y: pts.map(function (p) { return p[3]; }), text: pts.map(function (p) { return esc(ids[p[0]]); }),
        hovertemplate: "%{text}<br>%{x:.3g} FLOP/B, %{y:.3s}FLOP/s<extra>" + side + "</extra>",
        marker: { size: 9, color: side === "baseline" ? BASE : CAND } });
    });
    var layout = { height: 420, hovermode: "closest",
      xaxis: { type: "log", title: { text: "arithmetic intensity (FLOP per byte)" } },
      yaxis: { type: "log", exponentformat: "SI", title: { text: "achieved FLOP/s" } } };
    var lo = Math.min.apply(null, xs) / 10, hi = Math.max.apply(null, xs) * 10;
    r.roofs.forEach(function (roof) {
      var ridge = roof.flops / roof.bw, rx = [lo, Math.max(lo, Math.min(ridge, hi)), hi];
      traces.push({ type: "scatter", mode: "lines", name: "measured peak, " + esc(roof.device), x: rx,
        y: rx.map(function (x) { return Math.min(roof.flops, x * roof.bw); }),
        line: { color: "#333", dash: "dash" }, hoverinfo: "skip" });
    });
    if (!r.roofs.length) {
      layout.annotations = [{ xref: "paper", yref: "paper", x: 0, y: 1.05, showarrow: false,
        text: "runner peaks were not measured: no roof drawn" }];
    }
    draw("chart-roof", traces, layout);
  }

  function telemetryChart(t) {
    if (!t) { return; }
    show("telemetry");
    var axes = { sm_clock_mhz: ["y", "SM clock (MHz)"], mem_clock_mhz: ["y", "memory clock (MHz)"],
                 power_w: ["y2", "power (W)"], temperature_c: ["y3", "temperature (\u00b0C)"] };
    var traces = Object.keys(t.series).map(function (k) {
      var v = t.series[k];
      return { type: "scatter", mode: "lines", name: axes[k][1], yaxis: axes[k][0],
               x: v.map(function (_, i) { return i * t.step; }), y: v,
               text: t["case"].map(function (c) { return esc(ids[c]); }),
               hovertemplate: "%{text}<br>%{y}<extra>" + axes[k][1] + "</extra>" };
    });
    if (t.throttle.length) {
      traces.push({ type: "scatter", mode: "markers", name: "throttled", yaxis: "y4",
        x: t.throttle.map(function (f) { return f[0]; }), y: t.throttle.map(function () { return 0; }),
        text: t.throttle.map(function (f) { return esc(ids[f[1]]) + ": " + esc(f[2]); }),
        hovertemplate: "%{text}<extra>throttled</extra>", marker: { symbol: "x", color: COLORS.regression } });
    }
    draw("chart-telemetry", traces, { height: 540, hovermode: "closest",
      legend: { orientation: "h", y: 1.02, yanchor: "bottom" }, margin: { l: 60, r: 20, t: 40, b: 50 },
      xaxis: { anchor: "y4", title: { text: "sample blocks in measuring order" } },
      yaxis: { domain: [0.55, 1], title: { text: "MHz" } }, yaxis2: { domain: [0.3, 0.52], title: { text: "W" } },
      yaxis3: { domain: [0.08, 0.27], title: { text: "\u00b0C" } },
      yaxis4: { domain: [0, 0.05], showticklabels: false, title: { text: "throttle" } } });
  }

  function memoryChart(m) {
    if (!m) { return; }
    show("memory");
    var traces = [], both = false;
    [["memory.host", 1, 2, BASE], ["memory.device", 3, 4, "#c77c00"]].forEach(function (k) {
      var rows = m.filter(function (row) { return row[k[1]] != null && row[k[2]] != null; });
      if (rows.length) { both = true; } else { return; }
      traces.push({ type: "scatter", mode: "markers", name: k[0], marker: { color: k[3], size: 7 },
        x: rows.map(function (row) { return row[k[1]] / 1048576; }),
        y: rows.map(function (row) { return row[k[2]] / 1048576; }),
        text: rows.map(function (row) { return esc(ids[row[0]]); }),
        hovertemplate: "%{text}<br>baseline %{x:.1f} MiB, candidate %{y:.1f} MiB<extra>" + k[0] + "</extra>" });
    });
    if (both) {  /* baseline against candidate: points above the diagonal use more memory */
      var top = 0;
      traces.forEach(function (t) { top = Math.max(top, Math.max.apply(null, t.x.concat(t.y))); });
      traces.push({ type: "scatter", mode: "lines", name: "no change", x: [0, top * 1.05], y: [0, top * 1.05],
                    line: { color: "#999", dash: "dot" }, hoverinfo: "skip" });
      draw("chart-memory", traces, { height: 420, hovermode: "closest", legend: { orientation: "h" },
        xaxis: { title: { text: "baseline peak (MiB)" }, rangemode: "tozero" },
        yaxis: { title: { text: "candidate peak (MiB)" }, rangemode: "tozero" } });
      return;
    }
    var col = m.some(function (row) { return row[2] != null; }) ? 2 : 1;  /* one side only: sorted bars */
    var one = m.filter(function (row) { return row[col] != null || row[col + 2] != null; });
    one.sort(function (a, b) { return (b[col] || 0) - (a[col] || 0); });
    var names = one.map(function (row) { return esc(short(ids[row[0]], 60)); }), few = one.length <= 30;
    [["memory.host", col, BASE], ["memory.device", col + 2, "#c77c00"]].forEach(function (k) {
      var y = one.map(function (row) { return row[k[1]] == null ? null : row[k[1]] / 1048576; });
      if (y.every(function (v) { return v === null; })) { return; }
      traces.push({ type: "bar", name: k[0], x: one.map(function (_, i) { return i; }), y: y, text: names,
        textposition: "none", hovertemplate: "%{text}<br>%{y:.1f} MiB<extra>" + k[0] + "</extra>",
        marker: { color: k[2] } });
    });
    draw("chart-memory", traces, { height: 380, barmode: "group", legend: { orientation: "h" },
      margin: { l: 60, r: 20, t: 20, b: few ? 160 : 40 },
      xaxis: few ? { tickvals: one.map(function (_, i) { return i; }), ticktext: names, tickangle: -35 }
                 : { title: { text: "cases, largest first (hover for names)" } },
      yaxis: { title: { text: "MiB" } } });
  }

  /* Sweeps: one chart at a time, picked from a list (a large suite has hundreds). */
  var PALETTE = ["#1f5fbf", "#c77c00", "#1b6e20", "#b3261e", "#5b3ea8", "#00838f", "#7f8c9d", "#ad1457"];
  function sweepChart(list) {
    if (!list || !list.length) { return; }
    var select = document.getElementById("sweep-pick");
    list.forEach(function (s, i) {
      var opt = document.createElement("option");
      opt.value = String(i);
      opt.textContent = s.w + " \u2014 by " + s.p;
      select.appendChild(opt);
    });
    function side(s, grid, name, dash, li) {
      var pts = grid[li];
      var ok = pts.some(function (p) { return p !== null; });
      if (!ok) { return null; }
      var y = pts.map(function (p) { return p ? p[0] : null; });
      return { type: "scatter", mode: "lines+markers", name: esc(short(s.k[li], 50)) + name, x: s.x, y: y,
        line: { color: PALETTE[li % PALETTE.length], dash: dash }, marker: { size: 6 },
        error_y: { type: "data", visible: true, thickness: 1, width: 3,
          array: pts.map(function (p, i) { return p && p[2] != null ? p[2] - y[i] : null; }),
          arrayminus: pts.map(function (p, i) { return p && p[1] != null ? y[i] - p[1] : null; }) },
        hovertemplate: esc(s.p) + "=%{x}: %{y:.4g} " + esc(s.u) + "<extra>" + esc(short(s.k[li], 60)) + name + "</extra>" };
    }
    function star(s, grid, where, name, marker) {
      if (!where || !grid) { return null; }
      var p = grid[where[0]][where[1]];
      if (!p) { return null; }
      return { type: "scatter", mode: "markers", name: "best" + name, x: [s.x[where[1]]], y: [p[0]], marker: marker,
        hovertemplate: "best: " + esc(s.p) + "=%{x}, " + esc(short(s.k[where[0]], 60)) + ": %{y:.4g} " + esc(s.u) + "<extra></extra>" };
    }
    function render() {
      var s = list[Number(select.value) || 0], traces = [];
      s.k.forEach(function (_, li) {
        var n = side(s, s.n, s.b ? " (candidate)" : "", "solid", li);
        if (n) { traces.push(n); }
        if (s.b) { var b = side(s, s.b, " (baseline)", "dot", li); if (b) { traces.push(b); } }
      });
      /* the baseline's star first, larger and open, so that the candidate's (drawn on top) stays visible when
         both sides' best is the same configuration */
      [star(s, s.b, s.bb, " (baseline)", { symbol: "star-open", size: 22, color: "#5f6b7a", line: { width: 2 } }),
       star(s, s.n, s.bn, s.b ? " (candidate)" : "",
            { symbol: "star", size: 15, color: "#ffd54f", line: { color: "#000", width: 1 } })]
        .forEach(function (t) { if (t) { traces.push(t); } });
      draw("chart-sweep", traces, { height: 460, legend: { orientation: "h", y: -0.22 },
        margin: { l: 60, r: 20, t: 20, b: 120 },
        xaxis: { type: "category", title: { text: esc(s.p) } },
        yaxis: { title: { text: esc(s.m) + " (" + esc(s.u) + ", " + (s.lower ? "lower" : "higher") + " is better)" },
                 rangemode: "tozero" } });
    }
    select.addEventListener("change", render);
    render();
  }

  /* Charts are drawn when their block comes near the viewport (a 500-case page opens fast), or all at once
     by window.perfciDrawAll() (the browser test uses it). body[data-ready] is set once the first view is drawn. */
  var timings = window.perfciTimings = { table: tableMs };
  var charts = [["ratio", ratioChart], ["dist", distChart], ["roof", roofChart], ["telemetry", telemetryChart],
                ["memory", memoryChart], ["sweep", sweepChart]];
  function drawOne(c) {
    if (c.done) { return; }
    c.done = true;
    var t = performance.now();
    c[1](data[c[0]]);
    timings[c[0]] = Math.round(performance.now() - t);
  }
  window.perfciDrawAll = function () { charts.forEach(drawOne); return timings; };
  tbody.addEventListener("click", function (e) {  /* a click on a case shows its distribution */
    var td = e.target.closest("td.case");
    if (!td) { return; }
    drawOne(charts[1]);
    if (showCase) { showCase(td.textContent); }
  });
  charts.forEach(function (c) {
    if (data[c[0]] && (!Array.isArray(data[c[0]]) || data[c[0]].length)) { show(c[0]); } else { c.done = true; }
  });
  window.setTimeout(function () {  /* let the table paint first */
    if (!("IntersectionObserver" in window) || ids.length <= LAZY_ABOVE) {
      window.perfciDrawAll();
      document.body.dataset.ready = "1";
      return;
    }
    var pending = charts.filter(function (c) { return !c.done; }), seen = 0;
    var observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        var c = pending.filter(function (x) { return x[0] + "-block" === e.target.id; })[0];
        if (e.isIntersecting && c) { drawOne(c); observer.unobserve(e.target); }
      });
      seen += 1;
      if (seen === 1) { document.body.dataset.ready = "1"; }
    }, { rootMargin: "300px" });
    pending.forEach(function (c) { observer.observe(document.getElementById(c[0] + "-block")); });
    if (!pending.length) { document.body.dataset.ready = "1"; }
  }, 0);
})();
