"""The page's stylesheet and scripts (inline: the page loads nothing from elsewhere).

LOADER_JS draws every chart and fits it to the page's width: a drawing wider than the main column
is drawn again with its facets in fewer columns (or stacked), then with narrower plots, so a phone
reads the same charts without scrolling sideways; a window resized by more than 20 px draws them
anew. A chart that fails says so in its box and on the console (the browser test fails on any
console message). It keeps each chart's Vega view for FILTER_JS.

FILTER_JS fills the filter bar (device, framework, runtime, model) from the runs the header counts
and the page's data-f-* values and, on a choice, hides the table rows and answers of others and
puts back into every chart only the data rows that match (a chart left with none is hidden), and
recounts the header's configurations, runs and devices. A row without one of the fields (not about
it) stays; a row whose field is empty (about it, but unknown: an imported row has no runtime) goes
when that field is chosen, and so does a row pooled over several values (joined "a, b": a figure of
none alone), whose members, not the joined text, are what the drop-down offers. SORT_JS sorts a
table by the column whose header is clicked (numbers by value, via each cell's data-sort), and
toggles the direction on a second click.
"""

from __future__ import annotations

LOADER_JS = """
window.edgestatsViews = {};
(function () {
  var specs = JSON.parse(document.getElementById("edgestats-specs").textContent);
  var options = JSON.parse(document.getElementById("edgestats-embed-options").textContent);
  window.edgestatsSpecs = specs;
  function copy(value) { return JSON.parse(JSON.stringify(value)); }
  // The width a chart may take: the page's main column, less a folded box's border and padding.
  function room() { return Math.max(200, document.querySelector("main").clientWidth - 24); }
  // First fit, before drawing: facets in as many columns as the room holds, legends below on a phone.
  function start(spec, width) {
    var s = copy(spec), inner = s.facet && s.spec;
    if (inner && s.columns > 1 && typeof inner.width === "number") {
      s.columns = Math.max(1, Math.min(s.columns, Math.floor(width / (inner.width + 160))));
    }
    if (width < 600) {
      s.config = s.config || {};
      s.config.legend = Object.assign({}, s.config.legend, {orient: "bottom", direction: "horizontal",
        columns: 1, labelLimit: width - 60});
      // long configuration names give way to the plot (the tooltip has them whole)
      s.config.axisY = Object.assign({}, s.config.axisY, {labelLimit: Math.round(width * 0.35)});
      limitLabels(s, Math.round(width * 0.35), width - 60);
    }
    return s;
  }
  // An encoding's own y axis or legend overrides the config's: its labels shortened and its
  // legend put below the plot there too.
  function limitLabels(node, limit, below) {
    if (!node || typeof node !== "object") return;
    var axis = node.y && node.y.axis;
    if (axis && typeof axis === "object") axis.labelLimit = Math.min(axis.labelLimit || limit, limit);
    if (node.legend && typeof node.legend === "object") {
      Object.assign(node.legend, {labelLimit: Math.min(node.legend.labelLimit || below, below),
        orient: "bottom", direction: "vertical", columns: 1});
    }
    Object.keys(node).forEach(function (k) { if (k !== "datasets") limitLabels(node[k], limit, below); });
  }
  function count(s, channel) {
    var seen = {}, name = Object.keys(s.datasets || {})[0];
    (name ? s.datasets[name] : []).forEach(function (row) { seen[row[channel.field]] = true; });
    return Object.keys(seen).length;
  }
  // A chart that is one sentence (no data to draw: why) wraps its sentence at word boundaries.
  function wrapText(s, width) {
    var field = s.encoding.text.field, name = Object.keys(s.datasets || {})[0], most = 1;
    var chars = Math.max(20, Math.floor((width - 10) / 7.5));
    (name ? s.datasets[name] : []).forEach(function (row) {
      var lines = [], line = "";
      String(row[field]).split(" ").forEach(function (word) {
        if (line && (line + " " + word).length > chars) { lines.push(line); line = word; }
        else line = line ? line + " " + word : word;
      });
      lines.push(line);
      row[field] = lines.join("\\n");
      most = Math.max(most, lines.length);
    });
    s.mark.lineBreak = "\\n";
    s.width = width - 10;
    s.height = 18 * most + 12;
    if (s.encoding.y && "value" in s.encoding.y) s.encoding.y = {value: 9};
    s.mark.baseline = "top";
    return s;
  }
  // The drawing was `over` px wider than the room: fewer columns, facets stacked, then narrower plots.
  function shrink(s, over, drawn) {
    var inner = s.facet ? s.spec : s;
    var sentence = s.mark && s.mark.type === "text" && s.encoding && s.encoding.text && s.encoding.text.field;
    if (sentence && !s.mark.lineBreak) return wrapText(s, drawn - over);
    if (s.facet && s.columns > 1) {
      var columns = Math.max(1, Math.floor((drawn - over) / (drawn / s.columns)));
      if (columns < s.columns) { s.columns = columns; return s; }
    }
    if (s.facet && s.facet.column && !s.facet.row) { s.facet = {row: s.facet.column}; return s; }
    if (s.facet && s.facet.column && s.facet.row && count(s, s.facet.column) > count(s, s.facet.row)) {
      s.facet = {row: s.facet.column, column: s.facet.row};  // a grid: its longer side down the page
      return s;
    }
    if (s.hconcat) { s.vconcat = s.hconcat; delete s.hconcat; return s; }
    var least = s.facet && s.facet.row && s.facet.column ? 70 : 120;  // a grid of small plots
    if (inner && typeof inner.width === "number" && inner.width > least) {
      var across = s.facet ? (s.columns || Math.max(1, Math.round(drawn / (inner.width + 40)))) : 1;
      inner.width = Math.max(least, Math.floor(inner.width - over / across) - 6);
      return s;
    }
    return null;
  }
  function draw(id, spec, tries) {
    var box = document.getElementById(id), width = room();
    return vegaEmbed(box, copy(spec), options).then(function (result) {
      var svg = box.querySelector("svg, canvas");
      // the drawing's own width: a box inside a closed <details> is not laid out again on resize
      var drawn = svg ? parseFloat(svg.getAttribute("width")) || svg.getBoundingClientRect().width : 0;
      var next = drawn > width + 1 && tries < 6 ? shrink(copy(spec), drawn - width, drawn) : null;
      if (next) { result.finalize(); return draw(id, next, tries + 1); }
      var datasets = Object.keys(specs[id].datasets || {});
      window.edgestatsViews[id] = {view: result.view, finalize: result.finalize, datasets: datasets,
        room: width, spec: spec, filtered: false};
      box.setAttribute("data-rendered", "true");
      if (window.edgestatsFilterView) window.edgestatsFilterView(id);
    });
  }
  function drawAll(ids) {
    ids.forEach(function (id) {
      var box = document.getElementById(id);
      draw(id, start(specs[id], room()), 0).catch(function (err) {
        box.setAttribute("data-rendered", "error");
        box.textContent = "This chart could not be drawn: " + err;
        console.error("edgestats: chart " + id + " failed:", err);
      });
    });
  }
  drawAll(Object.keys(specs));
  var timer = null;
  window.addEventListener("resize", function () {
    clearTimeout(timer);
    timer = setTimeout(function () {
      var width = room();
      drawAll(Object.keys(window.edgestatsViews).filter(function (id) {
        var entry = window.edgestatsViews[id];
        if (Math.abs(entry.room - width) < 20) return false;
        entry.finalize();
        delete window.edgestatsViews[id];
        document.getElementById(id).setAttribute("data-rendered", "pending");  // until drawn anew
        return true;
      }));
    }, 250);
  });
})();
"""

FILTER_JS = """
(function () {
  var keys = ["device", "framework", "runtime", "model"], chosen = {};
  var bar = document.getElementById("filters"), header = document.querySelector("header[data-runs]");
  var groups = header ? JSON.parse(header.getAttribute("data-runs")) : [];
  var marked = document.querySelectorAll(keys.map(function (k) { return "[data-f-" + k + "]"; }).join(","));
  // A row without a field (undefined, no attribute) is not about it and stays; an empty one is
  // about it but unknown (an imported row without a runtime) and goes when that field is chosen.
  function keep(get) {
    return keys.every(function (k) {
      var v = get(k);
      return !chosen[k] || v === undefined || (v === null ? "" : String(v)) === chosen[k];
    });
  }
  function attr(el) {
    return function (k) { var v = el.getAttribute("data-f-" + k); return v === null ? undefined : v; };
  }
  // A chart left with no rows is hidden, not emptied: an empty scale draws NaN into its SVG.
  function filterView(id) {
    var entry = window.edgestatsViews[id];
    if (!entry) return;
    var all = entry.datasets.map(function (name) { return entry.spec.datasets[name]; });
    var kept = all.map(function (rows) {
      return rows.filter(function (row) { return keep(function (k) { return row[k]; }); });
    });
    var narrowed = kept.some(function (rows, i) { return rows.length < all[i].length; });
    var empty = entry.datasets.length > 0 && kept.every(function (rows) { return rows.length === 0; });
    var figure = document.getElementById(id).closest("figure");
    if (figure) figure.hidden = empty;
    if (empty || (!narrowed && !entry.filtered)) return;  // hidden, or as drawn: nothing to put back
    entry.filtered = narrowed;
    entry.view.logLevel(1);   // errors only: a facet the filter empties warns of an infinite extent
    entry.datasets.forEach(function (name, i) {
      var rows = kept[i].map(function (row) { return Object.assign({}, row); });
      entry.view.change(name, entry.view.changeset().remove(function () { return true; }).insert(rows));
    });
    entry.view.runAsync();
  }
  window.edgestatsFilterView = filterView;
  function number(n) { return n.toLocaleString("en"); }
  function recount() {
    if (!groups.length) return;
    var shown = groups.filter(function (g) { return keep(function (k) { return g[k]; }); });
    var configs = {}, devices = {}, statuses = {}, runs = 0;
    shown.forEach(function (g) {
      configs[JSON.stringify([g.kind, g.device, g.framework, g.runtime, g.model, g.batch_size, g.threads,
        g.precision])] = true;
      devices[g.device] = true;
      statuses[g.kind + " " + g.status] = (statuses[g.kind + " " + g.status] || 0) + g.n_runs;
      runs += g.n_runs;
    });
    var text = function (id, value) { var el = document.getElementById(id); if (el) el.textContent = value; };
    text("count-configs", number(Object.keys(configs).length));
    text("count-runs", number(runs));
    text("count-devices", number(Object.keys(devices).length));
    text("count-kinds", Object.keys(statuses).length ? " (" + Object.keys(statuses)
      .map(function (s) { return number(statuses[s]) + " " + s; }).join(", ") + ")" : "");
  }
  function apply() {
    marked.forEach(function (el) { el.hidden = !keep(attr(el)); });
    Object.keys(window.edgestatsViews).forEach(filterView);
    recount();
    var active = keys.filter(function (k) { return chosen[k]; })
      .map(function (k) { return k + " " + chosen[k]; });
    document.getElementById("filter-state").textContent = active.length ?
      "showing " + active.join(", ") : "showing everything";
  }
  keys.forEach(function (k) {
    var values = {};
    groups.forEach(function (g) { if (g[k] !== null && g[k] !== undefined) values[g[k]] = true; });
    // a row pooled over several values joins them ("a, b"): offer each member, never the joined text
    marked.forEach(function (el) {
      var v = el.getAttribute("data-f-" + k);
      if (v) v.split(", ").forEach(function (m) { values[m] = true; });
    });
    var names = Object.keys(values).sort();
    if (names.length < 2) return;
    var label = document.createElement("label"), select = document.createElement("select");
    select.id = "filter-" + k;
    select.add(new Option("all", ""));
    names.forEach(function (v) { select.add(new Option(v, v)); });
    select.addEventListener("change", function () { chosen[k] = select.value; apply(); });
    label.append(k + " ", select);
    bar.insertBefore(label, document.getElementById("filter-state"));
  });
  if (bar.querySelector("select")) bar.hidden = false;
})();
"""

SORT_JS = """
(function () {
  function key(cell) {
    var raw = cell.getAttribute("data-sort");
    if (raw === null) return {num: NaN, text: cell.textContent};
    return {num: raw.trim() === "" ? NaN : Number(raw), text: raw};
  }
  function compare(a, b) {
    var na = isNaN(a.num), nb = isNaN(b.num);
    if (!na && !nb) return a.num - b.num;
    if (na !== nb) return na ? 1 : -1;
    return a.text.localeCompare(b.text, undefined, {numeric: true});
  }
  document.querySelectorAll("table.sortable th").forEach(function (th) {
    th.tabIndex = 0;
    th.title = "sort by this column";
    function sort() {
      var table = th.closest("table"), body = table.tBodies[0];
      var col = Array.prototype.indexOf.call(th.parentNode.children, th);
      var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
      th.parentNode.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (r1, r2) { return dir * compare(key(r1.cells[col]), key(r2.cells[col])); });
      rows.forEach(function (r) { body.appendChild(r); });
    }
    th.addEventListener("click", sort);
    th.addEventListener("keydown", function (e) { if (e.key === "Enter") sort(); });
  });
})();
"""

STYLE = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1320px;
       padding: .8em 1.5em; color: #1d1d1f; overflow-wrap: break-word; }
h1 { font-size: 1.4em; margin: .1em 0 .2em; } \
h2 { margin: 1.4em 0 .4em; border-bottom: 1px solid #ddd; font-size: 1.3em; }
dl.facts { display: flex; flex-wrap: wrap; gap: 0 1.4em; margin: .2em 0; font-size: .92em; }
dl.facts div { display: flex; gap: .4em; min-width: 0; } dl.facts dt { color: #555; } \
dl.facts dd { margin: 0; min-width: 0; overflow-wrap: anywhere; }
table { border-collapse: collapse; margin: .4em 0; font-size: .88em; }
th, td { padding: .2em .45em; border-bottom: 1px solid #e4e4e4; text-align: left; vertical-align: top; }
th { background: #f6f6f6; font-weight: 600; } \
caption { text-align: left; font-weight: 600; padding: .3em 0; }
table.sortable th { cursor: pointer; } \
th[aria-sort=ascending]::after { content: " ▲"; } \
th[aria-sort=descending]::after { content: " ▼"; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
span.long { overflow-wrap: anywhere; }
span.v, span.ci { white-space: nowrap; } span.ci { color: #666; font-size: .88em; }
sup.fn { font-size: .75em; margin-left: .1em; } sup.fn a { text-decoration: none; }
.table-wrap { overflow-x: auto; max-width: 100%; }
details.table { margin: .35em 0; border: 1px solid #e4e4e4; border-radius: 4px; padding: .2em .6em; }
details.table > summary { cursor: pointer; } details.table[open] > summary { margin-bottom: .3em; }
summary .cap { font-weight: 600; } summary .shape { color: #666; font-size: .9em; margin: 0 .6em; }
a.csv { font-size: .85em; border: 1px solid #bbb; border-radius: 3px; \
padding: 0 .35em; text-decoration: none; }
p.tablefoot { color: #666; font-size: .85em; margin: .1em 0 .5em; }
figure { margin: .8em 0; } \
.charts > figure { width: min-content; min-width: min(300px, 100%); max-width: 100%; } \
figcaption { font-weight: 600; margin-bottom: .3em; }
.chart { min-height: 60px; overflow-x: auto; max-width: 100%; }
.charts { display: flex; flex-wrap: wrap; gap: 0 2em; align-items: flex-start; }
p.sentence { font-size: 1.02em; margin: .3em 0; } p.note, footer, p.moved { color: #666; font-size: .9em; }
ol.notes { font-size: .9em; color: #444; }
nav ol { display: flex; flex-wrap: wrap; gap: .1em 1.3em; margin: .3em 0; padding: 0; list-style: none; \
font-size: .9em; counter-reset: part; }
nav li { counter-increment: part; max-width: 100%; } \
nav li::before { content: counter(part) ". "; color: #666; }
#filters { position: sticky; top: 0; z-index: 2; background: #fff; \
border-bottom: 1px solid #ddd; padding: .35em 0;
           display: flex; flex-wrap: wrap; gap: .3em 1.2em; align-items: center; font-size: .92em; }
#filters[hidden] { display: none; } #filters select { margin-left: .3em; max-width: 14em; } \
#filter-state { color: #666; }
.tablehead { margin: .6em 0 .1em; } .tablehead .cap { font-weight: 600; }
#answers h2 { margin-top: .6em; } table.answers td { vertical-align: baseline; } \
table.answers .fastest { font-weight: 600; } table.answers ul { margin: 0; padding: 0; list-style: none; }
.verdict-slower { color: #8a1c1c; } .verdict-same { color: #1d5e2a; } .verdict-unsure { color: #7a5b00; }
@media (max-width: 600px) { body { padding: .5em .7em; font-size: 14px; } h1 { font-size: 1.2em; } \
#filters { position: static; } \
.table-wrap td:first-child { position: sticky; left: 0; background: #fff; } \
.table-wrap th:first-child { position: sticky; left: 0; } \
table.answers thead { display: none; } \
table.answers tr { display: block; border-bottom: 1px solid #e4e4e4; padding: .25em 0; } \
table.answers td { display: inline; border: 0; padding: 0 .4em 0 0; } \
table.answers td:last-child { display: block; padding-left: .8em; } }
"""
