"""The page's stylesheet and scripts (inline: the page loads nothing from elsewhere).

LOADER_JS draws every chart; a chart that fails says so in its box and on the console (the
browser test fails on any console message). It keeps each chart's Vega view for FILTER_JS, which
fills the filter bar from the tables' data-f-* values and, on a choice, hides the table rows and
removes the chart data rows of other devices, frameworks or models (a row without the field
stays). SORT_JS sorts a table by the column whose header is clicked (numbers by value, via each
cell's data-sort), and toggles the direction on a second click.

A line that ends in a backslash goes on at the start of the next: the backslash and the line break
are not in the string, so the source fits 110 columns while the page's scripts and rules stay one
line each, byte for byte.
"""

from __future__ import annotations

LOADER_JS = """
window.edgestatsViews = {};
(function () {
  var specs = JSON.parse(document.getElementById("edgestats-specs").textContent);
  var options = JSON.parse(document.getElementById("edgestats-embed-options").textContent);
  Object.keys(specs).forEach(function (id) {
    var box = document.getElementById(id);
    vegaEmbed(box, specs[id], options).then(function (result) {
      window.edgestatsViews[id] = {view: result.view, datasets: Object.keys(specs[id].datasets || {})};
      box.setAttribute("data-rendered", "true");
    }).catch(function (err) {
      box.setAttribute("data-rendered", "error");
      box.textContent = "This chart could not be drawn: " + err;
      console.error("edgestats: chart " + id + " failed:", err);
    });
  });
})();
"""

FILTER_JS = """
(function () {
  var keys = ["device", "framework", "model"], chosen = {}, originals = {};
  var bar = document.getElementById("filters");
  var rows = document.querySelectorAll("tr[data-f-device], tr[data-f-framework], tr[data-f-model]");
  function keep(get) {
    return keys.every(function (k) { var v = get(k); \
return !chosen[k] || v === null || v === undefined || String(v) === chosen[k]; });
  }
  function apply() {
    rows.forEach(function (tr) { tr.hidden = !keep(\
function (k) { return tr.getAttribute("data-f-" + k); }); });
    Object.keys(window.edgestatsViews).forEach(function (id) {
      var entry = window.edgestatsViews[id];
      entry.view.logLevel(1);   // errors only: a facet the filter empties warns of an infinite extent
      entry.datasets.forEach(function (name) {
        var key = id + "/" + name;
        if (!(key in originals)) originals[key] = entry.view.data(name).slice();
        var shown = originals[key].filter(function (row) { \
return keep(function (k) { return row[k]; }); });
        entry.view.change(name, entry.view.changeset().remove(function () { return true; })\
.insert(shown));
      });
      entry.view.runAsync();
    });
    var active = keys.filter(function (k) { return chosen[k]; })\
.map(function (k) { return k + " " + chosen[k]; });
    document.getElementById("filter-state").textContent = active.length ? \
"showing " + active.join(", ") : "showing everything";
  }
  keys.forEach(function (k) {
    var values = {};
    rows.forEach(function (tr) { var v = tr.getAttribute("data-f-" + k); if (v !== null) values[v] = true; });
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
       padding: 1em 1.5em; color: #1d1d1f; }
h1 { font-size: 1.5em; margin: .2em 0 .3em; } \
h2 { margin: 1.6em 0 .4em; border-bottom: 1px solid #ddd; font-size: 1.3em; }
.top { display: flex; flex-wrap: wrap; gap: .5em 2.5em; align-items: flex-start; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; \
gap: .1em 1em; margin: .3em 0; font-size: .92em; }
dl.facts dt { color: #555; } dl.facts dd { margin: 0; }
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
.charts > figure { width: min-content; min-width: 300px; max-width: 100%; } \
figcaption { font-weight: 600; margin-bottom: .3em; }
.chart { min-height: 60px; overflow-x: auto; }
.charts { display: flex; flex-wrap: wrap; gap: 0 2em; align-items: flex-start; }
p.sentence { font-size: 1.02em; margin: .3em 0; } p.note, footer, p.moved { color: #666; font-size: .9em; }
ol.notes { font-size: .9em; color: #444; } nav ol { columns: 3; margin: .3em 0; font-size: .92em; }
#filters { position: sticky; top: 0; z-index: 2; background: #fff; \
border-bottom: 1px solid #ddd; padding: .35em 0;
           display: flex; flex-wrap: wrap; gap: .3em 1.2em; align-items: center; font-size: .92em; }
#filters[hidden] { display: none; } #filters select { margin-left: .3em; } #filter-state { color: #666; }
.tablehead { margin: .6em 0 .1em; } .tablehead .cap { font-weight: 600; }
"""
