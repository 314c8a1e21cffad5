// The staff reports page (templates/analytics/staff_reports.html): one Chart.js chart per
// report, from the page's JSON (#staff-reports, the API's report shape); every number is also
// in the table under it. Money charts show one currency: the first of the report's rows.
(function () {
  "use strict";
  const source = document.getElementById("staff-reports");
  if (!source || !window.Chart) return;
  const page = JSON.parse(source.textContent);
  const reports = page.reports;
  const gettext = window.gettext || ((s) => s);
  const interpolate = window.interpolate || ((text, values) => text.replace(/%\((\w+)\)s/g, (m, key) => values[key]));
  const LANGUAGE = document.documentElement.lang || undefined;
  const COLORS = ["#2563eb", "#0f766e", "#7c3aed", "#b45309", "#c62828", "#64748b", "#0891b2"];
  // The page's names of the reports' machine values (aging buckets, statuses, kinds, regions).
  const names = page.names || {};
  const named = (column, value) => (names[column] && names[column][value]) || value;
  // The columns' labels in the page's language (page.labels), else the report's own (English).
  const labels = page.labels || {};
  const label = (report, column) => {
    if (labels[report.name] && labels[report.name][column]) return labels[report.name][column];
    const found = report.columns.find((c) => c.name === column);
    return found ? found.label : column;
  };
  const number = window.ChartScales ? window.ChartScales.number : (v, digits) => v.toFixed(digits);
  // Axis labels with the decimals their step needs (chart_scales.js): 0.5 % and 1.0 %, never
  // "1 %" twice on a small range; money to its minor units at most.
  const byStep = window.ChartScales ? window.ChartScales.byStep : (format, scale) => (v) => format(v / (scale || 1), 1);
  const percent = byStep((v, digits) => number(v, digits) + " %", 0.01);

  function money(currency) {
    const exponent = page.exponents[currency] || 0;
    const digits = (d) => Math.min(d, exponent);
    return byStep((v, d) => v.toLocaleString(LANGUAGE, { minimumFractionDigits: digits(d), maximumFractionDigits: digits(d) }) + " " + currency, Math.pow(10, exponent));
  }

  function firstCurrency(rows) {
    const row = rows.find((r) => r.currency);
    return row ? row.currency : null;
  }

  function chart(name, config) {
    const canvas = document.querySelector('canvas[data-chart="' + name + '"]');
    if (!canvas) return;
    config.options = Object.assign({
      responsive: true, maintainAspectRatio: false, animation: false,
      interaction: { mode: "index", intersect: false },
      plugins: { legend: { labels: { boxWidth: 12 } } },
    }, config.options || {});
    new window.Chart(canvas, config);
    canvas.dataset.drawn = "true";
  }

  const mrr = reports.mrr;
  if (mrr && mrr.rows.length) {
    const currency = firstCurrency(mrr.rows);
    const rows = mrr.rows.filter((r) => r.currency === currency);
    const moves = ["new", "reactivation", "expansion", "contraction", "churn"];
    chart("mrr", {
      data: {
        labels: rows.map((r) => r.month),
        datasets: [
          { type: "line", label: interpolate(gettext("MRR at the end (%(currency)s)"), { currency: currency }, true), data: rows.map((r) => r.mrr_end), borderColor: "#111827", backgroundColor: "#111827", stack: "mrr" },
          ...moves.map((m, i) => ({ type: "bar", label: label(mrr, m), data: rows.map((r) => r[m]), backgroundColor: COLORS[i], stack: "moves" })),
        ],
      },
      // One axis: the movements (up and down) and the MRR they lead to are the same money.
      options: { scales: { y: { stacked: true, ticks: { callback: money(currency) } }, x: { stacked: true } } },
    });
  }

  const revenue = reports.revenue;
  if (revenue && revenue.rows.length) {
    const currency = firstCurrency(revenue.rows);
    const rows = revenue.rows.filter((r) => r.currency === currency);
    chart("revenue", {
      type: "bar",
      data: { labels: rows.map((r) => r.month), datasets: [
        { label: interpolate(gettext("Billed (%(currency)s)"), { currency: currency }, true), data: rows.map((r) => r.billed), backgroundColor: COLORS[0] },
        { label: gettext("Collected"), data: rows.map((r) => r.collected + r.credit_applied), backgroundColor: COLORS[1] },
      ] },
      options: { scales: { y: { beginAtZero: true, ticks: { callback: money(currency) } } } },
    });
  }

  const churn = reports.churn;
  if (churn && churn.rows.length) {
    const currency = firstCurrency(churn.rows);
    const rows = churn.rows.filter((r) => r.currency === currency);
    const lines = [["customer_churn_rate", gettext("Customer churn")], ["gross_revenue_churn_rate", gettext("Gross revenue churn")], ["net_revenue_churn_rate", gettext("Net revenue churn")]];
    chart("churn", {
      type: "line",
      data: { labels: rows.map((r) => r.month), datasets: lines.map(([key, label], i) => ({ label: label, data: rows.map((r) => r[key]), borderColor: COLORS[i], backgroundColor: COLORS[i], spanGaps: false })) },
      options: { scales: { y: { ticks: { callback: percent } } } },
    });
  }

  const aging = reports["ar-aging"];
  if (aging && aging.rows.length) {
    const currency = firstCurrency(aging.rows);
    const rows = aging.rows.filter((r) => r.currency === currency);
    chart("ar-aging", {
      type: "bar",
      data: { labels: rows.map((r) => named("bucket", r.bucket)), datasets: [{ label: interpolate(gettext("Owed (%(currency)s)"), { currency: currency }, true), data: rows.map((r) => r.amount), backgroundColor: [COLORS[1], COLORS[3], COLORS[4], "#7f1d1d"] }] },
      options: { scales: { y: { beginAtZero: true, ticks: { callback: money(currency) } } } },
    });
  }

  const tickets = reports.tickets;
  if (tickets && tickets.rows.length) {
    const months = [...new Set(tickets.rows.map((r) => r.month))];
    const departments = [...new Set(tickets.rows.map((r) => r.department_name))];
    chart("tickets", {
      type: "bar",
      data: { labels: months, datasets: departments.map((d, i) => ({
        label: d, backgroundColor: COLORS[i % COLORS.length], stack: "tickets",
        data: months.map((m) => { const row = tickets.rows.find((r) => r.month === m && r.department_name === d); return row ? row.tickets : 0; }),
      })) },
      options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } } } },
    });
  }

  const fleet = reports.fleet;
  if (fleet && fleet.rows.length) {
    const statuses = [...new Set(fleet.rows.map((r) => r.status))];
    const kinds = [...new Set(fleet.rows.map((r) => r.kind))];
    chart("fleet", {
      type: "bar",
      data: { labels: statuses.map((s) => named("status", s)), datasets: kinds.map((k, i) => ({
        label: named("kind", k), backgroundColor: COLORS[i], stack: "fleet",
        data: statuses.map((s) => fleet.rows.filter((r) => r.status === s && r.kind === k).reduce((n, r) => n + r.count, 0)),
      })) },
      options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } } } },
    });
  }

  const nodes = reports.nodes;
  if (nodes && nodes.rows.length) {
    chart("nodes", {
      type: "bar",
      data: { labels: nodes.rows.map((r) => r.node_name), datasets: [
        { label: gettext("Memory given"), data: nodes.rows.map((r) => r.memory_allocated_rate), backgroundColor: COLORS[2] },
        { label: gettext("Disk given"), data: nodes.rows.map((r) => r.disk_allocated_rate), backgroundColor: COLORS[5] },
      ] },
      options: { indexAxis: "y", scales: { x: { beginAtZero: true, suggestedMax: 1, ticks: { callback: percent } } } },
    });
  }
})();
