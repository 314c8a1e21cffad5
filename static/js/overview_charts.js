// The account overview's charts (templates/analytics/overview.html): daily CPU and memory, and
// daily network, from the page's own JSON (#daily-usage); the same numbers are in its table.
(function () {
  "use strict";
  const root = document.querySelector("[data-overview-charts]");
  const source = document.getElementById("daily-usage");
  if (!root || !source || !window.Chart) return;
  const days = JSON.parse(source.textContent);
  const labels = days.map((d) => d.day.slice(5));
  const UNITS = ["B", "KB", "MB", "GB", "TB"];
  function bytes(value) {
    let unit = 0;
    while (Math.abs(value) >= 1024 && unit < UNITS.length - 1) { value /= 1024; unit += 1; }
    return (unit ? value.toFixed(1) : Math.round(value)) + " " + UNITS[unit];
  }
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
        { label: "CPU %", data: days.map((d) => d.cpu_percent), borderColor: "#2563eb", backgroundColor: "#2563eb", yAxisID: "cpu", pointRadius: 2 },
        { label: "Memory", data: days.map((d) => d.memory_bytes), borderColor: "#7c3aed", backgroundColor: "#7c3aed", yAxisID: "memory", pointRadius: 2 },
      ],
    },
    options: Object.assign({}, common, {
      plugins: Object.assign({}, common.plugins, { tooltip: { callbacks: { label: (item) => item.dataset.label + ": " + (item.dataset.yAxisID === "memory" ? bytes(item.parsed.y) : item.parsed.y.toFixed(1) + " %") } } }),
      scales: {
        x: { ticks: { maxTicksLimit: 8 } },
        cpu: { position: "left", beginAtZero: true, ticks: { maxTicksLimit: 5, callback: (v) => v + " %" } },
        memory: { position: "right", beginAtZero: true, grid: { drawOnChartArea: false }, ticks: { maxTicksLimit: 5, callback: (v) => bytes(v) } },
      },
    }),
  });
  new window.Chart(root.querySelector('[data-chart="daily-network"]'), {
    type: "bar",
    data: {
      labels: labels,
      datasets: [
        { label: "Received", data: days.map((d) => d.network_rx_bytes), backgroundColor: "#0f766e" },
        { label: "Sent", data: days.map((d) => d.network_tx_bytes), backgroundColor: "#b45309" },
      ],
    },
    options: Object.assign({}, common, {
      plugins: Object.assign({}, common.plugins, { tooltip: { callbacks: { label: (item) => item.dataset.label + ": " + bytes(item.parsed.y) } } }),
      scales: { x: { stacked: true, ticks: { maxTicksLimit: 8 } }, y: { stacked: true, beginAtZero: true, ticks: { maxTicksLimit: 5, callback: (v) => bytes(v) } } },
    }),
  });
  root.dataset.drawn = "true";
})();
