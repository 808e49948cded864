// The HTML report: one file, viewable offline. CSS and charts (SVG drawn here) are inline;
// one script records script errors into the page (for tests) and sorts tables, the other
// is the task browser (html_tasks.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <ostream>

#include "report/html_tasks.hpp"
#include "report/report.hpp"

namespace kforge {
namespace {

constexpr const char* kPalette[] = {"#3b6fd8", "#e0803a", "#3aa85c", "#c94a4a", "#8a5cc7", "#2fa6a6", "#b8a232", "#d45f9e"};
constexpr size_t kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);

constexpr double kWidth = 640;
constexpr double kHeight = 300;
constexpr double kLeft = 56;  // room for the y axis labels
constexpr double kRight = 16;
constexpr double kTop = 16;
constexpr double kBottom = 56;  // room for the x labels and the legend


struct Series {
  std::string name;
  std::vector<std::optional<double>> values;  // one per x position; nullopt: no point
};

// How the y axis reads: shares as percentages, or plain numbers up to `max`.
struct YAxis {
  double max = 1;
  bool percent = true;
  std::string label(double v) const {
    return percent ? fmt::format("{:.0f}%", v * 100) : fmt::format("{:g}", v);
  }
};

YAxis axis_for(const std::vector<Series>& series, bool percent) {
  if (percent) return {1, true};
  double max = 0;
  for (const auto& s : series) {
    for (const auto& v : s.values) max = std::max(max, v.value_or(0));
  }
  if (max <= 0) max = 1;
  // Four grid steps of a round size (1, 2, 2.5 or 5 times a power of ten).
  const double raw = max / 4;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 5 * magnitude;
  for (double factor : {1.0, 2.0, 2.5}) {
    if (raw <= factor * magnitude) {
      step = factor * magnitude;
      break;
    }
  }
  return {4 * step, false};
}

std::string svg_open(const std::string& name, const std::string& title) {
  return fmt::format(
      "<svg class=\"chart\" data-chart=\"{}\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\" "
      "xmlns=\"http://www.w3.org/2000/svg\"><title>{}</title>",
      name, kWidth, kHeight, kWidth, kHeight, markup_escape(title));
}

std::string no_data(const std::string& name, const std::string& title) {
  return svg_open(name, title) +
         fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"muted\">no data</text></svg>", kWidth / 2,
                     kHeight / 2);
}

double y_of(double value, const YAxis& axis) {
  const double plot = kHeight - kTop - kBottom;
  return kTop + plot * (1.0 - std::clamp(value / axis.max, 0.0, 1.0));
}

std::string grid(const YAxis& axis) {
  std::string out;
  for (int i = 0; i <= 4; ++i) {
    const double v = axis.max * i / 4.0;
    const double y = y_of(v, axis);
    out += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" class=\"grid\"/>", kLeft, kWidth - kRight, y, y);
    out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\" class=\"tick\">{}</text>", kLeft - 6, y + 4,
                       markup_escape(axis.label(v)));
  }
  return out;
}

std::string legend(const std::vector<Series>& series) {
  if (series.size() < 2) return "";
  std::string out;
  double x = kLeft;
  const double y = kHeight - 14;
  for (size_t i = 0; i < series.size(); ++i) {
    out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\" fill=\"{}\"/>", x, y - 9,
                       kPalette[i % kPaletteSize]);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\">{}</text>", x + 14, y, markup_escape(series[i].name));
    x += 24 + 7.0 * static_cast<double>(series[i].name.size());
  }
  return out;
}

// Grouped vertical bars: one group per x label, one bar per series.
std::string bar_chart(const std::string& name, const std::string& title, const std::vector<std::string>& labels,
                      const std::vector<Series>& series, bool percent) {
  if (labels.empty() || series.empty()) return no_data(name, title);
  const YAxis axis = axis_for(series, percent);
  std::string out = svg_open(name, title) + grid(axis);
  const double group = (kWidth - kLeft - kRight) / static_cast<double>(labels.size());
  const double bar = std::min(40.0, group * 0.8 / static_cast<double>(series.size()));
  for (size_t g = 0; g < labels.size(); ++g) {
    const double start = kLeft + group * static_cast<double>(g) + (group - bar * static_cast<double>(series.size())) / 2;
    for (size_t s = 0; s < series.size(); ++s) {
      const auto& value = series[s].values[g];
      if (!value) continue;
      const double y = y_of(*value, axis);
      out += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"><title>{} {}: {}</title></rect>",
          start + bar * static_cast<double>(s), y, std::max(1.0, bar - 2), y_of(0, axis) - y, kPalette[s % kPaletteSize],
          markup_escape(series[s].name), markup_escape(labels[g]), markup_escape(axis.label(*value)));
    }
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" class=\"tick\">{}</text>",
                       kLeft + group * (static_cast<double>(g) + 0.5), kHeight - kBottom + 16, markup_escape(labels[g]));
  }
  return out + legend(series) + "</svg>";
}

// Lines with points: x positions evenly spaced.
std::string line_chart(const std::string& name, const std::string& title, const std::vector<std::string>& labels,
                       const std::vector<Series>& series, bool percent) {
  if (labels.empty() || series.empty()) return no_data(name, title);
  const YAxis axis = axis_for(series, percent);
  std::string out = svg_open(name, title) + grid(axis);
  const double span = kWidth - kLeft - kRight - 40;
  auto x_of = [&](size_t i) {
    return labels.size() == 1 ? kLeft + 20 + span / 2 : kLeft + 20 + span * static_cast<double>(i) / static_cast<double>(labels.size() - 1);
  };
  for (size_t i = 0; i < labels.size(); ++i) {
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" class=\"tick\">{}</text>", x_of(i),
                       kHeight - kBottom + 16, markup_escape(labels[i]));
  }
  for (size_t s = 0; s < series.size(); ++s) {
    std::string points;
    std::string dots;
    for (size_t i = 0; i < labels.size(); ++i) {
      const auto& value = series[s].values[i];
      if (!value) continue;
      points += fmt::format("{:.1f},{:.1f} ", x_of(i), y_of(*value, axis));
      dots += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"><title>{} {}: {}</title></circle>",
                          x_of(i), y_of(*value, axis), kPalette[s % kPaletteSize], markup_escape(series[s].name),
                          markup_escape(labels[i]), markup_escape(axis.label(*value)));
    }
    out += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>", points,
                       kPalette[s % kPaletteSize]);
    out += dots;
  }
  return out + legend(series) + "</svg>";
}

// Horizontal bars of shares, one per label, largest first as given.
std::string share_bars(const std::string& name, const std::string& title, const std::vector<std::string>& labels,
                       const std::vector<double>& shares) {
  if (labels.empty()) return no_data(name, title);
  const double label_width = 190;
  const double row = std::min(28.0, (kHeight - kTop - 8) / static_cast<double>(labels.size()));
  const double span = kWidth - label_width - kRight - 60;
  std::string out = svg_open(name, title);
  for (size_t i = 0; i < labels.size(); ++i) {
    const double y = kTop + row * static_cast<double>(i);
    const double w = std::max(1.0, span * std::clamp(shares[i], 0.0, 1.0));
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" class=\"tick\">{}</text>", label_width - 8,
                       y + row * 0.65, markup_escape(labels[i]));
    out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"><title>{}: {}</title></rect>",
                       label_width, y + 2, w, row - 4, kPalette[3], markup_escape(labels[i]), format_percent(shares[i]));
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\">{}</text>", label_width + w + 6, y + row * 0.65,
                       format_percent(shares[i]));
  }
  return out + "</svg>";
}

std::string figure(const std::string& svg, const std::string& caption) {
  return fmt::format("<figure>{}<figcaption>{}</figcaption></figure>\n", svg, markup_escape(caption));
}

std::string complexity_chart(const Metrics& m) {
  std::vector<std::string> classes;
  for (const auto& c : m.complexity_classes) {
    if (c != "(none)") classes.push_back(c);
  }
  std::vector<Series> series;
  for (const ModelMetrics& mm : m.models) {
    Series s{mm.model, {}};
    if (classes.empty()) {
      s.values.push_back(mm.solved.rate());
    } else {
      for (const auto& c : classes) {
        auto it = mm.by_complexity.find(c);
        s.values.push_back(it == mm.by_complexity.end() || it->second.total == 0 ? std::nullopt
                                                                                  : std::optional<double>(it->second.rate()));
      }
    }
    series.push_back(std::move(s));
  }
  if (classes.empty()) classes.push_back("all tasks");
  return figure(bar_chart("pass-by-complexity", "Pass rate by complexity class, per model", classes, series, true),
                "Pass rate by complexity class, per model");
}

std::string errors_chart(const Metrics& m) {
  std::vector<std::string> labels;
  std::vector<double> shares;
  for (const ErrorShare& e : m.errors) {
    labels.push_back(e.error_class);
    shares.push_back(e.share);
  }
  return figure(share_bars("error-shares", "Error classes of failed candidates", labels, shares),
                fmt::format("Error classes of the {} failed candidates", m.failed_candidates));
}

std::string speedup_chart(const Metrics& m) {
  // Bins edged by the fast_p thresholds (kSpeedupBinEdges), so the chart and the fast_p
  // table agree.
  constexpr const char* kLabels[] = {"<0.5x", "0.5-0.8x", "0.8-1x", "1-1.5x", "1.5-2x", "2-4x", ">=4x"};
  static_assert(std::size(kLabels) == std::size(kSpeedupBinEdges));
  Series counts{"tasks", {}};
  for (size_t b = 0; b < m.best_speedup_bins.size(); ++b) counts.values.push_back(static_cast<double>(m.best_speedup_bins[b]));
  const std::vector<std::string> labels(std::begin(kLabels), std::end(kLabels));
  const std::string title = "Best speedup of each correct task";
  return figure(m.best_speedup_bins.empty() ? no_data("speedup-distribution", title)
                                            : bar_chart("speedup-distribution", title, labels, {counts}, false),
                fmt::format("{} (geometric mean {})", title, format_speedup(m.geomean_speedup)));
}

std::string rounds_charts(const Metrics& m) {
  std::vector<std::string> labels;
  Series passed{"passed", {}};
  Series compiled{"compiled", {}};
  Series speedup{"mean speedup", {}};
  for (const RoundMetrics& r : m.rounds) {
    labels.push_back(fmt::format("round {}", r.round));
    passed.values.push_back(r.passed.rate());
    compiled.values.push_back(r.compiled.rate());
    speedup.values.push_back(r.mean_speedup);
  }
  std::vector<Series> rates{passed};
  if (m.compile_known) rates.insert(rates.begin(), compiled);
  std::string out = figure(line_chart("rounds", "Candidates compiled and passed after each fix round", labels, rates, true),
                           "Candidates compiled and passed after each fix round");
  out += figure(line_chart("round-speedup", "Mean speedup of passed candidates after each fix round", labels, {speedup}, false),
                "Mean speedup of passed candidates after each fix round");
  return out;
}

std::string fast_p_chart(const Metrics& m) {
  std::vector<std::string> labels;
  Series share{"fast_p", {}};
  for (const FastP& f : m.fast_p) {
    labels.push_back(fmt::format("p={:g}", f.p));
    share.values.push_back(f.tasks.rate());
  }
  return figure(bar_chart("fast-p", "fast_p: tasks correct and faster than p x baseline", labels, {share}, true),
                "fast_p: tasks correct and more than p times as fast as the baseline");
}

std::string pass_at_k_chart(const Metrics& m) {
  std::vector<std::string> labels;
  Series values{"pass@k", {}};
  for (const PassAtK& p : m.pass_at_k) {
    labels.push_back(fmt::format("k={}", p.k));
    values.values.push_back(p.value);
  }
  return figure(line_chart("pass-at-k", "pass@k", labels, {values}, true), "pass@k (unbiased estimator, mean over tasks)");
}

std::string html_table(const Table& t) {
  std::string out = fmt::format("<h2>{}</h2>\n", markup_escape(t.title));
  if (!t.note.empty()) out += fmt::format("<p class=\"note\">{}</p>\n", markup_escape(t.note));
  out += "<table class=\"sortable\"><thead><tr>";
  for (const auto& c : t.columns) out += fmt::format("<th>{}</th>", markup_escape(c));
  out += "</tr></thead><tbody>\n";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (const auto& c : row) out += fmt::format("<td>{}</td>", markup_escape(c));
    out += "</tr>\n";
  }
  return out + "</tbody></table>\n";
}

constexpr const char* kStyle = R"css(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1340px;padding:0 16px;color:#1d2330;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 6px}
.muted,.note,.runs{color:#5b6474}.note{margin:0 0 8px;font-size:13px}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0}
.card{border:1px solid #dde2ea;border-radius:8px;padding:10px 14px;min-width:140px}
.card b{display:block;font-size:20px}
.charts{display:flex;flex-wrap:wrap;gap:12px}
figure{margin:0;border:1px solid #dde2ea;border-radius:8px;padding:8px}
figcaption{font-size:13px;color:#5b6474;text-align:center}
svg.chart{max-width:100%;height:auto;font-size:11px}
svg .grid{stroke:#e6e9ef}svg .tick{fill:#4a5263}svg text.muted{fill:#8a93a3}
table{border-collapse:collapse;margin:4px 0 8px;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid #e6e9ef;padding:4px 10px;text-align:right;vertical-align:top}
th:first-child,td:first-child{text-align:left}
th{cursor:pointer;background:#f5f7fa;user-select:none}
td:last-child{max-width:520px;overflow-wrap:anywhere}
details summary{cursor:pointer;font-weight:600;margin:24px 0 6px}
)css";

// Installed first so that it sees every later error; tests read data-script-errors and
// data-ready from the root element.
constexpr const char* kScript = R"js(
(function () {
  var root = document.documentElement, errors = [];
  function note(message) { errors.push(String(message)); root.setAttribute('data-script-errors', errors.join(' | ')); }
  window.addEventListener('error', function (e) { note(e.message || 'error'); });
  var consoleError = console.error;
  console.error = function () { note(Array.prototype.join.call(arguments, ' ')); consoleError.apply(console, arguments); };
  function key(cell) {
    var text = cell.textContent.trim(), number = parseFloat(text.replace(/^\$/, ''));
    return isNaN(number) ? text.toLowerCase() : number;
  }
  document.addEventListener('DOMContentLoaded', function () {
    document.querySelectorAll('table.sortable').forEach(function (table) {
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
        th.addEventListener('click', function () {
          var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
          var direction = th.getAttribute('data-order') === 'asc' ? -1 : 1;
          th.setAttribute('data-order', direction === 1 ? 'asc' : 'desc');
          rows.sort(function (a, b) {
            var x = key(a.cells[column]), y = key(b.cells[column]);
            return (x < y ? -1 : x > y ? 1 : 0) * direction;
          });
          rows.forEach(function (row) { body.appendChild(row); });
        });
      });
    });
    root.setAttribute('data-ready', 'yes');
  });
})();
)js";

// The page: the overview (cards, charts, tables) and the task browser, whose index and
// tasks' blocks are written as the tasks come.
class HtmlWriter : public FormatWriter {
 public:
  HtmlWriter(const Report& report, std::ostream& out, const HtmlLimits& limits)
      : report_(report), out_(out), tasks_(report, out, limits) {}
  void begin() override;
  void task(const ReportTask& task) override { tasks_.task(task); }
  void end() override {
    tasks_.end();
    out_ << "</body></html>\n";
  }

 private:
  const Report& report_;
  std::ostream& out_;
  TaskBrowserWriter tasks_;
};

void HtmlWriter::begin() {
  const Report& report = report_;
  const Metrics& m = report.metrics;
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  out += fmt::format("<title>kforge report: {}</title><style>{}{}</style><script>{}</script><script>{}</script></head>\n<body>\n",
                     markup_escape(m.label), kStyle, kTaskBrowserStyle, kScript, kTaskBrowserScript);
  out += "<main id=\"overview\">\n";
  out += fmt::format("<h1>kforge report: {}</h1>\n<div class=\"runs\">", markup_escape(m.label));
  for (const RunRecord& r : report.runs) {
    out += fmt::format("<div>run {}: {} ({}), {} to {}, {}, kforge {}, host {}</div>", r.id, markup_escape(r.pipeline),
                       markup_escape(r.pipeline_file), markup_escape(r.started_at), markup_escape(r.ended_at.empty() ? "-" : r.ended_at),
                       markup_escape(r.status), markup_escape(r.kforge_version), markup_escape(r.host));
  }
  out += "</div>\n<div class=\"cards\">";
  auto card = [&](const std::string& label, const std::string& value) {
    out += fmt::format("<div class=\"card\"><b>{}</b>{}</div>", markup_escape(value), markup_escape(label));
  };
  card("pass rate (" + std::to_string(m.solved.count) + "/" + std::to_string(m.solved.total) + " tasks)",
       format_percent(m.solved.rate()));
  card("candidates passed", format_percent(m.candidates.rate()));
  card("fast_1", format_percent(fast_p_of(m, 1.0).rate()));
  card("geometric mean speedup", format_speedup(m.geomean_speedup));
  card("total cost", format_money(m.cost));
  card("cache hits", std::to_string(m.cache_hits));
  out += "</div>\n<div class=\"charts\">\n";
  out += complexity_chart(m);
  out += errors_chart(m);
  out += speedup_chart(m);
  out += rounds_charts(m);
  out += fast_p_chart(m);
  if (m.pass_at_k.size() > 1) out += pass_at_k_chart(m);
  out += "</div>\n";
  for (const Table& t : report_tables(m, report_.section_tables)) out += html_table(t);
  out += tasks_.markup();
  out += "</main>\n<section id=\"detail-view\" hidden></section>\n";
  out_ << out;
  tasks_.begin();
}

}  // namespace

std::unique_ptr<FormatWriter> html_writer(const Report& report, std::ostream& out, const HtmlLimits& limits) {
  return std::make_unique<HtmlWriter>(report, out, limits);
}

}  // namespace kforge
