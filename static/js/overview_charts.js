// The account overview's charts (templates/analytics/overview.html): daily CPU and memory, and
// daily network, from the page's own JSON (#daily-usage); the same numbers are in its table.
(function () {
  "use strict";
  const root = document.querySelector("[data-overview-charts]");
  const source = document.getElementById("daily-usage");
  if (!root || !source || !window.Chart || !window.ChartScales) return;
  const days = JSON.parse(source.textContent);
  const labels = days.map((d) => d.day.slice(5));
  const scales = window.ChartScales;
  const bytes = scales.bytes;
  const gettext = window.gettext || ((s) => s);
  // Nothing measured in 30 days: say why instead of drawing empty axes.
  const measured = days.some((d) => d.cpu_percent || d.memory_bytes || d.network_rx_bytes || d.network_tx_bytes);
  if (!measured) {
    const grid = root.querySelector(".chart-grid");
    const empty = document.createElement("p");
    empty.className = "chart-empty";
    empty.dataset.usageEmpty = "";
    empty.textContent = gettext("No samples yet: none of the account's servers and bots has run in the last 30 days. Usage appears a minute after one starts.");
    grid.hidden = true;
    grid.before(empty);
    root.dataset.drawn = "empty";
    return;
  }
  const cpuAxis = scales.percentAxis(scales.largest(days.map((d) => d.cpu_percent)));
  const memoryAxis = scales.bytesAxis(scales.largest(days.map((d) => d.memory_bytes)));
  const networkAxis = scales.bytesAxis(scales.largest(days.map((d) => (d.network_rx_bytes || 0) + (d.network_tx_bytes || 0))));
  const common = {
    responsive: true, maintainAspectRatio: false, animation: false,
    interaction: { mode: "index", intersect: false },
    plugins: { legend: { labels: { boxWidth: 12 } } },
  };
  new window.Chart(root.querySelector('[data-chart="daily-load"]'), {
    type: "line",
    data: {
      labels: labels,
      datasets: [
        { label: gettext("CPU %"), data: days.map((d) => d.cpu_percent), borderColor: "#2563eb", backgroundColor: "#2563eb", yAxisID: "cpu", pointRadius: 2 },
        { label: gettext("Memory"), data: days.map((d) => d.memory_bytes), borderColor: "#7c3aed", backgroundColor: "#7c3aed", yAxisID: "memory", pointRadius: 2 },
      ],
    },
    options: Object.assign({}, common, {
      plugins: Object.assign({}, common.plugins, { tooltip: { callbacks: { label: (item) => item.dataset.label + ": " + (item.dataset.yAxisID === "memory" ? bytes(item.parsed.y) : scales.number(item.parsed.y, item.parsed.y < 10 ? 2 : 1) + " %") } } }),
      scales: {
        x: { ticks: { maxTicksLimit: 8 } },
        cpu: { position: "left", min: 0, max: cpuAxis.max, ticks: { stepSize: cpuAxis.stepSize, callback: cpuAxis.format } },
        memory: { position: "right", min: 0, max: memoryAxis.max, grid: { drawOnChartArea: false }, ticks: { stepSize: memoryAxis.stepSize, callback: memoryAxis.format } },
      },
    }),
  });
  new window.Chart(root.querySelector('[data-chart="daily-network"]'), {
    type: "bar",
    data: {
      labels: labels,
      datasets: [
        { label: gettext("Received"), data: days.map((d) => d.network_rx_bytes), backgroundColor: "#0f766e" },
        { label: gettext("Sent"), data: days.map((d) => d.network_tx_bytes), backgroundColor: "#b45309" },
      ],
    },
    options: Object.assign({}, common, {
      plugins: Object.assign({}, common.plugins, { tooltip: { callbacks: { label: (item) => item.dataset.label + ": " + bytes(item.parsed.y) } } }),
      scales: { x: { stacked: true, ticks: { maxTicksLimit: 8 } }, y: { stacked: true, min: 0, max: networkAxis.max, ticks: { stepSize: networkAxis.stepSize, callback: networkAxis.format } } },
    }),
  });
  root.dataset.drawn = "true";
})();
