// Usage history on a server's or bot's page: Chart.js line charts of CPU, memory and network
// for the range picked, the same numbers as a table, and the last 30 days' uptime strip.
// Data: GET <data-url>?range=… (analytics/views.py InstanceUsageView), the metrics API's shape.
(function () {
  "use strict";
  const root = document.querySelector("[data-usage-charts]");
  if (!root || !window.Chart || !window.ChartScales) return;
  const status = root.querySelector("[data-usage-status]");
  const empty = root.querySelector("[data-usage-empty]");
  const grid = root.querySelector(".chart-grid");
  const charts = {};
  const scales = window.ChartScales;
  const bytes = scales.bytes;
  const number = scales.number;
  const gettext = window.gettext || ((s) => s);
  const interpolate = window.interpolate || ((text, values) => text.replace(/%\((\w+)\)s/g, (m, key) => values[key]));
  const percent = (v) => number(v, v < 10 ? 2 : 1) + " %";
  // The memory limit joins the scale when the data reach a fifth of it; below that the scale
  // fits the data (70 MB of 9 GB would be a flat line at the bottom) and the limit is named.
  const LIMIT_IN_SCALE = 5;

  // Hours and minutes within a day, the date beside them up to three days, the date alone beyond.
  function timeLabel(ms, spanSeconds) {
    const d = new Date(ms);
    const pad = (n) => String(n).padStart(2, "0");
    const hm = pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes());
    const date = pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate());
    if (spanSeconds <= 86400) return hm;
    return spanSeconds <= 3 * 86400 ? date + " " + hm : date;
  }

  // Time labels at a round step, as many as the chart's width holds (at most five).
  const TIME_STEPS = [5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 2880, 4320, 10080].map((m) => m * 60000);
  function timeTicks(start, end, width) {
    const most = Math.max(2, Math.min(5, Math.floor(width / 110)));
    const step = TIME_STEPS.find((s) => (end - start) / s <= most) || TIME_STEPS[TIME_STEPS.length - 1];
    const ticks = [];
    for (let t = Math.ceil(start / step) * step; t <= end; t += step) ticks.push({ value: t });
    return ticks;
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

  // One chart; `y` is its value axis ({max, stepSize, format}), `limit` a line drawn at a value.
  function draw(name, datasets, metrics, y, limit) {
    const canvas = root.querySelector('[data-chart="' + name + '"]');
    if (charts[name]) charts[name].destroy();
    const start = Date.parse(metrics.start), end = Date.parse(metrics.end);
    delete canvas.dataset.limit;
    charts[name] = new window.Chart(canvas, {
      type: "line",
      plugins: [scales.limitLine],
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
            label: (item) => item.dataset.label + ": " + (name === "cpu" ? percent(item.parsed.y) : bytes(item.parsed.y)),
          } },
          limitLine: limit || {},
        },
        scales: {
          // Round times (every 10 min, 3 h, a day…), not the range's odd ends beside them.
          x: { type: "linear", min: start, max: end, afterBuildTicks: (axis) => { axis.ticks = timeTicks(start, end, axis.chart.width); },
            ticks: { maxRotation: 0, callback: (v) => timeLabel(v, (end - start) / 1000) } },
          y: { min: 0, max: y.max, ticks: { stepSize: y.stepSize, callback: (v) => y.format(v) } },
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
    const formats = [(v) => number(v, v < 10 ? 2 : 1), bytes, bytes, bytes];
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
    // No percentage: it was never meant to be running in these 30 days (stopped by its owner).
    total.textContent = data.uptime_percent === null ? "· " + gettext("stopped on purpose, so there is no uptime to measure") : "· " + number(data.uptime_percent, 2) + " %";
    strip.replaceChildren(...data.days.slice(-30).map((day) => {
      const li = document.createElement("li");
      const p = day.uptime_percent;
      li.dataset.level = p === null ? "off" : p >= 99.9 ? "full" : p >= 95 ? "partial" : "poor";
      const unknown = day.up_seconds === null;
      li.title = day.date + ": " + (unknown ? gettext("not known") : p === null ? gettext("stopped on purpose") : interpolate(gettext("%(percent)s up"), { percent: number(p, 2) + " %" }, true));
      li.setAttribute("aria-label", li.title);
      return li;
    }));
    const incidents = root.querySelector("[data-incidents]");
    if (!data.incidents.length) { incidents.replaceChildren(); return; }
    const list = document.createElement("ul");
    list.className = "incidents";
    for (const incident of data.incidents.slice(-10).reverse()) {
      const li = document.createElement("li");
      const minutes = incident.duration_seconds === null ? gettext("ongoing") : interpolate(gettext("%(minutes)s min"), { minutes: number(Math.max(1, Math.round(incident.duration_seconds / 60))) }, true);
      li.textContent = incident.started_at.replace("T", " ").replace("Z", " UTC") + " · " + minutes + " · " + incident.reason;
      list.append(li);
    }
    incidents.replaceChildren(list);
  }

  // Why a range has no samples: the instance never ran, is only starting, or was not running then.
  function emptyText(data, range) {
    const bot = data.kind === "bot";
    const running = ["starting", "running"].includes(data.status);
    if (!data.last_sample_at) {
      if (running) return bot ? gettext("No samples yet: usage appears a minute after the bot starts.") : gettext("No samples yet: usage appears a minute after the server starts.");
      return bot
        ? gettext("No samples yet: the bot has not run since it was created. Usage appears a minute after it starts.")
        : gettext("No samples yet: the server has not run since it was created. Usage appears a minute after it starts.");
    }
    const last = data.last_sample_at.replace("T", " ").replace(/:\d\dZ$/, " UTC");
    const values = { range: range.replace("h", " h").replace("d", " d"), last: last };
    return interpolate(bot
      ? gettext("No samples in the last %(range)s: the bot was not running then. The last were measured at %(last)s; a longer range shows them.")
      : gettext("No samples in the last %(range)s: the server was not running then. The last were measured at %(last)s; a longer range shows them."), values, true);
  }

  async function load(range) {
    status.textContent = gettext("Loading…");
    root.querySelectorAll("[data-range]").forEach((b) => b.setAttribute("aria-pressed", String(b.dataset.range === range)));
    try {
      const answer = await fetch(root.dataset.url + "?range=" + encodeURIComponent(range), { headers: { Accept: "application/json" }, credentials: "same-origin" });
      const body = await answer.json();
      if (!body.success) throw new Error(body.error.message);
      const metrics = body.data.metrics;
      const [cpu, memory, rx, tx] = metrics.series;
      const values = (series) => series.points.map((p) => p[1]);
      const samples = metrics.series.reduce((n, s) => n + s.points.length, 0);
      table(metrics);
      uptime(body.data.uptime);
      if (!samples) {
        Object.values(charts).forEach((chart) => chart.destroy());
        for (const name in charts) delete charts[name];
        grid.hidden = true;
        root.querySelector(".chart-table").hidden = true;
        empty.hidden = false;
        empty.textContent = emptyText(body.data, range);
        status.textContent = "";
        root.dataset.loaded = range;
        return;
      }
      grid.hidden = false;
      root.querySelector(".chart-table").hidden = false;
      empty.hidden = true;
      draw("cpu", [{ label: gettext("CPU"), data: points(cpu, metrics.step), borderColor: "#2563eb", backgroundColor: "#2563eb" }], metrics,
        scales.percentAxis(scales.largest(values(cpu))));
      const limit = body.data.memory_limit_bytes;
      const memoryMax = scales.largest(values(memory));
      draw("memory", [{ label: gettext("Memory"), data: points(memory, metrics.step), borderColor: "#7c3aed", backgroundColor: "#7c3aed" }], metrics,
        scales.bytesAxis(memoryMax * LIMIT_IN_SCALE >= limit ? Math.max(memoryMax, limit) : memoryMax),
        { value: limit, label: interpolate(gettext("Limit %(size)s"), { size: bytes(limit) }, true) });
      draw("network", [
        { label: gettext("Received"), data: points(rx, metrics.step), borderColor: "#0f766e", backgroundColor: "#0f766e" },
        { label: gettext("Sent"), data: points(tx, metrics.step), borderColor: "#b45309", backgroundColor: "#b45309" },
      ], metrics, scales.bytesAxis(Math.max(scales.largest(values(rx)), scales.largest(values(tx)))));
      status.textContent = metrics.step >= 60
        ? interpolate(gettext("Every %(n)s min, times in UTC."), { n: number(metrics.step / 60) }, true)
        : interpolate(gettext("Every %(n)s s, times in UTC."), { n: number(metrics.step) }, true);
      root.dataset.loaded = range;
    } catch (error) {
      status.textContent = interpolate(gettext("Usage could not be loaded: %(error)s"), { error: error.message }, true);
    }
  }

  root.querySelectorAll("[data-range]").forEach((button) => button.addEventListener("click", () => load(button.dataset.range)));
  load("24h");
})();
