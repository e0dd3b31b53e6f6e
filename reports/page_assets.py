"""The page's stylesheet and scripts (inline: the page loads nothing from elsewhere).

LOADER_JS draws every chart; a chart that fails says so in its box and on the console (the
browser test fails on any console message). SORT_JS sorts a table by the column whose header is
clicked (numbers by value, via each cell's data-sort), and toggles the direction on a second click.
"""

from __future__ import annotations

LOADER_JS = """
(function () {
  var specs = JSON.parse(document.getElementById("edgestats-specs").textContent);
  var options = JSON.parse(document.getElementById("edgestats-embed-options").textContent);
  Object.keys(specs).forEach(function (id) {
    var box = document.getElementById(id);
    vegaEmbed(box, specs[id], options).then(function () {
      box.setAttribute("data-rendered", "true");
    }).catch(function (err) {
      box.setAttribute("data-rendered", "error");
      box.textContent = "This chart could not be drawn: " + err;
      console.error("edgestats: chart " + id + " failed:", err);
    });
  });
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
h1 { font-size: 1.5em; margin: .2em 0 .3em; } h2 { margin: 1.6em 0 .4em; border-bottom: 1px solid #ddd; font-size: 1.3em; }
.top { display: flex; flex-wrap: wrap; gap: .5em 2.5em; align-items: flex-start; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .1em 1em; margin: .3em 0; font-size: .92em; }
dl.facts dt { color: #555; } dl.facts dd { margin: 0; }
table { border-collapse: collapse; margin: .4em 0; font-size: .88em; }
th, td { padding: .2em .45em; border-bottom: 1px solid #e4e4e4; text-align: left; vertical-align: top; }
th { background: #f6f6f6; font-weight: 600; } caption { text-align: left; font-weight: 600; padding: .3em 0; }
table.sortable th { cursor: pointer; } th[aria-sort=ascending]::after { content: " ▲"; } th[aria-sort=descending]::after { content: " ▼"; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
span.long { overflow-wrap: anywhere; }
span.v, span.ci { white-space: nowrap; } span.ci { color: #666; font-size: .88em; }
sup.fn { font-size: .75em; margin-left: .1em; } sup.fn a { text-decoration: none; }
.table-wrap { overflow-x: auto; max-width: 100%; }
details.table { margin: .35em 0; border: 1px solid #e4e4e4; border-radius: 4px; padding: .2em .6em; }
details.table > summary { cursor: pointer; } details.table[open] > summary { margin-bottom: .3em; }
summary .cap { font-weight: 600; } summary .shape { color: #666; font-size: .9em; margin: 0 .6em; }
a.csv { font-size: .85em; border: 1px solid #bbb; border-radius: 3px; padding: 0 .35em; text-decoration: none; }
p.tablefoot { color: #666; font-size: .85em; margin: .1em 0 .5em; }
figure { margin: .8em 0; } .charts > figure { width: min-content; min-width: 300px; max-width: 100%; } figcaption { font-weight: 600; margin-bottom: .3em; }
.chart { min-height: 60px; overflow-x: auto; }
.charts { display: flex; flex-wrap: wrap; gap: 0 2em; align-items: flex-start; }
p.sentence { font-size: 1.02em; margin: .3em 0; } p.note, footer, p.moved { color: #666; font-size: .9em; }
ol.notes { font-size: .9em; color: #444; } nav ol { columns: 3; margin: .3em 0; font-size: .92em; }
.tablehead { margin: .6em 0 .1em; } .tablehead .cap { font-weight: 600; }
"""
