// Usage history on a server's or bot's page: Chart.js line charts of CPU, memory and network
// for the range picked, the same numbers as a table, and the last 30 days' uptime strip.
// Data: GET <data-url>?range=… (analytics/views.py InstanceUsageView), the metrics API's shape.
(function () {
  "use strict";
  const root = document.querySelector("[data-usage-charts]");
  if (!root || !window.Chart) return;
  const status = root.querySelector("[data-usage-status]");
  const charts = {};
  const BYTES = ["B", "KB", "MB", "GB", "TB"];

  function bytes(value) {
    let unit = 0;
    while (Math.abs(value) >= 1024 && unit < BYTES.length - 1) { value /= 1024; unit += 1; }
    return (unit ? value.toFixed(1) : Math.round(value)) + " " + BYTES[unit];
  }

  // Hours and minutes within a day, the date beside them up to three days, the date alone beyond.
  function timeLabel(ms, spanSeconds) {
    const d = new Date(ms);
    const pad = (n) => String(n).padStart(2, "0");
    const hm = pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes());
    const date = pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate());
    if (spanSeconds <= 86400) return hm;
    return spanSeconds <= 3 * 86400 ? date + " " + hm : date;
  }

  // Points as {x, y}, with a break wherever a bucket has no sample (stopped, not zero).
  function points(series, step) {
    const out = [];
    let previous = null;
    for (const [t, v] of series.points) {
      const x = Date.parse(t);
      if (previous !== null && x - previous > step * 1000) out.push({ x: previous + step * 1000, y: null });
      out.push({ x: x, y: v });
      previous = x;
    }
    return out;
  }

  function draw(name, datasets, metrics, format, suggestedMax) {
    const canvas = root.querySelector('[data-chart="' + name + '"]');
    if (charts[name]) charts[name].destroy();
    const start = Date.parse(metrics.start), end = Date.parse(metrics.end);
    charts[name] = new window.Chart(canvas, {
      type: "line",
      data: { datasets: datasets },
      options: {
        responsive: true, maintainAspectRatio: false, animation: false, parsing: false,
        spanGaps: false, normalized: true,
        interaction: { mode: "nearest", axis: "x", intersect: false },
        elements: { point: { radius: 0 }, line: { borderWidth: 1.5, tension: 0 } },
        plugins: {
          legend: { display: datasets.length > 1, labels: { boxWidth: 12 } },
          tooltip: { callbacks: {
            title: (items) => items.length ? new Date(items[0].parsed.x).toISOString().slice(0, 16).replace("T", " ") + " UTC" : "",
            label: (item) => item.dataset.label + ": " + format(item.parsed.y),
          } },
        },
        scales: {
          x: { type: "linear", min: start, max: end, ticks: { maxTicksLimit: 6, callback: (v) => timeLabel(v, (end - start) / 1000) } },
          y: { beginAtZero: true, suggestedMax: suggestedMax, ticks: { maxTicksLimit: 5, callback: (v) => format(v) } },
        },
      },
    });
  }

  function table(metrics) {
    const body = root.querySelector("[data-usage-table] tbody");
    const rows = new Map();
    metrics.series.forEach((series, column) => {
      for (const [t, v] of series.points) {
        if (!rows.has(t)) rows.set(t, [null, null, null, null]);
        rows.get(t)[column] = v;
      }
    });
    const formats = [(v) => v.toFixed(1), bytes, bytes, bytes];
    body.replaceChildren(...[...rows.keys()].sort().reverse().map((t) => {
      const tr = document.createElement("tr");
      const th = document.createElement("td");
      th.textContent = t.replace("T", " ").replace("Z", "");
      tr.append(th);
      rows.get(t).forEach((v, i) => {
        const td = document.createElement("td");
        td.textContent = v === null ? "–" : formats[i](v);
        tr.append(td);
      });
      return tr;
    }));
  }

  function uptime(data) {
    const strip = root.querySelector("[data-uptime-strip]");
    const total = root.querySelector("[data-uptime-total]");
    total.textContent = data.uptime_percent === null ? "(not meant to run)" : data.uptime_percent.toFixed(2) + " %";
    strip.replaceChildren(...data.days.slice(-30).map((day) => {
      const li = document.createElement("li");
      const p = day.uptime_percent;
      li.dataset.level = p === null ? "off" : p >= 99.9 ? "full" : p >= 95 ? "partial" : "poor";
      const unknown = day.up_seconds === null;
      li.title = day.date + ": " + (unknown ? "not known" : p === null ? "not meant to run" : p.toFixed(2) + " % up");
      li.setAttribute("aria-label", li.title);
      return li;
    }));
    const incidents = root.querySelector("[data-incidents]");
    if (!data.incidents.length) { incidents.replaceChildren(); return; }
    const list = document.createElement("ul");
    list.className = "incidents";
    for (const incident of data.incidents.slice(-10).reverse()) {
      const li = document.createElement("li");
      const minutes = incident.duration_seconds === null ? "ongoing" : Math.max(1, Math.round(incident.duration_seconds / 60)) + " min";
      li.textContent = incident.started_at.replace("T", " ").replace("Z", " UTC") + " · " + minutes + " · " + incident.reason;
      list.append(li);
    }
    incidents.replaceChildren(list);
  }

  async function load(range) {
    status.textContent = "Loading…";
    root.querySelectorAll("[data-range]").forEach((b) => b.setAttribute("aria-pressed", String(b.dataset.range === range)));
    try {
      const answer = await fetch(root.dataset.url + "?range=" + encodeURIComponent(range), { headers: { Accept: "application/json" }, credentials: "same-origin" });
      const body = await answer.json();
      if (!body.success) throw new Error(body.error.message);
      const metrics = body.data.metrics;
      const [cpu, memory, rx, tx] = metrics.series;
      draw("cpu", [{ label: "CPU", data: points(cpu, metrics.step), borderColor: "#2563eb", backgroundColor: "#2563eb" }], metrics, (v) => v.toFixed(0) + " %");
      draw("memory", [{ label: "Memory", data: points(memory, metrics.step), borderColor: "#7c3aed", backgroundColor: "#7c3aed" }], metrics, bytes, body.data.memory_limit_bytes);
      draw("network", [
        { label: "Received", data: points(rx, metrics.step), borderColor: "#0f766e", backgroundColor: "#0f766e" },
        { label: "Sent", data: points(tx, metrics.step), borderColor: "#b45309", backgroundColor: "#b45309" },
      ], metrics, bytes);
      table(metrics);
      uptime(body.data.uptime);
      const samples = metrics.series.reduce((n, s) => n + s.points.length, 0);
      status.textContent = samples ? "Every " + (metrics.step >= 60 ? metrics.step / 60 + " min" : metrics.step + " s") + ", times in UTC." : "No usage measured in this range yet.";
      root.dataset.loaded = range;
    } catch (error) {
      status.textContent = "Usage could not be loaded: " + error.message;
    }
  }

  root.querySelectorAll("[data-range]").forEach((button) => button.addEventListener("click", () => load(button.dataset.range)));
  load("24h");
})();
