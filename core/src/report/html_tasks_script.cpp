// The task browser's style and script (html_tasks.hpp says what they draw). The script
// starts when the page calls kforgeStartTaskBrowser(), right after the task index. The script
// builds every node with createElement and textContent: no string from the report's data
// is ever parsed as markup, so hostile candidate code and messages stay text.
#include "report/html_tasks.hpp"

namespace kforge {

const char* const kTaskBrowserStyle = R"css(
.filters{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin:6px 0 8px}
.filters input,.filters select,#show-more{font:inherit;padding:3px 6px}
#task-table tbody tr{cursor:pointer}#task-table tbody tr:hover,tr.selected{background:#eef3fc}
#task-table td:nth-child(-n+4),#task-table td:nth-child(7),#task-table td:nth-child(10){text-align:left}
#task-table td:nth-child(n+5):nth-child(-n+9){white-space:nowrap}
.st-solved,.st-pass{color:#1d7a3a;font-weight:600}.st-failed,.st-fail{color:#b03030;font-weight:600}
.st-error{color:#a05a00;font-weight:600}
#detail-view td,#detail-view th{text-align:left}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:8px 0}
dl.facts dt{color:#5b6474}dl.facts dd{margin:0;overflow-wrap:anywhere}
section.round{border-left:3px solid #dde2ea;padding-left:12px;margin:16px 0}
section.round h4{margin:4px 0 6px}
pre.code,pre.diff,pre.log{background:#f7f8fa;border:1px solid #e1e5eb;border-radius:6px;padding:8px;margin:4px 0;
  overflow:auto;max-height:520px;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:pre}
pre.diff span{display:block}pre.diff .add{background:#e6f6ea;color:#14532d}pre.diff .del{background:#fbe9e9;color:#7f1d1d}
pre.diff .hunk{color:#6b4fbb}pre.diff .file{font-weight:600}
.metrics{color:#4a5263;font-size:12px}
)css";

const char* const kTaskBrowserScript = R"js(
(function () {
  'use strict';
  var PAGE = 200;  // rows added per "show more": the table never holds more than asked for
  var FILTERS = [['filter-status', 'status', 'status'], ['filter-complexity', 'complexity', 'class'],
                 ['filter-category', 'category', 'category'], ['filter-model', 'models', 'model'],
                 ['filter-error', 'error_classes', 'error class']];
  // Maps, not objects, where names come from the data: a task called "constructor" is a task.
  var index, byId = new Map(), choices = {}, view = [], shown = 0, sort = {key: null, dir: 1}, parsed = [], scroll = 0;
  // The timing table's parties and columns, from the index (kTimingStatistics in
  // candidates.hpp: kforge show has the same), and every metric name they cover.
  var timing, timingNames = new Set();

  function $(id) { return document.getElementById(id); }
  // An element whose children are nodes or text; props set attributes ('text' the text).
  function el(tag, props, children) {
    var node = document.createElement(tag);
    Object.keys(props || {}).forEach(function (k) {
      if (k === 'text') node.textContent = props[k]; else if (k === 'className') node.className = props[k];
      else node.setAttribute(k, props[k]);
    });
    (children || []).forEach(function (c) {
      if (c === null || c === undefined) return;
      node.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
    });
    return node;
  }
  function statusClass(s) {
    return ['solved', 'failed', 'error', 'pass', 'fail'].indexOf(s) >= 0 ? 'st-' + s : '';
  }
  function missing(v) { return v === null || v === undefined; }
  function speedup(v) { return missing(v) ? '-' : v.toFixed(2) + 'x'; }
  function money(v) { return missing(v) ? '-' : '$' + v.toFixed(v >= 1 ? 2 : 4); }
  function secs(v) { return missing(v) ? '-' : v.toFixed(v < 10 ? 2 : 1) + ' s'; }
  function number(v) {
    if (missing(v)) return '-';
    var a = Math.abs(v);
    if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(3);
    return String(Math.round(v * 1e4) / 1e4);
  }
  function link(task, sample) {
    return '#task=' + encodeURIComponent(task.id) + (missing(sample) ? '' : '&sample=' + sample);
  }
  function table(columns, rows, props) {
    return el('table', props, [el('thead', null, [el('tr', null, columns.map(function (c) { return el('th', {text: c}); }))]),
                               el('tbody', null, rows)]);
  }
  function facts(pairs) {
    var dl = el('dl', {className: 'facts'});
    pairs.forEach(function (p) {
      if (missing(p[1]) || p[1] === '') return;
      dl.appendChild(el('dt', {text: p[0]}));
      dl.appendChild(el('dd', null, [p[1]]));
    });
    return dl;
  }

  // ---- the task table
  function distinct(field) {
    var seen = new Set();
    index.tasks.forEach(function (t) { [].concat(t[field]).forEach(function (v) { seen.add(v); }); });
    return Array.from(seen).sort();
  }
  function fillFilter(f) {
    var select = $(f[0]), values = distinct(f[1]);
    choices[f[0]] = values;
    select.appendChild(el('option', {value: ''}, [f[2] + ': all']));
    values.forEach(function (v, i) { select.appendChild(el('option', {value: String(i)}, [v === '' ? '(none)' : v])); });
    select.hidden = values.length < 2;  // nothing to choose between
    select.addEventListener('change', filter);
  }
  function keyOf(t, key) {
    if (key === 'passed') return t.candidates ? t.passed / t.candidates : null;
    var v = t[key];
    if (Array.isArray(v)) v = v.join(', ');
    if (missing(v) || v === '') return null;
    return typeof v === 'string' ? v.toLowerCase() : v;
  }
  function order() {
    if (sort.key === null) return;
    view.sort(function (a, b) {
      var x = keyOf(a, sort.key), y = keyOf(b, sort.key);
      if (x === y) return a.at - b.at;
      if (x === null) return 1;  // nothing to sort by: last either way
      if (y === null) return -1;
      return (x < y ? -1 : 1) * sort.dir;
    });
  }
  function filter() {
    var text = $('filter-text').value.toLowerCase();
    var wanted = FILTERS.map(function (f) { var v = $(f[0]).value; return v === '' ? null : choices[f[0]][+v]; });
    view = index.tasks.filter(function (t) {
      if (text && t.id.toLowerCase().indexOf(text) < 0) return false;
      return FILTERS.every(function (f, i) {
        return wanted[i] === null || [].concat(t[f[1]]).indexOf(wanted[i]) >= 0;
      });
    });
    order();
    redraw();
  }
  function row(t) {
    return el('tr', {'data-task': String(t.at)}, [
      el('td', null, [el('a', {href: link(t)}, [t.id])]), el('td', {text: t.category || '-'}),
      el('td', {text: t.complexity || '-'}), el('td', {className: statusClass(t.status), text: t.status}),
      el('td', {text: t.passed + '/' + t.candidates}), el('td', {text: speedup(t.best_speedup)}),
      el('td', {text: t.models.join(', ') || '-'}), el('td', {text: money(t.cost)}), el('td', {text: secs(t.seconds)}),
      el('td', {text: t.first_failure})]);
  }
  function redraw() {
    $('task-table').tBodies[0].textContent = '';
    shown = 0;
    more();
  }
  function more() {
    var rows = document.createDocumentFragment(), end = Math.min(view.length, shown + PAGE);
    for (; shown < end; ++shown) rows.appendChild(row(view[shown]));
    $('task-table').tBodies[0].appendChild(rows);
    var left = view.length - shown, button = $('show-more');
    button.hidden = left === 0;
    button.textContent = 'show ' + Math.min(PAGE, left) + ' more (' + left + ' left)';
    $('filter-count').textContent = view.length + ' of ' + index.tasks.length + ' tasks' +
      (index.listed < index.total ? ' listed' : '') + ', ' + shown + ' shown';
  }
  function sortBy(th) {
    var key = th.getAttribute('data-key');
    sort = {key: key, dir: sort.key === key ? -sort.dir : 1};
    Array.prototype.forEach.call(th.parentNode.cells, function (c) { c.removeAttribute('data-order'); });
    th.setAttribute('data-order', sort.dir === 1 ? 'asc' : 'desc');
    order();
    redraw();
  }

  // ---- a task and its candidates
  function detail(task) {
    if (!parsed[task.at]) parsed[task.at] = JSON.parse($('kf-task-' + task.at).textContent);
    return parsed[task.at];
  }
  function diffView(text) {
    var pre = el('pre', {className: 'diff'});
    text.replace(/\n$/, '').split('\n').forEach(function (line) {
      var cls = /^(\+\+\+|---)( |$)/.test(line) ? 'file' : line.charAt(0) === '+' ? 'add'
              : line.charAt(0) === '-' ? 'del' : line.slice(0, 2) === '@@' ? 'hunk' : '';
      pre.appendChild(el('span', cls ? {className: cls} : null, [line]));
    });
    return pre;
  }
  function metricsText(metrics) {
    return Object.keys(metrics).map(function (k) { return k + '=' + number(metrics[k]); }).join('  ');
  }
  // One row per party, one column per statistic; '-' for what the verdict did not record.
  function timingTable(m) {
    return table([''].concat(timing.columns.map(function (c) { return c.heading; })), timing.parties.map(function (party) {
      return el('tr', null, [el('th', {text: party})].concat(timing.columns.map(function (c) {
        var name = party + c.suffix;
        return el('td', {text: m.has(name) ? number(m.get(name)) : '-'});
      })));
    }), {className: 'timing'});
  }
  function measurement(c) {
    var box = el('div', {className: 'measurement'}, [el('h4', {text: 'Correctness and timing'})]);
    if (missing(c.measurement)) {
      box.appendChild(el('p', {className: 'note', text: 'no stage measured this candidate'}));
      box.appendChild(timingTable(new Map()));
      return box;
    }
    var s = c.stages[c.measurement], m = new Map(Object.entries(s.metrics));
    box.appendChild(el('p', {className: 'note', text: 'from stage ' + s.stage + ' (' + (s.role || s.kind) + '), round ' + s.round +
                                                    (s.cached ? ', answered from the verdict cache' : '')}));
    box.appendChild(timingTable(m));
    var rest = Array.from(m.keys()).filter(function (k) { return !timingNames.has(k); });
    if (rest.length) {
      box.appendChild(table(['metric', 'value'], rest.map(function (k) {
        return el('tr', null, [el('td', {text: k}), el('td', {text: number(m.get(k))})]);
      }), {className: 'stats'}));
    }
    return box;
  }
  function roundView(c, r, artifacts, last) {
    var box = el('section', {className: 'round', 'data-round': String(r.round)});
    box.appendChild(el('h4', {text: 'Round ' + r.round + (r.round === 0 ? '' : ' (fix round)')}));
    if (r.diff) {
      box.appendChild(el('details', {open: '', className: 'diff'}, [el('summary', {text: 'diff of fix round ' + r.round}),
                                                                     diffView(artifacts[r.diff])]));
    }
    var rows = [];
    c.stages.forEach(function (s) {
      if (s.round !== r.round) return;
      rows.push(el('tr', null, [el('td', {text: s.stage}), el('td', {text: s.role || s.kind}),
                                el('td', {className: statusClass(s.status), text: s.status + (s.route ? ' (' + s.route + ')' : '')}),
                                el('td', {text: s.error_class || ''}), el('td', {text: s.message}),
                                el('td', {text: secs(s.seconds) + (s.cached ? ' (cached)' : '')})]));
      var extra = [];
      if (Object.keys(s.metrics).length) extra.push(el('div', {className: 'metrics', text: metricsText(s.metrics)}));
      if (s.log) {
        extra.push(el('details', {className: 'log'}, [el('summary', {text: 'log tail of ' + s.stage}),
                                                      el('pre', {className: 'log', text: artifacts[s.log]})]));
      }
      if (extra.length) rows.push(el('tr', {className: 'extra'}, [el('td', {colspan: '6'}, extra)]));
    });
    if (rows.length) box.appendChild(table(['Stage', 'Role', 'Verdict', 'Error class', 'Message', 'Time'], rows, {className: 'stages'}));
    if (r.code) {
      var code = el('details', {className: 'code'}, [
        el('summary', {text: 'code' + (c.language ? ' (' + c.language + ')' : '') + (r.changed ? '' : ', unchanged from round ' + (r.round - 1))}),
        el('pre', {className: 'code', text: artifacts[r.code]})]);
      if (last) code.setAttribute('open', '');
      box.appendChild(code);
    }
    return box;
  }
  function candidateView(c, artifacts) {
    var box = el('section', {id: 'candidate', 'data-sample': String(c.sample)});
    box.appendChild(el('h3', null, ['Sample ' + c.sample + ': ', el('span', {className: statusClass(c.status), text: c.status})]));
    box.appendChild(facts([
      ['final round', String(c.round)], ['last stage', c.stage], ['error class', c.error_class], ['message', c.message],
      ['model', c.model], ['language', c.language], ['device', c.device],
      ['tokens in / out', missing(c.tokens_in) ? null : number(c.tokens_in) + ' / ' + number(c.tokens_out)],
      ['cost', missing(c.cost) ? null : money(c.cost)], ['speedup', missing(c.speedup) ? null : speedup(c.speedup)],
      ['time', secs(c.seconds) + (missing(c.eval_seconds) ? '' : ' (evaluation ' + secs(c.eval_seconds) + ', generation ' + secs(c.gen_seconds) + ')')],
      ['run', String(c.run) + (c.finished_at ? ', finished ' + c.finished_at : '')]]));
    box.appendChild(measurement(c));
    c.rounds.forEach(function (r, i) { box.appendChild(roundView(c, r, artifacts, i === c.rounds.length - 1)); });
    return box;
  }
  // A shell word: what the page tells to run is safe to paste.
  function shellWord(text) { return "'" + String(text).replace(/'/g, "'\\''") + "'"; }
  function taskFacts(task) {
    return facts([['status', task.status], ['category', task.category], ['class', task.complexity],
                  ['candidates passed', task.passed + '/' + task.candidates],
                  ['best', missing(task.best_sample) ? null : 'sample ' + task.best_sample + ', ' + speedup(task.best_speedup)],
                  ['cost', money(task.cost)]]);
  }
  function taskView(task, sample) {
    var page = $('detail-view');
    page.textContent = '';
    if (!task.detail) {  // the page's budget for candidates was spent (index.detail_mib)
      page.appendChild(el('p', null, [el('a', {href: '#', id: 'back'}, ['\u2190 all tasks'])]));
      page.appendChild(el('h2', {text: 'Task ' + task.id}));
      page.appendChild(taskFacts(task));
      page.appendChild(el('p', {className: 'note', id: 'no-detail', text:
        'This page embeds the candidates of ' + index.detailed + ' of its ' + index.listed + ' tasks (up to ' +
        index.detail_mib + ' MiB), not of this one. Every candidate of it, with its code, diffs, verdicts and logs: '}));
      page.appendChild(el('pre', {className: 'code', text: 'kforge show ' + shellWord(index.directory) + ' ' + shellWord(task.id)}));
      return;
    }
    if (!$('kf-task-' + task.at)) {  // its block is not parsed yet: draw it once the page is
      page.appendChild(el('p', {text: 'loading the task\'s data\u2026'}));
      document.addEventListener('DOMContentLoaded', route, {once: true});
      return;
    }
    var d = detail(task);
    page.appendChild(el('p', null, [el('a', {href: '#', id: 'back'}, ['\u2190 all tasks'])]));
    page.appendChild(el('h2', {text: 'Task ' + task.id}));
    page.appendChild(taskFacts(task));
    var chosen = d.candidates.filter(function (c) { return String(c.sample) === sample; })[0] || d.candidates[0];
    page.appendChild(table(['Sample', 'Model', 'Status', 'Round', 'Error class', 'Message', 'Speedup', 'Cost', 'Time'],
      d.candidates.map(function (c) {
        return el('tr', {className: c === chosen ? 'selected' : '', 'data-sample': String(c.sample)}, [
          el('td', null, [el('a', {href: link(task, c.sample)}, ['sample ' + c.sample])]), el('td', {text: c.model || '-'}),
          el('td', {className: statusClass(c.status), text: c.status}), el('td', {text: String(c.round)}),
          el('td', {text: c.error_class}), el('td', {text: c.message}), el('td', {text: speedup(c.speedup)}),
          el('td', {text: money(c.cost)}), el('td', {text: secs(c.seconds)})]);
      }), {id: 'candidate-table'}));
    page.appendChild(chosen ? candidateView(chosen, d.artifacts) : el('p', {text: 'no finished candidate'}));
  }

  function route() {
    var params = new URLSearchParams(location.hash.slice(1)), id = params.get('task');
    var task = id === null ? undefined : byId.get(id), page = $('detail-view'), overview = $('overview');
    if (task === undefined) {
      if (!overview.hidden) return;
      page.hidden = true;
      page.textContent = '';
      overview.hidden = false;
      window.scrollTo(0, scroll);
      return;
    }
    if (!overview.hidden) scroll = window.scrollY;
    taskView(task, params.get('sample'));
    overview.hidden = true;
    page.hidden = false;
    window.scrollTo(0, 0);
  }

  function environment() {
    var env = index.environment;
    if (missing(env) || typeof env !== 'object') return;
    $('environment').appendChild(table(['Environment', ''], Object.keys(env).map(function (k) {
      var v = env[k];
      return el('tr', null, [el('td', {text: k}), el('td', {text: typeof v === 'string' ? v : JSON.stringify(v)})]);
    })));
  }

  // What of the run the page holds, when not all of it (index.index_mib and detail_mib).
  function limits() {
    var notes = [];
    if (index.listed < index.total) {
      notes.push('The table lists the first ' + index.listed + ' of the run\'s ' + index.total + ' tasks (' +
                 index.index_mib + ' MiB of index); report.md, report.json and junit.xml list every task, and ' +
                 'kforge show prints any of them.');
    }
    if (index.detailed < index.listed) {
      notes.push('The candidates of ' + index.detailed + ' of these tasks are in the page (up to ' + index.detail_mib +
                 ' MiB); a task without them says how to see them.');
    }
    if (!notes.length) return;
    $('task-limits').textContent = notes.join(' ');
    $('task-limits').hidden = false;
  }

  // Called by the script right after the index, so that the table works while the browser
  // still parses the tasks' blocks behind it (most of a large page).
  window.kforgeStartTaskBrowser = function () {
    index = JSON.parse($('kf-index').textContent);
    index.tasks.forEach(function (t, i) { t.at = i; byId.set(t.id, t); });
    timing = index.timing;
    timing.parties.forEach(function (p) { timing.columns.forEach(function (c) { timingNames.add(p + c.suffix); }); });
    environment();
    limits();
    FILTERS.forEach(fillFilter);
    $('filter-text').addEventListener('input', filter);
    $('show-more').addEventListener('click', more);
    Array.prototype.forEach.call($('task-table').tHead.rows[0].cells, function (th) {
      th.addEventListener('click', function () { sortBy(th); });
    });
    $('task-table').tBodies[0].addEventListener('click', function (e) {
      var tr = e.target.closest('tr');
      if (tr && !e.target.closest('a')) location.hash = link(index.tasks[+tr.getAttribute('data-task')]).slice(1);
    });
    window.addEventListener('hashchange', route);
    filter();
    route();
    document.documentElement.setAttribute('data-tasks-ready', 'yes');
    document.documentElement.setAttribute('data-tasks-ready-ms', String(Math.round(performance.now())));
  };
})();
)js";

}  // namespace kforge
